"""Fit + predict time of every coreset method on a synthetic 110 x 50,000 binary matrix.

Usage: python benchmarks/coreset_speed.py [--repeats R] [--methods a,b]

The size of paper 002's ImageNet set. Scores follow a 2PL model (ability x
discrimination - difficulty); 82 models are sources, 28 targets, n = 50.
Prints seconds per method (median of R, default 3) beside the issue's limit
(60 s for random-search-learn and the IRT methods, 10 s for the others) and
paper 002's published time for the reference code where there is one.
"""

import argparse
import time

import numpy as np

from benchsel.coreset.registry import make_method, method_names

SLOW = {"random-search-learn", "p-irt", "gp-irt", "gp-irt++"}
# Paper 002's table of times (ImageNet): training + inference seconds of the
# reference implementations.
PUBLISHED = {"random-sampling": 0.0, "random-sampling-learn": 0.02, "pca": 19.79,
             "aipw": 0.27, "random-search-learn": 81.02, "lasso": 105.59,
             "double-optimize": 4.88, "anchor-points-weighted": 84.26,
             "anchor-points-predictor": 197.97, "p-irt": 586.62, "gp-irt": 1751.09}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", default="all")
    args = parser.parse_args()
    names = method_names("all") if args.methods == "all" else args.methods.split(",")
    rng = np.random.default_rng(0)
    m, n_questions = 110, 50_000
    ability = rng.normal(size=(m, 1))
    slope = rng.lognormal(0, 0.3, size=(1, n_questions))
    difficulty = rng.normal(size=(1, n_questions))
    x = (rng.random((m, n_questions)) < 1 / (1 + np.exp(-slope * (ability - difficulty))))
    x = x.astype(float)
    source, target = x[:82], x[82:]
    print(f"{'method':26s} {'seconds':>8s} {'limit':>6s} {'paper 002':>10s}")
    for name in names:
        times = []
        for trial in range(args.repeats):
            t0 = time.perf_counter()
            method = make_method(name, n_questions=50, random_state=trial).fit(source)
            method.predict(target[:, method.selected_])
            times.append(time.perf_counter() - t0)
        limit = 60 if name in SLOW else 10
        published = f"{PUBLISHED[name]:10.2f}" if name in PUBLISHED else f"{'':>10s}"
        print(f"{name:26s} {np.median(times):8.2f} {limit:6d} {published}", flush=True)


if __name__ == "__main__":
    main()
