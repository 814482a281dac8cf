"""Wall time of short ``benchsel`` commands, as a user runs them (a fresh process each).

Prints the median and the fastest of ``--repeat`` runs of ``--version``,
``--help``, ``select -k 5`` on bundled boards and ``datasets``.

    python benchmarks/startup.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time

COMMANDS = (
    ["--version"],
    ["--help"],
    ["select", "--help"],
    ["select", "mteb", "-k", "5"],
    ["select", "merged", "-k", "5"],
    ["select", "open_llm_v2", "-k", "3"],
    ["datasets"],
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    # The installed console script, as a user types it; else the module.
    launcher = [shutil.which("benchsel")] if shutil.which("benchsel") else \
        [sys.executable, "-m", "benchsel"]
    print(f"{'command':<36}{'median s':>10}{'best s':>9}")
    for command in COMMANDS:
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            subprocess.run(launcher + command, capture_output=True, check=True)
            times.append(time.perf_counter() - start)
        print(f"{'benchsel ' + ' '.join(command):<36}{statistics.median(times):>10.2f}"
              f"{min(times):>9.2f}")


if __name__ == "__main__":
    main()
