"""Time and size of ``benchsel report`` on every bundled leaderboard.

Runs the CLI as a user would (a fresh process per board, default options) and
prints, per board, the wall time, the page's size, its figure count and the
sections that could not be computed there.

    python benchmarks/report.py [--boards mteb,merged] [--workdir DIR] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _data import LEADERBOARDS, add_data_dir, board_argument

from benchsel import list_datasets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boards", help="comma-separated bundled boards (default: all)")
    parser.add_argument("--workdir", help="keep the pages here (default: a temporary folder)")
    add_data_dir(parser, LEADERBOARDS)
    args = parser.parse_args()
    boards = args.boards.split(",") if args.boards else \
        [d.name for d in list_datasets("leaderboard")]
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="benchsel-report-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"{'board':<14}{'wall s':>8}{'KiB':>8}{'figures':>9}  not available")
    for board in boards:
        page = workdir / f"{board}.html"
        start = time.perf_counter()
        data = board_argument(board, args.data_dir)
        out = subprocess.run([sys.executable, "-m", "benchsel", "report", data, "-o", str(page),
                              "--json", "--quiet"], capture_output=True, text=True, check=True)
        wall = time.perf_counter() - start
        summary = json.loads(out.stdout)
        figures = page.read_text().count("data:image/png;base64,")
        skipped = ", ".join(summary["skipped"]) or "-"
        print(f"{board:<14}{wall:>8.1f}{summary['bytes'] / 1024:>8.0f}{figures:>9}  {skipped}")
    print(f"pages in {workdir}")


if __name__ == "__main__":
    main()
