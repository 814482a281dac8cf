"""How reading a score file grows with its width, and what a file with no line breaks costs.

Usage: python benchmarks/readers.py [--columns 10000,100000] [--models 20] [--monster-mb 500]

Writes wide CSVs (``--models`` rows, each width of ``--columns``) to a
temporary folder and times :func:`benchsel.read_scores` on each (the best
of ``--repeat``), then prints the ratio of the widest to the narrowest
time against the ratio of their widths: linear reading keeps them close.
``--monster-mb`` writes a file of that size with no line break and times
how long the reader takes to refuse it (0 skips it).
"""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from benchsel import read_scores


def wide_csv(path: Path, models: int, columns: int) -> None:
    rng = np.random.default_rng(0)
    with path.open("w") as f:
        f.write("model," + ",".join(f"b{j}" for j in range(columns)) + "\n")
        for i in range(models):
            f.write(f"m{i}," + ",".join(f"{x:.3f}" for x in rng.random(columns)) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--columns", default="10000,100000")
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--monster-mb", type=int, default=500)
    args = parser.parse_args()
    widths = [int(c) for c in args.columns.split(",")]
    with tempfile.TemporaryDirectory() as folder:
        times = []
        for columns in widths:
            path = Path(folder) / f"wide_{columns}.csv"
            wide_csv(path, args.models, columns)
            best = min(_timed(read_scores, path) for _ in range(args.repeat))
            times.append(best)
            print(f"{columns:>9} columns x {args.models} models "
                  f"({path.stat().st_size / 1e6:.1f} MB): {best:.2f} s", flush=True)
        print(f"widest / narrowest: {times[-1] / times[0]:.1f}x the time for "
              f"{widths[-1] / widths[0]:.0f}x the columns")
        if args.monster_mb:
            path = Path(folder) / "one_line.csv"
            block = ",".join(["0.5"] * 250_000) + ","
            with path.open("w") as f:
                f.write("model,")
                for _ in range(args.monster_mb * 10**6 // len(block)):
                    f.write(block)
            start = time.perf_counter()
            try:
                read_scores(path)
            except ValueError as err:
                print(f"{path.stat().st_size / 1e6:.0f} MB with no line break: refused in "
                      f"{time.perf_counter() - start:.2f} s ({str(err)[len(str(path)) + 2:]})")


def _timed(read, path) -> float:
    start = time.perf_counter()
    read(path)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
