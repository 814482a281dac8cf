"""Conformal calibration of the Gaussian conditional's error bars, and its bias at the top.

The calibration splits of :func:`benchsel.calibration.calibration_splits`
are fitted once (standardizer and covariance on each split's training
models, as the full fit does); the residuals for a given set of observed
items then cost one conditional solve per split, so a model can be
calibrated for every pattern of observed items it is asked about.

One more split mimics the frontier: the strongest 10% of the source models
(:func:`benchsel.splits.frontier_split`) predicted from all the others.
The Gaussian's conditional mean predicts such models too low, for two
reasons: it is linear, and on a board whose strongest models pull ahead on
some items (open_llm_v2's MATH Level 5 and GPQA) it misses the bend; and
models that are the strongest by *all* their scores are, given a few of
them, above the conditional mean of the others too (selection: about half
a standard deviation on a linear synthetic board). A new checkpoint at the
frontier is usually of that kind. Where the split holds enough models to
measure it, :meth:`GaussianCalibrator.frontier_shift` gives the per-item
bias, in the conditional's standard deviations, that a new model at the
frontier (by its given scores) is corrected by. The price is paid by a
model that is strong on its given items only: on open_llm_v2's random
folds the MI R² at k = 1..5 moved by -0.007 to -0.018 (see
docs/experiments/reproduction.md, "The frontier").
"""

from __future__ import annotations

import warnings

import numpy as np

from ..calibration.conformal import MIN_CELLS, Calibration, fit_calibration
from ..calibration.regimes import (
    FRONTIER_FRACTION,
    clear_column_bias,
    measures_frontier,
    range_excess,
)
from ..calibration.splits import MAX_MODELS, calibration_splits
from ..exceptions import ConvergenceWarning
from ..gaussian.conditional import conditional_moments
from ..gaussian.covariance import (
    estimate_covariance,
    fit_standardizer,
    working_covariance,
)
from ..progress import report
from ..splits import Fold, frontier_split

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
    shared : (values, FitStore), optional
        The scores ``z`` standardizes (``z`` an affine map of ``values``,
        column by column) and the store of ``auto``'s fits on them: each
        split's Gaussian is then the store's ``auto`` fit of its training
        rows (:meth:`~benchsel.prediction.fits.FitStore.get`), made once for
        the calibration and ``auto``'s choice, whose random folds hold out
        the same models, and kept with the board's other fits. Only for
        the default estimator and options, which those fits use; ``start``
        is then unused.
    **options
        Passed to :func:`~benchsel.gaussian.covariance.estimate_covariance`.
    """

    def __init__(self, z, *, covariance: str = "auto", ridge: float = 0.0, clip: float = 10.0,
                 folds: int = 3, seed=0, start=None, shared=None, **options):
        z = np.asarray(z, dtype=float)
        self.ridge = ridge
        self._shared = shared
        self._n_items = z.shape[1]
        self._fits = []
        self._cache: dict[tuple, tuple] = {}
        self._fit_options = dict(covariance=covariance, clip=clip, start=start, **options)
        splits = calibration_splits(z, folds, seed)
        stage = "calibrating the Gaussian's intervals"  # five EM fits: seconds on MERGED
        for done, split in enumerate(splits):
            report(stage, done, len(splits))
            fit = self._fit_split(z, split)
            if fit is not None:
                self._fits.append(fit)
        report(stage, len(splits), len(splits))
        self._z = z
        self._frontier = None  # the frontier split's fit, made when first needed
        self._shifts: dict[tuple, np.ndarray] = {}

    def _fit_split(self, z, split):
        """(cols, train, held, mean, covariance) of one split, in its own standardization."""
        options = dict(self._fit_options)
        covariance, clip, start = (options.pop(k) for k in ("covariance", "clip", "start"))
        if self._shared is not None:
            return self._shared_split(split, clip)
        std = fit_standardizer(z[split.train], covariance)
        cols = np.flatnonzero(~std.constant)
        if cols.size < 2:
            return None
        train = std.transform(z[np.ix_(split.train, cols)], cols)
        held = np.clip(std.transform(z[np.ix_(split.validation, cols)], cols), -clip, clip)
        if start is not None:
            scale = std.scale[cols]
            options["start"] = ((start[0][cols] - std.mean[cols]) / scale,
                                start[1][np.ix_(cols, cols)] / np.outer(scale, scale))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est = estimate_covariance(train, covariance, whole_board=False, **options)
        return cols, train, held, est.mean, working_covariance(est)

    def _shared_split(self, split, clip: float):
        """:meth:`_fit_split` from the store's fit of the split's training rows.

        Standardizing the rows of ``z`` or of the scores it maps gives the
        same units, so the store's fit (standardized on the raw rows) serves.
        """
        values, store = self._shared
        fit = store.get(values[split.train], "auto")
        if fit.cols.size < 2:
            return None
        held = np.clip(fit.std.transform(values[np.ix_(split.validation, fit.cols)], fit.cols),
                       -clip, clip)
        return fit.cols, fit.z(values[split.train]), held, fit.mean, fit.covariance

    def frontier_shift(self, given) -> np.ndarray:
        """Per item, the conditional mean's bias on the strongest source models, in SDs.

        The strongest 10% of the source models (at least 5) are predicted
        from a fit on the others with the ``given`` items, as a new model
        is; per predicted item, the mean of the normalized residuals
        ``(y - mean) / std`` over those models is returned where at least
        :data:`~benchsel.calibration.MIN_CELLS` of them have the item and
        the mean is more than two standard errors from 0; elsewhere 0 (too
        few strong models to tell a bias from noise). Adding ``shift *
        std`` to a frontier model's conditional mean removes the bias the
        split measured.

        Returns
        -------
        ndarray of shape (N,)
            0 for the given items.
        """
        return self._per_given(self._shifts, given, self._frontier_shift)

    def _frontier_shift(self, given) -> np.ndarray:
        shift = np.zeros(self._n_items)
        if self._frontier is None:
            self._frontier = self._fit_frontier()
        if not self._frontier:
            return shift
        cols, _, held, mean, sigma = self._frontier
        g = given[cols]
        x = np.where(g, held, np.nan)
        keep = ~np.isnan(x).all(axis=1)
        if not (g.any() and keep.sum() >= MIN_CELLS):
            return shift
        mu, var = conditional_moments(x[keep], mean, sigma, ridge=self.ridge)
        with np.errstate(invalid="ignore", divide="ignore"):
            r = (held[keep] - mu) / np.sqrt(var)
        r[:, g] = np.nan
        shift[cols] = clear_column_bias(r)
        return shift

    def _fit_frontier(self):
        """The frontier split's fit (``()`` when too few models to measure a bias)."""
        if not measures_frontier(self._z):
            return ()
        rows = np.flatnonzero(~np.isnan(self._z).all(axis=1))
        if rows.size > MAX_MODELS:  # bounded cost, as calibration_splits
            rows = np.sort(np.random.default_rng(0).choice(rows, MAX_MODELS, replace=False))
        within = frontier_split(self._z[rows], FRONTIER_FRACTION)
        # Rows of the whole board, as every split's: a shared fit is looked up by them.
        split = Fold(within.index, rows[within.train], rows[within.validation])
        return self._fit_split(self._z, split) or ()

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
        return self._per_given(self._cache, given, self._residuals)

    def _per_given(self, cache: dict, given, compute):
        """``compute(given)`` once per set of given items, kept in ``cache``."""
        given = np.asarray(given, dtype=bool)
        if given.shape != (self._n_items,):
            raise ValueError(f"given must be a boolean mask of {self._n_items} items; "
                             f"got shape {given.shape}")
        key = tuple(np.flatnonzero(given))
        if key not in cache:
            cache[key] = compute(given)
        return cache[key]

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
