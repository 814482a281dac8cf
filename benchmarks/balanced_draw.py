"""Would a one-per-stratum draw that balances the sources' means beat the default's draw?

Usage: python benchmarks/balanced_draw.py [--data-dir DIR] [--files A,B] [--draws R]
       [-n N] [--trials T] [--seed S]

The default draws one question from each of ``n`` difficulty strata
(:func:`benchsel.coreset._base.difficulty_strata`) and, beyond the sources,
estimates a target's mean by the design-weighted mean of its answers. A
deterministic choice of questions (anchor points, double-optimize) beats a
random one wherever the sources' structure carries over to the target, and
fails where it does not. Rerandomization sits between the two: draw ``R``
stratified samples, score each by how far its design-weighted mean is from
the full mean for the source models (mean squared imbalance over the
sources), and keep only the best share ``q`` of them. The design stays
random, but the kept draws are those on which every source model scores as
it does on the whole benchmark.

For each file and split (``benchsel.evaluation.questions.model_split``; the
interpolation split over ``--trials`` random splits, the others fixed), the
design-weighted mean is scored on the held-out targets over the kept draws:
its mean absolute error and root mean squared error (points), and the
largest mean error of one target over the kept draws in units of its Monte
Carlo standard error (``bias t``: about 2-3 for 10-16 unbiased targets; far
more means the kept draws favour questions the target answers unlike the
rest, which a design-based error bar cannot see). Interpolation's figures
are averages over its trials, the largest ``bias t`` included.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _data import add_data_dir

from benchsel import DataWarning, read_scores
from benchsel.coreset._base import difficulty_strata
from benchsel.evaluation.questions import model_split

SPLITS = ("interpolation", "extrapolation", "frontier")
KEEP = (1.0, 0.2, 0.05, 0.01)


def stratified_draws(strata: np.ndarray, n: int, draws: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """``draws`` one-per-stratum samples (draws x n question indices) and the stratum weights."""
    members = [np.flatnonzero(strata == h) for h in range(n)]
    picks = np.stack([rng.choice(m, draws) for m in members], axis=1)
    return picks, np.array([m.size for m in members]) / strata.size


def design_means(scores: np.ndarray, picks: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Design-weighted mean of every model (rows of ``scores``) on every draw: (models x draws)."""
    return np.einsum("mdn,n->md", scores[:, picks], weight)


def score_split(values, split, n, draws, rng) -> dict[float, np.ndarray]:
    """Per kept share: the targets' errors over the kept draws (targets x kept)."""
    sources, targets = model_split(values, split, rng)
    source, target = values[sources], values[targets]
    picks, weight = stratified_draws(difficulty_strata(source, n), n, draws, rng)
    imbalance = np.mean((design_means(source, picks, weight)
                         - source.mean(axis=1, keepdims=True)) ** 2, axis=0)
    error = design_means(target, picks, weight) - target.mean(axis=1, keepdims=True)
    return {q: error[:, imbalance <= np.quantile(imbalance, q)] for q in KEEP}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_dir(parser)
    parser.add_argument("--files", default=None, help="comma-separated names (default: all)")
    parser.add_argument("--draws", type=int, default=20_000, help="stratified draws per split")
    parser.add_argument("-n", type=int, default=50)
    parser.add_argument("--trials", type=int, default=3, help="interpolation splits per file")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    paths = (sorted(args.data_dir.glob("*.npz")) if args.files is None
             else [args.data_dir / f"{f}.npz" for f in args.files.split(",")])
    print(f"{'file':<24}{'split':<15}" + "".join(f"{'keep ' + format(q, 'g'):>22}" for q in KEEP))
    print(f"{'':<39}" + "   MAE  RMSE bias t" * len(KEEP))
    for path in paths:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            values = read_scores(path).values
        for split in SPLITS:
            per_keep = {q: [] for q in KEEP}
            for trial in range(args.trials if split == "interpolation" else 1):
                rng = np.random.default_rng([args.seed, trial])
                for q, error in score_split(values, split, args.n, args.draws, rng).items():
                    se = error.std(axis=1, ddof=1) / np.sqrt(error.shape[1])
                    bias = np.abs(error.mean(axis=1))
                    # A target that answers every question alike has no error on any draw
                    # (only rounding).
                    t = np.divide(bias, se, out=np.zeros_like(bias), where=se > 1e-9)
                    per_keep[q].append((np.abs(error).mean() * 100,
                                        np.sqrt(np.mean(error**2)) * 100, t.max()))
            cells = "".join(f"{mae:6.2f}{rmse:6.2f}{t:7.1f}" for mae, rmse, t in
                            (np.mean(per_keep[q], axis=0) for q in KEEP))
            print(f"{path.stem:<24}{split:<15}{cells}", flush=True)


if __name__ == "__main__":
    main()
