"""EM covariance fit time on the bundled leaderboards.

Usage: python benchmarks/bench_em.py [--repeat R] [--data-dir DIR] [DATASET ...]

Prints, per dataset and estimator, the median wall time of the EM fit on
the standardized matrix (floor 1e-3, tol 1e-5, max_iter 300): ``em`` is the
paper's EM, ``em (plain)`` the same without SQUAREM acceleration,
``em-shrink`` the default for incomplete matrices. Also the iterations used,
whether it converged, and the time per iteration. The first call in a
process also pays for threadpoolctl's one-off library scan; it is reported
separately.
"""

import argparse
import time
import warnings

import numpy as np
from _data import LEADERBOARDS, add_data_dir, load_board

from benchsel import ConvergenceWarning, Standardizer, em_covariance

VARIANTS = {
    "em (plain)": dict(accelerate=False),
    "em": dict(),
    "em-shrink": dict(correlation_shrinkage=0.02),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("datasets", nargs="*", default=["merged", "mteb"])
    add_data_dir(parser, LEADERBOARDS)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)

    first = time.perf_counter()
    em_covariance(np.random.default_rng(0).normal(size=(10, 3)))
    print(f"first call in the process (threadpoolctl scan): {time.perf_counter() - first:.3f} s")
    print(f"{'dataset':10s} {'shape':>10s} {'observed':>9s} {'estimator':>11s} {'seconds':>8s} "
          f"{'iters':>6s} {'conv':>5s} {'ms/iter':>8s}")
    for name in args.datasets:
        scores = load_board(name, args.data_dir)
        z = Standardizer.fit(scores.values).transform(scores.values)
        m, n = scores.shape
        for label, options in VARIANTS.items():
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                est = em_covariance(z, **options)
                times.append(time.perf_counter() - t0)
            t = float(np.median(times))
            print(f"{name:10s} {f'{m}x{n}':>10s} {100 * scores.observed_fraction:8.1f}% "
                  f"{label:>11s} {t:8.3f} {est.n_iter:6d} {str(est.converged):>5s} "
                  f"{1000 * t / est.n_iter:8.2f}")


if __name__ == "__main__":
    main()
