"""How much a one-per-stratum question draw can beat uniform sampling, computed exactly.

Usage: python benchmarks/stratification_bound.py [--data-dir DIR] [-n N] [--trials T]
                                               [--splits interpolation,extrapolation,frontier]
                                               [--draws D]

For each per-question file and split (the splits of ``benchsel coreset-eval``:
``benchsel.evaluation.questions.model_split``), the design standard deviation of
two estimators of a target model's full-benchmark mean, both from ``n``
questions, computed from the target's actual scores (finite-population
variances, no simulation):

* uniform: the mean of ``n`` questions drawn without replacement (the EGR
  baseline, ``random-sampling``);
* strata: one question from each of ``n`` difficulty strata
  (:func:`benchsel.coreset._base.difficulty_strata`, from the source models,
  as the default draws), weighted by stratum size; and the same with strata
  cut by the *targets'* own mean score per question (an oracle no method
  has: the best any ordering of the questions by difficulty can do).

The printed figure is ``mean sd(strata) / mean sd(uniform) - 1`` over the
targets (interpolation: over ``--trials`` random splits; extrapolation's
split is fixed): the EGR a design-based estimator on that draw can expect,
since its absolute error scales with its standard deviation. A design-based
estimator that also models each question (``aipw``, the default's
consistent branch) can do better only by as much as its model predicts a
target's individual answers beyond their stratum.

With ``--draws D`` it also prints each design's mean absolute error in
points over the targets (``D`` one-per-stratum draws per split, or ``D``
uniform samples, scored against the target's full mean): the expected gap
of the design-weighted mean on that draw, to set beside a method's measured
gap (``benchsel coreset-eval``'s ``gap``). The oracle column is the least
such a mean can expect from ``n`` questions drawn one per stratum when the
strata are cut by difficulty.
"""

import argparse
import warnings

import numpy as np
from _data import add_data_dir

from benchsel import DataWarning, read_scores
from benchsel.coreset._base import difficulty_strata
from benchsel.evaluation.questions import model_split


def design_sd(y: np.ndarray, strata: np.ndarray | None, n: int) -> np.ndarray:
    """Standard deviation of the (stratified) sample mean for each row of ``y``.

    Without replacement: ``S^2 / n (1 - n / N)`` for ``n`` uniform questions,
    ``sum_h W_h^2 S_h^2 (1 - 1 / N_h)`` for one question from each stratum
    ``h`` of ``N_h`` questions (``W_h = N_h / N``; ``S^2`` with divisor
    ``N - 1``).
    """
    total = y.shape[1]
    if strata is None:
        return np.sqrt(y.var(axis=1, ddof=1) / n * (1 - n / total))
    var = np.zeros(len(y))
    for h in range(n):
        members = strata == h
        size = members.sum()
        if size > 1:  # one question from a stratum of one has no variance
            var += (size / total) ** 2 * y[:, members].var(axis=1, ddof=1) * (1 - 1 / size)
    return np.sqrt(var)


def oracle_strata(targets: np.ndarray, n: int) -> np.ndarray:
    """``n`` near-equal strata by the targets' own mean score per question."""
    order = np.argsort(targets.mean(axis=0), kind="stable")
    strata = np.empty(targets.shape[1], dtype=np.intp)
    strata[order] = np.arange(targets.shape[1]) * n // targets.shape[1]
    return strata


def draw_mae(y: np.ndarray, strata: np.ndarray | None, n: int, draws: int, rng) -> float:
    """Mean absolute error (in ``y``'s units) of the design-weighted mean over ``draws``
    draws: one question per stratum, or ``n`` uniform without replacement (``None``)."""
    truth = y.mean(axis=1)
    total = y.shape[1]
    if strata is None:
        picks = np.argsort(rng.random((draws, total)), axis=1)[:, :n]
        weights = np.full(n, 1.0 / n)
    else:
        members = [np.flatnonzero(strata == h) for h in range(n)]
        picks = np.stack([m[rng.integers(0, m.size, draws)] for m in members], axis=1)
        weights = np.array([m.size / total for m in members])
    estimates = y[:, picks] @ weights  # targets x draws
    return float(np.mean(np.abs(estimates - truth[:, None])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(parser)
    parser.add_argument("-n", type=int, default=50)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--splits", default="interpolation,extrapolation",
                        help="comma-separated: interpolation, extrapolation, frontier")
    parser.add_argument("--draws", type=int, default=0,
                        help="also the designs' mean absolute error (points) over this many "
                        "draws per split")
    args = parser.parse_args()
    splits = args.splits.split(",")
    head = "| file | split | difficulty strata (the default's draw) | oracle strata |"
    if args.draws:
        head += " MAE points: uniform / default's strata / oracle strata |"
    print(head)
    print("|---" * head.count(" | ") + "|---|")
    rng = np.random.default_rng(0)
    for path in sorted(args.data_dir.glob("*.npz")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            values = read_scores(path).values
        for split in splits:
            trials = args.trials if split == "interpolation" else 1
            ratio = {"strata": [], "oracle": []}
            mae = {"uniform": [], "strata": [], "oracle": []}
            for trial in range(trials):
                src, tgt = model_split(values, split, np.random.default_rng([0, trial]))
                y = values[tgt]
                uniform = design_sd(y, None, args.n).mean()
                strata = difficulty_strata(values[src], args.n)
                ratio["strata"].append(design_sd(y, strata, args.n).mean() / uniform - 1)
                oracle = oracle_strata(y, args.n)
                ratio["oracle"].append(design_sd(y, oracle, args.n).mean() / uniform - 1)
                if args.draws:
                    for name, cut in (("uniform", None), ("strata", strata), ("oracle", oracle)):
                        mae[name].append(draw_mae(y, cut, args.n, args.draws, rng))
            row = (f"| {path.stem} | {split} | {100 * np.mean(ratio['strata']):+.1f}% | "
                   f"{100 * np.mean(ratio['oracle']):+.1f}% |")
            if args.draws:
                row += " " + " / ".join(f"{100 * np.mean(mae[k]):.2f}" for k in mae) + " |"
            print(row, flush=True)


if __name__ == "__main__":
    main()
