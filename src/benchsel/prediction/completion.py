"""Matrix completion: fill every missing cell of a leaderboard, with error bars.

Each completer maps a models x items array (NaN = missing) to predicted means
and standard deviations for every cell (observed cells keep their value and
get ``std = 0``); a cell it cannot predict stays NaN. The methods:

* ``mean`` -- the benchmark's mean over the models that have it.
* ``gaussian`` / ``gaussian-em`` -- the Gaussian conditional mean and variance
  given all of a model's observed scores, with the ``em-shrink`` / paper
  ``em`` covariance.
* ``svd`` -- rank-2 soft-impute SVD in logit space for percentage-scale
  columns (standardized units otherwise).
* ``ridge`` -- per cell, ridge regression on the 5 benchmarks most correlated
  with the target that the model has, in logit space.
* ``svd+ridge`` -- their average where both predict (the published blend).
* ``gaussian+svd`` -- the average of ``gaussian`` and ``svd``.
* ``gp`` -- ``gaussian`` plus a Gaussian-process correction of its
  residuals from the benchmarks a row has, for rows with at most 10
  observed scores (:mod:`benchsel.prediction.gp`); ``gaussian`` elsewhere.
* ``auto`` -- the method of :data:`AUTO_CANDIDATES` that wins a
  cross-validation on the matrix itself
  (:func:`choose_completer`: the ``complete`` protocol's hidden cells, but
  drawn from the matrix being completed, so a held-out cell of an outer
  protocol is never seen); cells it cannot predict are filled by the
  runner-up, and so on, down to the column mean.

Percentage-scale columns are those with all scores in ``[0, 100]``; scores
in ``[0, 1]`` are taken as fractions.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, logit, ndtri

from .._patterns import unique_rows
from ..bounds import column_scale
from ..calibration import MIN_MODELS, Calibration, fit_calibration, range_excess
from ..gaussian.conditional import conditional_moments
from ..gaussian.covariance import ConvergenceWarning, estimate_covariance, fit_standardizer
from ..matrix import Standardizer, column_moments, model_strength
from ..progress import report as _report
from ..splits import completion_masks
from . import gp

__all__ = [
    "Completion",
    "CompletionCache",
    "COMPLETERS",
    "MethodChoice",
    "calibrate_completion",
    "choose_completer",
    "choose_for_new_models",
    "complete",
    "complete_auto",
    "median_ape",
    "complete_new_rows",
    "interval",
    "percent_scale",
]

_EPS = 1e-3


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
        """Delta-method standard deviation in score units."""
        slope = np.broadcast_to(self.std.scale, z.shape).copy()
        on = self.logit
        p = expit(self.std.inverse(z)[:, on])
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
    mu, var = conditional_moments(z, est.mean, est.covariance)
    mean[:, cols] = std.inverse(mu, cols)
    sd[:, cols] = np.sqrt(var) * std.scale[cols]
    return _finish(values, mean, sd)


def complete_gaussian(values: np.ndarray) -> Completion:
    return _complete_gaussian(values, "auto")


def _gp_rows(values: np.ndarray) -> np.ndarray:
    """Rows ``gp`` predicts by its process: 1 to ``MAX_INPUTS`` scores, not all of them."""
    n_obs = (~np.isnan(values)).sum(axis=1)
    return (n_obs >= 1) & (n_obs <= gp.MAX_INPUTS) & (n_obs < values.shape[1])


class _GPBase:
    """The Gaussian under ``gp``'s process, fitted on its source rows.

    Standardized on the source rows; ``cols`` are the columns that are not
    constant there (the others are predicted by their mean, see
    :meth:`predict`).
    """

    def __init__(self, source_values: np.ndarray):
        self.std = fit_standardizer(source_values, "auto")
        self.cols = np.flatnonzero(~self.std.constant)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.est = estimate_covariance(self.z(source_values), "auto")

    def z(self, values: np.ndarray) -> np.ndarray:
        return self.std.transform(values[:, self.cols], self.cols)

    def predict(self, values: np.ndarray, rows: np.ndarray) -> Completion:
        """``gp``'s prediction for ``rows`` of ``values`` (shape ``(len(rows), N)``).

        The process trains on every row of ``values`` that has a predicted
        row's scores and more. A column constant on the source rows gets
        its mean and spread over the rows of ``values`` that have it
        (:func:`complete_mean`).
        """
        fallback = complete_mean(values)
        mean, spread = fallback.mean[rows], fallback.std[rows]
        mu, sd = gp.residual_process(self.z(values), self.est.mean, self.est.covariance, rows)
        cols = self.cols
        hit = ~np.isnan(mu)  # NaN exactly on the observed cells
        mean[:, cols] = np.where(hit, self.std.inverse(np.where(hit, mu, 0.0), cols),
                                 mean[:, cols])
        spread[:, cols] = np.where(hit, sd * self.std.scale[cols], spread[:, cols])
        return Completion(mean, spread)


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
    res = _GPBase(values[~todo]).predict(values, rows)
    mean, spread = done.mean.copy(), done.std.copy()
    mean[rows], spread[rows] = res.mean, res.std
    return Completion(mean, spread)


def complete_gaussian_em(values: np.ndarray) -> Completion:
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
    z = lat.z
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
    z_std = np.broadcast_to(rmse, z.shape)
    mean, std = lat.back(recon), lat.back_std(recon, z_std)
    # A column nobody observed has no prediction (the reconstruction is 0 there).
    empty = ~observed.any(axis=0)
    mean[:, empty] = np.nan
    std[:, empty] = np.nan
    return _finish(values, mean, std)


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


def complete_ridge(values: np.ndarray, n_predictors: int = 5, alpha: float = 1.0) -> Completion:
    """Per missing cell: ridge on the most correlated benchmarks the model has.

    For target column ``j`` the candidates are the ``n_predictors`` columns
    most correlated with ``j`` (absolute pairwise correlation over
    co-observed models, latent units); a cell uses those its model
    observed, and the fit uses the models that have ``j`` and all of them.
    The error bar is the in-sample residual standard deviation, inflated
    by ``sqrt(n / (n - p - 1))``. Cells whose model has none of the
    candidates, or whose fit would have fewer than ``p + 3`` models, are
    left unpredicted.
    """
    lat = _Latent(values)
    z = lat.z
    observed = ~np.isnan(z)
    corr = np.abs(_pair_correlations(z))
    mean = np.full(z.shape, np.nan)
    sd = np.full(z.shape, np.nan)
    cache: dict[tuple, tuple] = {}
    for j in range(z.shape[1]):
        top = [c for c in np.argsort(-corr[:, j])[:n_predictors] if corr[c, j] > 0]
        for i in np.flatnonzero(~observed[:, j]):
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


COMPLETERS: dict[str, Callable[[np.ndarray], Completion]] = {
    "mean": complete_mean,
    "gaussian-em": complete_gaussian_em,
    "gaussian": complete_gaussian,
    "svd": complete_svd,
    "ridge": complete_ridge,
    "svd+ridge": complete_svd_ridge,
    "gaussian+svd": complete_gaussian_svd,
    "gp": complete_gp,
    "auto": lambda values: complete_auto(values),
}


#: ``auto`` chooses among the methods that predict at least this share of held-out cells.
AUTO_MIN_COVERAGE = 0.99
#: What ``auto`` chooses from: every method but ``auto`` itself.
AUTO_CANDIDATES = tuple(m for m in COMPLETERS if m != "auto")


def median_ape(true: np.ndarray, pred: np.ndarray) -> float:
    """Median absolute percentage error over cells with a nonzero true score (NaN if none).

    A true score below a millionth of the typical one counts as zero: its
    percentage error is meaningless (and a subnormal one overflows).
    """
    size = np.abs(true)
    positive = size[size > 0]
    if not positive.size:
        return float("nan")
    nonzero = size > 1e-6 * np.median(positive)
    with np.errstate(over="ignore"):  # an error of 1e300 on a score of 1e-7 is infinite here
        ape = 100 * np.abs(pred[nonzero] - true[nonzero]) / size[nonzero]
    return float(np.median(ape)) if ape.size else float("nan")


@dataclass(frozen=True)
class MethodChoice:
    """The completion method ``auto`` chose, and the figures it chose by.

    Attributes
    ----------
    method : str
        The winner: lowest MedAPE among methods that predicted at least
        :data:`AUTO_MIN_COVERAGE` of the held-out cells (when none did, the
        method that predicted most).
    fallbacks : tuple of str
        The others in rank order, then ``mean``: who fills a cell the
        winner cannot predict.
    medape, coverage : dict
        Per method, MedAPE (%) and share of held-out cells predicted (%).
    cells : int
        Held-out cells the choice was made on (0: too few models to hold
        any out; the choice is then ``gaussian``).
    split : str
        What the held-out models were: ``"random"`` (random models, as a
        new model inside the source models' range) or ``"strength"`` (the
        strongest 30%, then the weakest 30%, each predicted from the other
        models: as a new model beyond the range), or ``"none"`` for a new
        model with no score (it gets ``mean``: :func:`complete_new_rows`).
    """

    method: str
    fallbacks: tuple
    medape: dict
    coverage: dict
    cells: int
    split: str = "random"

    @property
    def margin(self) -> float:
        """MedAPE of the runner-up minus the winner's (NaN without one)."""
        ranked = [m for m in (self.method, *self.fallbacks) if m in self.medape]
        if len(ranked) < 2:
            return float("nan")
        return float(self.medape[ranked[1]] - self.medape[ranked[0]])

    def to_dict(self) -> dict:
        def num(v):
            return None if v is None or not np.isfinite(v) else float(v)

        return {"method": self.method, "fallbacks": list(self.fallbacks),
                "margin": num(self.margin), "cells": self.cells, "split": self.split,
                "medape": {m: num(v) for m, v in self.medape.items()},
                "coverage": {m: num(v) for m, v in self.coverage.items()}}


def _usable_rows(observed: np.ndarray, given: np.ndarray) -> np.ndarray:
    """Models that can play a new model run on ``given``: they have a given item and another."""
    return np.flatnonzero((observed & given).any(axis=1) & (observed & ~given).any(axis=1))


def _tails(values: np.ndarray, given: np.ndarray) -> tuple:
    """Models by strength, and the strongest and weakest 30% of them that can hide cells.

    Returns ``(order, strongest, weakest)``: all models, weakest first, and
    the two tails restricted to :func:`_usable_rows`.
    """
    usable = np.zeros(values.shape[0], dtype=bool)
    usable[_usable_rows(~np.isnan(values), given)] = True
    order = np.argsort(model_strength(values), kind="stable")
    tail = (3 * values.shape[0]) // 10
    strongest, weakest = order[values.shape[0] - tail:], order[:tail]
    return order, strongest[usable[strongest]], weakest[usable[weakest]]


def _strength_splits(values: np.ndarray, given: np.ndarray) -> list[tuple]:
    """The two strength splits of a matrix for a new model run on ``given`` items.

    The weakest half of the models with the strongest 30%, and the
    strongest half with the weakest 30%; the 30% keep only their given
    cells (those of them that have a given item and another). Returns
    ``(matrix, hidden)`` pairs, the rows in the models' order; [] below
    :data:`~benchsel.calibration.MIN_MODELS` models.
    """
    if values.shape[0] < MIN_MODELS:
        return []
    observed = ~np.isnan(values)
    order, strongest, weakest = _tails(values, given)
    half, tail = values.shape[0] // 2, (3 * values.shape[0]) // 10
    out = []
    for fit, held, hiding in ((order[:half], order[-tail:], strongest),
                              (order[-half:], order[:tail], weakest)):
        keep = np.sort(np.concatenate([fit, held]))
        hidden = np.zeros((keep.size, values.shape[1]), dtype=bool)
        rows = np.isin(keep, hiding)
        hidden[rows] = observed[keep][rows] & ~given
        out.append((values[keep], hidden))
    return out


def _extreme_masks(values: np.ndarray, given: np.ndarray) -> list[np.ndarray]:
    """Hidden cells of the strongest 30% of the models, then of the weakest 30%.

    Each hiding model keeps its ``given`` cells (those that have a given
    item and another); [] below :data:`~benchsel.calibration.MIN_MODELS` models.
    """
    if values.shape[0] < MIN_MODELS:
        return []
    observed = ~np.isnan(values)
    masks = []
    for rows in _tails(values, given)[1:]:
        mask = np.zeros_like(observed)
        mask[rows] = observed[rows] & ~given
        masks.append(mask)
    return masks


def _auto_masks(observed, given, folds, hide, seed) -> list[np.ndarray]:
    """Hidden cells for :func:`choose_completer` (see there); [] when too few models."""
    if given is None:
        try:
            return completion_masks(observed, hide, folds, max(2, min(8, observed.shape[1])),
                                    seed)
        except ValueError:
            return []
    given = np.asarray(given, dtype=bool)
    usable = _usable_rows(observed, given)
    if usable.size < folds:
        return []
    rng = np.random.default_rng(seed)
    masks = []
    for part in np.array_split(rng.permutation(usable), folds):
        mask = np.zeros_like(observed)
        mask[part] = observed[part] & ~given
        masks.append(mask)
    return masks


def choose_completer(
    values: np.ndarray, *, methods=None, given=None, folds: int = 3, hide: float = 0.5,
    seed=0, cache: CompletionCache | None = None, split: str = "random",
) -> MethodChoice:
    """Cross-validate completion methods on ``values`` and rank them.

    The folds hide cells of the matrix itself: with ``given`` (a boolean
    mask of items, the pattern of a new model) each held-out model keeps
    only its given cells, as the new model has; otherwise a fraction
    ``hide`` of its cells, as in the ``complete`` protocol. Every method sees
    the same folds.

    ``split="strength"`` (with ``given``) holds out the strongest 30% of the
    models, predicted from the other 70%, and then the weakest 30%: the
    choice for a new model beyond the source models' range. Methods rank
    differently there: under the extrapolation protocol, choosing for the
    strong new models on random folds lost R^2 to the Gaussian on MERGED
    (0.21 against 0.47 at k = 2), HELM Lite and BigCodeBench, and choosing
    on these splits did not (docs/experiments/reproduction.md). The calibration's
    strength splits (:func:`completion_residuals`) fit on half the models
    only; chosen on those, the winners on MERGED were worse methods for a
    fit on the whole source.

    Parameters
    ----------
    values : ndarray of shape (M, N)
    methods : sequence of str, optional
        Candidates (default: :data:`AUTO_CANDIDATES`).
    given : array-like of bool, shape (N,), optional
    folds : int, default 3
    hide : float, default 0.5
    seed : int, default 0
    cache : CompletionCache, optional
        Shared with the calls that calibrate and complete with the winner,
        so that what they repeat is computed once.
    split : {"random", "strength"}, default "random"

    Returns
    -------
    MethodChoice
        With ``cells == 0`` when there were too few models to hold any out
        (then ``gaussian``).
    """
    values = np.asarray(values, dtype=float)
    methods = [m for m in (methods or AUTO_CANDIDATES) if m != "auto"]
    for m in methods:
        if m not in COMPLETERS:
            raise ValueError(f"unknown completion method {m!r}; methods: {', '.join(COMPLETERS)}")
    if split == "strength":
        if given is None:
            raise ValueError("split='strength' needs the given items")
        masks = _extreme_masks(values, np.asarray(given, bool))
    elif split == "random":
        masks = _auto_masks(~np.isnan(values), given, folds, hide, seed)
    else:
        raise ValueError(f"split must be 'random' or 'strength'; got {split!r}")
    masks = [mask for mask in masks if mask.any()]
    if not masks:
        return MethodChoice("gaussian", ("mean",), {}, {}, 0, split)
    true = np.concatenate([values[mask] for mask in masks])
    pred = {m: [] for m in methods}
    cache = cache or CompletionCache()
    stage = ("choosing the predictor" if split == "random"
             else "choosing the predictor beyond the sources' range")
    total, done = len(masks) * len(methods), 0
    for mask in masks:
        held_out = np.where(mask, np.nan, values)
        for m in methods:
            _report(stage, done, total)
            pred[m].append(cache.get(held_out, m).mean[mask])
            done += 1
    _report(stage, total, total)
    medape, coverage = {}, {}
    for m in methods:
        p = np.concatenate(pred[m])
        got = ~np.isnan(p)
        coverage[m] = float(100 * got.mean())
        medape[m] = median_ape(true[got], p[got])
    full = sorted((m for m in methods if coverage[m] >= 100 * AUTO_MIN_COVERAGE
                   and np.isfinite(medape[m])), key=lambda m: medape[m])
    rest = sorted((m for m in methods if m not in full),
                  key=lambda m: (-coverage[m], medape[m] if np.isfinite(medape[m]) else np.inf))
    ranked = full + rest
    fallbacks = tuple(ranked[1:]) + (() if "mean" in ranked else ("mean",))
    return MethodChoice(ranked[0], fallbacks, medape, coverage, int(true.size), split)


def choose_for_new_models(
    values: np.ndarray, given, outside, *, cache: CompletionCache | None = None, memo=None,
) -> list[MethodChoice]:
    """``auto``'s choice for each new model run on the ``given`` items.

    Models inside the source models' strength range get the choice of
    random held-out models, those beyond it (``outside``, one flag per new
    model) the choice of the strength splits (:func:`choose_completer`);
    each is computed only if some model needs it, and the strength splits
    defer to random folds on a matrix too small for them. With ``memo`` (an
    :class:`~benchsel.prediction.memo.AutoMemo` of ``values``) a choice made
    before is taken from it, and a new one kept in it.
    """
    outside = np.asarray(outside, dtype=bool)
    cache = cache or CompletionCache()

    def choose(split: str) -> MethodChoice:
        def run():
            return choose_completer(values, given=given, cache=cache, split=split)
        return run() if memo is None else memo.choice(given, split, run)

    random = choose("random") if (~outside).any() else None
    beyond = None
    if outside.any():
        beyond = choose("strength")
        if not beyond.cells:
            beyond = random or choose("random")
    return [beyond if out else random for out in outside]


#: Blends by their parts, so that comparing methods completes each part once.
_BLENDS = {"svd+ridge": ("svd", "ridge"), "gaussian+svd": ("gaussian", "svd")}


class CompletionCache:
    """Completions already computed, by method and matrix content.

    Choosing a method, calibrating it and completing with it complete the
    same matrices again and again: :func:`choose_completer`'s first fold
    hides exactly the cells :func:`completion_residuals` hides (same
    ``hide`` and ``seed``), ``auto`` completes with a method already
    compared, a blend repeats its parts, and ``gp`` starts from
    ``gaussian``. Every completer is a deterministic function of the
    matrix, so a completion is keyed by the
    method and a digest of the matrix's bytes and computed once. Keep a
    cache no longer than the matrices it serves (one fold of a protocol):
    each entry holds two arrays the size of the matrix.
    """

    def __init__(self):
        self._done: dict[tuple, Completion] = {}

    def get(self, values: np.ndarray, method: str) -> Completion:
        """``complete(values, method)``, computed on the first request only."""
        values = np.ascontiguousarray(values, dtype=float)
        key = (method, values.shape, hashlib.blake2b(values.tobytes(), digest_size=20).digest())
        if key not in self._done:
            parts = _BLENDS.get(method)
            if parts:
                done = _blend(self.get(values, parts[0]), self.get(values, parts[1]))
            elif method == "gp":  # auto compares it with gaussian: fit that once
                done = complete_gp(values, self.get(values, "gaussian"))
            elif method == "auto":
                done = complete_auto(values, cache=self)
            else:
                done = COMPLETERS[method](values)
            self._done[key] = done
        return self._done[key]


def complete_auto(
    values: np.ndarray, choice: MethodChoice | None = None, *,
    cache: CompletionCache | None = None,
) -> Completion:
    """Complete with the method :func:`choose_completer` ranks first, gaps by the next ones."""
    values = np.asarray(values, dtype=float)
    cache = cache or CompletionCache()
    choice = choice or choose_completer(values, cache=cache)
    ranked = (choice.method, *choice.fallbacks)
    res = cache.get(values, choice.method)
    mean, std = res.mean.copy(), res.std.copy()
    for m in ranked[1:]:
        gap = np.isnan(mean)
        if not gap.any():
            break
        other = cache.get(values, m)
        mean[gap], std[gap] = other.mean[gap], other.std[gap]
    return Completion(mean, std)


def complete(
    values: np.ndarray, method: str = "gaussian", *, cache: CompletionCache | None = None
) -> Completion:
    """Complete ``values`` with the named method (see :data:`COMPLETERS`).

    With ``cache`` a completion of the same matrix by the same method is
    computed once (see :class:`CompletionCache`).
    """
    if method not in COMPLETERS:
        raise ValueError(
            f"completion method must be one of {', '.join(COMPLETERS)}; got {method!r}"
        )
    values = np.asarray(values, dtype=float)
    if cache is None:
        return COMPLETERS[method](values)
    return cache.get(values, method)


def complete_new_rows(
    train: np.ndarray, new: np.ndarray, method: str, *, cache: CompletionCache | None = None,
) -> Completion:
    """Predict the missing cells of ``new`` rows from the ``train`` rows.

    Inductive: each new row is predicted by completing ``train`` stacked on
    that row alone, so what one new model gets does not depend on which
    other new models came with it. Stacked together, new models took part
    in each other's fit: under the extrapolation protocol (30% of the rows
    new, all strong) they lifted each other's predictions on MTEB and
    dragged them on HELM Lite (docs/experiments/reproduction.md). ``gp`` predicts a
    row with at most :data:`~benchsel.prediction.gp.MAX_INPUTS` scores from
    rows with more scores only, so such rows are completed in one stack per
    pattern of observed items, on one Gaussian fitted on ``train``'s rows
    with more scores (what :func:`complete_gp` fits for every such stack).

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
        prior = complete_mean(np.vstack([train, np.full((1, train.shape[1]), np.nan)]))
        mean[blank], std[blank] = prior.mean[-1], prior.std[-1]
    rows = np.flatnonzero(~blank)
    if method == "gp" and rows.size and np.all(_gp_rows(new[rows])):
        # Rows of one pattern cannot train each other's process: one stack
        # per pattern, all on the same Gaussian fitted on ``train``'s source rows.
        patterns, inverse = unique_rows(~np.isnan(new[rows]))
        source = train[~_gp_rows(train)]
        base = _GPBase(source) if len(source) >= gp.MIN_ROWS else None
        for g in range(len(patterns)):
            members = rows[inverse == g]
            stack = np.vstack([train, new[members]])
            if base is None:  # the Gaussian stands
                res = complete(stack, method, cache=cache)
                res = Completion(res.mean[len(train):], res.std[len(train):])
            else:
                res = base.predict(stack, np.arange(len(train), len(stack)))
            mean[members], std[members] = res.mean, res.std
        return Completion(mean, std)
    # One completion per row, not kept: a file of many new models would
    # fill the cache with copies of the training matrix.
    for i in rows:
        res = complete(np.vstack([train, new[i:i + 1]]), method)
        mean[i], std[i] = res.mean[-1], res.std[-1]
    return Completion(mean, std)


def completion_residuals(
    values: np.ndarray, method: str, *, given=None, hide: float = 0.5, seed=0,
    cache: CompletionCache | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Held-out residuals of a completion method on the matrix it will complete.

    A third of the models with at least two observed scores hide cells and
    the method completes the rest: with ``given`` (a boolean mask of items,
    the pattern a new model was run on) each of them keeps only its given
    cells, as a new model does; otherwise a fraction ``hide`` of its cells,
    as in the ``complete`` protocol. The regime of a hiding model compares
    its strength on its kept cells with the other models'.

    With ``given`` two strength splits come on top, as for the Gaussian
    (:func:`benchsel.calibration.calibration_splits`): the weakest half of
    the models completes the strongest 30% from their given cells, and the
    strongest half the weakest 30%. A new model is often stronger than every
    source model; without these splits the ``outside`` regime learned only
    from the few held-out models that happened to lie outside the others'
    range, and a method's intervals covered 67-81% under the extrapolation
    protocol on MTEB (docs/experiments/reproduction.md).

    Returns
    -------
    residual, std : ndarray of shape (n,)
        ``y - mean`` and the method's standard deviation on hidden cells it
        predicted.
    excess : ndarray of shape (n,)
        How far the hiding model lies outside the others' strength range.
    """
    values = np.asarray(values, dtype=float)
    observed = ~np.isnan(values)
    empty = (np.empty(0), np.empty(0), np.empty(0))
    if given is None:
        try:
            mask = completion_masks(observed, hide, 3, min(8, values.shape[1]), seed)[0]
        except ValueError:  # too few models to hold any out
            return empty
        return _hidden_residuals(values, mask, method, cache)
    given = np.asarray(given, dtype=bool)
    usable = _usable_rows(observed, given)
    if usable.size < 3:
        return empty
    rng = np.random.default_rng(seed)
    rows = rng.permutation(usable)[: max(1, usable.size // 3)]
    mask = np.zeros_like(observed)
    mask[rows] = observed[rows] & ~given
    splits = [(values, mask), *_strength_splits(values, given)]
    parts = []
    for done, (sub, mask) in enumerate(splits):
        _report(f"calibrating {method}'s intervals", done, len(splits))
        parts.append(_hidden_residuals(sub, mask, method, cache))
    _report(f"calibrating {method}'s intervals", len(splits), len(splits))
    return tuple(np.concatenate(p) for p in zip(*parts))


def _hidden_residuals(values, mask, method, cache):
    """Residuals, standard deviations and range excess on the cells ``mask`` hides."""
    train = np.where(mask, np.nan, values)
    res = complete(train, method, cache=cache)
    hiding = mask.any(axis=1)
    z = Standardizer.fit(train).transform(train)
    outside = np.zeros(values.shape[0])
    outside[hiding] = range_excess(z[~hiding], z[hiding])
    cells = mask & ~np.isnan(res.mean)
    rows = np.nonzero(cells)[0]
    return values[cells] - res.mean[cells], res.std[cells], outside[rows]


def calibrate_completion(
    values: np.ndarray, method: str, *, level: float = 0.9, given=None, hide: float = 0.5,
    seed=0, cache: CompletionCache | None = None,
) -> Calibration:
    """Per-regime conformal multipliers of a completion method's standard deviation.

    From :func:`completion_residuals` (one held-out third of the models, and
    with ``given`` two strength splits; see :mod:`benchsel.calibration`).
    Uncalibrated when the matrix is too small.
    """
    residual, std, excess = completion_residuals(values, method, given=given, hide=hide,
                                                  seed=seed, cache=cache)
    return fit_calibration(residual, std, excess, level=level)


def interval(completion: Completion, level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """Central Gaussian interval ``mean +- z * std``."""
    half = ndtri(0.5 + level / 2) * completion.std
    return completion.mean - half, completion.mean + half
