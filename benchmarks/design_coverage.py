"""How the design-based error bar covers, target by target, at the frontier.

Beyond the source models the default returns the design-weighted mean of
its own answers (one question per difficulty stratum) with the
successive-difference error bar (:func:`benchsel.coreset._base.successive_difference_sd`,
never zero on [0, 1] scores). This script draws that design ``--draws``
times for the held-out models of one split (the split itself is fixed;
only the questions vary) and prints, per held-out model: its true score,
how many of the n questions it gets wrong on average, the estimator's true
SD over the draws, the mean SD the error bar reports, and how often the
uncalibrated 90% interval covers the true score.

    python benchmarks/design_coverage.py [--files helm_gsm8k,helm_openbookqa]
        [--split frontier] [--draws 200] [-n 50] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _data import add_data_dir
from scipy.special import ndtri


def per_target(values: np.ndarray, split: str, n: int, draws: int) -> dict:
    """Per held-out model: true score, wrong answers, true SD, reported SD, coverage."""
    from benchsel.coreset.methods import StratifiedSampling
    from benchsel.evaluation.questions import model_split

    source, target = model_split(values, split, np.random.default_rng([0, 0]))
    src, tgt = values[source], values[target]
    true = tgt.mean(axis=1)
    z = ndtri(0.95)
    est, sd, wrong = [], [], []
    for d in range(draws):
        method = StratifiedSampling(n, random_state=np.random.default_rng([1, d])).fit(src)
        x = tgt[:, method.selected_]
        mean, s = method.predict(x)
        est.append(mean)
        sd.append(s)
        wrong.append((x < 0.5).sum(axis=1))
    est, sd = np.array(est), np.array(sd)
    return {"true": true, "wrong": np.mean(wrong, axis=0), "true_sd": est.std(axis=0),
            "reported_sd": sd.mean(axis=0),
            "coverage": (np.abs(est - true) <= z * sd).mean(axis=0)}


def main() -> None:
    from benchsel import read_scores

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_dir(parser)
    parser.add_argument("--files", default="helm_gsm8k,helm_openbookqa")
    parser.add_argument("--split", default="frontier")
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("-n", type=int, default=50)
    args = parser.parse_args()
    for name in args.files.split(","):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values = read_scores(args.data_dir / f"{name}.npz").values
        res = per_target(values, args.split, args.n, args.draws)
        print(f"\n{name}, {args.split} split, n = {args.n}, {args.draws} draws: "
              f"coverage {100 * res['coverage'].mean():.1f}% over the held-out models\n")
        print("| true score | wrong of n | true SD (points) | reported SD | coverage % |")
        print("|---|---|---|---|---|")
        for i in np.argsort(res["true"]):
            print(f"| {res['true'][i]:.3f} | {res['wrong'][i]:.2f} | "
                  f"{100 * res['true_sd'][i]:.2f} | {100 * res['reported_sd'][i]:.2f} | "
                  f"{100 * res['coverage'][i]:.0f} |")


if __name__ == "__main__":
    main()
