"""What every completion method shares: its result, its latent units, the column prior.

A completion (:class:`Completion`) is a predicted mean and standard
deviation for every cell. ``svd`` and ``ridge`` work in :class:`Latent`
units (the logit of percentage-scale columns, then standardized); a row
with no score gets :func:`column_prior`; :func:`soft_impute` is ``svd``'s
low-rank fit; :func:`blend` averages two completions. The methods
themselves are in :mod:`.completers`, their fits in :mod:`.fits`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..bounds import column_scale
from ..matrix import Standardizer, column_moments

__all__ = ["Completion", "Latent", "blend", "column_prior", "complete_mean", "finish",
           "interval", "percent_scale", "soft_impute"]

_EPS = 1e-3


def _special():
    """:mod:`scipy.special`, imported on first use: selecting benchmarks imports this
    module (through the model) and never needs it (about 60 ms)."""
    import scipy.special

    return scipy.special


#: Farthest standardized latent score at which :meth:`Latent.back_std` takes the logit's slope.
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


class Latent:
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
        out[:, on] = _special().logit(np.clip(out[:, on] / self.scale[on], _EPS, 1 - _EPS))
        return out

    def back(self, z: np.ndarray) -> np.ndarray:
        lat = self.std.inverse(z)
        on = self.logit
        lat[:, on] = _special().expit(lat[:, on]) * self.scale[on]
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
        p = _special().expit(self.std.inverse(reach)[:, on])
        slope[:, on] *= p * (1 - p) * self.scale[on]
        return z_std * slope


def finish(values, mean, std) -> Completion:
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
    return finish(values, np.broadcast_to(mu, shape), np.broadcast_to(sd, shape))


def column_prior(train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What :func:`complete_mean` predicts for a row with no score: per column, the
    mean of the ``train`` rows that have it and their spread."""
    blank = complete_mean(np.vstack([train, np.full((1, train.shape[1]), np.nan)]))
    return blank.mean[-1], blank.std[-1]


def soft_impute(z: np.ndarray, rank: int = 2, shrink: float = 0.0, max_iter: int = 500,
                tol: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """:func:`complete_svd`'s iteration on latent scores ``z`` (NaN = missing).

    Returns the rank-``rank`` reconstruction and, per column, the root mean
    square of its observed cells' residuals (NaN for a column with none).
    """
    observed = ~np.isnan(z)
    filled = np.where(observed, z, 0.0)
    recon = filled
    top = TopSubspace(rank)
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


class TopSubspace:
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


def blend(first: Completion, second: Completion) -> Completion:
    """Average where both predict, else whichever does; std of the average of the two."""
    m1, m2, s1, s2 = first.mean, second.mean, first.std, second.std
    both = ~np.isnan(m1) & ~np.isnan(m2)
    mean = np.where(both, 0.5 * (m1 + m2), np.where(np.isnan(m1), m2, m1))
    # Errors of the two are positively correlated; the mean of the two
    # standard deviations is a conservative width for their average.
    std = np.where(both, 0.5 * (s1 + s2), np.where(np.isnan(m1), s2, s1))
    return Completion(mean, std)


def interval(completion: Completion, level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """Central Gaussian interval ``mean +- z * std``."""
    half = _special().ndtri(0.5 + level / 2) * completion.std
    return completion.mean - half, completion.mean + half
