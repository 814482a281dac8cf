"""EM covariance fit time on the bundled leaderboards.

Usage: python benchmarks/bench_em.py [--repeat R]

Prints, per dataset, the median wall time of ``em_covariance`` on the
standardized matrix (default settings: floor 1e-3, tol 1e-5, max_iter 300),
the iterations used, whether it converged, and the time per iteration. The
first call in a process also pays for threadpoolctl's one-off library scan;
it is reported separately.
"""

import argparse
import time
import warnings

import numpy as np

import benchsel
from benchsel import ConvergenceWarning, Standardizer, em_covariance


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("datasets", nargs="*", default=["merged", "mteb"])
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)

    first = time.perf_counter()
    em_covariance(np.random.default_rng(0).normal(size=(10, 3)))
    print(f"first call in the process (threadpoolctl scan): {time.perf_counter() - first:.3f} s")
    print(f"{'dataset':10s} {'shape':>10s} {'observed':>9s} {'seconds':>8s} {'iters':>6s} "
          f"{'conv':>5s} {'ms/iter':>8s}")
    for name in args.datasets:
        scores = benchsel.load_dataset(name)
        z = Standardizer.fit(scores.values).transform(scores.values)
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            est = em_covariance(z)
            times.append(time.perf_counter() - t0)
        t = float(np.median(times))
        m, n = scores.shape
        print(f"{name:10s} {f'{m}x{n}':>10s} {100 * scores.observed_fraction:8.1f}% {t:8.3f} "
              f"{est.n_iter:6d} {str(est.converged):>5s} {1000 * t / est.n_iter:8.2f}")


if __name__ == "__main__":
    main()
