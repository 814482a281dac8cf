"""Conformal multipliers of a predictor's standard deviation, per regime.

:func:`fit_calibration` turns held-out residuals into a :class:`Calibration`
(see :mod:`benchsel.calibration` for the method); :func:`unknown_calibration`
is the multiplier for a model with no observed score.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..matrix import column_moments
from .splits import calibration_splits

__all__ = ["Calibration", "conformal_quantile", "fit_calibration", "unknown_calibration"]

#: Fewest held-out cells a regime needs for a multiplier of its own.
MIN_CELLS = 30


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
        cells at most ``excess`` out (the nearest eighth of them, at least
        ``min_cells``, then two eighths, ..., then all), never smaller
        than a nearer step's. A new
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


def fewest_cells(level: float) -> int:
    """The fewest scores whose :func:`conformal_quantile` at ``level`` is finite
    (9 at 0.9, 99 at 0.99)."""
    return int(np.ceil(level / (1 - level) - 1e-9))


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
        Cells a regime needs for its own multiplier; never fewer than the
        level needs for a finite quantile (:func:`fewest_cells`: 99 at
        0.99). At 30, a level of 0.97 or more made every step infinite.
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
    min_cells = max(min_cells, fewest_cells(level))
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
        """``(excess, multiplier)`` per step: the nearest eighth of the regime's cells (at
        least ``min_cells``), two eighths, ..., all, the multiplier never smaller than a
        nearer step's (docs/experiments/reproduction.md). A first step of
        ``min_cells`` cells was often one held-out model: on MTEB's frontier split
        one model just past its fit set 1.88 for every step out to excess 2.83,
        where the cells within 0.5 needed 1.26. Steps doubling from an eighth
        ended with half the cells and then all of them: on BigCodeBench's
        extrapolation split a model between the two got the farthest cells'
        multiplier."""
        if cells.sum() < 2 * min_cells:
            return ()
        order = np.argsort(np.abs(excess[cells]), kind="stable")
        e, sc = np.abs(excess[cells])[order], score[cells][order]
        step = max(min_cells, e.size // 8)
        out, top = [], 0.0
        for count in range(step, e.size + step, step):
            count = min(count, e.size)
            top = max(top, conformal_quantile(sc[:count], level) / z)
            out.append((float(e[count - 1]), float(top)))
        return tuple(out)

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
        :data:`MIN_CELLS` cells (or than the level needs, :func:`fewest_cells`).
    """
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
    if min(p.size for p in pooled.values()) < max(MIN_CELLS, fewest_cells(level)):
        return Calibration(level)
    z = _gaussian_quantile(level)
    m = max(conformal_quantile(p, level) for p in pooled.values()) / z
    n = int(sum(p.size for p in pooled.values()))
    return Calibration(level, inside=m, outside=m, n_inside=n)

