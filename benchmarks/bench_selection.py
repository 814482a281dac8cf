"""Greedy selection time: MI (downdate vs fresh refactorization) and entropy.

Usage: python benchmarks/bench_selection.py [--data-dir DIR]

Cases: the EM covariance of MERGED (N = 114) with k = 15, and a synthetic
low-rank-plus-diagonal covariance with N = 2000 (10 factors, uniform noise
variances in [0.1, 1]) with k = 50. Prints the median time of 3 runs and
checks that both MI schemes pick the same items.
"""

import argparse
import time
import warnings

import numpy as np
from _data import LEADERBOARDS, add_data_dir, load_board

import benchsel
from benchsel import ConvergenceWarning, greedy_entropy, greedy_mi


def timed(fn, *args, repeat=3, **kwargs):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(parser, LEADERBOARDS)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    merged = load_board("merged", args.data_dir)
    merged = benchsel.GaussianModel().fit(merged).estimate_.covariance
    rng = np.random.default_rng(0)
    f = rng.normal(size=(2000, 10))
    synthetic = f @ f.T + np.diag(rng.uniform(0.1, 1.0, 2000))
    print(f"{'case':28s} {'method':16s} {'seconds':>8s} {'factorizations':>15s}")
    for label, sigma, k in (("MERGED N=114 k=15", merged, 15),
                            ("synthetic N=2000 k=50", synthetic, 50)):
        t_fast, fast = timed(greedy_mi, sigma, k, mi_method="downdate")
        t_fresh, fresh = timed(greedy_mi, sigma, k, mi_method="fresh", repeat=1 if k > 20 else 3)
        t_ent, _ = timed(greedy_entropy, sigma, k)
        same = np.array_equal(fast.indices, fresh.indices)
        gap = float(np.max(np.abs(fast.gains - fresh.gains) / np.abs(fresh.gains)))
        print(f"{label:28s} {'mi (downdate)':16s} {t_fast:8.3f} {fast.n_refactorizations:15d}")
        print(f"{label:28s} {'mi (fresh)':16s} {t_fresh:8.3f} {fresh.n_refactorizations:15d}")
        print(f"{label:28s} {'entropy':16s} {t_ent:8.4f} {0:15d}")
        print(f"{'':28s} same picks: {same}, max relative gain difference {gap:.1e}")


if __name__ == "__main__":
    main()
