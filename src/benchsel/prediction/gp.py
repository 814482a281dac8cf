"""The Gaussian conditional mean, corrected by a Gaussian process on its residuals.

The Gaussian conditional mean (``gaussian``) is linear in the scores a model
has. Across a leaderboard the relation between benchmarks is not quite linear
(a benchmark saturates, another only separates the strong models), and a
model run on a handful of selected benchmarks is exactly the case where a
nonlinear regression on those few inputs can learn it from the training
models. ``gp`` keeps the Gaussian conditional mean as the prior mean and fits,
per benchmark to predict, a Gaussian-process regression of the training
models' residuals from it on the benchmarks the new model has:

* inputs: the given benchmarks, standardized; targets: the residual of each
  training model's score from its own Gaussian conditional mean given the
  same benchmarks (so the correction learns only what the linear predictor
  misses);
* kernel ``s^2 (exp(-|x - x'|^2 / (2 l^2 p)) + lam [x = x'])`` with ``p``
  the number of inputs; ``l`` from :data:`LENGTH_SCALES` and the noise ratio
  ``lam`` from :data:`NOISE_RATIOS` by the largest marginal likelihood, with
  ``s^2`` profiled out (its maximizer is closed-form), all noise ratios of
  one length scale from one eigendecomposition;
* prediction: Gaussian conditional mean plus the process's posterior mean;
  standard deviation: the process's posterior standard deviation of a new
  residual (noise included).

Far from every training model the correction decays to the residuals' mean
(near zero) and its error bar to their prior spread, so a model stronger
than all of them is predicted about as the Gaussian predicts it, not pulled
back to the average (a process on the scores themselves, tried first, did
that and lost to the Gaussian under extrapolation: ``docs/reproduction.md``).

The Gaussian under the process is fitted on the rows it does not predict
(the source models), not on all rows as the ``gaussian`` completer is:
under the extrapolation protocol the validation models' selected scores,
30% of the rows and all strong, took part in the standardization and the
covariance and R^2 at k = 1 on MERGED fell from 0.47 to 0.22.

The correction applies to rows with at most :data:`MAX_INPUTS` observed
benchmarks, and to cells with at least :data:`MIN_ROWS` training models that
have the row's benchmarks and the target; every other cell is the Gaussian
conditional's (the ``gp`` completer, :func:`benchsel.prediction.complete`).
That is the case of a plan's new model, run on the selected benchmarks only;
a row that already has most of its benchmarks would cost a fit per row for
little. Fits use at most :data:`MAX_ROWS` training models (an evenly
spaced subset), which bounds a fit at four eigendecompositions of a
400 x 400 matrix; targets observed on the same training models share them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._patterns import unique_rows
from ..gaussian.conditional import conditional_moments

__all__ = ["ResidualGP", "fit_residual_gp", "kernel_eigens", "residual_process"]

#: Length scales tried, in units of the root of the number of inputs (standardized scores).
LENGTH_SCALES = (0.5, 1.0, 2.0, 4.0)
#: Noise-to-signal variance ratios tried.
NOISE_RATIOS = np.logspace(-4, 1, 26)
#: Most observed benchmarks of a row the process predicts from.
MAX_INPUTS = 10
#: Fewest training models a fit needs.
MIN_ROWS = 20
#: Most training models a fit uses.
MAX_ROWS = 400


def rbf(a: np.ndarray, b: np.ndarray, length: float) -> np.ndarray:
    """``exp(-|a_i - b_j|^2 / (2 length^2 p))`` for rows of ``a`` (n, p) and ``b`` (m, p)."""
    sq = (a * a).sum(axis=1)[:, None] + (b * b).sum(axis=1)[None, :] - 2.0 * a @ b.T
    return np.exp(-np.maximum(sq, 0.0) / (2.0 * length**2 * a.shape[1]))


@dataclass(frozen=True)
class ResidualGP:
    """A fitted process: hyperparameters and what prediction needs.

    Attributes
    ----------
    inputs : ndarray (n, p)
    length, noise, scale : float
        Length scale (units of ``sqrt(p)``), noise ratio ``lam`` and signal
        variance ``s^2`` of the kernel.
    offset : float
        The targets' mean, the process's constant prior mean.
    weights : ndarray (n,)
        ``(K + lam I)^{-1} (y - offset)`` for the unit-scale kernel ``K``.
    eigvals, eigvecs : ndarray
        Eigendecomposition of ``K``, for the posterior variance.
    log_likelihood : float
        Profile log marginal likelihood at the chosen hyperparameters (up to a constant).
    """

    inputs: np.ndarray
    length: float
    noise: float
    scale: float
    offset: float
    weights: np.ndarray
    eigvals: np.ndarray
    eigvecs: np.ndarray
    log_likelihood: float

    def predict(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and standard deviation of a new target (noise included) at rows ``x``."""
        cross = rbf(np.atleast_2d(x), self.inputs, self.length)
        mean = self.offset + cross @ self.weights
        proj = cross @ self.eigvecs
        explained = (proj**2 / (self.eigvals + self.noise)).sum(axis=1)
        var = self.scale * np.maximum(1.0 - explained + self.noise, 0.0)
        return mean, np.sqrt(var)


def kernel_eigens(inputs: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Eigendecomposition of the unit-scale kernel matrix at each of :data:`LENGTH_SCALES`."""
    x = np.asarray(inputs, dtype=float)
    out = []
    for length in LENGTH_SCALES:
        w, u = np.linalg.eigh(rbf(x, x, length))
        out.append((np.maximum(w, 0.0), u))
    return out


def fit_residual_gp(inputs: np.ndarray, targets: np.ndarray, eigens=None) -> ResidualGP:
    """Fit the process of the module docstring by profile marginal likelihood over the grid.

    For ``K + lam I`` with eigenvalues ``w_i + lam`` and ``b = U^T (y - mean(y))``,
    the maximizing signal variance is ``s^2 = sum_i b_i^2 / (w_i + lam) / n``
    and the profile log likelihood ``-(n/2) log s^2 - (1/2) sum_i log(w_i + lam)``.
    ``eigens`` (from :func:`kernel_eigens` of the same inputs) lets targets
    that share their inputs share the decompositions.
    """
    x = np.asarray(inputs, dtype=float)
    y = np.asarray(targets, dtype=float)
    n = len(y)
    offset = float(y.mean())
    centred = y - offset
    best = None
    for length, (w, u) in zip(LENGTH_SCALES, eigens or kernel_eigens(x)):
        b = u.T @ centred
        denom = w[None, :] + NOISE_RATIOS[:, None]
        scale = (b[None, :] ** 2 / denom).sum(axis=1) / n
        # A constant target (zero residuals) has scale 0: any hyperparameters do.
        scale = np.maximum(scale, np.finfo(float).tiny)
        ll = -0.5 * n * np.log(scale) - 0.5 * np.log(denom).sum(axis=1)
        i = int(np.argmax(ll))
        if best is None or ll[i] > best[0]:
            best = (float(ll[i]), length, float(NOISE_RATIOS[i]), float(scale[i]), w, u, b)
    ll, length, noise, scale, w, u, b = best
    return ResidualGP(inputs=x, length=length, noise=noise, scale=scale, offset=offset,
                      weights=u @ (b / (w + noise)), eigvals=w, eigvecs=u, log_likelihood=ll)


def _spread(rows: np.ndarray, most: int) -> np.ndarray:
    """At most ``most`` of ``rows``, evenly spaced (deterministic)."""
    if rows.size <= most:
        return rows
    return rows[np.linspace(0, rows.size - 1, most).round().astype(int)]


def residual_process(z: np.ndarray, mean: np.ndarray, sigma: np.ndarray, rows: np.ndarray):
    """Predictions for ``rows`` of ``z``: the Gaussian conditional mean plus the process.

    Parameters
    ----------
    z : ndarray (M, N)
        Standardized scores, NaN = missing.
    mean, sigma : ndarray
        The Gaussian, fitted on other rows than ``rows``.
    rows : ndarray of int
        The rows to predict; the process is fitted on the rows that have all
        of a row's observed items and more, residuals from the same Gaussian.

    Returns
    -------
    mu, sd : ndarray (len(rows), N)
        On the missing cells of ``rows``: the Gaussian conditional mean plus
        the process's correction and the process's standard deviation, or
        the Gaussian conditional's moments where too few rows can fit it; NaN
        on observed cells.
    """
    z_obs = ~np.isnan(z)
    sub = z[rows]
    mu, var = conditional_moments(sub, mean, sigma)
    sd = np.sqrt(var)
    mu[z_obs[rows]], sd[z_obs[rows]] = np.nan, np.nan
    if not len(rows):
        return mu, sd
    patterns, inverse = unique_rows(z_obs[rows])
    for g, pattern in enumerate(patterns):
        members = np.flatnonzero(inverse == g)
        given = np.flatnonzero(pattern)
        train = np.flatnonzero(z_obs[:, given].all(axis=1) & (z_obs.sum(axis=1) > given.size))
        if not given.size or train.size < MIN_ROWS:  # nothing to regress on, or too few
            continue
        # The training models conditioned on the pattern's items only: what
        # their residuals are residuals from.
        x = np.full((train.size, z.shape[1]), np.nan)
        x[:, given] = z[np.ix_(train, given)]
        base_train, _ = conditional_moments(x, mean, sigma)
        inputs_new = sub[np.ix_(members, given)]
        eigens = {}  # by training rows: targets observed on the same models share them
        for j in np.flatnonzero(~pattern):
            fit_rows = _spread(np.flatnonzero(z_obs[train, j]), MAX_ROWS)
            if fit_rows.size < MIN_ROWS:
                continue
            inputs = z[np.ix_(train[fit_rows], given)]
            key = fit_rows.tobytes()
            if key not in eigens:
                eigens[key] = kernel_eigens(inputs)
            gp = fit_residual_gp(inputs, z[train[fit_rows], j] - base_train[fit_rows, j],
                                 eigens[key])
            correction, spread = gp.predict(inputs_new)
            mu[members, j] += correction
            sd[members, j] = spread
    return mu, sd
