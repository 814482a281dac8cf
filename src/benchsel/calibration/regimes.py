"""Where a model lies relative to the models a predictor was fitted on.

A held-out or new model's *regime* decides its calibration multiplier:
inside the strength range of the fit's models or beyond it, and by how far
(:func:`range_excess`, :func:`regime_excess`); :func:`frontier_rows` says
which models are at the frontier, where each method's frontier shift applies.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._patterns import unique_rows
from ..matrix import FEW_MODELS
from ..splits import FRONTIER_FRACTION
from .conformal import MIN_CELLS

__all__ = [
    "clear_column_bias",
    "measures_frontier",
    "FRONTIER_APPLY_FRACTION",
    "FRONTIER_FRACTION",
    "frontier_rows",
    "outside_range",
    "range_excess",
    "regime_excess",
]

_CHUNK = 4_000_000  # at most this many reference strengths at once


def _on_evidence(reference: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``rows`` with the scores a regime cannot be judged by left out.

    A column that fewer than :data:`~benchsel.matrix.FEW_MODELS` reference
    models were run on does not show the reference models' range: a new
    model scoring 36 where five sources scored 40 to 60 is not "beyond
    them" (on one board such a column made a model x11 its standard
    deviation, an interval wider than the score's range). A row's scores on
    such columns are left out of its regime when it has a score on a column
    with enough models; a row with none keeps them all, the only evidence
    there is.
    """
    sparse = (~np.isnan(reference)).sum(axis=0) < FEW_MODELS
    if not sparse.any():
        return rows
    judged = np.where(sparse, np.nan, rows)
    has = ~np.isnan(judged).all(axis=1)
    return np.where(has[:, None], judged, rows)


def outside_range(reference: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Whether each row's strength lies beyond every reference row's on the same items."""
    return range_excess(reference, rows) > 0


#: A new model is moved by the frontier shift when its mean given score is at least
#: the ``1 - FRONTIER_APPLY_FRACTION`` quantile of the sources'. The shift is measured
#: on the strongest 10% predicted from a fit without them; a model just inside the
#: top 10% of a fit that includes its peers is predicted better unmoved. On
#: open_llm_v2 with ``auto`` (MI, k = 1..4; docs/experiments/reproduction.md): at 10% the
#: frontier R² gained 0.05-0.07 and 10-fold CV lost 0.017-0.030; at 3% the frontier
#: gained 0.046-0.065 and CV lost 0.004-0.010; above the best source only, the
#: frontier gained 0.002-0.015.
FRONTIER_APPLY_FRACTION = 0.03


def frontier_rows(reference: np.ndarray, rows: np.ndarray,
                  fraction: float = FRONTIER_FRACTION) -> np.ndarray:
    """Which rows lie among the strongest ``fraction`` of the reference rows, or above.

    A row's strength is its mean given (standardized) score; it is at the
    frontier when that is at least the ``1 - fraction`` quantile of the
    reference rows' mean scores on the same items (reference rows with
    none of them left out). Rows with nothing given are not.

    Parameters
    ----------
    reference, rows : ndarray
        Standardized scores on the given items only (NaN = not observed).
    """
    reference = np.asarray(reference, dtype=float)
    rows = np.asarray(rows, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows
        ref = np.nanmean(reference, axis=1) if reference.size else np.empty(0)
        row = np.nanmean(rows, axis=1) if rows.size else np.full(len(rows), np.nan)
    ref = ref[~np.isnan(ref)]
    if ref.size == 0:
        return np.zeros(len(rows), dtype=bool)
    with np.errstate(invalid="ignore"):
        return row >= np.quantile(ref, 1 - fraction)


def regime_excess(reference: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The excess that decides a new row's calibration regime (``inside`` at 0).

    :func:`range_excess`, except that a row with a given score above every
    reference score or below every reference score on that item is never
    inside: it gets the smallest positive excess (the ``outside``
    multiplier) when its strength lies within the range. This is the rule
    :meth:`GaussianModel.extrapolation
    <benchsel.models.GaussianModel.extrapolation>` flags by, so a flagged
    model is calibrated as outside.

    Parameters
    ----------
    reference, rows : ndarray
        As in :func:`range_excess` (standardized, NaN = not given).
    """
    reference = np.asarray(reference, dtype=float)
    rows = _on_evidence(reference, np.asarray(rows, dtype=float))
    excess = range_excess(reference, rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column no reference row has
        top, bottom = np.nanmax(reference, axis=0), np.nanmin(reference, axis=0)
    with np.errstate(invalid="ignore"):
        beyond = ((rows > top) | (rows < bottom)).any(axis=1)  # NaN compares False
    return np.where((excess == 0) & beyond, np.finfo(float).tiny, excess)


def range_excess(reference: np.ndarray, rows: np.ndarray, signed: bool = False) -> np.ndarray:
    """How far each row's strength lies beyond the reference rows' on the same items.

    Parameters
    ----------
    reference : ndarray of shape (M, N)
        Standardized scores of the models a predictor was fitted on (NaN =
        missing).
    rows : ndarray of shape (R, N)
        Standardized scores of the rows to judge, NaN where not given.

    Returns
    -------
    ndarray of shape (R,)
        A row's strength is the mean of its given scores; its excess is its
        distance above the largest or below the smallest strength of the
        reference models on those items (each over the items it has), in
        units of the standard deviation of those strengths; 0 within the
        range. A row with nothing given has excess 0. With ``signed`` a row
        below the range gets a negative excess. Items fewer than
        :data:`~benchsel.matrix.FEW_MODELS` reference models have are left
        out of a row that has others (:func:`_on_evidence`).
    """
    reference = np.asarray(reference, dtype=float)
    rows = _on_evidence(reference, np.asarray(rows, dtype=float))
    given = ~np.isnan(rows)
    out = np.zeros(rows.shape[0])
    patterns, inverse = unique_rows(given)
    ref_obs = (~np.isnan(reference)).astype(float)  # float: the products below use BLAS
    ref_filled = np.where(ref_obs > 0, reference, 0.0)
    n_given = given.sum(axis=1)
    strength = np.where(given, rows, 0.0).sum(axis=1) / np.maximum(n_given, 1)
    # The reference strengths on every pattern's items at once: an
    # (M, patterns) matrix of sums over counts, in chunks of patterns. Each
    # statistic below is one pass over it (this runs once per selection in
    # every protocol, on thousands of models).
    step = max(1, _CHUNK // max(reference.shape[0], 1))
    low, high = np.zeros(len(patterns)), np.zeros(len(patterns))
    spread, usable = np.ones(len(patterns)), np.zeros(len(patterns), dtype=bool)
    for start in range(0, len(patterns), step):
        chunk = slice(start, start + step)
        p = patterns[chunk].T.astype(float)
        count = ref_obs @ p
        n_has = np.count_nonzero(count, axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ref = (ref_filled @ p) / count  # NaN where the model has none of the items
        usable[chunk] = (n_has > 0) & patterns[chunk].any(axis=1)
        low[chunk] = np.fmin.reduce(ref, axis=0)  # fmin/fmax skip NaN
        high[chunk] = np.fmax.reduce(ref, axis=0)
        np.nan_to_num(ref, copy=False, nan=0.0)
        n = np.maximum(n_has, 1)
        centre = ref.sum(axis=0) / n
        var = np.einsum("mg,mg->g", ref, ref) / n - centre**2
        sd = np.sqrt(np.maximum(var, 0.0))
        spread[chunk] = np.where((n_has > 1) & (sd > 1e-12 * np.maximum(np.abs(centre), 1.0)),
                                 sd, 1.0)
    ok = usable[inverse]
    g = inverse[ok]
    above = np.maximum(strength[ok] - high[g], 0.0)
    below = np.maximum(low[g] - strength[ok], 0.0)
    out[ok] = (above - below if signed else above + below) / spread[g]
    return out


def _range_excess_loop(reference: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """One pattern at a time (the reference :func:`range_excess` is tested against)."""
    reference = np.asarray(reference, dtype=float)
    rows = np.array(rows, dtype=float)
    supported = (~np.isnan(reference)).sum(axis=0) >= FEW_MODELS
    for i, row in enumerate(rows):  # as _on_evidence, row by row
        if (~np.isnan(row) & supported).any():
            rows[i, ~supported] = np.nan
    given = ~np.isnan(rows)
    out = np.zeros(rows.shape[0])
    patterns, inverse = unique_rows(given)
    ref_obs = ~np.isnan(reference)
    ref_filled = np.where(ref_obs, reference, 0.0)
    for g, pattern in enumerate(patterns):
        if not pattern.any():
            continue
        count = ref_obs[:, pattern].sum(axis=1)
        has = count > 0
        if not has.any():
            continue
        ref = ref_filled[has][:, pattern].sum(axis=1) / count[has]
        members = np.flatnonzero(inverse == g)
        strength = rows[np.ix_(members, np.flatnonzero(pattern))].mean(axis=1)
        spread = ref.std() if ref.size > 1 and ref.std() > 0 else 1.0
        out[members] = np.maximum(np.maximum(strength - ref.max(), ref.min() - strength), 0.0) \
            / spread
    return out


def measures_frontier(z) -> bool:
    """Whether the sources ``z`` (NaN = missing) are enough to measure a frontier shift:
    their strongest :data:`~benchsel.calibration.FRONTIER_FRACTION` must hold
    :data:`~benchsel.calibration.MIN_CELLS` models (300 models at 10%)."""
    rows = int(np.sum(~np.isnan(np.asarray(z, dtype=float)).all(axis=1)))
    return rows * FRONTIER_FRACTION >= MIN_CELLS


def clear_column_bias(residual) -> np.ndarray:
    """Per column, the mean residual where it is clear; 0 elsewhere.

    A frontier shift (the Gaussian's and every completion method's) keeps a
    column's mean residual over the strongest held-out source models where
    at least :data:`~benchsel.calibration.MIN_CELLS` of them have a residual
    there and the mean is more than two standard errors from 0: with fewer
    strong models a bias cannot be told from noise.

    Parameters
    ----------
    residual : ndarray of shape (M, N)
        NaN where a model has no residual (not scored, or given).
    """
    residual = np.asarray(residual, dtype=float)
    n = (~np.isnan(residual)).sum(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # columns no strong model has
        mean = np.nanmean(residual, axis=0)
        se = np.nanstd(residual, axis=0, ddof=1) / np.sqrt(np.maximum(n, 1))
    clear = (n >= MIN_CELLS) & (np.abs(mean) > 2 * se)
    return np.where(clear, mean, 0.0)
