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
  (:func:`complete_new_rows`) is folded into the sources' fit
  (:class:`~benchsel.prediction.fits.SvdFit`).
* ``ridge`` -- per cell, ridge regression on the 5 benchmarks most correlated
  with the target that the model has, in logit space.
* ``svd+ridge`` -- their average where both predict (the published blend).
* ``gaussian+svd`` -- the average of ``gaussian`` and ``svd``.
* ``gp`` -- ``gaussian`` plus a Gaussian-process correction of its
  residuals from the benchmarks a row has, for rows with at most 10
  observed scores (:mod:`benchsel.prediction.gp`); ``gaussian`` elsewhere.
* ``auto`` -- the method of
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
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import expit, logit, ndtri

from .._memory import check_memory
from .._patterns import unique_rows
from ..bounds import column_scale
from ..gaussian.conditional import conditional_moments
from ..gaussian.covariance import (
    ConvergenceWarning,
    em_affordable,
    estimate_covariance,
    fit_standardizer,
    working_covariance,
)
from ..matrix import Standardizer, column_moments
from . import gp
from .fits import INDUCTIVE, FitStore, GaussianFit, fitted_completion

if TYPE_CHECKING:
    from .cache import CompletionCache

__all__ = [
    "Completion",
    "COMPLETERS",
    "complete",
    "complete_new_rows",
    "interval",
    "percent_scale",
]


_EPS = 1e-3
#: Farthest standardized latent score at which :meth:`_Latent.back_std` takes the logit's slope.
_SLOPE_REACH = 3.0


@dataclass(frozen=True)
class Completion:
    """Predicted mean and standard deviation for every cell (NaN where not predicted)."""

    mean: np.ndarray
    std: np.ndarray


def percent_scale(values: np.ndarray) -> np.ndarray:
    """Per column: 1 for fractions in [0, 1], 100 for percentages in [0, 100], NaN otherwise.

    The scale :func:`benchsel.bounds.column_scale` reads, as a number.
    """
    scale = column_scale(values)
    return np.where(scale == "fraction", 1.0, np.where(scale == "percent", 100.0, np.nan))


class _Latent:
    """Logit of percentage-scale columns, then standardization (shared by svd and ridge)."""

    def __init__(self, values: np.ndarray):
        self.scale = percent_scale(values)
        self.logit = ~np.isnan(self.scale)
        lat = self._forward(values)
        self.std = Standardizer.fit(lat)
        self.z = self.std.transform(lat)

    def _forward(self, values):
        out = np.array(values, dtype=float, copy=True)
        on = self.logit
        out[:, on] = logit(np.clip(out[:, on] / self.scale[on], _EPS, 1 - _EPS))
        return out

    def back(self, z: np.ndarray) -> np.ndarray:
        lat = self.std.inverse(z)
        on = self.logit
        lat[:, on] = expit(lat[:, on]) * self.scale[on]
        return lat

    def back_std(self, z: np.ndarray, z_std: np.ndarray) -> np.ndarray:
        """Delta-method standard deviation in score units.

        The logit's slope is taken no further out than :data:`_SLOPE_REACH`
        standard deviations of the source models' latent scores. A row folded
        in far beyond them (scores at a bound) was predicted so deep into the
        logit's flat tail that the slope underflowed: ``svd`` gave unobserved
        cells a standard deviation of 0 and the interval [1, 1], which no
        calibration multiplier widens. Beyond the sources the link's
        compression has nothing to back it.
        """
        slope = np.broadcast_to(self.std.scale, z.shape).copy()
        on = self.logit
        reach = np.clip(z, -_SLOPE_REACH, _SLOPE_REACH)
        p = expit(self.std.inverse(reach)[:, on])
        slope[:, on] *= p * (1 - p) * self.scale[on]
        return z_std * slope


def _finish(values, mean, std) -> Completion:
    observed = ~np.isnan(values)
    return Completion(np.where(observed, values, mean), np.where(observed, 0.0, std))


def complete_mean(values: np.ndarray) -> Completion:
    """Column means; the error bar is the column's standard deviation.

    A column with a single observed score has no spread of its own; it gets
    the median coefficient of variation of the other columns times its value.
    """
    count, mu, sd = column_moments(values)  # overflow-safe for scores up to 1e300
    mu = np.where(count > 0, mu, np.nan)
    sd = np.where(count > 1, sd, np.nan)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.abs(sd / mu)
    ratio = ratio[np.isfinite(ratio)]
    cv = float(np.median(ratio)) if ratio.size else 0.0
    sd = np.where(np.isnan(sd), cv * np.abs(mu), sd)
    shape = values.shape
    return _finish(values, np.broadcast_to(mu, shape), np.broadcast_to(sd, shape))


def column_prior(train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What :func:`complete_mean` predicts for a row with no score: per column, the
    mean of the ``train`` rows that have it and their spread."""
    blank = complete_mean(np.vstack([train, np.full((1, train.shape[1]), np.nan)]))
    return blank.mean[-1], blank.std[-1]


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
    return _finish(values, mean, sd)


def complete_gaussian(values: np.ndarray) -> Completion:
    return _complete_gaussian(values, "auto")


def _gp_rows(values: np.ndarray) -> np.ndarray:
    """Rows ``gp`` predicts by its process: 1 to ``MAX_INPUTS`` scores, not all of them."""
    n_obs = (~np.isnan(values)).sum(axis=1)
    return (n_obs >= 1) & (n_obs <= gp.MAX_INPUTS) & (n_obs < values.shape[1])


def gp_base(source: np.ndarray) -> np.ndarray:
    """The rows of ``source`` (the training models) the Gaussian under ``gp``'s
    process is fitted on, when it predicts new rows: all of them, so that it
    is ``gaussian``'s own fit of the same rows, made once.

    (It used to leave out the training rows with at most
    :data:`~benchsel.prediction.gp.MAX_INPUTS` scores, as :func:`complete_gp`
    leaves out the rows it predicts: on a sparse board a second EM fit of
    nearly the same rows for every fold of ``auto``'s choice.)
    """
    return source


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
    todo = _gp_rows(values)
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
        return _finish(values, np.full(values.shape, np.nan), np.full(values.shape, np.nan))
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
    lat = _Latent(values)
    recon, rmse = soft_impute(lat.z, rank, shrink, max_iter, tol)
    z_std = np.broadcast_to(rmse, recon.shape)
    mean, std = lat.back(recon), lat.back_std(recon, z_std)
    # A column nobody observed has no prediction (the reconstruction is 0 there).
    empty = np.isnan(values).all(axis=0)
    mean[:, empty] = np.nan
    std[:, empty] = np.nan
    return _finish(values, mean, std)


def soft_impute(z: np.ndarray, rank: int = 2, shrink: float = 0.0, max_iter: int = 500,
                tol: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """:func:`complete_svd`'s iteration on latent scores ``z`` (NaN = missing).

    Returns the rank-``rank`` reconstruction and, per column, the root mean
    square of its observed cells' residuals (NaN for a column with none).
    """
    observed = ~np.isnan(z)
    filled = np.where(observed, z, 0.0)
    recon = filled
    top = _TopSubspace(rank)
    for _ in range(max_iter):
        recon = top.part(filled, shrink)
        new = np.where(observed, z, recon)
        change = np.linalg.norm(new - filled) / max(np.linalg.norm(filled), 1e-12)
        filled = new
        if change < tol:
            break
    resid = np.where(observed, z - recon, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rmse = np.sqrt(np.nanmean(resid**2, axis=0))
    return recon, rmse


class _TopSubspace:
    """The top ``rank`` right singular subspace of a slowly changing matrix.

    Soft-impute needs the best rank-``r`` approximation of its filled matrix
    hundreds of times, and the matrix changes little between iterations.
    Block power iteration started from the previous subspace follows it in a
    few cheap products (``O(MNr)``) where a full SVD costs ``O(MN^2)``; the
    steps continue until a step turns the subspace by less than ``tol``
    radians, and a full SVD takes over when ``max_steps`` are not enough
    (nearly equal singular values at the cut).
    """

    def __init__(self, rank: int, max_steps: int = 200, tol: float = 1e-10):
        self.rank, self.max_steps, self.tol, self.v = rank, max_steps, tol, None

    def part(self, a: np.ndarray, shrink: float = 0.0) -> np.ndarray:
        """``u_r diag(max(s_r - shrink, 0)) v_r^T`` for ``a``."""
        r = min(self.rank, *a.shape)
        if r == 0:
            return np.zeros_like(a)
        # A matrix narrow at the cut (a few columns) is cheaper to decompose outright.
        if min(a.shape) < 8 * r or self.v is None or not self._follow(a):
            _, _, vt = np.linalg.svd(a, full_matrices=False)
            self.v = vt[:r].T
        # Rayleigh-Ritz on the subspace: the singular triplets of a v.
        u, s, wt = np.linalg.svd(a @ self.v, full_matrices=False)
        return (u * np.maximum(s - shrink, 0.0)) @ (self.v @ wt.T).T

    def _follow(self, a: np.ndarray) -> bool:
        v = self.v
        for _ in range(self.max_steps):
            q, _ = np.linalg.qr(a.T @ (a @ v))
            moved = np.linalg.norm(q - v @ (v.T @ q))  # sine of the angle it turned
            v = q
            if moved < self.tol:
                self.v = v
                return True
        return False


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
    lat = _Latent(values)
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
    return _finish(values, out_mean, out_sd)


def _blend(first: Completion, second: Completion) -> Completion:
    """Average where both predict, else whichever does; std of the average of the two."""
    m1, m2, s1, s2 = first.mean, second.mean, first.std, second.std
    both = ~np.isnan(m1) & ~np.isnan(m2)
    mean = np.where(both, 0.5 * (m1 + m2), np.where(np.isnan(m1), m2, m1))
    # Errors of the two are positively correlated; the mean of the two
    # standard deviations is a conservative width for their average.
    std = np.where(both, 0.5 * (s1 + s2), np.where(np.isnan(m1), s2, s1))
    return Completion(mean, std)


def complete_svd_ridge(values: np.ndarray) -> Completion:
    return _blend(complete_svd(values), complete_ridge(values))


def complete_gaussian_svd(values: np.ndarray) -> Completion:
    return _blend(complete_gaussian(values), complete_svd(values))


def _complete_auto(values: np.ndarray) -> Completion:
    from .choice import complete_auto  # choice imports this module

    return complete_auto(values)


COMPLETERS: dict[str, Callable[[np.ndarray], Completion]] = {
    "mean": complete_mean,
    "gaussian-em": complete_gaussian_em,
    "gaussian": complete_gaussian,
    "svd": complete_svd,
    "ridge": complete_ridge,
    "svd+ridge": complete_svd_ridge,
    "gaussian+svd": complete_gaussian_svd,
    "gp": complete_gp,
    "auto": _complete_auto,
}


def complete(
    values: np.ndarray, method: str = "gaussian", *, cache: CompletionCache | None = None,
    rows=None,
) -> Completion:
    """Complete ``values`` with the named method (see :data:`COMPLETERS`).

    With ``cache`` a completion of the same matrix by the same method is
    computed once (see :class:`CompletionCache`). ``rows``: the only rows
    the caller reads; a method may leave the others' missing cells NaN
    (``ridge`` does, :meth:`CompletionCache.get`).
    """
    if method not in COMPLETERS:
        raise ValueError(
            f"completion method must be one of {', '.join(COMPLETERS)}; got {method!r}"
        )
    values = np.asarray(values, dtype=float)
    if cache is None and rows is None:
        return COMPLETERS[method](values)
    if cache is None:
        from .cache import CompletionCache  # cache imports this module

        cache = CompletionCache()
    return cache.get(values, method, rows)


def complete_new_rows(
    train: np.ndarray, new: np.ndarray, method: str, *, cache: CompletionCache | None = None,
    fits: FitStore | None = None,
) -> Completion:
    """Predict the missing cells of ``new`` rows from the ``train`` rows.

    Inductive: what one new model gets does not depend on which other new
    models came with it. Stacked together, new models took part in each
    other's fit: under the extrapolation protocol (30% of the rows new, all
    strong) they lifted each other's predictions on MTEB and dragged them on
    HELM Lite (docs/experiments/reproduction.md). The Gaussian-based and
    low-rank methods (:data:`~benchsel.prediction.fits.INDUCTIVE`) are fitted
    on ``train`` once (kept in ``fits``) and each new row is conditioned on
    that Gaussian or folded into that low-rank model
    (:func:`~benchsel.prediction.fits.fitted_completion`), as
    :class:`~benchsel.gaussian.GaussianModel` does and as ``auto``'s choice
    scored them (``ridge``, half of ``svd+ridge``, regresses on ``train``
    stacked on the row); ``gp`` then corrects a row with at most
    :data:`~benchsel.prediction.gp.MAX_INPUTS` scores by its residual
    process, fitted on ``train``'s rows with more scores, one stack per
    pattern of observed items (rows of one pattern cannot train each
    other's process). The other methods complete ``train`` stacked on each
    new row alone.

    A row with no score at all gets, whatever the method, the mean of the
    ``train`` models that have each score and their spread
    (:func:`complete_mean`): nothing places that model among the others
    (where intervals are calibrated, :func:`~benchsel.calibration.unknown_calibration`
    widens that spread to what a model beyond their range needs).
    The Gaussian's answer there would be its EM mean, the mean of a
    population in which every model had every score; on a sparse board the
    models that have a score are not that population. In the cv protocol
    on MERGED at k = 1, where half of the scored variance is on validation
    models with none of the selected scores, the EM mean gave R^2 -0.42 on
    those models and the observed means 0 (docs/experiments/reproduction.md).
    """
    train = np.asarray(train, dtype=float)
    new = np.asarray(new, dtype=float)
    if new.ndim != 2 or new.shape[1] != train.shape[1]:
        raise ValueError(f"new rows must have {train.shape[1]} columns; got shape {new.shape}")
    mean, std = np.full(new.shape, np.nan), np.full(new.shape, np.nan)
    blank = np.isnan(new).all(axis=1)
    if blank.any():
        mean[blank], std[blank] = column_prior(train)
    rows = np.flatnonzero(~blank)
    if method in INDUCTIVE and rows.size:
        fits = FitStore() if fits is None else fits
        part = fitted_completion(train, new[rows], method, fits)
        mean[rows], std[rows] = part.mean, part.std
        if method == "svd+ridge":
            part = _blend(part, complete_new_rows(train, new[rows], "ridge"))
            mean[rows], std[rows] = part.mean, part.std
        elif method == "gp":
            # Rows of one pattern cannot train each other's process: one stack
            # per pattern, all on the same Gaussian fitted on ``train``'s source rows.
            todo = rows[_gp_rows(new[rows])]
            source = gp_base(train)
            if todo.size and len(source) >= gp.MIN_ROWS:  # else the Gaussian stands
                base = fits.get(source, "auto")
                patterns, inverse = unique_rows(~np.isnan(new[todo]))
                for g in range(len(patterns)):
                    members = todo[inverse == g]
                    stack = np.vstack([train, new[members]])
                    part = base.residual_process(stack, np.arange(len(train), len(stack)))
                    mean[members], std[members] = part.mean, part.std
        return Completion(mean, std)
    # One completion per row, not kept: a file of many new models would
    # fill the cache with copies of the training matrix.
    for i in rows:
        res = complete(np.vstack([train, new[i:i + 1]]), method)
        mean[i], std[i] = res.mean[-1], res.std[-1]
    return Completion(mean, std)


def interval(completion: Completion, level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """Central Gaussian interval ``mean +- z * std``."""
    half = ndtri(0.5 + level / 2) * completion.std
    return completion.mean - half, completion.mean + half
