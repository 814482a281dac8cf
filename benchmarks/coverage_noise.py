"""How precisely one split can measure a 90% interval's coverage, board by board.

Usage: python benchmarks/coverage_noise.py [--boards helm_lite,wildbench] [--k-max 5]
                                           [--protocols frontier,extrapolation]
                                           [--resamples 2000] [--json out.json] [--data-dir DIR]

The frontier and extrapolation protocols hold out one set of models: the
strongest 10% (at least 5) or the strongest 30%. On a small board that is
5 or 6 models, and their errors are alike (a fit that under-predicts one
strong model on an item under-predicts the others there too), so the
coverage measured on them moves a lot from one board to the next even when
the intervals are exactly right. This script fits what ``plan``/``predict``
ship (:class:`benchsel.GaussianModel` with its defaults, the MI selection of
``k`` benchmarks, :meth:`~benchsel.GaussianModel.predict` with its default
method and calibrated intervals) on each split's sources, predicts every
target from its selected scores, and prints per board, protocol and ``k``:

- ``targets``, ``benchmarks`` (unselected, predicted) and ``cells``
  (targets x those benchmarks with a score);
- the measured coverage and its two-way (targets and benchmarks resampled
  independently) bootstrap 90% interval. With one or two predicted
  benchmarks it cannot show the spread a shared miss on them causes (every
  strong model off the same way on the one item left): read those rows as
  one or two observations;
- ``P(85-95)``: the chance that a *perfectly* calibrated 90% interval
  would show a coverage in 85-95% on that many independent cells
  (binomial); correlated errors only lower it, so it is an upper bound on
  how often the target can be met there by any predictor;
- the coverage of the method's own interval (multiplier 1, score bounds
  ignored): where even that is above 95%, no calibration that never
  narrows a method's intervals below its own can reach 85-95% there.
"""

import argparse
import json
import warnings

import numpy as np
from _data import LEADERBOARDS, add_data_dir, load_board
from scipy.special import ndtri
from scipy.stats import binom

from benchsel import ConvergenceWarning, DataWarning, GaussianModel, ScoreMatrix
from benchsel.datasets import list_datasets
from benchsel.splits import frontier_split, strength_split

LEVEL = 0.9
TARGET = (0.85, 0.95)
SPLITS = {"frontier": frontier_split, "extrapolation": strength_split}
#: Every bundled leaderboard with enough models and benchmarks for both splits.
BOARDS = "helm_lite,livebench,bigcodebench,wildbench,alpaca_eval,mteb,merged,open_llm_v2"


def add_split_arguments(parser: argparse.ArgumentParser, boards: str) -> None:
    """The options these coverage scripts share: ``--boards`` (default ``boards``),
    ``--protocols``, ``--k-max``, ``--json`` and ``--data-dir``."""
    parser.add_argument("--boards", default=boards,
                        help=f"comma-separated bundled leaderboards (default: {boards})")
    parser.add_argument("--protocols", default=",".join(SPLITS),
                        help="comma-separated, of: " + ", ".join(SPLITS))
    parser.add_argument("--k-max", type=int, default=5)
    parser.add_argument("--json", help="also write the rows to this JSON file")
    add_data_dir(parser, LEADERBOARDS)


def parse_split_arguments(parser: argparse.ArgumentParser):
    """``(args, boards, protocols)``, each board and protocol known (else exit with the bad
    one named); the fits' convergence and data warnings are silenced, as in a table."""
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.simplefilter("ignore", DataWarning)
    boards, protocols = args.boards.split(","), args.protocols.split(",")
    unknown = sorted(set(protocols) - set(SPLITS))
    if unknown:
        raise SystemExit(f"--protocols: {', '.join(unknown)} not one of {', '.join(SPLITS)}")
    known = {d.name for d in list_datasets("leaderboard")}
    for board in boards:
        if board not in known:
            raise SystemExit(f"--boards: {board!r} is not a bundled leaderboard")
    return args, boards, protocols


def in_target_chance(cells: int, level: float = LEVEL, target=TARGET) -> float:
    """P(a binomial(cells, level) share lies in ``target``), ends included."""
    lo = int(np.ceil(target[0] * cells - 1e-9))
    hi = int(np.floor(target[1] * cells + 1e-9))
    return float(binom.cdf(hi, cells, level) - binom.cdf(lo - 1, cells, level))


def two_way_interval(covered: np.ndarray, resamples: int, seed: int = 0) -> tuple[float, float]:
    """90% bootstrap interval of the share covered, rows and columns resampled apart.

    ``covered`` is targets x benchmarks: 1 covered, 0 not, NaN no cell.
    """
    rng = np.random.default_rng(seed)
    has = ~np.isnan(covered)
    hit = np.where(has, covered, 0.0)
    m, n = covered.shape
    shares = np.empty(resamples)
    for b in range(resamples):
        rows = np.bincount(rng.integers(0, m, m), minlength=m)
        cols = np.bincount(rng.integers(0, n, n), minlength=n)
        weight = np.outer(rows, cols)
        cells = float(np.sum(weight * has))
        shares[b] = np.sum(weight * hit) / cells if cells else np.nan
    low, high = np.nanquantile(shares, [0.05, 0.95])
    return float(low), float(high)


def shipped_predictions(scores: ScoreMatrix, split, k_max: int):
    """As ``plan``/``predict`` ship: fit on the split's sources, select ``k_max`` by MI,
    and per k yield ``(k, given, prediction, truth, scored)`` for the targets given
    the first ``k`` (``truth`` and ``scored``: the prediction's items, cells with a
    score the target was not given)."""
    sources = scores.subset(models=split.train)
    model = GaussianModel().fit(sources)
    order = model.select(k_max, objective="mi").items
    targets = scores.values[split.validation]
    target_names = [scores.models[i] for i in split.validation]
    for k in range(1, k_max + 1):
        given = list(order[:k])
        cols = [scores.items.index(b) for b in given]
        x = ScoreMatrix(targets[:, cols], target_names, given)
        p = model.predict(x, level=LEVEL)
        truth = targets[:, [scores.items.index(b) for b in p.items]]
        scored = ~np.isnan(truth) & ~np.asarray(p.observed, dtype=bool)
        yield k, given, p, truth, scored


def covered_grid(scores: ScoreMatrix, split, k_max: int):
    """Per k, the targets x unselected benchmarks grids of covered cells: by the shipped
    interval, and by the method's own (multiplier 1)."""
    out = []
    for k, _, p, truth, scored in shipped_predictions(scores, split, k_max):
        covered = np.where(scored, ((p.low <= truth) & (truth <= p.high)).astype(float), np.nan)
        # The method's own interval, uncalibrated (multiplier 1, bounds ignored).
        multiplier = np.array([c.get("multiplier", 1.0) for c in p.calibration])[:, None]
        own = np.abs(truth - p.mean) <= ndtri(0.5 + LEVEL / 2) * p.std / multiplier
        raw = np.where(scored, own.astype(float), np.nan)
        keep = scored.any(axis=0)
        out.append((k, covered[:, keep], raw[:, keep]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_split_arguments(parser, BOARDS)
    parser.add_argument("--resamples", type=int, default=2000)
    args, boards, protocols = parse_split_arguments(parser)
    records = []
    print("| board | protocol | k | targets | benchmarks | cells | coverage % | "
          "two-way 90% interval | P(85-95) if exact | at multiplier 1 % |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for board in boards:
        scores = load_board(board, args.data_dir)
        k_max = min(args.k_max, len(scores.items) - 1)
        for protocol in protocols:
            make_split = SPLITS[protocol]
            split = make_split(scores.values)
            for k, covered, raw in covered_grid(scores, split, k_max):
                cells = int(np.sum(~np.isnan(covered)))
                share = float(np.nanmean(covered))
                low, high = two_way_interval(covered, args.resamples)
                chance = in_target_chance(cells)
                print(f"| {board} | {protocol} | {k} | {covered.shape[0]} | {covered.shape[1]} | "
                      f"{cells} | "
                      f"{100 * share:.1f} | {100 * low:.1f}–{100 * high:.1f} | {chance:.2f} | "
                      f"{100 * np.nanmean(raw):.1f} |",
                      flush=True)
                records.append({"board": board, "protocol": protocol, "k": k,
                                "targets": int(covered.shape[0]),
                                "benchmarks": int(covered.shape[1]), "cells": cells,
                                "coverage": share, "interval": [low, high],
                                "in_target_chance": chance,
                                "coverage_at_multiplier_1": float(np.nanmean(raw))})
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(records, fh, indent=1)


if __name__ == "__main__":
    main()
