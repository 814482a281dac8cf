"""Matrix completion: fill every missing cell of a leaderboard, with error bars.

Each completer maps a models x items array (NaN = missing) to predicted means
and standard deviations for every cell (observed cells keep their value and
get ``std = 0``); a cell it cannot predict stays NaN. The methods:

* ``mean`` -- the benchmark's mean over the models that have it.
* ``gaussian`` / ``gaussian-em`` -- the Gaussian conditional mean and variance
  given all of a model's observed scores, with the ``em-shrink`` / paper
  ``em`` covariance.
* ``svd`` -- rank-2 soft-impute SVD in logit space for percentage-scale
  columns (standardized units otherwise); a new model's row
  (:func:`~benchsel.prediction.registry.complete_new_rows`) is folded into the sources' fit
  (:class:`~benchsel.prediction.fits.SvdFit`).
* ``ridge`` -- per cell, ridge regression on the 5 benchmarks most correlated
  with the target that the model has, in logit space.
* ``svd+ridge`` -- their average where both predict (the published blend).
* ``gaussian+svd`` -- the average of ``gaussian`` and ``svd``.
* ``gp`` -- ``gaussian`` plus a Gaussian-process correction of its
  residuals from the benchmarks a row has, for rows with at most 10
  observed scores (:mod:`benchsel.prediction.gp`); ``gaussian`` elsewhere.
* ``auto`` (not in :data:`METHODS`: :data:`~benchsel.prediction.registry.COMPLETERS`
  adds it) -- the method of
  :func:`~benchsel.prediction.choice.auto_candidates` that wins a
  cross-validation on the matrix itself
  (:func:`choose_completer`: the ``complete`` protocol's hidden cells, but
  drawn from the matrix being completed, so a held-out cell of an outer
  protocol is never seen); cells it cannot predict are filled by the
  runner-up, and so on, down to the column mean.

Percentage-scale columns are those with all scores in ``[0, 100]``; scores
in ``[0, 1]`` are taken as fractions.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from .._memory import check_memory
from ..exceptions import ConvergenceWarning
from ..gaussian.conditional import conditional_moments
from ..gaussian.covariance import (
    em_affordable,
    estimate_covariance,
    fit_standardizer,
    working_covariance,
)
from . import gp
from .fits import GaussianFit
from .latent import (
    Completion,
    Latent,
    blend,
    complete_mean,
    finish,
    soft_impute,
)

__all__ = ["METHODS"]


def _complete_gaussian(values: np.ndarray, covariance: str) -> Completion:
    std = fit_standardizer(values, covariance)
    cols = np.flatnonzero(~std.constant)
    # Columns that cannot be standardized fall back to their mean.
    fallback = complete_mean(values)
    mean, sd = fallback.mean.copy(), fallback.std.copy()
    z = std.transform(values[:, cols], cols)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = estimate_covariance(z, covariance)
    mu, var = conditional_moments(z, est.mean, working_covariance(est))
    mean[:, cols] = std.inverse(mu, cols)
    sd[:, cols] = np.sqrt(var) * std.scale[cols]
    return finish(values, mean, sd)


def complete_gaussian(values: np.ndarray) -> Completion:
    return _complete_gaussian(values, "auto")


def complete_gp(values: np.ndarray, gaussian: Completion | None = None) -> Completion:
    """``gaussian``, but rows with at most ``MAX_INPUTS`` scores by :mod:`benchsel.prediction.gp`.

    Those rows (a plan's new models) are predicted by a Gaussian fitted on
    the other rows plus the residual process; a column constant on the
    other rows gets its mean. With fewer than ``MIN_ROWS`` other rows,
    ``gaussian`` stands. ``gaussian`` may be passed in when it was already
    computed for ``values``.
    """
    values = np.asarray(values, dtype=float)
    done = complete_gaussian(values) if gaussian is None else gaussian
    todo = gp.process_rows(values)
    if not todo.any() or (~todo).sum() < gp.MIN_ROWS:
        return done
    rows = np.flatnonzero(todo)
    res = GaussianFit(values[~todo], "auto").residual_process(values, rows)
    mean, spread = done.mean.copy(), done.std.copy()
    mean[rows], spread[rows] = res.mean, res.std
    return Completion(mean, spread)


def complete_gaussian_em(values: np.ndarray) -> Completion:
    """The plain EM Gaussian's conditional; no prediction (NaN) where EM would not fit
    its time or the memory budget (:func:`~benchsel.gaussian.covariance.em_affordable`):
    ``auto`` then ranks it last, and an explicit request falls back with a warning."""
    if not em_affordable(~np.isnan(values)):
        return finish(values, np.full(values.shape, np.nan), np.full(values.shape, np.nan))
    return _complete_gaussian(values, "em")


def complete_svd(
    values: np.ndarray, rank: int = 2, shrink: float = 0.0, max_iter: int = 500, tol: float = 1e-6
) -> Completion:
    """Soft-impute (Mazumder et al. 2010) capped at ``rank`` in latent units.

    Missing cells start at the column mean (0 in standardized units); each
    iteration replaces them by the rank-``rank`` reconstruction with singular
    values shrunk by ``shrink``. The error bar of a column is the root mean
    square of its observed cells' reconstruction residuals.
    """
    lat = Latent(values)
    recon, rmse = soft_impute(lat.z, rank, shrink, max_iter, tol)
    z_std = np.broadcast_to(rmse, recon.shape)
    mean, std = lat.back(recon), lat.back_std(recon, z_std)
    # A column nobody observed has no prediction (the reconstruction is 0 there).
    empty = np.isnan(values).all(axis=0)
    mean[:, empty] = np.nan
    std[:, empty] = np.nan
    return finish(values, mean, std)


def _pair_correlations(z: np.ndarray, min_pairs: int = 5) -> np.ndarray:
    n = z.shape[1]
    # Counts, three sums and the correlations: about six N x N arrays at once.
    check_memory(6 * 8.0 * n * n, f"ridge's correlations of {n} benchmarks",
                 "choose another completion method")
    observed = ~np.isnan(z)
    o = observed.astype(float)
    zf = np.where(observed, z, 0.0)
    counts = o.T @ o
    sx = zf.T @ o  # sum of column a over rows where b observed
    sxx = (zf**2).T @ o
    sxy = zf.T @ zf
    with np.errstate(all="ignore"):
        cov = sxy / counts - (sx / counts) * (sx.T / counts)
        var_a = sxx / counts - (sx / counts) ** 2
        corr = cov / np.sqrt(var_a * var_a.T)
    corr[(counts < min_pairs) | ~np.isfinite(corr)] = 0.0
    np.fill_diagonal(corr, 0.0)
    return corr


def complete_ridge(values: np.ndarray, n_predictors: int = 5, alpha: float = 1.0,
                   rows=None) -> Completion:
    """Per missing cell: ridge on the most correlated benchmarks the model has.

    For target column ``j`` the candidates are the ``n_predictors`` columns
    most correlated with ``j`` (absolute pairwise correlation over
    co-observed models, latent units); a cell uses those its model
    observed, and the fit uses the models that have ``j`` and all of them.
    The error bar is the in-sample residual standard deviation, inflated
    by ``sqrt(n / (n - p - 1))``. Cells whose model has none of the
    candidates, or whose fit would have fewer than ``p + 3`` models, are
    left unpredicted.

    ``rows`` (indices or a boolean mask) limits the prediction to those
    rows' missing cells, the others staying NaN; the fits still use every
    row. A held-out fold reads the rows that hide cells only, and predicting
    every missing cell of a sparse board cost most of ``ridge``'s time.
    """
    lat = Latent(values)
    z = lat.z
    observed = ~np.isnan(z)
    corr = np.abs(_pair_correlations(z))
    mean = np.full(z.shape, np.nan)
    sd = np.full(z.shape, np.nan)
    asked = np.ones(z.shape[0], dtype=bool)
    if rows is not None:
        asked[:] = False
        asked[rows] = True
    cache: dict[tuple, tuple] = {}
    for j in range(z.shape[1]):
        top = [c for c in np.argsort(-corr[:, j])[:n_predictors] if corr[c, j] > 0]
        for i in np.flatnonzero(~observed[:, j] & asked):
            use = tuple(c for c in top if observed[i, c])
            if not use:
                continue
            key = (j, use)
            if key not in cache:
                rows = observed[:, j] & observed[:, list(use)].all(axis=1)
                n, p = int(rows.sum()), len(use)
                if n < p + 3:
                    cache[key] = None
                else:
                    x = z[np.ix_(rows, list(use))]
                    y = z[rows, j]
                    xm, ym = x.mean(axis=0), y.mean()
                    xc = x - xm
                    beta = np.linalg.solve(xc.T @ xc + alpha * np.eye(p), xc.T @ (y - ym))
                    resid = y - ym - xc @ beta
                    s = np.sqrt(resid @ resid / (n - p - 1))
                    cache[key] = (xm, ym, beta, s)
            fit = cache[key]
            if fit is None:
                continue
            xm, ym, beta, s = fit
            mean[i, j] = ym + (z[i, list(use)] - xm) @ beta
            sd[i, j] = s
    pred = np.where(np.isnan(mean), 0.0, mean)
    out_mean = np.where(np.isnan(mean), np.nan, lat.back(pred))
    out_sd = np.where(np.isnan(sd), np.nan, lat.back_std(pred, np.nan_to_num(sd)))
    return finish(values, out_mean, out_sd)


def complete_svd_ridge(values: np.ndarray) -> Completion:
    return blend(complete_svd(values), complete_ridge(values))


def complete_gaussian_svd(values: np.ndarray) -> Completion:
    return blend(complete_gaussian(values), complete_svd(values))


METHODS: dict[str, Callable[[np.ndarray], Completion]] = {
    "mean": complete_mean,
    "gaussian-em": complete_gaussian_em,
    "gaussian": complete_gaussian,
    "svd": complete_svd,
    "ridge": complete_ridge,
    "svd+ridge": complete_svd_ridge,
    "gaussian+svd": complete_gaussian_svd,
    "gp": complete_gp,
}
