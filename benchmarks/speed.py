"""Wall time of benchsel's protocols at the sizes users have, beside the target for each.

Each command runs as a user runs it, in a fresh process, serially:

* ``evaluate merged --protocol complete`` (target 20 s);
* ``coreset-eval`` with every method on ``openllm_arc_challenge``, 10 trials (target 60 s);
* ``evaluate --protocol cv`` on generated low-rank leaderboards of M models x N
  benchmarks, 30% observed (target 60 s at 10,000 x 100; near-linear in M).

The complete and cv protocols are timed serially and again with their folds
on ``--jobs`` workers (default 2, the project machine's cores; 1 skips it).

    python benchmarks/speed.py [--only complete,coreset,cv] [--sizes 1000x100,10000x100]
                               [--jobs 2] [--covariance pairwise]

``--covariance`` is passed to the cv runs (default: benchsel's ``auto``, EM
on these incomplete boards); ``pairwise`` is how a board of thousands of
benchmarks is evaluated (``--sizes 300x2000``), where EM is out of reach.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _data import add_data_dir


def _timed(args: list[str], limit: float) -> str:
    start = time.perf_counter()
    try:
        subprocess.run([sys.executable, "-m", "benchsel", *args, "--quiet"],
                       capture_output=True, check=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return f"> {limit:.0f} s (stopped)"
    return f"{time.perf_counter() - start:.1f} s"


def _board(models: int, items: int, path: Path, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(models, 4)) @ rng.normal(size=(4, items)) \
        + 0.5 * rng.normal(size=(models, items))
    values[rng.random(values.shape) > 0.3] = np.nan
    values[np.arange(models), rng.integers(0, items, models)] = 0.0  # no empty row
    lines = ["model," + ",".join(f"b{j}" for j in range(items))]
    lines += [f"m{i}," + ",".join("" if np.isnan(v) else f"{v:.4f}" for v in row)
              for i, row in enumerate(values)]
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="complete,coreset,cv")
    parser.add_argument("--sizes", default="1000x100,3000x100,10000x100,300x500",
                        help="cv leaderboards, MODELSxBENCHMARKS")
    parser.add_argument("--limit", type=float, default=900, help="seconds before a run stops")
    parser.add_argument("--jobs", type=int, default=2,
                        help="workers for the second timing of complete and cv (1: none)")
    parser.add_argument("--covariance", default="auto", help="cv: covariance estimator")
    add_data_dir(parser)
    args = parser.parse_args()
    only = args.only.split(",")
    cov = [] if args.covariance == "auto" else ["--covariance", args.covariance]
    jobs = [[]] + ([["--jobs", str(args.jobs)]] if args.jobs != 1 else [])
    print(f"{'command':<64}{'wall':>16}  target")
    if "complete" in only:
        for extra in jobs:
            label = " ".join(["evaluate merged --protocol complete", *extra])
            wall = _timed(['evaluate', 'merged', '--protocol', 'complete', *extra], args.limit)
            print(f"{label:<64}{wall:>16}  20 s", flush=True)
    arc = args.data_dir / "openllm_arc_challenge.npz"
    if "coreset" in only and arc.exists():
        print(f"{'coreset-eval openllm_arc_challenge (all methods, 10 trials)':<64}"
              f"{_timed(['coreset-eval', str(arc)], args.limit):>16}  60 s", flush=True)
    if "cv" in only:
        with tempfile.TemporaryDirectory() as tmp:
            for size in args.sizes.split(","):
                m, n = (int(x) for x in size.split("x"))
                path = Path(tmp) / f"board_{m}x{n}.csv"
                _board(m, n, path)
                target = "60 s" if (m, n) == (10000, 100) else "-"
                for extra in jobs:
                    label = " ".join([f"evaluate --protocol cv, {m} x {n}, 30% observed",
                                      *cov, *extra])
                    wall = _timed(['evaluate', str(path), '--protocol', 'cv', *cov, *extra],
                                  args.limit)
                    print(f"{label:<64}{wall:>16}  {target}", flush=True)


if __name__ == "__main__":
    main()
