"""Does choosing each next batch of questions from the answers so far help? A first probe.

Usage: python benchmarks/adaptive_probe.py [--files a.npz,b.npz] [--splits frontier,extrapolation]
                                           [--trials 10] [-n 50] [--batch 10] [--dim 1]

Issue 54 asks whether an adaptive design beats a static one at question level.
This script measures the simplest adaptive design, computerized adaptive testing
with a 2PL IRT model (the baseline the issue names), against the static designs
on the same held-out models, per shared per-question file and split:

* ``stratified``: the default's questions (one per difficulty stratum of the
  source models), estimated by their design-weighted mean (the
  ``stratified-sampling`` method);
* ``p-IRT static``: the same IRT model's estimate (paper 002, eq. 12) from those
  same static questions -- it separates what the estimator gains from what
  adaptivity gains;
* ``adaptive``: a first batch of ``batch`` stratified questions, then batch after
  batch the unasked questions of most Fisher information ``|a_j|^2 p_j (1 - p_j)``
  at the ability estimated from the answers so far, until ``n``; the same p-IRT
  estimate from the questions asked.

The IRT model (``--dim``, default 1) is fitted once per file and split on the
source models (:func:`benchsel.coreset.irt.fit_irt`). Each held-out model
answers from its own row. Printed per file and split: the mean absolute error
of the full-task score (points, x100), averaged over trials, and the adaptive
design's change against each static one (negative: adaptive is better). Nothing
here is shipped; it is the measurement the issue's next step starts from.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _data import add_data_dir
from scipy.special import expit

from benchsel.coreset.irt import estimate_ability, fit_irt, pirt_prediction
from benchsel.coreset.registry import make_method
from benchsel.evaluation.questions import model_split


def adaptive_questions(fit, row: np.ndarray, first: np.ndarray, n: int, batch: int,
                       prior_sd: float = 10.0) -> np.ndarray:
    """The questions a held-out model with answers ``row`` is asked, ``batch`` at a time."""
    a, b = fit.discrimination, fit.difficulty
    strength = (a**2).sum(axis=1)
    asked = list(first)
    while len(asked) < n:
        theta, _ = estimate_ability(row[None, asked], a[asked], b[asked], prior_sd=prior_sd)
        p = expit(theta @ a.T - b)[0]
        info = strength * p * (1 - p)
        info[asked] = -np.inf
        asked += list(np.argsort(-info, kind="stable")[:min(batch, n - len(asked))])
    return np.array(asked)


def probe(values: np.ndarray, split: str, trials: int, n: int, batch: int, dim: int,
          seed: int = 0) -> dict:
    """Mean absolute errors (x100) of the three designs over ``trials``."""
    rng = np.random.default_rng(seed)
    src, tgt = model_split(values, split, rng)
    source, targets = values[src], values[tgt]
    truth = targets.mean(axis=1)
    fit = fit_irt(source, dim=dim)
    errors = {"stratified": [], "p-IRT static": [], "adaptive": []}
    for trial in range(trials):
        static = make_method("stratified-sampling", n_questions=n,
                             random_state=np.random.default_rng([seed, trial])).fit(source)
        mean, _ = static.predict(targets[:, static.selected_])
        errors["stratified"].append(np.abs(mean - truth).mean())
        irt_static, _ = pirt_prediction(fit, static.selected_, targets[:, static.selected_])
        errors["p-IRT static"].append(np.abs(irt_static - truth).mean())
        first = make_method("stratified-sampling", n_questions=batch,
                            random_state=np.random.default_rng([seed, trial, 1])).fit(source).selected_
        adaptive = np.empty(len(targets))
        for r, row in enumerate(targets):
            asked = adaptive_questions(fit, row, first, n, batch)
            adaptive[r] = pirt_prediction(fit, asked, row[None, asked])[0][0]
        errors["adaptive"].append(np.abs(adaptive - truth).mean())
    return {k: 100 * float(np.mean(v)) for k, v in errors.items()} | {
        "targets": len(tgt), "sources": len(src),
        "se_vs_stratified": 100 * float(np.std(np.subtract(errors["adaptive"],
                                                           errors["stratified"]), ddof=1)
                                        / np.sqrt(trials)) if trials > 1 else float("nan")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_dir(parser)
    parser.add_argument("--files", default=None, help="comma-separated per-question files "
                        "(default: every file in the data folder's questions/)")
    parser.add_argument("--splits", default="frontier,extrapolation")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("-n", type=int, default=50)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--dim", type=int, default=1)
    args = parser.parse_args()
    folder = args.data_dir
    files = ([folder / f for f in args.files.split(",")] if args.files
             else sorted(folder.glob("*.npz")))
    print("| file | split | sources / targets | stratified | p-IRT static | adaptive | "
          "adaptive vs stratified | adaptive vs p-IRT static |")
    print("|---|---|---|---|---|---|---|---|")
    for path in files:
        values = np.load(path, allow_pickle=False)["scores"].astype(float)
        for split in args.splits.split(","):
            start = time.process_time()
            r = probe(values, split, args.trials, args.n, args.batch, args.dim)
            print(f"| {Path(path).stem} | {split} | {r['sources']} / {r['targets']} | "
                  f"{r['stratified']:.2f} | {r['p-IRT static']:.2f} | {r['adaptive']:.2f} | "
                  f"{100 * (r['adaptive'] / r['stratified'] - 1):+.0f}% "
                  f"(SE {r['se_vs_stratified']:.2f} pts) | "
                  f"{100 * (r['adaptive'] / r['p-IRT static'] - 1):+.0f}% | "
                  f"<!-- {time.process_time() - start:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
