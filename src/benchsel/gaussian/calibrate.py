"""Conformal calibration of the Gaussian conditional's error bars.

The calibration splits of :func:`benchsel.calibration.calibration_splits`
are fitted once (standardizer and covariance on each split's training
models, as the full fit does); the residuals for a given set of observed
items then cost one conditional solve per split, so a model can be
calibrated for every pattern of observed items it is asked about.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..calibration import Calibration, calibration_splits, fit_calibration, range_excess
from .conditional import conditional_moments
from .covariance import ConvergenceWarning, estimate_covariance, fit_standardizer

__all__ = ["GaussianCalibrator"]


class GaussianCalibrator:
    """Held-out residuals of the Gaussian conditional on the source models themselves.

    Parameters
    ----------
    z : ndarray of shape (M, N)
        The source scores in the units the model is fitted in (NaN =
        missing).
    covariance : str, default "auto"
        Estimator refitted on every calibration split.
    ridge : float, default 0
        As in the conditional solves of the model being calibrated.
    clip : float, default 10
        Held-out standardized scores are clipped to ``[-clip, clip]``.
    folds : int, default 3
        Random calibration folds (two strength splits come on top).
    seed : int, default 0
    start : (mean, covariance), optional
        The fit on all of ``z``, in its units: every split's EM starts there
        (rescaled to the split's standardization) instead of from scratch,
        and still converges on its own training models alone. The start has
        seen the split's held-out models, which can show only in where EM
        stops (differences of about 1e-3 in standardized units).
    **options
        Passed to :func:`~benchsel.gaussian.covariance.estimate_covariance`.
    """

    def __init__(self, z, *, covariance: str = "auto", ridge: float = 0.0, clip: float = 10.0,
                 folds: int = 3, seed=0, start=None, **options):
        z = np.asarray(z, dtype=float)
        self.ridge = ridge
        self._n_items = z.shape[1]
        self._fits = []
        self._cache: dict[tuple, tuple] = {}
        for split in calibration_splits(z, folds, seed):
            std = fit_standardizer(z[split.train], covariance)
            cols = np.flatnonzero(~std.constant)
            if cols.size < 2:
                continue
            train = std.transform(z[np.ix_(split.train, cols)], cols)
            held = np.clip(std.transform(z[np.ix_(split.validation, cols)], cols), -clip, clip)
            if start is not None:
                scale = std.scale[cols]
                options["start"] = ((start[0][cols] - std.mean[cols]) / scale,
                                    start[1][np.ix_(cols, cols)] / np.outer(scale, scale))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                est = estimate_covariance(train, covariance, **options)
            self._fits.append((cols, train, held, est.mean, est.covariance))

    def residuals(self, given) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Residuals, standard deviations and regimes of every held-out cell.

        Parameters
        ----------
        given : array-like of bool, shape (N,)
            The items a new model was run on. Each held-out model is given
            those of them it has, and scored on its other observed items;
            held-out models with none of them are left out.

        Returns
        -------
        residual, std : ndarray of shape (n,)
        excess : ndarray of shape (n,)
            How far the cell's model lay outside its fit's strength range
            (:func:`~benchsel.calibration.range_excess`).
        """
        return self._cells(given)[:3]

    def _cells(self, given):
        """residual, std, excess and group (split x item) of every held-out cell, cached."""
        given = np.asarray(given, dtype=bool)
        if given.shape != (self._n_items,):
            raise ValueError(f"given must be a boolean mask of {self._n_items} items; "
                             f"got shape {given.shape}")
        key = tuple(np.flatnonzero(given))
        if key not in self._cache:
            self._cache[key] = self._residuals(given)
        return self._cache[key]

    def _residuals(self, given):
        parts = ([], [], [], [])
        for s, (cols, train, held, mean, sigma) in enumerate(self._fits):
            g = given[cols]
            x = np.where(g, held, np.nan)
            rows = ~np.isnan(x).all(axis=1)
            if not (g.any() and rows.any()):
                continue
            x, y = x[rows], held[rows]
            mu, var = conditional_moments(x, mean, sigma, ridge=self.ridge)
            scored = ~np.isnan(y) & ~g
            out = np.broadcast_to(range_excess(train[:, g], x[:, g])[:, None], y.shape)
            group = np.broadcast_to(s * self._n_items + cols[None, :], y.shape)
            for bucket, values in zip(parts, (y - mu, np.sqrt(var), out, group)):
                bucket.append(values[scored])
        if not parts[0]:
            return np.empty(0), np.empty(0), np.empty(0), np.empty(0, dtype=int)
        return tuple(np.concatenate(p) for p in parts)

    def error_correlation(self, given) -> tuple[float, float]:
        """How alike two held-out models' errors on the same item are, per regime.

        The intraclass correlation of the normalized residuals ``r / std``
        of the models held out together (same split, same item): about 0 when
        errors are each model's own, near 1 when a shared miss dominates (a
        fit extrapolating to stronger models misses them all the same way).
        Pooled over items as ``sum((sum z)^2 - sum z^2) / sum((n - 1) sum z^2)``
        and clipped to ``[0, 0.95]``; returns ``(inside, outside)`` (0 where a
        regime has no pairs).
        """
        residual, std, excess, group = self._cells(given)
        ok = std > 0
        z = residual[ok] / std[ok]
        out = []
        for mask in (excess[ok] == 0, excess[ok] > 0):
            g = group[ok][mask]
            zz = z[mask]
            if g.size < 2:
                out.append(0.0)
                continue
            ids, inv = np.unique(g, return_inverse=True)
            sums = np.bincount(inv, zz)
            squares = np.bincount(inv, zz**2)
            counts = np.bincount(inv)
            den = float(np.sum((counts - 1) * squares))
            num = float(np.sum(sums**2 - squares))
            out.append(float(np.clip(num / den, 0.0, 0.95)) if den > 0 else 0.0)
        return out[0], out[1]

    def calibration(self, given, level: float = 0.9) -> Calibration:
        """Per-regime multipliers for a new model run on the ``given`` items."""
        residual, std, excess = self.residuals(given)
        return fit_calibration(residual, std, excess, level=level)
