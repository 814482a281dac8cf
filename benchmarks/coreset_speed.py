"""Fit + predict time of every coreset method on a synthetic 110 x 50,000 binary matrix.

Usage: python benchmarks/coreset_speed.py

The size of paper 002's ImageNet set. Scores follow a 2PL model (ability x
discrimination - difficulty); 82 models are sources, 28 targets, n = 50.
Prints seconds per method (median of 3).
"""

import time

import numpy as np

from benchsel.coreset.methods import METHODS, make_method


def main() -> None:
    rng = np.random.default_rng(0)
    m, n_questions = 110, 50_000
    ability = rng.normal(size=(m, 1))
    slope = rng.lognormal(0, 0.3, size=(1, n_questions))
    difficulty = rng.normal(size=(1, n_questions))
    x = (rng.random((m, n_questions)) < 1 / (1 + np.exp(-slope * (ability - difficulty))))
    x = x.astype(float)
    source, target = x[:82], x[82:]
    print(f"{'method':24s} {'seconds':>8s}")
    for name in METHODS:
        times = []
        for trial in range(3):
            t0 = time.perf_counter()
            method = make_method(name).fit(source, 50, np.random.default_rng(trial))
            method.predict(target[:, method.selected_])
            times.append(time.perf_counter() - t0)
        print(f"{name:24s} {np.median(times):8.2f}")


if __name__ == "__main__":
    main()
