"""Calibrated error bars: conformal multipliers of a predictor's standard deviation.

A predictor's own standard deviation (the Gaussian conditional variance, a
completion method's residual spread) ignores that its parameters were
estimated from a few hundred models, and it says nothing about a new model
that is stronger than every model it was fitted on. Calibration measures
how wrong the predictor is on models it did not see and widens (or narrows)
its intervals to match:

1. Hold out source models -- random folds, plus *strength splits* that fit
   on the weakest models and predict the strongest (and the reverse), so
   that the held-out set contains models outside the range of the fit.
2. For every held-out cell take the normalized residual
   ``|y - mean| / std``.
3. Split the cells by *regime*: ``outside`` when the held-out model's
   strength on the items it was given lies beyond every training model's
   strength on the same items, ``inside`` otherwise.
4. Per regime, the multiplier is the conformal quantile of the normalized
   residuals at ``level`` (the ``ceil((n + 1) level)``-th smallest of ``n``),
   divided by the Gaussian quantile ``z_{(1 + level) / 2}``.

A new model's interval is ``mean +- z std * multiplier(regime)``, the regime
judged the same way against the full source set. Beyond the range the
multiplier is the larger of two, each calibrated on the outside cells: a
constant, and one proportional to ``1 + e``, where the *excess* ``e`` is how
far beyond the range the model lies (in standard deviations of the training
models' strengths) -- so a model further out than any held-out one gets
wider intervals still. The constant is taken from the held-out cells at
most as far out as the new model (the nearest 30, 60, 120, ... of them,
``Calibration.outside_steps``): the strength splits hold out models far
beyond their fit, and a new checkpoint just past the top of its sources
is calibrated by those that lay about as far out. This is Mondrian (category
-conditional) split-conformal calibration (Vovk et al. 2005): coverage holds
within each regime when new models resemble its held-out ones, and the
``outside`` regime, learned from models that really lay beyond their fit,
is what keeps intervals honest under extrapolation. An ``outside``
multiplier is never smaller than the ``inside`` one, and with fewer than
``min_cells`` outside cells it is the pooled one. (Either outside multiplier
alone under-covers some bundled board under extrapolation: the constant one
open_llm_v2 and alpaca_eval, the growing one MTEB and HELM Lite; the larger
of the two covers both, at the price of wider intervals where the constant
one sufficed.)

A new model with no observed score has no regime: nothing places it among
the source models. :func:`unknown_calibration` gives it the multiplier a
model beyond the range needs.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ._patterns import unique_rows
from .splits import Fold, strength_split

__all__ = [
    "Calibration",
    "calibration_splits",
    "conformal_quantile",
    "fit_calibration",
    "frontier_rows",
    "outside_range",
    "range_excess",
    "regime_excess",
    "unknown_calibration",
]

#: Fewest held-out cells a regime needs for a multiplier of its own.
MIN_CELLS = 30
#: Fewest source models for calibration; below it intervals stay uncalibrated.
MIN_MODELS = 10
#: Calibration splits are drawn from at most this many source models (a seeded subsample).
MAX_MODELS = 2000
_CHUNK = 4_000_000  # at most this many reference strengths at once


def _gaussian_quantile(level: float) -> float:
    from scipy.special import ndtri

    return float(ndtri(0.5 + level / 2))


@dataclass(frozen=True)
class Calibration:
    """Multipliers of a predictor's standard deviation, per regime.

    Attributes
    ----------
    level : float
        Coverage the multipliers were calibrated for.
    inside, outside : float
        Multiplier for a new model within / beyond the strength range of the
        models the predictor was fitted on.
    outside_slope : float
        Beyond the range the multiplier is ``max(outside, outside_slope *
        (1 + excess))``: the larger of a constant and one that grows with
        the distance from the range (:func:`range_excess`), each calibrated
        on the held-out outside cells.
    n_inside, n_outside : int
        Held-out cells behind each multiplier (0 and 0: not calibrated,
        both multipliers 1).
    below, below_slope : float or None
        With signed excesses (:func:`range_excess` ``signed=True``), the
        multipliers of a model *below* the range, calibrated on the cells
        below it; ``outside`` and ``outside_slope`` are then those above.
        ``None``: one outside regime for both directions.
    n_below : int
        Held-out cells below the range (counted in ``n_outside`` too).
    outside_steps : tuple of (float, float)
        The constant outside multiplier *near* the range: ``(excess,
        multiplier)`` pairs, each the multiplier of the held-out outside
        cells at most ``excess`` out (the nearest ``min_cells``, then twice
        as many, ..., then all), never smaller than a nearer step's. A new
        model just past the top of its sources is then calibrated by the
        held-out models that lay about as far out, not by those the strength
        splits put far beyond their fit. Empty: one constant, ``outside``
        (fewer than ``2 min_cells`` outside cells, or signed excesses: the
        question level's calibration keeps one constant per direction).
    """

    level: float
    inside: float = 1.0
    outside: float = 1.0
    n_inside: int = 0
    n_outside: int = 0
    outside_slope: float = 0.0
    below: float | None = None
    below_slope: float | None = None
    n_below: int = 0
    outside_steps: tuple = ()

    @property
    def calibrated(self) -> bool:
        return self.n_inside + self.n_outside > 0

    def factor(self, excess) -> np.ndarray:
        """The multiplier of each row, given how far it lies outside the fitted range.

        ``inside`` at excess 0, ``max(outside, outside_slope * (1 + excess))``
        beyond (see :func:`range_excess`; a boolean reads as excess 0 or 1),
        where with :attr:`outside_steps` the constant ``outside`` is that of
        the first step reaching the row's excess (the last step's beyond
        every held-out cell).
        A negative (signed) excess is a row below the range: it gets the
        ``below`` multipliers where the calibration has them.
        """
        e = np.asarray(excess, dtype=float)
        near = self.outside
        if self.outside_steps:
            edges = np.array([t for t, _ in self.outside_steps])
            values = np.array([m for _, m in self.outside_steps])
            step = np.minimum(np.searchsorted(edges, np.abs(e), side="left"), len(edges) - 1)
            near = np.maximum(self.inside, values[step])
        beyond = np.maximum(near, self.outside_slope * (1 + np.abs(e)))
        if self.below is not None:
            under = np.maximum(self.below, self.below_slope * (1 + np.abs(e)))
            beyond = np.where(e < 0, under, beyond)
        return np.where(e != 0, beyond, self.inside)

    def to_dict(self) -> dict:
        out = {
            "method": "conformal" if self.calibrated else "none",
            "level": self.level,
            "inside": self.inside,
            "outside": self.outside,
            "outside_slope": self.outside_slope,
            "cells_inside": self.n_inside,
            "cells_outside": self.n_outside,
        }
        if self.below is not None:
            out.update(below=self.below, below_slope=self.below_slope, cells_below=self.n_below)
        if self.outside_steps:
            out["outside_steps"] = [list(step) for step in self.outside_steps]
        return out


def conformal_quantile(scores, level: float) -> float:
    """The ``ceil((n + 1) level)``-th smallest of ``n`` scores (inf when that exceeds n).

    The split-conformal quantile: a new exchangeable score falls at or below
    it with probability at least ``level``.
    """
    s = np.sort(np.asarray(scores, dtype=float).ravel())
    rank = int(np.ceil((s.size + 1) * level))
    return float(s[rank - 1]) if 1 <= rank <= s.size else float("inf")


def fit_calibration(
    residual, std, excess, *, level: float = 0.9, min_cells: int = MIN_CELLS,
    min_multiplier: float = 0.0,
) -> Calibration:
    """Per-regime conformal multipliers from held-out residuals.

    Parameters
    ----------
    residual, std : array-like of shape (n,)
        ``y - mean`` and the predictor's standard deviation of each held-out
        cell. Cells with a non-finite value or ``std <= 0`` are left out
        (a zero standard deviation has no multiplier).
    excess : array-like of shape (n,)
        How far the cell's model lay outside the strength range of its fit
        (:func:`range_excess`; 0 inside, a boolean reads as 0 or 1). Signed
        excesses (negative below the range) calibrate the two directions
        apart: a model above the range is then judged by held-out models
        that were above theirs, not by the weak models a fit on the strongest
        ones missed.
    level : float in (0, 1), default 0.9
    min_cells : int, default 30
        Cells a regime needs for its own multiplier.
    min_multiplier : float, default 0
        Floor of both multipliers: 1 only ever widens the predictor's own
        intervals (for few, noisy held-out cells, where narrowing an error
        bar that is right by design would be fitting noise).

    Returns
    -------
    Calibration
        Uncalibrated (multipliers 1) when fewer than ``min_cells`` cells
        remain in all.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level!r}")
    residual = np.asarray(residual, dtype=float).ravel()
    std = np.asarray(std, dtype=float).ravel()
    excess = np.asarray(excess, dtype=float).ravel()
    if not residual.shape == std.shape == excess.shape:
        raise ValueError(
            f"residual, std and excess must have one entry per cell; got shapes "
            f"{residual.shape}, {std.shape}, {excess.shape}"
        )
    ok = np.isfinite(residual) & np.isfinite(std) & (std > 0) & np.isfinite(excess)
    score, excess = np.abs(residual[ok]) / std[ok], excess[ok]
    if score.size < min_cells:
        return Calibration(level)
    z = _gaussian_quantile(level)
    signed = bool(np.any(excess < 0))
    pooled = conformal_quantile(score, level) / z
    n_in = int(np.sum(excess == 0))
    inside = conformal_quantile(score[excess == 0], level) / z if n_in >= min_cells else pooled
    inside = max(inside, min_multiplier)

    def regime(cells):
        """Constant and growing multiplier from the cells of one outside regime."""
        if cells.sum() < min_cells:
            return pooled, 0.0
        e = np.abs(excess[cells])
        return (conformal_quantile(score[cells], level) / z,
                conformal_quantile(score[cells] / (1 + e), level) / z)

    def steps(cells):
        """``(excess, multiplier)`` per step: the nearest ``min_cells``, twice as many, ...
        cells of the regime, the multiplier never smaller than a nearer step's."""
        if cells.sum() < 2 * min_cells:
            return ()
        order = np.argsort(np.abs(excess[cells]), kind="stable")
        e, sc = np.abs(excess[cells])[order], score[cells][order]
        out, count, top = [], min_cells, 0.0
        while True:
            count = min(count, e.size)
            top = max(top, conformal_quantile(sc[:count], level) / z)
            out.append((float(e[count - 1]), float(top)))
            if count == e.size:
                return tuple(out)
            count *= 2

    # Beyond the fitted range a model is never predicted better than within it.
    if not signed:
        beyond, slope = regime(excess > 0)
        return Calibration(level, inside, max(inside, beyond), n_in, int(np.sum(excess > 0)),
                           slope, outside_steps=steps(excess > 0))
    above, above_slope = regime(excess > 0)
    below, below_slope = regime(excess < 0)
    return Calibration(level, inside, max(inside, above), n_in, int(np.sum(excess != 0)),
                       above_slope, max(inside, below), below_slope, int(np.sum(excess < 0)))


def unknown_calibration(values: np.ndarray, level: float = 0.9, seed=0) -> Calibration:
    """The multiplier of the column spread for a model with no observed score.

    Such a model is predicted as the mean of the source models that have
    each score, with their spread. Nothing places it among them: it may as
    well be stronger than all of them. So its multiplier is the larger of
    two conformal quantiles of ``|y - column mean| / column std``, each over
    the held-out cells of :func:`calibration_splits`, the column moments
    taken from the fitting models: one over the random folds (about 1: the
    spread of a model like the others), one over the strength splits (the
    strongest 30% against the weakest half's moments, and the reverse).
    Under the extrapolation protocol on MERGED at k = 1-5, the models with
    none of the selected scores had covered 38-44% with the spread alone
    (docs/experiments/reproduction.md).

    Parameters
    ----------
    values : ndarray of shape (M, N)
        Source scores in any units (NaN = missing).
    level : float, default 0.9
    seed : int, default 0
        Seed of the random folds.

    Returns
    -------
    Calibration
        ``inside`` (and ``outside``) is the multiplier, ``n_inside`` the
        cells it came from; uncalibrated when either half has fewer than
        :data:`MIN_CELLS` cells.
    """
    from .matrix import column_moments

    values = np.asarray(values, dtype=float)
    splits = calibration_splits(values, seed=seed)
    scores = {"random": [], "strength": []}
    n_random = len(splits) - 2  # calibration_splits: the random folds, then two strength splits
    for i, fold in enumerate(splits):
        count, mu, sd = column_moments(values[fold.train])
        ok = (count > 1) & (sd > 0)
        held = values[fold.validation][:, ok]
        s = np.abs(held - mu[ok]) / sd[ok]
        scores["random" if i < n_random else "strength"].append(s[~np.isnan(s)])
    pooled = {k: np.concatenate(v) if v else np.empty(0) for k, v in scores.items()}
    if min(p.size for p in pooled.values()) < MIN_CELLS:
        return Calibration(level)
    z = _gaussian_quantile(level)
    m = max(conformal_quantile(p, level) for p in pooled.values()) / z
    n = int(sum(p.size for p in pooled.values()))
    return Calibration(level, inside=m, outside=m, n_inside=n)


def outside_range(reference: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Whether each row's strength lies beyond every reference row's on the same items."""
    return range_excess(reference, rows) > 0


#: Share of the source models whose held-out predictions measure the frontier's bias.
FRONTIER_FRACTION = 0.1

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
    <benchsel.gaussian.GaussianModel.extrapolation>` flags by, so a flagged
    model is calibrated as outside.

    Parameters
    ----------
    reference, rows : ndarray
        As in :func:`range_excess` (standardized, NaN = not given).
    """
    reference = np.asarray(reference, dtype=float)
    rows = np.asarray(rows, dtype=float)
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
        below the range gets a negative excess.
    """
    reference = np.asarray(reference, dtype=float)
    rows = np.asarray(rows, dtype=float)
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
    rows = np.asarray(rows, dtype=float)
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


def calibration_splits(
    values: np.ndarray, folds: int = 3, seed=0, max_models: int | None = MAX_MODELS
) -> list[Fold]:
    """Held-out sets for calibration: random folds plus two strength splits.

    ``folds`` random folds over the models (each held out once), then fit on
    the weakest half and hold out the strongest 30%, and fit on the strongest
    half and hold out the weakest 30% (strength as in
    :func:`~benchsel.matrix.model_strength`). Returns no split for fewer than
    :data:`MIN_MODELS` models.

    With more than ``max_models`` models the splits are made within a
    random subsample of that many (``None``: all). Every split refits the
    model, so calibration would otherwise cost five fits on thousands of
    models; 2,000 models still hold out hundreds per split, and fits on
    fewer models than the real one err a little more, which can only widen
    the intervals.
    """
    values = np.asarray(values, dtype=float)
    has_row = ~np.isnan(values).all(axis=1)
    if has_row.sum() < MIN_MODELS:
        return []
    rows = np.flatnonzero(has_row)
    rng = np.random.default_rng(seed)
    if max_models is not None and rows.size > max_models:
        # Drawn before the folds' permutation, so smaller boards split as before.
        rows = np.sort(rng.choice(rows, max_models, replace=False))
    out = []
    for f, part in enumerate(np.array_split(rng.permutation(rows), folds)):
        out.append(Fold(f, np.sort(np.setdiff1d(rows, part)), np.sort(part)))
    sub = values[rows]
    for sign in (1.0, -1.0):
        split = strength_split(sign * sub)
        out.append(Fold(len(out), rows[split.train], rows[split.validation]))
    return out
