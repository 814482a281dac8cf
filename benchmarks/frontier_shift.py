"""At the frontier, would each completion method gain from a shift measured on the sources'
own frontier?

Usage: python benchmarks/frontier_shift.py [--boards mteb,merged] [--k-max 5]
                                           [--methods gaussian,gp,ridge,svd]
                                           [--resamples 1000] [--data-dir DIR]

Since 3dab91d every method has a frontier correction where the sources hold
300 complete models (:mod:`benchsel.prediction.frontier`; open_llm_v2 among
the bundled boards). This script measures the same idea on *every* board,
without that gate, beside the shipped default. On each board's frontier split
(:func:`benchsel.splits.frontier_split`) the sources are split again the
same way -- their own strongest 10% (at least 5) predicted from a fit on
the others with the same ``k`` MI-selected benchmarks -- and each method's
mean residual per predicted benchmark there (truth minus prediction, in the
board's units) is its shift. The board's targets are then predicted by the
method fitted on all the sources without any calibration
(``GaussianModel(calibration="none")``, so that no correction is in the
plain figure), as they are and with the shift added to the targets
``predict`` would move today (``moved``: their mean given score among the
sources' strongest 3% or above, :data:`~benchsel.calibration.FRONTIER_APPLY_FRACTION`;
the others are predicted plainly) -- on every predicted benchmark
(``all``), or only where the mean residual is more than two standard errors
from 0 (``2 SE``, the Gaussian's own rule). Neither the shift nor the rule
that applies it sees a target's hidden scores.

Cells are scored as ``frontier_r2.py`` scores them (standardized with the
sources' statistics, clipped to ±10, R² pooled over every target's
unselected benchmarks). Per board and ``k`` it prints the shipped default's
R², and per method its R² plain / shifted (all) / shifted (2 SE), and the
shifted-(2 SE) R² minus the default's with a paired two-way bootstrap
standard error (targets and benchmarks resampled apart).
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _data import LEADERBOARDS, add_data_dir, quiet_boards
from frontier_r2 import CLIP, pooled_r2, squared_errors

from benchsel import GaussianModel, ScoreMatrix
from benchsel.calibration import FRONTIER_APPLY_FRACTION, frontier_rows
from benchsel.names import DEFAULT_PREDICTOR
from benchsel.splits import frontier_split

BOARDS = ("mteb", "merged", "open_llm_v2", "helm_lite", "bigcodebench", "wildbench",
          "livebench", "alpaca_eval")


def columns(scores: ScoreMatrix, items) -> ScoreMatrix:
    """``scores`` on ``items`` only, in that order."""
    idx = [scores.items.index(b) for b in items]
    return ScoreMatrix(scores.values[:, idx], list(scores.models), list(items))


def frontier_shift(inner: GaussianModel, held: ScoreMatrix, given, method: str):
    """Per predicted item, the mean residual on ``held`` (all) and that mean where it is
    more than two standard errors from 0 (else 0)."""
    p = inner.predict(columns(held, given), method=method)
    truth = held.values[:, [held.items.index(b) for b in p.items]]
    resid = np.where(np.asarray(p.observed, dtype=bool), np.nan, truth - p.mean)
    n = (~np.isnan(resid)).sum(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # items no held-out model has
        mean = np.nanmean(resid, axis=0)
        se = np.nanstd(resid, axis=0, ddof=1) / np.sqrt(np.maximum(n, 1))
    mean = np.where(n > 0, mean, 0.0)
    clear = (n >= 2) & (np.abs(mean) > 2 * se)
    return mean, np.where(clear, mean, 0.0)


def at_frontier(model: GaussianModel, sources: ScoreMatrix, targets: ScoreMatrix, given):
    """Which targets ``predict`` would treat as at the sources' frontier: their mean given
    score (the model's units) at or above the sources' ``1 - FRONTIER_APPLY_FRACTION``
    quantile, the rule that moves a model by the Gaussian's shift today."""
    def z(scores):
        return model.standardizer_.transform(model.transform_.forward(
            columns(scores, model.items_).values))
    cols = [model.items_.index(b) for b in given]
    return frontier_rows(z(sources)[:, cols], z(targets)[:, cols], FRONTIER_APPLY_FRACTION)


def scored_errors(model: GaussianModel, targets: ScoreMatrix, given, method: str, shifts,
                  moved: np.ndarray):
    """Squared errors (one array per shift, added to the ``moved`` targets only; targets
    x items) and squared truths."""
    p = model.predict(columns(targets, given), method=method)
    truth = targets.values[:, [targets.items.index(b) for b in p.items]]
    unshifted = np.asarray(p.observed, dtype=bool) | ~moved[:, None]
    std = model.standardizer_
    y = np.clip(std.transform(truth), -CLIP, CLIP)
    scored = ~np.isnan(truth) & ~np.asarray(p.observed, dtype=bool)
    errs = []
    for shift in shifts:
        pred = np.clip(std.transform(p.mean + np.where(unshifted, 0.0, shift)), -CLIP, CLIP)
        errs.append(np.where(scored, (y - pred) ** 2, np.nan))
    return errs, np.where(scored, y**2, np.nan)


def bootstrap_se(a: np.ndarray, b: np.ndarray, tot: np.ndarray, resamples: int, rng) -> float:
    """Two-way bootstrap SE of ``R²(a) - R²(b)`` (targets and benchmarks resampled apart)."""
    n_rows, n_cols = tot.shape
    diffs = np.empty(resamples)
    for r in range(resamples):
        rows = np.bincount(rng.integers(0, n_rows, n_rows), minlength=n_rows)
        cols = np.bincount(rng.integers(0, n_cols, n_cols), minlength=n_cols)
        diffs[r] = pooled_r2(a, tot, rows, cols) - pooled_r2(b, tot, rows, cols)
    return float(np.nanstd(diffs, ddof=1))


def run_board(board: str, scores: ScoreMatrix, k_max: int, methods, resamples: int) -> None:
    split = frontier_split(scores.values)
    sources = scores.subset(models=split.train)
    targets = scores.subset(models=split.validation)
    inner_split = frontier_split(sources.values)
    shipped = GaussianModel().fit(sources)
    plain = GaussianModel(calibration="none").fit(sources)
    inner = GaussianModel(calibration="none").fit(sources.subset(models=inner_split.train))
    held = sources.subset(models=inner_split.validation)
    order = shipped.select(k_max, objective="mi").items
    for k in range(1, k_max + 1):
        given = list(order[:k])
        err0, tot = squared_errors(shipped, targets, given, DEFAULT_PREDICTOR)
        keep = ~np.isnan(tot).all(axis=0)  # benchmarks no target has are not scored
        moved = at_frontier(plain, sources, targets, given)
        cells = [f"{moved.sum()}", f"{pooled_r2(err0[:, keep], tot[:, keep]):.3f}"]
        rng = np.random.default_rng(k)
        for method in methods:
            every, clear = frontier_shift(inner, held, given, method)
            (e_plain, e_all, e_clear), _ = scored_errors(plain, targets, given, method,
                                                         (0.0, every, clear), moved)
            r2 = [pooled_r2(e[:, keep], tot[:, keep]) for e in (e_plain, e_all, e_clear)]
            se = bootstrap_se(e_clear[:, keep], err0[:, keep], tot[:, keep], resamples, rng)
            cells.append(" / ".join(f"{r:.3f}" for r in r2)
                         + f" ({r2[2] - float(cells[1]):+.3f}, SE {se:.3f})")
        print(f"| {board} | {k} | {len(targets.models)} | " + " | ".join(cells) + " |",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default=",".join(BOARDS))
    parser.add_argument("--k-max", type=int, default=5)
    parser.add_argument("--methods", default="gaussian,gp,ridge,svd")
    parser.add_argument("--resamples", type=int, default=1000)
    add_data_dir(parser, LEADERBOARDS)
    args = parser.parse_args()
    methods = args.methods.split(",")
    print(f"frontier, MI; R² plain / shifted (all) / shifted (2 SE) per method, and shifted "
          f"(2 SE) minus the default ({DEFAULT_PREDICTOR}) with its bootstrap SE\n")
    print("| board | k | targets | moved | default | " + " | ".join(methods) + " |")
    print("|---" * (len(methods) + 5) + "|")
    for board, scores, k_max in quiet_boards(args.boards, args.data_dir, args.k_max):
        run_board(board, scores, k_max, methods, args.resamples)


if __name__ == "__main__":
    main()
