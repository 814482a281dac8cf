"""A factor model of standardized scores for wide boards: low rank plus a diagonal.

On a board of thousands of benchmarks the full covariance has millions of
free entries that a few hundred models cannot pin down, and EM on it costs
``O(N^3)`` per iteration. Scores of language models are driven by a few
abilities, so the model here is

    z = mu + W f + e,    f ~ N(0, I_r),    e ~ N(0, diag(psi)),

with ``W`` of shape ``(N, r)``: the covariance is ``W W^T + diag(psi)``
(factor analysis; probabilistic PCA when ``psi`` is one number). EM with
missing cells (:func:`factor_covariance`) costs ``O(M N r^2)`` per
iteration and memory ``O(M r^2 + N r^2)``; conditioning, the entropy and
mutual-information gains of greedy selection and the diagonal of the
inverse all go through the Woodbury identity in ``O(N r^2)``
(:class:`~benchsel._lowrank.FactorCovariance`), so nothing ``N x N`` is formed unless a caller
asks for the dense matrix and it fits the memory budget.

Fitted by plain maximum likelihood, an item that few models have claims to
be explained by the factors almost entirely (its noise collapses: a Heywood
case), and predictions that lean on it are overconfident: on MERGED, hidden
cells of columns with fewer than 20 models were off by 10 of their claimed
standard deviations. A prior worth ``prior`` models pulls each item's
noise toward its observed variance.

The rank and the prior are chosen by held-out likelihood on the board
itself (:func:`choose_rank`): a tenth of the observed cells is hidden, each
candidate is fitted on the rest, and the one whose conditional densities of
the hidden cells, given each model's other scores, are highest wins.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .._lowrank import FactorCovariance
from .._parallel import one_blas_thread
from ..exceptions import ConvergenceWarning
from .conditional import conditional_moments

__all__ = ["FactorCovariance", "FactorEstimate", "choose_rank", "factor_covariance",
           "FACTOR_PRIORS", "FACTOR_RANKS"]

#: Ranks :func:`choose_rank` tries, smallest first (those the board can identify).
FACTOR_RANKS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32)
#: Priors (in models) :func:`choose_rank` tries at the best rank; the ranks are scanned
#: with the first. No prior (plain maximum likelihood) is not among them: it never won
#: by more than rounding on the boards tried, and lost badly on sparse ones
#: (docs/scaling.md, "Many benchmarks").
FACTOR_PRIORS = (1.0, 3.0, 10.0)
#: Share of the observed cells :func:`choose_rank` hides to score each candidate.
RANK_HOLDOUT = 0.1
_LOG_2PI = float(np.log(2 * np.pi))


@dataclass(frozen=True, eq=False)
class FactorEstimate:
    """Mean and factor covariance of standardized scores, as
    :class:`~benchsel.gaussian.covariance.CovarianceEstimate` gives them.

    ``covariance`` is the dense matrix, formed on first use (and refused by
    name when it does not fit the memory budget); ``factors`` keeps ``W``
    and ``psi`` for the methods that need no ``N x N`` matrix.

    Attributes
    ----------
    mean : ndarray of shape (N,)
    factors : FactorCovariance
    method : str
        ``"factor"``.
    rank : int
    prior : float
        The prior's weight, in models (:func:`factor_covariance`).
    rank_scores : dict
        Held-out mean log density per ``(rank, prior)`` tried (empty when
        both were given).
    n_iter, converged, log_likelihood
        E-steps, whether the objective stopped changing, and the objective
        (log-likelihood plus the prior's term) at each accepted point.
    """

    mean: np.ndarray
    factors: FactorCovariance
    method: str = "factor"
    shrinkage: float = 0.0
    n_iter: int = 0
    converged: bool = True
    log_likelihood: np.ndarray = field(default_factory=lambda: np.zeros(0))
    rank_scores: dict = field(default_factory=dict)
    prior: float = 0.0

    @property
    def rank(self) -> int:
        return self.factors.rank

    @cached_property
    def covariance(self) -> np.ndarray:
        return self.factors.dense()


def _start(z: np.ndarray, obs: np.ndarray, rank: int, seed) -> tuple:
    """Mean, loadings and noise from the leading singular vectors of the mean-filled board."""
    mu = np.nanmean(np.where(obs, z, np.nan), axis=0)
    mu = np.where(np.isfinite(mu), mu, 0.0)
    centred = np.where(obs, z - mu, 0.0)
    m_rows, n = z.shape
    # A few passes of subspace iteration: the leading directions without an
    # O(M N min(M, N)) decomposition of a wide board.
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(centred @ rng.standard_normal((n, rank + 5)))[0]
    for _ in range(3):
        basis = np.linalg.qr(centred @ (centred.T @ basis))[0]
    _, s, vt = np.linalg.svd(basis.T @ centred, full_matrices=False)
    share = obs.mean(axis=0).clip(1.0 / m_rows)  # the filled zeros shrank each column
    w = vt[:rank].T * (s[:rank] / np.sqrt(m_rows))
    w = w / np.sqrt(share)[:, None]
    var = np.nanvar(np.where(obs, z, np.nan), axis=0)
    var = np.where(np.isfinite(var) & (var > 0), var, 1.0)
    psi = np.maximum(var - np.einsum("ij,ij->i", w, w), 0.1 * var)
    return mu, w, psi


def _e_step(x: np.ndarray, obs: np.ndarray, mu, w, psi):
    """Posterior moments of each model's factors, and the observed-data log-likelihood.

    Returns ``(f, ff, loglik)``: ``E[f_i]`` of shape ``(M, r)``,
    ``E[f_i f_i^T]`` of shape ``(M, r, r)``.
    """
    m_rows, r = x.shape[0], w.shape[1]
    inv_psi = obs / psi  # (M, N): 1/psi where observed, 0 elsewhere
    centred = np.where(obs, x - mu, 0.0)
    outer = (w[:, :, None] * w[:, None, :]).reshape(-1, r * r)
    precision = (inv_psi @ outer).reshape(m_rows, r, r) + np.eye(r)
    rhs = (centred * inv_psi) @ w  # (M, r)
    chol = np.linalg.cholesky(precision)
    cov_f = np.linalg.inv(precision)
    f = np.einsum("ijk,ik->ij", cov_f, rhs)
    ff = cov_f + f[:, :, None] * f[:, None, :]
    # log N(x_O; mu_O, W_O W_O^T + Psi_O) by the determinant lemma and Woodbury.
    logdet = 2.0 * np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(axis=1) \
        + (obs * np.log(psi)).sum(axis=1)
    quad = (centred**2 * inv_psi).sum(axis=1) - np.einsum("ij,ij->i", rhs, f)
    loglik = -0.5 * float(np.sum(obs.sum(axis=1) * _LOG_2PI + logdet + quad))
    return f, ff, loglik


def _m_step(x: np.ndarray, obs: np.ndarray, f, ff, floor: float, prior: float = 0.0):
    """Loadings, means and noise that maximize the expected complete-data likelihood.

    Per item, a regression of its observed scores on the factors and a
    constant, weighted by the factors' posterior second moments. ``prior``
    (in models) pulls each item's noise toward its observed variance, as
    that many more models left wholly unexplained would: an item few models
    have cannot claim to be explained by the factors. (A pull of the
    loadings toward zero as well shrank every factor: on a generated board
    with three factors, one model's worth doubled the covariance's error.)
    """
    m_rows, r = f.shape
    ones = np.ones((m_rows, 1))
    f1 = np.hstack([f, ones])  # E[(f, 1)]
    ff1 = np.empty((m_rows, r + 1, r + 1))
    ff1[:, :r, :r] = ff
    ff1[:, :r, r] = f
    ff1[:, r, :r] = f
    ff1[:, r, r] = 1.0
    weights = obs.astype(float)
    xz = np.where(obs, x, 0.0)
    gram = (weights.T @ ff1.reshape(m_rows, -1)).reshape(-1, r + 1, r + 1)  # (N, r+1, r+1)
    cross = xz.T @ f1  # (N, r+1)
    gram += 1e-9 * np.eye(r + 1)
    coef = np.linalg.solve(gram, cross[:, :, None])[:, :, 0]
    count = weights.sum(axis=0)
    pull = prior * _column_variance(x, obs) if prior > 0 else 0.0
    psi = ((xz**2).sum(axis=0) - np.einsum("ij,ij->i", coef, cross) + pull) \
        / np.maximum(count + prior, 1.0)
    return coef[:, r], coef[:, :r], np.maximum(psi, floor)


def factor_covariance(
    z, rank: int | str = "auto", *, prior: float | str = "auto", max_iter: int = 2000,
    tol: float = 1e-5, floor: float = 1e-3, seed=0,
) -> FactorEstimate:
    """EM estimate of a factor model ``W W^T + diag(psi)`` from an incomplete board.

    Parameters
    ----------
    z : array-like of shape (M, N)
        Standardized scores; NaN marks a missing cell.
    rank : int or "auto", default "auto"
        Number of factors; ``auto`` chooses it by held-out likelihood
        (:func:`choose_rank`).
    prior : float >= 0 or "auto", default "auto"
        Weight, in models, of the pull of each item's noise toward its
        observed variance (0: maximum likelihood); ``auto`` chooses it with
        the rank.
    max_iter : int, default 2000
        Cap on E-steps (SQUAREM's included).
    tol : float, default 1e-5
        Converged when the objective's relative change (the observed-data
        log-likelihood plus the prior's term) and the covariance's relative
        Frobenius change both fall below ``tol``.
    floor : float, default 1e-3
        Smallest noise variance (standardized units), as the dense
        estimators' eigenvalue floor.
    seed : int, default 0
        Randomness of the start and of the cells ``auto`` hides.

    Returns
    -------
    FactorEstimate
    """
    z = np.asarray(z, dtype=float)
    if z.ndim != 2:
        raise ValueError(f"scores must be a 2-D matrix; got shape {z.shape}")
    obs = ~np.isnan(z)
    if rank != "auto" and (isinstance(rank, bool) or not isinstance(rank, int | np.integer)
                           or rank < 1):
        raise ValueError(f"rank must be a positive integer or 'auto'; got {rank!r}")
    if prior != "auto" and (isinstance(prior, bool) or not isinstance(prior, int | float)
                            or not prior >= 0 or not np.isfinite(prior)):
        raise ValueError(f"prior must be a non-negative number or 'auto'; got {prior!r}")
    scores = {}
    if rank == "auto" or prior == "auto":
        rank, prior, scores = choose_rank(
            z, ranks=FACTOR_RANKS if rank == "auto" else (int(rank),),
            priors=FACTOR_PRIORS if prior == "auto" else (float(prior),), floor=floor, seed=seed)
    rank = min(int(rank), _max_rank(obs))
    mu, w, psi, trace, converged, e_steps = _fit(z, obs, rank, max_iter, tol, floor, seed,
                                                 prior=float(prior))
    if not converged:
        warnings.warn(
            f"factor EM (rank {rank}) did not converge in {max_iter} E-steps; its last "
            "iterate is used", ConvergenceWarning, stacklevel=2)
    return FactorEstimate(mean=mu, factors=FactorCovariance(w, psi), n_iter=e_steps,
                          converged=converged, log_likelihood=np.array(trace),
                          rank_scores=scores, prior=float(prior))


def _max_rank(obs: np.ndarray) -> int:
    """The largest rank the board can identify: fewer factors than models or items."""
    m_rows, n = obs.shape
    return max(1, min(m_rows - 1, n - 1, max(FACTOR_RANKS)))


def _fit(z, obs, rank, max_iter, tol, floor, seed, start=None, prior=0.0,
         covariance_tol=None):
    """EM from the spectral start (or ``start``): ``(mu, W, psi, trace, converged, e_steps)``.

    Accelerated by SQUAREM (Varadhan & Roland 2008) as the dense EM is: from
    two EM steps, extrapolate along their direction and take one EM step
    from there, kept only if the objective there is no lower than after the
    first plain step. Plain EM took 484 iterations on a generated 300 x
    2,000 board, 30% observed. The objective is the observed-data
    log-likelihood plus the prior's term (:func:`_objective`), which EM
    never lowers. ``max_iter`` counts E-steps; ``trace`` holds the objective
    at each accepted point. ``covariance_tol`` (default ``tol``) bounds the
    covariance's relative change at the stop; ``inf`` stops on the objective
    alone, which is enough to rank fits by held-out density.
    """
    theta = start if start is not None else _start(z, obs, rank, seed)
    covariance_tol = tol if covariance_tol is None else covariance_tol
    spread = _column_variance(z, obs)
    trace: list[float] = []
    e_steps = 0

    def step(point):
        """One EM step from ``point``, and the objective at ``point``."""
        nonlocal e_steps
        e_steps += 1
        f, ff, loglik = _e_step(z, obs, *point)
        return _m_step(z, obs, f, ff, floor, prior), _objective(loglik, point[2], spread, prior)

    points: list[tuple] = []  # (W, psi) at each accepted point, for the covariance's change

    def done() -> bool:
        # As the dense EM: the objective and the covariance both stopped moving. The
        # objective alone stopped a 300 x 3,000 fit after 7 E-steps, far from its optimum.
        return (len(trace) > 1
                and abs(trace[-1] - trace[-2]) <= tol * max(abs(trace[-2]), 1.0)
                and _covariance_change(points[-2], points[-1]) <= covariance_tol)

    with one_blas_thread():
        while e_steps < max_iter:
            first, value = step(theta)
            trace.append(value)
            points.append(theta[1:])
            if done() or e_steps + 2 > max_iter:
                theta = first
                if done():
                    break
                continue
            second, value_first = step(first)
            r = [a - b for a, b in zip(first, theta)]
            v = [a - 2 * b + c for a, b, c in zip(second, first, theta)]
            norm_v = np.sqrt(sum(float(np.sum(x**2)) for x in v))
            alpha = -np.sqrt(sum(float(np.sum(x**2)) for x in r)) / norm_v if norm_v > 0 else -1.0
            alpha = min(alpha, -1.0)  # -1 is exactly the second EM step
            mu, w, psi = (t - 2 * alpha * a + alpha**2 * b for t, a, b in zip(theta, r, v))
            jumped, value_jumped = step((mu, w, np.maximum(psi, floor)))
            if np.isfinite(value_jumped) and value_jumped >= value_first:
                theta = jumped
            else:  # the extrapolation overshot: keep the plain steps
                theta = second
    return (*theta, trace, done(), e_steps)


def _covariance_change(old: tuple, new: tuple) -> float:
    """``||S_new - S_old||_F / ||S_old||_F`` for ``S = W W^T + diag(psi)``, in ``O(N r^2)``.

    From inner products ``<S_a, S_b> = ||W_a^T W_b||^2 + sum psi_b |w_a|^2 +
    sum psi_a |w_b|^2 + psi_a . psi_b``: nothing ``N x N``.
    """
    def inner(a, b) -> float:
        (wa, pa), (wb, pb) = a, b
        return float(np.sum((wa.T @ wb) ** 2) + pb @ np.sum(wa**2, axis=1)
                     + pa @ np.sum(wb**2, axis=1) + pa @ pb)

    size = inner(old, old)
    diff = max(size + inner(new, new) - 2.0 * inner(old, new), 0.0)
    return float(np.sqrt(diff / size)) if size > 0 else np.inf


def _column_variance(z, obs) -> np.ndarray:
    """Each item's variance over the models that have it (what the prior pulls toward)."""
    count = np.maximum(obs.sum(axis=0), 1)
    values = np.where(obs, z, 0.0)
    mean = values.sum(axis=0) / count
    return (values**2).sum(axis=0) / count - mean**2


def _objective(loglik: float, psi, spread, prior: float) -> float:
    """The observed-data log-likelihood plus the prior on the noise, which the M-step
    maximizes (:func:`_m_step`): ``-prior / 2 * sum(spread / psi + log psi)``."""
    if prior == 0:
        return loglik
    return loglik - 0.5 * prior * float(np.sum(spread / psi + np.log(psi)))


def held_out_log_density(z, hidden, mu, w, psi) -> float:
    """Mean log density of the ``hidden`` cells of ``z`` given each model's other cells."""
    mean, var = conditional_moments(np.where(hidden, np.nan, z), mu, FactorCovariance(w, psi))
    rows, cols = np.nonzero(hidden)
    resid = z[rows, cols] - mean[rows, cols]
    v = var[rows, cols]
    return float(np.mean(-0.5 * (_LOG_2PI + np.log(v) + resid**2 / v)))


def choose_rank(z, *, ranks=FACTOR_RANKS, priors=FACTOR_PRIORS, floor: float = 1e-3, seed=0,
                max_iter: int = 200, tol: float = 1e-4) -> tuple[int, float, dict]:
    """The rank and prior whose fit predicts hidden cells best, and each one's score.

    Hides :data:`RANK_HOLDOUT` of the observed cells (at random; a model
    keeps at least one, an item two), fits each candidate on the rest, and
    scores the mean log density of the hidden cells given each model's
    visible ones (:func:`held_out_log_density`). The ranks of ``ranks`` the
    board can identify are tried from the smallest with the first prior;
    the scan stops after two ranks in a row that score below the best. Then
    the other priors are tried at the best rank.

    Returns
    -------
    rank : int
    prior : float
    scores : dict
        Mean held-out log density per ``(rank, prior)`` tried; empty when
        nothing could be hidden (then the smallest rank and first prior).
    """
    z = np.asarray(z, dtype=float)
    obs = ~np.isnan(z)
    rng = np.random.default_rng(seed)
    hidden = obs & (rng.random(z.shape) < RANK_HOLDOUT)
    # Every model keeps a cell, every item two: nothing becomes unidentified.
    hidden[obs.sum(axis=1) - hidden.sum(axis=1) < 1] = False
    hidden[:, obs.sum(axis=0) - hidden.sum(axis=0) < 2] = False
    usable = [r for r in ranks if r <= _max_rank(obs)] or [1]
    priors = [float(p) for p in priors]
    if not hidden.any():
        return usable[0], priors[0], {}
    train = np.where(hidden, np.nan, z)
    kept = ~np.isnan(train)
    scores: dict[tuple[int, float], float] = {}

    def score(r: int, prior: float) -> float:
        mu, w, psi, *_ = _fit(train, kept, r, max_iter, tol, floor, seed, prior=prior,
                              covariance_tol=np.inf)
        scores[r, prior] = held_out_log_density(z, hidden, mu, w, psi)
        return scores[r, prior]

    worse = 0
    for r in usable:
        if score(r, priors[0]) < max(scores.values()):
            worse += 1
            if worse == 2:
                break
        else:
            worse = 0
    best = max(scores, key=scores.get)[0]
    for prior in priors[1:]:
        score(best, prior)
    rank, prior = max(scores, key=scores.get)
    return rank, prior, scores
