"""Which method predicts a new model, and how its intervals are calibrated.

:meth:`GaussianModel.predict <benchsel.models.GaussianModel.predict>`
makes every row's extrapolation report and hands these functions the
Gaussian conditional as a function of rows, made only for the rows it
predicts: its calibration refits the covariance on five splits of the
sources (on MERGED five of the fifteen covariance fits of a cold
``predict``), which a row predicted by another method never needs.
``auto`` picks a method per pattern of given items and regime
(:func:`predict_auto`), any other completion method completes the rows with
the training matrix (:func:`predict_by_completion`), each with its own
conformal calibration (:func:`calibrate_completion`,
:func:`calibration_records`).
"""

from __future__ import annotations

import warnings

import numpy as np

from .._patterns import unique_rows
from ..bounds import truncated_interval, truncated_std
from ..calibration import (
    fit_calibration,
    limit_spread,
    range_excess,
    regime_excess,
    unknown_calibration,
)
from ..matrix import DataWarning
from ..prediction.cache import CompletionCache
from ..prediction.choice import MethodChoice, choose_for_new_models
from ..prediction.frontier import completion_frontier_shift
from ..prediction.latent import Completion
from ..prediction.registry import complete_new_rows
from ..prediction.residuals import completion_residuals
from .results import Prediction

__all__ = ["calibrate_completion", "calibration_records", "frontier_shifts",
           "method_frontier_shift", "predict_auto", "predict_by_completion"]


def predict_auto(model, models, x, gaussian, extrapolation: list, level: float) -> Prediction:
    """Per pattern of observed items and regime: the method that wins a CV on the
    training models (random held-out models for a new model inside their
    strength range, the strength splits for one beyond it).

    ``gaussian(rows)`` is the Gaussian conditional's :class:`Prediction` of
    those rows of ``x``, called only for the rows it predicts (its
    calibration refits the covariance five times); ``extrapolation``: every
    row's report.
    """
    train = model.scores_.values
    reference = model.range_.standardizer.transform(train)
    given = ~np.isnan(x)
    # A model at the frontier of the sources keeps the method chosen for it: each
    # method corrects such a model by its own shortfall on the strongest sources
    # (the Gaussian's in models.conditional, the others' in predict_by_completion).
    # Groups of rows predicted alike: same pattern, same method.
    groups, parts, choices = [], {}, [None] * len(models)
    patterns, inverse = unique_rows(given)
    for g, pattern in enumerate(patterns):
        rows = np.flatnonzero(inverse == g)
        z = model.range_.standardizer.transform(x[rows])
        excess = regime_excess(reference[:, pattern], z[:, pattern])
        # Negative below the range: the choice compares it with the weakest sources.
        below = range_excess(reference[:, pattern], z[:, pattern], signed=True) < 0
        excess = np.where(below, -excess, excess)
        cache = CompletionCache()  # one pattern's completions, shared by all its steps
        if pattern.any():
            picked = choose_for_new_models(train, pattern, excess, cache=cache,
                                           memo=model.auto_memo)
        else:  # nothing to choose by: column means (complete_new_rows)
            picked = [MethodChoice("mean", (), {}, {}, 0, "none")] * len(rows)
        for r, choice in zip(rows, picked):
            choices[r] = choice.to_dict()
        for method in dict.fromkeys(c.method for c in picked):
            members = rows[[c.method == method for c in picked]]
            if method == "gaussian":
                part = gaussian(members)
            else:
                part = predict_by_completion(
                    model, [models[r] for r in members], x[members],
                    lambda some, members=members: gaussian(members[some]), method,
                    [extrapolation[r] for r in members], level, cache)
            parts[len(groups)] = part
            groups.append(members)
    group_of = np.empty(len(models), dtype=int)
    for g, members in enumerate(groups):
        group_of[members] = g
    pick = [(group_of[r], int(np.sum(group_of[:r] == group_of[r]))) for r in range(len(models))]

    def stack(name):
        return np.stack([getattr(parts[g], name)[i] for g, i in pick])

    return Prediction(
        models=list(models), items=list(model.items_), mean=stack("mean"),
        std=stack("std"), low=stack("low"), high=stack("high"),
        observed=stack("observed"), level=float(level), method="auto",
        limited=np.stack([(parts[g].limited if parts[g].limited is not None
                           else np.zeros_like(parts[g].observed))[i] for g, i in pick]),
        extrapolation=extrapolation,
        calibration=[parts[g].calibration[i] for g, i in pick], choices=choices)

def calibration_records(model, reference: np.ndarray, rows_z: np.ndarray, calibrate,
                        unknown=None) -> list[dict]:
    """Each row's calibration record: ``calibrate(pattern)`` once per pattern of given
    items, the regime judged against ``reference`` (standardized, like ``rows_z``).
    A row with nothing given gets ``unknown()`` (a :class:`Calibration`; none without)."""
    none = {"method": "none", "regime": None, "multiplier": 1.0}
    out = [dict(none) for _ in range(rows_z.shape[0])]
    if model.calibration == "none":
        return out
    patterns, inverse = unique_rows(~np.isnan(rows_z))
    for g, pattern in enumerate(patterns):
        rows = np.flatnonzero(inverse == g)
        if not pattern.any():
            cal = unknown() if unknown is not None else None
            if cal is not None and cal.calibrated:
                for r in rows:
                    out[r] = {"method": "conformal", "regime": "unknown",
                              "multiplier": float(cal.inside), "cells": cal.n_inside}
            continue
        cal = calibrate(pattern)
        if not cal.calibrated:
            continue
        excess = regime_excess(reference[:, pattern],
                              rows_z[np.ix_(rows, np.flatnonzero(pattern))])
        for r, e in zip(rows, excess):
            out[r] = {"method": "conformal", "regime": "outside" if e > 0 else "inside",
                      "multiplier": float(cal.factor(e)),
                      "cells": cal.n_outside if e > 0 else cal.n_inside}
    return out

def predict_by_completion(model, models, x, gaussian, method, extrapolation: list,
                          level: float, cache=None) -> Prediction:
    """Rows ``x`` completed with the training matrix by ``method``, its intervals
    calibrated on held-out source models; a cell it cannot predict is the
    Gaussian conditional's (``gaussian(rows)``: as in :func:`predict_auto`)."""
    level = float(level)
    res = complete_new_rows(model.scores_.values, x, method, cache=cache,
                            fits=model.auto_memo.fits)
    shift = frontier_shifts(model, x, method, cache)
    calibration = calibrate_completion(model, x, method, level, cache)
    for record, moved in zip(calibration, shift.any(axis=1)):
        record["frontier_shift"] = bool(moved)
    factor = np.array([c["multiplier"] for c in calibration])
    own_std = res.std
    observed = ~np.isnan(x)
    spread, limited = limit_spread(res.std * factor[:, None], model._spread_limit(level),
                                   ~observed)
    res = Completion(res.mean + shift, spread)
    mean, low, high = truncated_interval(res.mean, res.std, observed, *model.bounds_,
                                         level, center_std=own_std)
    std = np.where(observed, res.std, truncated_std(res.mean, res.std, *model.bounds_))
    missed = np.isnan(res.mean) | np.isnan(res.std)
    if missed.any():
        warnings.warn(
            f"{method} could not predict {int(missed.sum())} cell(s); they fall back to the "
            "Gaussian conditional",
            DataWarning,
            stacklevel=3,
        )
        rows = np.flatnonzero(missed.any(axis=1))
        fallback = gaussian(rows)
        mean, low, high, std = (
            _fill(mine, missed, rows, getattr(fallback, name))
            for mine, name in ((mean, "mean"), (low, "low"), (high, "high"), (std, "std")))
        if fallback.limited is not None:
            limited = _fill(limited, missed, rows, fallback.limited).astype(bool)
    return Prediction(
        extrapolation=extrapolation,
        models=models,
        items=list(model.items_),
        mean=mean,
        std=std,
        low=low,
        high=high,
        observed=observed,
        level=float(level),
        method=method,
        calibration=calibration,
        limited=limited,
    )


def frontier_shifts(model, x: np.ndarray, method: str, cache=None) -> np.ndarray:
    """Per row of ``x`` and item, ``method``'s frontier correction in raw units: for a
    row at the frontier of the sources (:meth:`GaussianModel._at_frontier`), the
    method's mean shortfall on the strongest sources given the row's items
    (:func:`method_frontier_shift`); 0 for other rows and for given cells."""
    out = np.zeros(x.shape)
    top = model._at_frontier(x)
    if not top.any():
        return out
    rows = np.flatnonzero(top)
    patterns, inverse = unique_rows(~np.isnan(x[rows]))
    for g, pattern in enumerate(patterns):
        out[rows[inverse == g]] = method_frontier_shift(model, pattern, method, cache)
    return out


def method_frontier_shift(model, pattern: np.ndarray, method: str, cache=None) -> np.ndarray:
    """``method``'s frontier shift for new models run on ``pattern``
    (:func:`~benchsel.prediction.frontier.completion_frontier_shift` on the sources),
    kept in ``model.auto_memo`` (and so in a plan)."""
    return model.auto_memo.frontier_shift(
        method, pattern, lambda: completion_frontier_shift(
            model.scores_.values, pattern, method, cache=cache, fits=model.auto_memo.fits))


def _fill(mine: np.ndarray, missed: np.ndarray, rows: np.ndarray, theirs: np.ndarray):
    """``mine`` with its ``missed`` cells taken from ``theirs`` (the values of ``rows``)."""
    out = np.array(mine, dtype=float)
    out[rows] = np.where(missed[rows], theirs, out[rows])
    return out

def calibrate_completion(model, x: np.ndarray, method: str, level: float,
                         cache=None) -> list[dict]:
    """As :meth:`_calibrate`, for a completion method (raw scores, per pattern);
    ``cache``: completions already made of the training matrix (``auto``'s)."""
    train = model.scores_.values

    def calibrate(pattern):
        memo = model.auto_memo
        residuals = memo.residuals(method, pattern, lambda: completion_residuals(
            train, method, given=pattern, cache=cache, fits=memo.fits))
        return fit_calibration(*residuals, level=level)

    raw = model.range_.standardizer
    return calibration_records(
        model, raw.transform(train), raw.transform(x), calibrate,
        unknown=lambda: unknown_calibration(train, level))
