"""Coverage of ``compare --paired`` intervals where the truth is known.

For each shared per-question file: random pairs of models; the truth is their
mean difference over every question both answered; each draw shows the pair
``--questions`` of those questions, and the nominal 90% paired interval is
checked against the truth.

    python benchmarks/paired.py [--pairs 20] [--draws 100] [--questions 100] [--seed 0]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _data import add_data_dir

from benchsel.analyses.paired import paired_difference
from benchsel.io import read_scores
from benchsel.matrix import DataWarning


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--draws", type=int, default=100)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    add_data_dir(parser)
    args = parser.parse_args()
    warnings.simplefilter("ignore", DataWarning)  # repeated model names, renumbered
    print(f"{'file':<24}{'models':>7}{'questions':>10}{'coverage 90%':>14}{'mean width':>12}")
    for path in sorted(args.data_dir.glob("*.npz")):
        scores = read_scores(path)
        rng = np.random.default_rng(args.seed)
        hits, widths = [], []
        for _ in range(args.pairs):
            i, j = rng.choice(scores.n_models, 2, replace=False)
            both = np.flatnonzero(~np.isnan(scores.values[i]) & ~np.isnan(scores.values[j]))
            if both.size < 2 * args.questions:
                continue
            truth = float(np.mean(scores.values[j, both] - scores.values[i, both]))
            for _ in range(args.draws):
                sample = scores.subset(items=rng.choice(both, args.questions, replace=False))
                r = paired_difference(sample, scores.models[i], scores.models[j])
                hits.append(r.low <= truth <= r.high)
                widths.append(r.high - r.low)
        if hits:
            print(f"{path.stem:<24}{scores.n_models:>7}{scores.n_items:>10}"
                  f"{100 * np.mean(hits):>13.1f}%{np.mean(widths):>12.3f}")


if __name__ == "__main__":
    main()
