"""Can an estimator that stays design-consistent learn at the frontier?

Beyond the source models the default (``guarded-ensemble``) returns the
design-weighted mean of the answers it asked for (``stratified-sampling``'s
estimate): every model-based predictor regresses toward the sources. A
difference estimator, ``mean(pred over all questions) + sum_i w_i (y_i -
pred_i)`` over the drawn questions, is design-unbiased whatever the
per-question prediction ``pred``, so it may use a model beyond the sources
too; it gains where ``pred`` explains the target's answers within the
difficulty strata. This script scores, on the default's own draws (one
question per difficulty stratum, n = 50), for the held-out models of a split:

* ``stratified`` -- the design-weighted mean (what the default returns there);
* ``aipw`` -- the difference estimator with a per-target ridge regression from
  each question's source scores to the target's answer (the ensemble's third
  part, Zhang et al. 2025 eq. 3 in difference form);
* ``logistic`` -- the difference estimator with a per-target logistic curve in
  the logit of each question's difficulty (a one-parameter IRT-style fit);
  binary files only (else the design-weighted mean);
* ``ensemble`` -- the default's model-based estimate (not design-consistent;
  what the guard keeps from the frontier).

It prints each one's gap (mean |true - estimate| x 100) per file and the
paired standard error of its difference from ``stratified``.

    python benchmarks/frontier_estimators.py [--splits frontier,extrapolation]
        [--trials 30] [--jobs 2] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _data import add_data_dir

ESTIMATORS = ("stratified", "aipw", "logistic", "ensemble")


def _logistic_difference(difficulty, selected, rows, weights):
    """The difference estimator with a logistic curve in logit(difficulty), per row."""
    from scipy.special import logit
    from sklearn.linear_model import LogisticRegression

    z = logit(np.clip(difficulty, 0.01, 0.99))[:, None]
    out = []
    for row in rows:
        answers = (row > 0.5).astype(int)
        if answers.min() == answers.max():  # one class: no curve to fit
            out.append(row @ weights)
            continue
        pred = LogisticRegression(C=1.0).fit(z[selected], answers).predict_proba(z)[:, 1]
        out.append(pred.mean() + (row - pred[selected]) @ weights)
    return np.array(out)


def trial_gaps(path, split: str, trial: int) -> list[float]:
    """Each estimator's gap on one split and draw of one file."""
    from benchsel import read_scores
    from benchsel.coreset._base import question_difficulty
    from benchsel.coreset.methods import GuardedEnsemble, aipw_estimate
    from benchsel.evaluation.questions import model_split

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values = read_scores(path).values
    source, target = model_split(values, split, np.random.default_rng([0, trial]))
    src, tgt = values[source], values[target]
    method = GuardedEnsemble(50, random_state=np.random.default_rng([1, trial])).fit(src)
    a, w = method.selected_, method.weights_
    x, true = tgt[:, a], tgt.mean(axis=1)
    stratified = method.design_estimate(x)[0]
    aipw = aipw_estimate(src.T, a, x, method.question_sd_, w)[0]
    binary = bool(np.isin(src, (0.0, 1.0)).all())
    logistic = _logistic_difference(question_difficulty(src), a, x, w) if binary else stratified
    ensemble = method.model_based_estimate(x)[0]
    return [100 * float(np.abs(e - true).mean()) for e in (stratified, aipw, logistic, ensemble)]


def main() -> None:
    from joblib import Parallel, delayed

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_dir(parser)
    parser.add_argument("--splits", default="frontier,extrapolation")
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    paths = sorted(args.data_dir.glob("*.npz"))
    for split in args.splits.split(","):
        print(f"\n{split}, n = 50, {args.trials} trials: gap in points "
              "(paired SE of the difference from stratified)\n")
        print("| file | " + " | ".join(ESTIMATORS) + " |")
        print("|---" * (len(ESTIMATORS) + 1) + "|")
        total = np.zeros(len(ESTIMATORS))
        for path in paths:
            gaps = np.array(Parallel(n_jobs=args.jobs)(
                delayed(trial_gaps)(path, split, t) for t in range(args.trials)))
            mean = gaps.mean(axis=0)
            se = (gaps[:, 1:] - gaps[:, :1]).std(axis=0, ddof=1) / np.sqrt(args.trials)
            total += mean
            cells = [f"{mean[0]:.2f}"] + [f"{m:.2f} ({s:.2f})" for m, s in zip(mean[1:], se)]
            print(f"| {path.stem} | " + " | ".join(cells) + " |", flush=True)
        print("| **mean** | " + " | ".join(f"**{m:.2f}**" for m in total / len(paths)) + " |")


if __name__ == "__main__":
    main()
