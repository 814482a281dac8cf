"""Pilot for issue 4: estimation gap of three question-level estimators at n = 50.

Usage: python benchmarks/question_level_pilot.py [DATA_DIR]

For each per-question matrix in DATA_DIR (default ../shared/data/questions)
and each split -- interpolation (random 75% source / 25% target models, 10
trials) and extrapolation (weakest 50% source, strongest 30% target; the
split is fixed, 4 trials of the random draws) -- it prints the estimation gap
(mean |true - predicted| full-benchmark score, x100) of

* random: the mean of 50 uniformly random questions;
* greedy: benchsel's LowRankGaussian, greedy variance reduction of the mean
  score, Gaussian conditional prediction;
* dr: 50 random questions, Gaussian conditional prediction of the unrun ones,
  debiased by the mean leave-one-out residual on the run ones, with a
  design-based standard error (coverage of its 90% interval is printed);

and the gap reduction versus random (EGR, negative = better).
"""

import sys
import warnings
from pathlib import Path

import numpy as np

from benchsel import read_scores
from benchsel.coreset.gaussian import LowRankGaussian
from benchsel.splits import random_split, strength_split


def split(x, kind, rng):
    fold = (random_split(x.shape[0], rng) if kind == "interpolation"
            else strength_split(x, strength=x.mean(axis=1)))
    return fold.train, fold.validation


def debiased(model, x_target, a):
    """Gaussian prediction of the unrun questions, corrected by LOO residuals on the run ones."""
    w, d, mu = model.w_[a], model.d_[a], model.mean_
    prec = np.linalg.inv(w @ w.T + np.diag(d))
    alpha = (x_target[:, a] - mu[a]) @ prec
    full = mu + alpha @ (w @ model.w_.T)
    full[:, a] += alpha * d
    loo = x_target[:, a] - alpha / np.diag(prec)
    n = x_target.shape[1]
    unrun = np.ones(n, bool)
    unrun[a] = False
    resid = x_target[:, a] - loo
    estimate = (x_target[:, a].sum(1) + full[:, unrun].sum(1) + resid.mean(1) * unrun.sum()) / n
    stderr = resid.std(1, ddof=1) / np.sqrt(len(a)) * unrun.sum() / n
    return estimate, stderr


def main() -> None:
    default = Path(__file__).parents[2] / "shared/data/questions"
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    print(f"{'dataset':24s} {'split':13s} {'random':>7s} {'greedy':>14s} {'dr':>14s} "
          f"{'dr cov90':>8s}")
    for path in sorted(root.glob("*.npz")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # repeated model names are numbered
            x = read_scores(path).values
        for kind in ("interpolation", "extrapolation"):
            gaps = {"random": [], "greedy": [], "dr": []}
            cover = []
            for trial in range(10 if kind == "interpolation" else 4):
                rng = np.random.default_rng(trial)
                src, tgt = split(x, kind, rng)
                target, truth = x[tgt], x[tgt].mean(1)
                model = LowRankGaussian().fit(x[src])
                sample = rng.choice(x.shape[1], 50, replace=False)
                gaps["random"].append(np.abs(target[:, sample].mean(1) - truth).mean())
                chosen = model.select(50)
                pred, _ = model.predict_mean(target[:, chosen], chosen)
                gaps["greedy"].append(np.abs(pred - truth).mean())
                est, se = debiased(model, target, sample)
                gaps["dr"].append(np.abs(est - truth).mean())
                cover.append(np.mean(np.abs(est - truth) <= 1.645 * se))
            base = 100 * np.mean(gaps["random"])
            cells = []
            for k in ("greedy", "dr"):
                gap = 100 * np.mean(gaps[k])
                cells.append(f"{gap:6.2f} ({100 * (gap - base) / base:+4.0f}%)")
            print(f"{path.stem:24s} {kind:13s} {base:7.2f} {cells[0]:>14s} {cells[1]:>14s} "
                  f"{100 * np.mean(cover):7.1f}%")


if __name__ == "__main__":
    main()
