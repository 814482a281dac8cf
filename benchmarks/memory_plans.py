"""How close the memory plans are to what the computations take.

Usage: python benchmarks/memory_plans.py

For EM (:func:`benchsel.gaussian.covariance.em_memory_bytes`, two EM
iterations) on generated boards of several shapes and missing shares, and
for the pairwise covariance (the 40 N^2 bytes it plans) at two widths,
prints the plan, the peak that :mod:`tracemalloc` measured (numpy's
allocations included) and their ratio: a plan should be above the peak,
and not by much, or a budget refuses work that fits.
"""

import tracemalloc
import warnings

import numpy as np

from benchsel.gaussian.covariance import em_covariance, em_memory_bytes, pairwise_covariance


def board(m: int, n: int, missing: float) -> np.ndarray:
    rng = np.random.default_rng(0)
    z = rng.standard_normal((m, 3)) @ rng.standard_normal((3, n))
    z += 0.5 * rng.standard_normal((m, n))
    z[rng.random(z.shape) < missing] = np.nan
    return z


def peak(run) -> int:
    tracemalloc.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run()
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top


def main() -> None:
    print("| computation | shape | missing | plan MiB | measured peak MiB | plan / peak |")
    print("|---|---|---|---|---|---|")
    for m, n, missing in ((300, 200, 0.5), (200, 400, 0.5), (500, 100, 0.3), (100, 600, 0.6)):
        z = board(m, n, missing)
        plan = em_memory_bytes(~np.isnan(z))
        top = peak(lambda z=z: em_covariance(z, max_iter=2))
        print(f"| EM | {m} x {n} | {missing:.0%} | {plan / 2**20:.1f} | {top / 2**20:.1f} | "
              f"{plan / top:.2f} |", flush=True)
    for n in (500, 1500):
        z = board(50, n, 0.0)
        plan = 40.0 * n * n
        top = peak(lambda z=z: pairwise_covariance(z))
        print(f"| pairwise | 50 x {n} | 0% | {plan / 2**20:.1f} | {top / 2**20:.1f} | "
              f"{plan / top:.2f} |", flush=True)


if __name__ == "__main__":
    main()
