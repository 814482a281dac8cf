"""The ``complete`` protocol: hide observed cells, fill them back, measure the error.

Models with at least ``min_observed`` observed scores are split at random
into ``folds`` folds. For each fold, every model in it hides a random
fraction ``hide`` of its observed scores (rounded, at least one, and never
all of them); each method then completes the whole matrix (everything except
the hidden cells) and is scored on the hidden cells. Every eligible model is
scored in exactly one fold, and every method sees identical folds.

Metrics over the hidden cells:

* ``medape`` -- median of ``|pred - true| / |true| * 100`` (cells whose true
  score is 0 have no percentage error and are left out of it);
* ``median_ae`` -- median absolute error in *points*: score units, times 100
  for fraction-scale columns (all scores in ``[0, 1]``);
* ``within3`` / ``within5`` -- % of cells within 3 / 5 points;
* ``coverage`` -- % of hidden cells the method predicted (the others count
  as misses in no other metric);
* ``interval_coverage`` -- % of predicted cells inside the central interval
  at ``level``.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

from ..matrix import ScoreMatrix
from ..prediction.completion import COMPLETERS, complete, interval
from .metrics import json_record

__all__ = ["CompletionRow", "CompletionResult", "evaluate_completion", "completion_masks"]


@dataclass(frozen=True)
class CompletionRow:
    method: str
    medape: float
    median_ae: float
    within3: float
    within5: float
    coverage: float
    interval_coverage: float
    cells: int

    def to_dict(self) -> dict:
        return json_record(self)


@dataclass(frozen=True)
class CompletionResult:
    dataset: str
    hide: float
    folds: int
    seconds: float
    default: str
    rows: list

    def row(self, method: str) -> CompletionRow:
        return next(r for r in self.rows if r.method == method)

    def to_dict(self) -> dict:
        return {
            "protocol": "complete",
            "dataset": self.dataset,
            "hide": self.hide,
            "folds": self.folds,
            "seconds": self.seconds,
            "default": self.default,
            "methods": [r.to_dict() for r in self.rows],
        }


def completion_masks(
    observed: np.ndarray, hide: float = 0.5, folds: int = 3, min_observed: int = 8, seed=0
) -> list[np.ndarray]:
    """One boolean mask of hidden cells per fold (see the module docstring)."""
    if not 0 < hide < 1:
        raise ValueError(f"hide must be in (0, 1); got {hide!r}")
    if min_observed < 2:
        raise ValueError(
            f"min_observed must be at least 2 (one hidden, one kept); got {min_observed}"
        )
    rng = np.random.default_rng(seed)
    counts = observed.sum(axis=1)
    eligible = np.flatnonzero(counts >= min_observed)
    if eligible.size < folds:
        raise ValueError(
            f"only {eligible.size} model(s) have at least {min_observed} observed scores; "
            f"need at least {folds}"
        )
    masks = []
    for part in np.array_split(rng.permutation(eligible), folds):
        mask = np.zeros_like(observed)
        for i in part:
            cells = np.flatnonzero(observed[i])
            n_hide = min(max(1, int(round(hide * cells.size))), cells.size - 1)
            mask[i, rng.choice(cells, n_hide, replace=False)] = True
        masks.append(mask)
    return masks


def _points_factor(values: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: factor 1
        low, high = np.nanmin(values, axis=0), np.nanmax(values, axis=0)
    return np.where((low >= 0) & (high <= 1), 100.0, 1.0)


def evaluate_completion(
    scores: ScoreMatrix,
    *,
    methods: tuple[str, ...] = tuple(COMPLETERS),
    hide: float = 0.5,
    folds: int = 3,
    min_observed: int = 8,
    level: float = 0.9,
    seed: int = 0,
    progress=None,
) -> CompletionResult:
    """Score completion methods on identical hidden cells.

    The ``default`` of the result is the method with the lowest MedAPE among
    those that predicted every hidden cell.
    """
    for m in methods:
        if m not in COMPLETERS:
            raise ValueError(f"unknown completion method {m!r}; methods: {', '.join(COMPLETERS)}")
    scores = scores.cleaned()
    start = time.perf_counter()
    values = scores.values
    masks = completion_masks(~np.isnan(values), hide, folds, min_observed, seed)
    factor = _points_factor(values)
    collected = {m: ([], [], [], [], []) for m in methods}  # true, pred, low, high, factor
    done, total = 0, len(methods) * len(masks)
    for mask in masks:
        train = np.where(mask, np.nan, values)
        cols = np.nonzero(mask)[1]
        for m in methods:
            res = complete(train, m)
            low, high = interval(res, level)
            store = collected[m]
            for bucket, arr in zip(store, (values, res.mean, low, high)):
                bucket.append(arr[mask])
            store[4].append(factor[cols])
            done += 1
            if progress is not None:
                progress(done, total)
    rows = []
    for m in methods:
        true, pred, low, high, fac = (np.concatenate(a) for a in collected[m])
        got = ~np.isnan(pred)
        err = np.abs(pred[got] - true[got])
        nonzero = true[got] != 0
        ape = 100 * err[nonzero] / np.abs(true[got][nonzero])
        pts = err * fac[got]
        has_int = got & ~np.isnan(low)
        inside = (low[has_int] <= true[has_int]) & (true[has_int] <= high[has_int])
        rows.append(
            CompletionRow(
                method=m,
                medape=float(np.median(ape)) if ape.size else float("nan"),
                median_ae=float(np.median(pts)) if pts.size else float("nan"),
                within3=float(100 * np.mean(pts <= 3)) if pts.size else float("nan"),
                within5=float(100 * np.mean(pts <= 5)) if pts.size else float("nan"),
                coverage=float(100 * got.mean()),
                interval_coverage=float(100 * inside.mean()) if inside.size else float("nan"),
                cells=int(true.size),
            )
        )
    full = [r for r in rows if r.coverage == 100.0 and not np.isnan(r.medape)]
    default = min(full, key=lambda r: r.medape).method if full else ""
    return CompletionResult(
        dataset=scores.source or "",
        hide=hide,
        folds=folds,
        seconds=time.perf_counter() - start,
        default=default,
        rows=rows,
    )
