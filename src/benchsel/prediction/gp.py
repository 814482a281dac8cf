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
* kernel ``s^2 (k(x, x') + lam [x = x'])``, ``k`` rational quadratic,
  ``k = 1 / (1 + |x - x'|^2 / (2 l^2 p))`` with ``p`` the number of inputs
  (a mixture of squared-exponential kernels over length scales: residuals
  bend on more than one scale);
* hyperparameters: ``l`` from :data:`LENGTH_SCALES` and the noise ratio
  ``lam`` from :data:`NOISE_RATIOS` by the largest marginal likelihood
  summed over the benchmarks predicted from the same inputs, ``s^2``
  profiled out per benchmark (its maximizer is closed-form); all noise
  ratios of one length scale come from one eigendecomposition;
* prediction: Gaussian conditional mean plus the process's posterior mean;
  standard deviation: the process's posterior standard deviation of a new
  residual (noise included).

Far from every training model the correction decays to the residuals' mean
(near zero; as the inverse square of the distance for this kernel) and its
error bar to their prior spread, so a model stronger
than all of them is predicted about as the Gaussian predicts it, not pulled
back to the average (a process on the scores themselves, tried first, did
that and lost to the Gaussian under extrapolation: ``docs/experiments/reproduction.md``).

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
spaced subset).

Why one set of hyperparameters per input pattern: chosen per benchmark, on
one seed of MTEB's cv protocol (MI, k = 5, the squared-exponential kernel
then), R^2 was 0.813; summed over the benchmarks 0.817, and with the rational
quadratic kernel 0.820 (docs/experiments/reproduction.md). It is also what makes a
pattern cheap: the likelihood needs eigendecompositions of the kernel on
one set of training models (those of the most benchmarks), and every other
set of training models (a benchmark some of them lack) a single Cholesky
factorization at the chosen hyperparameters.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from scipy.linalg.lapack import dpotrf, dtrtrs

from .._patterns import unique_rows
from ..gaussian.conditional import conditional_moments

__all__ = ["ResidualGP", "base_rows", "choose_hyperparameters", "fit_residual_gp", "kernel",
           "process_rows", "profile_likelihoods", "residual_process"]

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


def process_rows(values: np.ndarray) -> np.ndarray:
    """Rows ``gp`` predicts by its process: 1 to ``MAX_INPUTS`` scores, not all of them."""
    n_obs = (~np.isnan(values)).sum(axis=1)
    return (n_obs >= 1) & (n_obs <= MAX_INPUTS) & (n_obs < values.shape[1])


def base_rows(source: np.ndarray) -> np.ndarray:
    """The rows of ``source`` (the training models) the Gaussian under ``gp``'s
    process is fitted on, when it predicts new rows: all of them, so that it
    is ``gaussian``'s own fit of the same rows, made once.

    (It used to leave out the training rows with at most :data:`MAX_INPUTS`
    scores, as :func:`~benchsel.prediction.completers.complete_gp` leaves
    out the rows it predicts: on a sparse board a second EM fit of nearly
    the same rows for every fold of ``auto``'s choice.)
    """
    return source


def kernel(a: np.ndarray, b: np.ndarray, length: float) -> np.ndarray:
    """``1 / (1 + |a_i - b_j|^2 / (2 length^2 p))`` for rows of ``a`` (n, p) and ``b`` (m, p)."""
    sq = (a * a).sum(axis=1)[:, None] + (b * b).sum(axis=1)[None, :] - 2.0 * a @ b.T
    return 1.0 / (1.0 + np.maximum(sq, 0.0) / (2.0 * length**2 * a.shape[1]))


@dataclass(frozen=True)
class ResidualGP:
    """A fitted process for one or more targets sharing inputs and hyperparameters.

    Attributes
    ----------
    inputs : ndarray (n, p)
    length, noise : float
        Length scale (units of ``sqrt(p)``) and noise ratio ``lam`` of the kernel.
    scale : float or ndarray (t,)
        Signal variance ``s^2`` of each target.
    offset : float or ndarray (t,)
        The targets' means, the process's constant prior mean.
    weights : ndarray (n,) or (n, t)
        ``(K + lam I)^{-1} (y - offset)`` for the unit-scale kernel ``K``.
    factor : ndarray (n, n)
        Lower Cholesky factor of ``K + lam I``, for the posterior variance.
    log_likelihood : float or ndarray (t,)
        Profile log marginal likelihood of each target (up to a constant).
    """

    inputs: np.ndarray
    length: float
    noise: float
    scale: float | np.ndarray
    offset: float | np.ndarray
    weights: np.ndarray
    factor: np.ndarray
    log_likelihood: float | np.ndarray

    def predict(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and standard deviation of a new target (noise included) at rows ``x``.

        Shapes ``(m,)`` for one target, ``(m, t)`` for ``t``.
        """
        cross = kernel(np.atleast_2d(x), self.inputs, self.length)
        mean = self.offset + cross @ self.weights
        half = solve_triangular(self.factor, cross.T, lower=True)
        unit = np.maximum(1.0 - (half**2).sum(axis=0) + self.noise, 0.0)
        return mean, np.sqrt(np.multiply.outer(unit, self.scale))


def profile_likelihoods(inputs: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Profile log likelihood of each target at every grid point, shape (t, lengths, noises).

    For ``K + lam I`` with eigenvalues ``w_i + lam`` and ``b = U^T (y - mean(y))``,
    the maximizing signal variance is ``s^2 = sum_i b_i^2 / (w_i + lam) / n``
    and the profile log likelihood ``-(n/2) log s^2 - (1/2) sum_i log(w_i + lam)``;
    one eigendecomposition per length scale serves every noise ratio and target.
    """
    x = np.asarray(inputs, dtype=float)
    y = np.asarray(targets, dtype=float).reshape(len(x), -1)
    n = len(y)
    centred = y - y.mean(axis=0)
    out = np.empty((y.shape[1], len(LENGTH_SCALES), NOISE_RATIOS.size))
    for i, length in enumerate(LENGTH_SCALES):
        w, u = np.linalg.eigh(kernel(x, x, length))
        w = np.maximum(w, 0.0)
        b2 = (u.T @ centred) ** 2  # (n, t)
        denom = w[:, None] + NOISE_RATIOS[None, :]  # (n, noises)
        scale = (b2.T @ (1.0 / denom)) / n  # (t, noises)
        # A constant target (zero residuals) has scale 0: any hyperparameters do.
        scale = np.maximum(scale, np.finfo(float).tiny)
        out[:, i, :] = -0.5 * n * np.log(scale) - 0.5 * np.log(denom).sum(axis=0)
    return out


def choose_hyperparameters(inputs: np.ndarray, targets: np.ndarray) -> tuple[float, float]:
    """Length scale and noise ratio maximizing the profile likelihood summed over targets."""
    total = profile_likelihoods(inputs, targets).sum(axis=0)
    i, j = np.unravel_index(int(np.argmax(total)), total.shape)
    return LENGTH_SCALES[i], float(NOISE_RATIOS[j])


def fit_residual_gp(
    inputs: np.ndarray, targets: np.ndarray, length: float | None = None,
    noise: float | None = None,
) -> ResidualGP:
    """Fit the process of the module docstring to ``targets`` ((n,) or (n, t)).

    Without ``length`` and ``noise`` they are chosen over the grid by
    :func:`choose_hyperparameters`; the signal variance of each target is
    its profile maximizer.
    """
    x = np.asarray(inputs, dtype=float)
    y = np.asarray(targets, dtype=float)
    if length is None or noise is None:
        length, noise = choose_hyperparameters(x, y)
    n = len(y)
    offset = y.mean(axis=0)
    centred = y - offset
    factor, lower = cho_factor(kernel(x, x, length) + noise * np.eye(n), lower=True)
    factor = np.tril(factor)
    weights = cho_solve((factor, lower), centred)
    scale = np.maximum((centred * weights).sum(axis=0) / n, np.finfo(float).tiny)
    log_det = 2.0 * np.log(np.diag(factor)).sum()
    return ResidualGP(inputs=x, length=length, noise=noise, scale=scale, offset=offset,
                      weights=weights, factor=factor,
                      log_likelihood=-0.5 * n * np.log(scale) - 0.5 * log_det)


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
        # Targets observed on the same training models are fitted together.
        groups = defaultdict(list)
        for j in np.flatnonzero(~pattern):
            fit_rows = _spread(np.flatnonzero(z_obs[train, j]), MAX_ROWS)
            if fit_rows.size >= MIN_ROWS:
                groups[fit_rows.tobytes()].append(j)
        if not groups:
            continue
        fits = []
        for key, targets in groups.items():
            fit_rows = np.frombuffer(key, dtype=np.intp)
            residuals = z[np.ix_(train[fit_rows], targets)] - base_train[np.ix_(fit_rows, targets)]
            fits.append((fit_rows, targets, residuals))
        # The training models some group is fitted on (at most MAX_ROWS per group).
        used = np.unique(np.concatenate([f[0] for f in fits]))
        inputs = z[np.ix_(train[used], given)]
        # Hyperparameters from the largest group (most targets, then most models).
        fit_rows, _, residuals = max(fits, key=lambda f: (len(f[1]), f[0].size))
        length, noise = choose_hyperparameters(inputs[np.searchsorted(used, fit_rows)],
                                               residuals)
        # Every group's kernels are blocks of the kernels on those models,
        # computed once: a group costs one Cholesky factorization.
        gram = kernel(inputs, inputs, length)
        cross = kernel(sub[np.ix_(members, given)], inputs, length)
        for fit_rows, targets, residuals in fits:
            at = np.searchsorted(used, fit_rows)
            correction, spread = _group_posterior(gram[np.ix_(at, at)], cross[:, at],
                                                  residuals, noise)
            mu[np.ix_(members, targets)] += correction
            sd[np.ix_(members, targets)] = spread
    return mu, sd


def _group_posterior(gram: np.ndarray, cross: np.ndarray, targets: np.ndarray,
                     noise: float) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`ResidualGP.predict` of ``fit_residual_gp(inputs, targets, length, noise)``
    from the kernel blocks: ``gram`` on the inputs, ``cross`` from the new rows to them.

    The same algebra without recomputing the kernel and with LAPACK called
    directly: a residual process fits hundreds of small groups, and their
    wrappers cost more than their factorizations (checked against the
    per-target solves in ``tests/test_gp.py``).
    """
    n = len(targets)
    offset = targets.mean(axis=0)
    centred = targets - offset
    width = centred.shape[1] if centred.ndim == 2 else 1
    # A symmetric matrix is its own transpose: the C-ordered sum is read as Fortran.
    factor, info = dpotrf((gram + noise * np.eye(n)).T, lower=1, clean=1)
    if info:
        raise np.linalg.LinAlgError(f"the residual process's kernel is not positive "
                                    f"definite (LAPACK dpotrf info {info})")
    # One solve for the targets and the new rows: L^-1 [y, k*].
    right = np.asfortranarray(np.column_stack([centred.reshape(n, width), cross.T]))
    both, _ = dtrtrs(factor, right, lower=1)
    half_weights = both[:, :width].reshape(centred.shape)
    weights, _ = dtrtrs(factor, both[:, :width], lower=1, trans=1)
    weights = weights.reshape(centred.shape)
    # centred' K^-1 centred, the profile maximizer of the signal variance times n.
    scale = np.maximum((half_weights**2).sum(axis=0) / n, np.finfo(float).tiny)
    unit = np.maximum(1.0 - (both[:, width:] ** 2).sum(axis=0) + noise, 0.0)
    return offset + cross @ weights, np.sqrt(np.multiply.outer(unit, scale))
