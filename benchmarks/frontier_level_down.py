"""Can the sources tell, one level down, whether the frontier shift will help?

Usage: python benchmarks/frontier_level_down.py [--boards open_llm_v2]
                                                [--protocols frontier,extrapolation]
                                                [--objectives mi,random] [--k-max 5]
                                                [--data-dir DIR]

The Gaussian's frontier shift (:meth:`benchsel.models.GaussianCalibrator.frontier_shift`)
is measured on the sources' own strongest 10%, predicted from a fit on the
others, and added to a new model at the sources' frontier. A rule that
decided *whether* to shift, from the sources alone, could only look one
level down: fit what ``predict`` ships on the sources without their
strongest 10% (which measures its own shift on *their* strongest 10%), and
see whether the shift helps the strongest 10% of the sources.

This script puts that level-down evidence beside what the board's own
targets show. On each board's split (``frontier``: every model but the
strongest 10%; ``extrapolation``: the weakest half, the strongest 30%
predicted) it selects ``k`` benchmarks (MI, or a random order, seed 0) on
the sources and, per ``k``, for the models the shift moves
(``frontier_shift`` in the Gaussian's calibration records):

* ``down``: ``GaussianModel().fit`` on the sources but their strongest 10%,
  predicting those 10% -- the Gaussian as shipped (shifted) against the
  same fit without calibration (no shift), and against ``gp``;
* ``board``: ``GaussianModel().fit`` on the sources, predicting the
  split's targets, the same comparisons.

Each figure is the mean over moved models of their mean squared error
(standardized with the sources' statistics, clipped to ±10) shifted minus
unshifted, with its standard error over models. ``agree`` says whether the
two levels point the same way where the level-down difference is more than
2 SE from 0 (``-`` where it is not).
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _data import LEADERBOARDS, add_data_dir, quiet_boards
from frontier_shift import columns

from benchsel import GaussianModel, ScoreMatrix
from benchsel.splits import frontier_split, strength_split

CLIP = 10.0
SPLITS = {"frontier": frontier_split, "extrapolation": strength_split}


def moved_errors(shipped: GaussianModel, plain: GaussianModel, held: ScoreMatrix, given,
                 std, other: str = "gp"):
    """Per moved model: mean squared error of the shifted Gaussian minus the unshifted one,
    and minus ``other``'s (NaN rows dropped)."""
    x = columns(held, given)
    shifted = shipped.predict(x, method="gaussian")
    moved = np.array([c.get("frontier_shift", False) for c in shifted.calibration])
    truth = held.values[:, [held.items.index(b) for b in shifted.items]]
    scored = ~np.isnan(truth) & ~np.asarray(shifted.observed, dtype=bool)
    y = np.clip(std.transform(truth), -CLIP, CLIP)

    def mse(mean):
        err = np.where(scored, (y - np.clip(std.transform(mean), -CLIP, CLIP)) ** 2, np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a model with nothing scored
            return np.nanmean(err, axis=1)

    base = mse(shifted.mean)
    out = []
    for reference in (plain.predict(x, method="gaussian"), plain.predict(x, method=other)):
        d = (base - mse(reference.mean))[moved]
        out.append(d[~np.isnan(d)])
    return int(moved.sum()), out


def summary(d: np.ndarray) -> tuple[float, float]:
    if d.size < 2:
        return float("nan"), float("nan")
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size))


def run(board: str, scores: ScoreMatrix, protocol: str, objective: str, k_max: int) -> None:
    split = SPLITS[protocol](scores.values)
    sources = scores.subset(models=split.train)
    targets = scores.subset(models=split.validation)
    inner = frontier_split(sources.values)
    below = sources.subset(models=inner.train)
    strongest = sources.subset(models=inner.validation)
    levels = {
        "down": (GaussianModel().fit(below), GaussianModel(calibration="none").fit(below),
                 strongest),
        "board": (GaussianModel().fit(sources), GaussianModel(calibration="none").fit(sources),
                  targets),
    }
    std = levels["board"][0].standardizer_
    order = levels["board"][0].select(k_max, objective=objective).items
    for k in range(1, k_max + 1):
        given = list(order[:k])
        cells, signs = [], []
        for shipped, plain, held in levels.values():
            moved, diffs = moved_errors(shipped, plain, held, given, std)
            stats = [summary(d) for d in diffs]
            signs.append(stats[0])
            cells.append(f"{moved} | " + " | ".join(f"{m:+.3f} ({se:.3f})" for m, se in stats))
        (down, down_se), (up, _) = signs
        agree = "-" if not abs(down) > 2 * down_se else ("yes" if down * up > 0 else "**no**")
        print(f"| {board} | {protocol} | {objective} | {k} | " + " | ".join(cells)
              + f" | {agree} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default="open_llm_v2")
    parser.add_argument("--protocols", default="frontier,extrapolation")
    parser.add_argument("--objectives", default="mi,random")
    parser.add_argument("--k-max", type=int, default=5)
    add_data_dir(parser, LEADERBOARDS)
    args = parser.parse_args()
    print("moved models' mean squared error, shifted Gaussian minus unshifted / minus gp "
          "(SE over models); down: the sources' strongest 10% from the rest\n")
    print("| board | protocol | objective | k | down: moved | − unshifted | − gp "
          "| board: moved | − unshifted | − gp | agree |")
    print("|---" * 11 + "|")
    for board, scores, k_max in quiet_boards(args.boards, args.data_dir, args.k_max):
        for protocol in args.protocols.split(","):
            for objective in args.objectives.split(","):
                run(board, scores, protocol, objective, k_max)


if __name__ == "__main__":
    main()
