"""``audit``: scores that decouple from the rest of a model's row -- contamination, gaming,
a broken run -- and benchmarks whose relation to the others drifts across models.

Per observed cell, the leave-one-out conditional prediction from the same
model's other observed scores under the fitted Gaussian (Smola 2026; for a
row with observed set ``O`` and precision ``P = Sigma_OO^{-1}`` the
leave-one-out residual of cell ``j`` is ``(P (x - mu))_j / P_jj`` with
variance ``1 / P_jj``, so every cell of a row costs one factorization). Its
standardized residual ``z`` is divided by the board's robust spread of
``z`` (1.4826 times the median absolute ``z``), so that a threshold means
the same on a board whose residuals are heavier-tailed than Gaussian; a cell
with ``|z|`` above the threshold is flagged.

Per benchmark: how many of its cells are flagged, and whether its relation
to the others drifted -- the mean ``z`` of the later half of the models (row
order, or an order the caller gives, e.g. release dates) against the
earlier half, as a Welch t statistic; ``|t| > 3`` marks it decoupled. A
benchmark flagged either way gets a replacement: the unflagged benchmark
most correlated with it, which carries most of what it measured.

The fit includes the audited cells themselves; with a hundred models one
cell moves the covariance little, and refitting per model would cost a fit
per row.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .._frames import rows_frame
from .._patterns import unique_rows
from ..evaluation.metrics import json_record
from ..exceptions import ConvergenceWarning
from ..gaussian.covariance import estimate_covariance, fit_standardizer
from ..matrix import ScoreMatrix
from ..sources import as_scores

__all__ = ["AuditCell", "AuditBenchmark", "AuditResult", "audit", "loo_residuals"]

#: ``|t|`` above which a benchmark's drift across model order is reported.
DRIFT_T = 3.0


@dataclass(frozen=True)
class AuditCell:
    model: str
    benchmark: str
    observed: float
    predicted: float
    z: float

    def to_dict(self) -> dict:
        return json_record(self)


@dataclass(frozen=True)
class AuditBenchmark:
    benchmark: str
    flagged_cells: int
    cells: int
    mean_z_early: float
    mean_z_late: float
    drift_t: float
    decoupled: bool
    replacement: str | None

    def to_dict(self) -> dict:
        return json_record(self)


@dataclass(frozen=True)
class AuditResult:
    dataset: str
    threshold: float
    scale: float
    cells: list
    benchmarks: list
    n_cells: int

    def to_frame(self):
        """Per benchmark, as :class:`pandas.DataFrame`: flagged cells, drift, whether it
        decoupled (:meth:`cells_frame` lists the flagged cells)."""
        return rows_frame(self.benchmarks, "benchmark", AuditBenchmark)

    def cells_frame(self):
        """The flagged cells as a :class:`pandas.DataFrame` indexed by model and benchmark."""
        return rows_frame(self.cells, ["model", "benchmark"], AuditCell)

    def to_dict(self) -> dict:
        return {"dataset": self.dataset, "threshold": self.threshold, "z_scale": self.scale,
                "cells_checked": self.n_cells, "cells": [c.to_dict() for c in self.cells],
                "benchmarks": [b.to_dict() for b in self.benchmarks]}


def loo_residuals(z: np.ndarray, mean: np.ndarray, sigma: np.ndarray,
                  ridge: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """Leave-one-out conditional mean and standardized residual of every observed cell.

    Parameters
    ----------
    z : ndarray of shape (M, N)
        Standardized scores, NaN = unobserved.
    mean, sigma : the Gaussian's mean and covariance in the same units.
    ridge : float
        Added to each observed block's diagonal (near-copies of a benchmark
        make it singular).

    Returns
    -------
    predicted, resid_z : ndarray of shape (M, N)
        NaN where the cell is unobserved or its row has no other observed
        cell.
    """
    z = np.asarray(z, dtype=float)
    observed = ~np.isnan(z)
    predicted = np.full(z.shape, np.nan)
    resid_z = np.full(z.shape, np.nan)
    patterns, inverse = unique_rows(observed)
    for g, pattern in enumerate(patterns):
        o = np.flatnonzero(pattern)
        if o.size < 2:
            continue
        rows = np.flatnonzero(inverse == g)
        precision = np.linalg.inv(sigma[np.ix_(o, o)] + ridge * np.eye(o.size))
        r = z[np.ix_(rows, o)] - mean[o]
        pr = r @ precision  # precision is symmetric
        d = np.diag(precision)
        predicted[np.ix_(rows, o)] = z[np.ix_(rows, o)] - pr / d
        resid_z[np.ix_(rows, o)] = pr / np.sqrt(d)
    return predicted, resid_z


def audit(scores: ScoreMatrix, *, threshold: float = 5.0, covariance: str = "auto",
          order=None) -> AuditResult:
    """Flag cells and benchmarks that decouple from the rest (see the module docstring).

    Parameters
    ----------
    scores : ScoreMatrix
    threshold : float, default 5
        Flag cells with ``|z|`` above it (robustly standardized). On the
        clean bundled boards 5 flags 0-0.35% of the cells (docs: 40 of 11,388
        on MTEB, 22 of 4,185 on MERGED); +10-20 point inflations of five
        models on one benchmark are found 0-62% of the time depending on the
        board's noise.
    covariance : str, default "auto"
    order : dict or array-like of shape (M,), optional
        A sort key of the models for the drift test (e.g. release dates):
        ``{model: key}`` with every model, or one key per row of ``scores``;
        default the row order.
    """
    if not threshold > 0:
        raise ValueError(f"threshold must be positive; got {threshold!r}")
    if order is not None and not isinstance(order, dict):
        keys = np.asarray(order, dtype=float)
        if keys.shape != (scores.n_models,):
            raise ValueError(f"order has {keys.size} keys for {scores.n_models} models")
        order = dict(zip(scores.models, keys))
    scores = as_scores(scores).cleaned()
    if order is not None:
        missing = [m for m in scores.models if m not in order]
        if missing:
            raise ValueError(f"the model order has no key for {len(missing)} model(s): "
                             f"{', '.join(map(repr, missing[:10]))}"
                             f"{' ...' if len(missing) > 10 else ''}")
        order = np.array([order[m] for m in scores.models], dtype=float)
    values = scores.values
    std = fit_standardizer(values, covariance)
    cols = np.flatnonzero(~std.constant)
    z = std.transform(values[:, cols], cols)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = estimate_covariance(z, covariance)
    predicted_z, resid = loo_residuals(z, est.mean, est.covariance)
    finite = np.isfinite(resid)
    if not finite.any():
        raise ValueError(f"{scores._where()}no model has two observed scores: nothing to audit")
    scale = float(1.4826 * np.median(np.abs(resid[finite])))
    scale = scale if scale > 0 else 1.0
    zs = resid / scale
    flagged = finite & (np.abs(zs) > threshold)
    predicted = std.inverse(predicted_z, cols)
    cells = [AuditCell(model=scores.models[i], benchmark=scores.items[cols[j]],
                       observed=float(values[i, cols[j]]), predicted=float(predicted[i, j]),
                       z=float(zs[i, j]))
             for i, j in zip(*np.nonzero(flagged))]
    cells.sort(key=lambda c: -abs(c.z))
    rank = np.argsort(np.argsort(np.arange(scores.n_models) if order is None
                                 else np.asarray(order), kind="stable"), kind="stable")
    late = rank >= scores.n_models / 2
    d = np.sqrt(np.diag(est.covariance))
    corr = est.covariance / np.outer(d, d)
    rows = []
    drift = []
    for j in range(cols.size):
        early_z, late_z = zs[~late & finite[:, j], j], zs[late & finite[:, j], j]
        t = _welch_t(early_z, late_z)
        drift.append(abs(t) > DRIFT_T if np.isfinite(t) else False)
        rows.append([j, int(flagged[:, j].sum()), int(finite[:, j].sum()),
                     _mean(early_z), _mean(late_z), t])
    bad = {j for j, n, *_ in rows if n >= 3} | {j for j in range(cols.size) if drift[j]}
    benchmarks = []
    for (j, n_flag, n_cells, mean_early, mean_late, t), decoupled in zip(rows, drift):
        replacement = None
        if j in bad:
            candidates = [c for c in np.argsort(-np.abs(corr[j])) if c != j and c not in bad]
            replacement = scores.items[cols[candidates[0]]] if candidates else None
        benchmarks.append(AuditBenchmark(
            benchmark=scores.items[cols[j]], flagged_cells=n_flag, cells=n_cells,
            mean_z_early=mean_early, mean_z_late=mean_late, drift_t=t,
            decoupled=bool(decoupled), replacement=replacement))
    benchmarks.sort(key=lambda b: (-b.flagged_cells, -abs(np.nan_to_num(b.drift_t))))
    return AuditResult(dataset=scores.source or "", threshold=float(threshold), scale=scale,
                       cells=cells, benchmarks=benchmarks, n_cells=int(finite.sum()))


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if x.size else float("nan")


def _welch_t(a: np.ndarray, b: np.ndarray) -> float:
    if a.size < 2 or b.size < 2:
        return float("nan")
    se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    return float((b.mean() - a.mean()) / se) if se > 0 else float("nan")
