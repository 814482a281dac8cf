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
  at ``level``, after calibration (each method's standard deviation times
  the conformal multipliers of
  :func:`~benchsel.prediction.residuals.calibrate_completion`, fitted on
  the fold's training matrix alone: its own models hide cells and are
  filled back);
* ``uncalibrated_coverage`` -- the same with the method's own standard
  deviation.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from .._frames import rows_frame
from .._parallel import map_tasks, one_blas_thread
from ..calibration import range_excess
from ..matrix import ScoreMatrix, Standardizer
from ..prediction.cache import CompletionCache
from ..prediction.choice import AUTO_MIN_COVERAGE, choose_completer, complete_auto, median_ape
from ..prediction.latent import Completion, interval
from ..prediction.registry import COMPLETERS, complete
from ..prediction.residuals import calibrate_completion
from ..sources import as_scores
from ..splits import completion_masks
from .metrics import coverage, json_record

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
    uncalibrated_coverage: float = float("nan")

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
    choices: list = field(default_factory=list)

    def row(self, method: str) -> CompletionRow:
        return next(r for r in self.rows if r.method == method)

    def to_frame(self):
        """The table the command prints as a :class:`pandas.DataFrame`: one row per
        completion method."""
        return rows_frame(self.rows, "method", CompletionRow)

    def to_dict(self) -> dict:
        return {
            "protocol": "complete",
            "dataset": self.dataset,
            "hide": self.hide,
            "folds": self.folds,
            "seconds": self.seconds,
            "default": self.default,
            "methods": [r.to_dict() for r in self.rows],
            "auto_choices": self.choices,
        }


def _points_factor(values: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: factor 1
        low, high = np.nanmin(values, axis=0), np.nanmax(values, axis=0)
    return np.where((low >= 0) & (high <= 1), 100.0, 1.0)


@one_blas_thread()  # rounds alike serially and in a joblib worker
def _completion_fold(values, mask, fold, methods, hide, level, seed, calibrate) -> dict:
    """One fold of :func:`evaluate_completion`: every method fills the cells ``mask`` hides.

    Returns, per method, the hidden cells' true scores, predictions,
    calibrated and raw interval ends and points factors, plus ``auto``'s
    choice (``None`` without ``auto``).
    """
    train = np.where(mask, np.nan, values)
    cols = np.nonzero(mask)[1]
    hiding = mask.any(axis=1)
    z = Standardizer.fit(train).transform(train)
    outside = np.zeros(values.shape[0])
    outside[hiding] = range_excess(z[~hiding], z[hiding])
    factor = _points_factor(values)[cols]
    # One cache per fold: auto's comparison, the calibrations and the fits
    # share their completions of this fold's matrices.
    cache = CompletionCache()
    out, choice = {}, None
    for m in methods:
        fit_method = m
        if m == "auto":
            # Nested: the choice sees only this fold's training matrix.
            choice = choose_completer(train, methods=[c for c in methods if c != "auto"]
                                      or None, hide=hide, seed=[seed, fold], cache=cache)
            fit_method = choice.method
            res = complete_auto(train, choice, cache=cache)
        else:
            res = complete(train, m, cache=cache)
        raw_low, raw_high = interval(res, level)
        if calibrate:
            cal = calibrate_completion(train, fit_method, level=level, hide=hide,
                                       seed=[seed, fold], cache=cache)
            res = Completion(res.mean, res.std * cal.factor(outside)[:, None])
        low, high = interval(res, level)
        # true, pred, low, high, points factor, uncalibrated low, uncalibrated high
        out[m] = (values[mask], res.mean[mask], low[mask], high[mask], factor,
                  raw_low[mask], raw_high[mask])
    return {"cells": out, "choice": None if choice is None else choice.to_dict()}


def evaluate_completion(
    scores: ScoreMatrix,
    *,
    methods: tuple[str, ...] = tuple(COMPLETERS),
    hide: float = 0.5,
    folds: int = 3,
    min_observed: int | None = None,
    level: float = 0.9,
    seed: int = 0,
    progress=None,
    calibrate: bool = True,
    n_jobs: int = 1,
    backend: str | None = None,
) -> CompletionResult:
    """Score completion methods on identical hidden cells.

    ``min_observed`` defaults to 8, or the number of items when there are
    fewer. With ``calibrate`` each method's intervals are calibrated on the
    fold's training matrix (one more completion per fold and method). The
    ``default`` of the result is the method with the lowest MedAPE among
    those that predicted every hidden cell. Folds run in parallel with
    ``n_jobs`` (joblib; ``backend="dask"`` on a Dask cluster), with results
    identical to a serial run.
    """
    for m in methods:
        if m not in COMPLETERS:
            raise ValueError(f"unknown completion method {m!r}; methods: {', '.join(COMPLETERS)}")
    scores = as_scores(scores).cleaned()
    start = time.perf_counter()
    values = scores.values
    if min_observed is None:
        min_observed = max(2, min(8, values.shape[1]))
    masks = completion_masks(~np.isnan(values), hide, folds, min_observed, seed)
    per_fold = map_tasks(
        _completion_fold,
        ((values, mask, f, tuple(methods), hide, level, seed, calibrate)
         for f, mask in enumerate(masks)),
        n_jobs=n_jobs, backend=backend, progress=progress)
    collected = {m: [np.concatenate([pf["cells"][m][i] for pf in per_fold]) for i in range(7)]
                 for m in methods}
    choices = [pf["choice"] for pf in per_fold if pf["choice"] is not None]
    rows = []
    for m in methods:
        true, pred, low, high, fac, raw_low, raw_high = collected[m]
        got = ~np.isnan(pred)
        err = np.abs(pred[got] - true[got])
        pts = err * fac[got]
        has_int = got & ~np.isnan(low)
        t = true[has_int]
        rows.append(
            CompletionRow(
                method=m,
                medape=median_ape(true[got], pred[got]),
                median_ae=float(np.median(pts)) if pts.size else float("nan"),
                within3=float(100 * np.mean(pts <= 3)) if pts.size else float("nan"),
                within5=float(100 * np.mean(pts <= 5)) if pts.size else float("nan"),
                coverage=float(100 * got.mean()),
                interval_coverage=100 * coverage(t, low[has_int], high[has_int]),
                cells=int(true.size),
                uncalibrated_coverage=100 * coverage(t, raw_low[has_int], raw_high[has_int]),
            )
        )
    # The rule auto chooses by; never empty: without a method that predicted
    # nearly every cell, the one that predicted most.
    full = [r for r in rows if r.coverage >= 100 * AUTO_MIN_COVERAGE and not np.isnan(r.medape)]
    default = (min(full, key=lambda r: r.medape) if full else
               max(rows, key=lambda r: (r.coverage, -np.nan_to_num(r.medape, nan=np.inf)))).method
    return CompletionResult(
        dataset=scores.source or "",
        hide=hide,
        folds=folds,
        seconds=time.perf_counter() - start,
        default=default,
        rows=rows,
        choices=choices,
    )
