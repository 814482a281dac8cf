"""Time of the whole ``cv`` protocol (10 folds x 3 objectives x k = 1..15).

Usage: python benchmarks/bench_cv.py [--jobs J]

Runs the paper's protocol (Smola 2026, Sec. 5.1; 10% holdout) on MTEB and
MERGED and prints the seconds per dataset, the total, and R^2 at k = 5.
"""

import argparse
import time

import benchsel
from benchsel.evaluation import cross_validate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    total = 0.0
    for name in ("mteb", "merged"):
        t0 = time.perf_counter()
        res = cross_validate(benchsel.load_dataset(name), n_jobs=args.jobs, predictor="gaussian")
        dt = time.perf_counter() - t0
        total += dt
        r2 = ", ".join(f"{o} {res.row(o, 5).r2_mean:.3f}" for o in ("mi", "entropy", "random"))
        print(f"{name:8s} {dt:6.2f} s   R^2 at k=5: {r2}")
    print(f"total    {total:6.2f} s (jobs={args.jobs})")


if __name__ == "__main__":
    main()
