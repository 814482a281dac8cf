"""p-IRT and gp-IRT (Maia Polo et al. 2024, "tinyBenchmarks").

Both rest on the multidimensional two-parameter logistic IRT model (paper
001, eq. 14)::

    P(s(i, j) = 1) = sigmoid(theta_i . a_j - b_j)

with model ability ``theta_i`` in R^d, question discrimination ``a_j`` in R^d
and difficulty ``b_j``. Scores in [0, 1] that are not 0/1 enter the same
Bernoulli likelihood as fractional targets; scores outside [0, 1] are refused.

Fit (:func:`fit_irt`). Penalized (MAP) joint maximum likelihood on the source
models. Abilities get a ``N(0, I)`` prior and after every sweep the fit is
re-expressed so that the source abilities have mean 0 and identity
covariance (the usual IRT identification; the likelihood is blind to it, and
without it the abilities' scale drifts with ``N / M``). Question parameters
get the hierarchical prior of paper 001 (G.2): each component of
``(a_j, b_j)`` is ``N(mu, sigma^2)``, with ``mu`` and ``sigma^2`` re-estimated
every sweep from the current estimates (MAP under G.2's hyperpriors
``mu ~ N(0, 10)``, ``1 / sigma^2 ~ Gamma(1, 1)``; ``sigma >= 0.1``). The
papers fit this model by variational inference (2,000 Adam epochs). Here a
sweep is one exact Newton step on each of two blocks: given the questions
every model is an independent d-parameter penalized logistic regression,
given the abilities every question an independent (d+1)-parameter one. A
step is a few matrix products over the M x N matrix plus batched small
solves, with step halving per model / per question so that no block's
objective rises; each sweep costs ``O(M N d^2)``. The question block comes
last and is polished after the final sweep, so the returned questions are
the MAP given the returned abilities.

Convergence. With ``d = 1`` the sweeps converge in tens of iterations. With
``d = 5`` and tens of source models the joint fit is weakly determined (it
keeps slowly fitting noise in the extra dimensions) and stops at
``max_iter = 50`` sweeps, as the papers' fit stops after a fixed number of
epochs; on the ten question-level matrices 50 and 100 sweeps gave the same
EGR (p-IRT -33% / +29% against -34% / +28%). On an 82 x 50,000 matrix the
fit takes about 10 s (paper 002's reference code: 586 s for p-IRT).

Why these choices, measured on the ten question-level matrices (n = 50,
10 trials, EGR interpolation / extrapolation of p-IRT): learning the
question prior's variances took extrapolation from +82% to +28% (d = 5; a
question that no source model solves carries no information on its
discrimination, and the learned prior decides how stronger models fare on
it); ``dim = 5``, one of the values Maia Polo et al. suggest (paper 001,
G.3), beat ``d = 1`` (-25% / +97%), although paper 001 found ``d = 1`` best
on its binary data.

Coreset (paper 001 Table 1 and Sec. 2.4; tinyBenchmarks' "IRT anchor
points"): k-means on the fitted question parameters ``(a_j, b_j)``; each
cluster contributes the member nearest its centre, weighted by the cluster's
share of the questions.

Prediction. A target's ability is estimated from its coreset scores with the
question parameters fixed. The papers use maximum likelihood; that has no
finite solution for an all-correct or all-wrong coreset, so a weak
``N(0, prior_sd^2 I)`` prior is added (default ``prior_sd = 10`` source-ability
standard deviations: a prior of 1, the source population, shrinks strong
targets toward the sources: with it p-IRT's extrapolation EGR was 34 points
worse, at ``d = 5`` with a fixed-variance question prior).
Then (paper 002, eqs. 12-13)::

    p-IRT  = (N - n)/N * mean_{j not in C} sigmoid(theta . a_j - b_j) + n/N * mean(s(f, C))
    gp-IRT = lambda * sum_{j in C} w_j s(f, j) + (1 - lambda) * p-IRT

with ``lambda = b^2 / (b^2 + v)`` (paper 001, G.1): ``v = sigma^2 / (4 n)``
with ``sigma^2`` the source models' mean per-model variance of the question
scores, and ``b`` the mean absolute error of the IRT prediction on held-out
models: an IRT model is fitted on a random half of the source models, and
for each model of the other half the ability estimated from a random half
of the questions predicts its mean score on the remaining half (paper 002's
reference code does the same with a fifth of the models held out).

Error bars. p-IRT: the delta-method standard deviation of the predicted
mean from the ability's Laplace posterior covariance, plus the Bernoulli
variance of the unseen questions under the model. It ignores the error in
the question parameters and any misfit, so it is optimistic, most of all
when the targets lie outside the sources. gp-IRT: ``sd^2 = lambda^2 v_w +
(1 - lambda)^2 (sd_p^2 + b^2)`` with ``v_w = sum_j w_j^2 m (1 - m)`` (``m`` the
weighted coreset mean: the Bernoulli variance of the weighted mean) and
``sd_p`` the p-IRT one, treating the two parts' errors as independent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit
from sklearn.cluster import KMeans

from .._reuse import reused
from ._base import CoresetMethod, check_n, check_source

__all__ = [
    "METHODS",
    "GPIRT",
    "IRTFit",
    "PIRT",
    "estimate_ability",
    "fit_irt",
    "irt_anchor_points",
    "irt_gradient",
    "irt_objective",
    "pirt_prediction",
]

_MAX_HALVINGS = 30
_HYPER_MEAN_VAR = 10.0  # paper 001, G.2: mu ~ N(0, 10)
_HYPER_SHAPE, _HYPER_RATE = 1.0, 1.0  # paper 001, G.2: precision ~ Gamma(1, 1)
_MIN_PRIOR_VAR = 0.01  # question prior sd >= 0.1, see _hyper_update


@dataclass(frozen=True)
class IRTFit:
    """A fitted 2PL IRT model.

    Attributes
    ----------
    ability : ndarray of shape (M, d)
        Source models' abilities (mean 0, identity covariance).
    discrimination : ndarray of shape (N, d)
    difficulty : ndarray of shape (N,)
    prior_mean, prior_sd : ndarray of shape (d + 1,)
        The question prior at the fit, for ``(a_1 .. a_d, b)``.
    objective : float
        Negative log posterior at the fit (without the hyperpriors), up to a constant.
    n_iter : int
        Newton sweeps (one step on each block per sweep).
    converged : bool
        Whether the last sweep changed the probabilities by less than the tolerance.
    """

    ability: np.ndarray
    discrimination: np.ndarray
    difficulty: np.ndarray
    prior_mean: np.ndarray
    prior_sd: np.ndarray
    objective: float
    n_iter: int
    converged: bool

    def probabilities(self, ability=None) -> np.ndarray:
        """``P(correct)`` on every question for ``ability`` (R, d), default the source models."""
        theta = self.ability if ability is None else np.atleast_2d(ability)
        return expit(theta @ self.discrimination.T - self.difficulty)


def _loss_and_prob(z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bernoulli negative log-likelihood per entry and ``sigmoid(z)``, from one exp."""
    e = np.exp(-np.abs(z))
    loss = np.maximum(z, 0.0) + np.log1p(e) - y * z
    p = np.where(z >= 0, 1.0, e) / (1.0 + e)
    return loss, p


def _as_arrays(ability, discrimination, difficulty):
    theta, a, b = (np.asarray(v, dtype=float) for v in (ability, discrimination, difficulty))
    return np.atleast_2d(theta), np.atleast_2d(a), b


def irt_objective(scores, ability, discrimination, difficulty, *, item_mean=0.0,
                  item_sd=(2.0, 3.0), ability_sd: float = 1.0) -> float:
    """Negative log posterior of the 2PL model, up to a constant.

    Parameters
    ----------
    scores : array-like of shape (M, N), values in [0, 1]
    ability : array-like of shape (M, d)
    discrimination : array-like of shape (N, d)
    difficulty : array-like of shape (N,)
    item_mean, item_sd : float or array-like of shape (d + 1,)
        Prior mean and standard deviation of ``(a_1 .. a_d, b)``; a pair for
        ``item_sd`` means (all of ``a``, ``b``). Default ``N(0, 4)`` and ``N(0, 9)``.
    ability_sd : float, default 1.0
        Prior standard deviation of every ability component.
    """
    y = np.asarray(scores, dtype=float)
    theta, a, b = _as_arrays(ability, discrimination, difficulty)
    items = np.c_[a, b]
    mean, prec = _item_prior(item_mean, item_sd, a.shape[1])
    loss, _ = _loss_and_prob(theta @ a.T - b, y)
    return float(loss.sum() + 0.5 * (((items - mean) ** 2 * prec).sum()
                                     + (theta**2).sum() / ability_sd**2))


def irt_gradient(scores, ability, discrimination, difficulty, *, item_mean=0.0,
                 item_sd=(2.0, 3.0), ability_sd: float = 1.0):
    """Gradient of :func:`irt_objective` (same parameters).

    Returns
    -------
    (d_ability, d_discrimination, d_difficulty) : tuple of ndarray
        Shapes (M, d), (N, d), (N,).
    """
    y = np.asarray(scores, dtype=float)
    theta, a, b = _as_arrays(ability, discrimination, difficulty)
    dim = a.shape[1]
    mean, prec = _item_prior(item_mean, item_sd, dim)
    prior = (np.c_[a, b] - mean) * prec
    r = expit(theta @ a.T - b) - y
    return r @ a + theta / ability_sd**2, r.T @ theta + prior[:, :dim], -r.sum(0) + prior[:, dim]


def _item_prior(item_mean, item_sd, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Prior mean and precision vectors of length ``dim + 1`` for ``(a, b)``."""
    sd = np.asarray(item_sd, dtype=float)
    if sd.shape == (2,) and dim != 1:
        sd = np.r_[np.full(dim, sd[0]), sd[1]]
    mean = np.broadcast_to(np.asarray(item_mean, dtype=float), (dim + 1,))
    return mean, np.broadcast_to(sd, (dim + 1,)) ** -2.0


def _newton_blocks(y, design, offset, params, prec, z, loss, p, centre=0.0):
    """One damped Newton step for independent penalized logistic regressions.

    Block ``k`` (a row of ``y``, ``z``, ``loss``, ``p``; transposed views work
    and are updated in place) has logits ``z[k] = design @ params[k] +
    offset`` for its responses ``y[k]`` and a ``N(centre, 1 / prec)`` prior;
    ``z``, ``loss`` and ``p`` hold the current logits, losses and
    probabilities. A block whose objective would rise halves its step until it
    does not (or keeps its parameters after ``_MAX_HALVINGS`` halvings).

    Returns
    -------
    params : ndarray
        The updated parameters (``z``, ``loss`` and ``p`` are updated in place).
    hess : ndarray of shape (k, dim, dim)
        Each block's Hessian at the parameters it started from.
    """
    k, dim = params.shape
    f_old = loss.sum(axis=1) + 0.5 * (prec * (params - centre) ** 2).sum(axis=1)
    grad = (p - y) @ design + prec * (params - centre)
    outer = (design[:, :, None] * design[:, None, :]).reshape(len(design), dim * dim)
    hess = ((p * (1.0 - p)) @ outer).reshape(k, dim, dim) + np.diag(prec)
    step = np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
    scale = np.ones(k)
    new = params - step
    todo = slice(None)  # every block on the first try; then only those that got worse
    for _ in range(_MAX_HALVINGS):
        z_t = new[todo] @ design.T + offset
        loss_t, p_t = _loss_and_prob(z_t, y[todo])
        f_new = loss_t.sum(axis=1) + 0.5 * (prec * (new[todo] - centre) ** 2).sum(axis=1)
        z[todo], loss[todo], p[todo] = z_t, loss_t, p_t
        worse = f_new > f_old[todo] + 1e-12 * np.abs(f_old[todo])
        if not worse.any():
            return new, hess
        todo = np.arange(k)[todo][worse]
        scale[todo] *= 0.5
        new[todo] = params[todo] - scale[todo, None] * step[todo]
    new[todo] = params[todo]  # no decrease found: keep the old parameters
    z[todo] = new[todo] @ design.T + offset
    loss[todo], p[todo] = _loss_and_prob(z[todo], y[todo])
    return new, hess


def _initial_ability(y: np.ndarray, dim: int) -> np.ndarray:
    """Top principal directions of the models, the first rising with accuracy."""
    u, _, _ = np.linalg.svd(y - y.mean(axis=0), full_matrices=False)
    theta = np.zeros((len(y), dim))
    k = min(dim, u.shape[1])
    theta[:, :k] = u[:, :k]
    if np.corrcoef(theta[:, 0], y.mean(axis=1))[0, 1] < 0:
        theta[:, 0] *= -1
    return theta


def _standardize(theta, a, b):
    """Re-express the fit with abilities of mean 0 and identity covariance.

    ``theta = mu + t L^T`` with ``L L^T`` the abilities' covariance leaves
    every logit ``theta . a - b`` unchanged when ``a -> a L`` and
    ``b -> b - a . mu``. A Cholesky ``L`` (positive diagonal) keeps each
    ability axis pointing the same way from sweep to sweep.
    """
    mu = theta.mean(axis=0)
    cov = np.atleast_2d(np.cov(theta, rowvar=False, bias=True))
    jitter = 1e-10 * max(1.0, float(np.trace(cov)))  # a degenerate axis stays finite
    root = np.linalg.cholesky(cov + jitter * np.eye(len(cov)))
    theta = np.linalg.solve(root, (theta - mu).T).T
    return theta, a @ root, b - a @ mu


def _hyper_update(items: np.ndarray, prec: np.ndarray):
    """Question prior's mean and precision per component (paper 001, G.2's hyperpriors).

    MAP given the current estimates, the variance floored at ``_MIN_PRIOR_VAR``:
    plugging in point estimates (already shrunk by the prior) lets a component
    without support in the data shrink towards a constant, which prunes
    unneeded ability dimensions, and the floor keeps that from degenerating.
    """
    n = len(items)
    mean = prec * items.sum(axis=0) / (n * prec + 1.0 / _HYPER_MEAN_VAR)
    ss = ((items - mean) ** 2).sum(axis=0)
    var = (_HYPER_RATE + ss / 2.0) / (_HYPER_SHAPE - 1.0 + n / 2.0)
    return mean, 1.0 / np.maximum(var, _MIN_PRIOR_VAR)


def fit_irt(scores, *, dim: int = 5, hierarchical: bool = True,
            discrimination_sd: float = 2.0, difficulty_sd: float = 3.0,
            max_iter: int = 50, tol: float = 1e-5) -> IRTFit:
    """Fit a 2PL IRT model by penalized joint maximum likelihood (alternating Newton).

    See the module docstring for the model, the priors and the algorithm.

    Parameters
    ----------
    scores : array-like of shape (M, N)
        Complete scores in [0, 1] (binary, or fractional Bernoulli targets).
    dim : int, default 5
        Dimension ``d`` of abilities and discriminations.
    hierarchical : bool, default True
        Re-estimate the question prior's mean and variance every sweep;
        False keeps ``a ~ N(0, discrimination_sd^2)``, ``b ~ N(0, difficulty_sd^2)``.
    discrimination_sd, difficulty_sd : float, default 2, 3
        The question prior's standard deviations (the starting ones when
        ``hierarchical``).
    max_iter : int, default 50
        Most sweeps (one Newton step on the abilities, one on the questions).
    tol : float, default 1e-5
        Stop when a sweep changes the fitted probabilities by less than ``tol``
        on average.

    Returns
    -------
    IRTFit
    """
    y = check_source(scores, unit_interval=True)
    if int(dim) != dim or dim < 1:
        raise ValueError(f"dim must be an integer >= 1; got {dim!r}")
    for name, sd in (("discrimination_sd", discrimination_sd), ("difficulty_sd", difficulty_sd)):
        if not sd > 0:
            raise ValueError(f"{name} must be > 0; got {sd!r}")
    m, n_q = y.shape
    theta = _initial_ability(y, dim)
    rate = np.clip(y.mean(axis=0), 0.5 / m, 1 - 0.5 / m)
    items = np.zeros((n_q, dim + 1))  # columns: a_j (dim), b_j
    items[:, -1] = np.log((1 - rate) / rate)
    theta, _, _ = _standardize(theta, items[:, :dim], items[:, -1])
    centre, prec = _item_prior(0.0, (discrimination_sd, difficulty_sd), dim)
    centre, prec = centre.copy(), prec.copy()
    z = theta @ items[:, :dim].T - items[:, -1]  # (M, N)
    loss, p = _loss_and_prob(z, y)

    def item_step(items):
        # Transposed views: the questions are the blocks; z, loss, p update in place.
        return _newton_blocks(y.T, np.c_[theta, -np.ones(m)], 0.0, items, prec,
                              z.T, loss.T, p.T, centre)[0]

    items = item_step(items)
    objective, converged, sweep = np.inf, False, 0
    while sweep < max_iter and not converged:
        sweep += 1
        old_p = p.copy()
        theta, _ = _newton_blocks(y, items[:, :dim], -items[:, -1], theta, np.ones(dim),
                                  z, loss, p)
        theta, a, b = _standardize(theta, items[:, :dim], items[:, -1])  # logits unchanged
        items = np.c_[a, b]
        if hierarchical:
            centre, prec = _hyper_update(items, prec)
        items = item_step(items)
        # Probabilities, not parameters: rotations of the abilities leave them unchanged.
        converged = float(np.abs(p - old_p).mean()) <= tol
    for _ in range(5):  # polish: the questions returned are the MAP given these abilities
        old_items, items = items, item_step(items)
        if np.abs(items - old_items).max() <= 1e-10:
            break
    objective = float(loss.sum() + 0.5 * (((items - centre) ** 2 * prec).sum()
                                          + (theta**2).sum()))
    return IRTFit(ability=theta, discrimination=items[:, :dim].copy(),
                  difficulty=items[:, -1].copy(), prior_mean=centre.copy(),
                  prior_sd=prec**-0.5, objective=objective, n_iter=sweep,
                  converged=converged)


def estimate_ability(responses, discrimination, difficulty, *, prior_sd: float = 10.0,
                     max_iter: int = 100, tol: float = 1e-10):
    """MAP abilities of models from their scores on questions with known parameters.

    Parameters
    ----------
    responses : array-like of shape (R, n), values in [0, 1]
    discrimination : array-like of shape (n, d)
    difficulty : array-like of shape (n,)
    prior_sd : float, default 10.0
        Standard deviation of the ``N(0, prior_sd^2 I)`` ability prior.
    max_iter : int, default 100
    tol : float, default 1e-10
        Stop when no ability moves by more than ``tol``.

    Returns
    -------
    ability : ndarray of shape (R, d)
    covariance : ndarray of shape (R, d, d)
        Inverse of the negative log posterior's Hessian at the estimate
        (the Laplace approximation of the ability's posterior covariance).
    """
    y = np.atleast_2d(np.asarray(responses, dtype=float))
    a = np.atleast_2d(np.asarray(discrimination, dtype=float))
    b = np.asarray(difficulty, dtype=float)
    if a.shape[0] != y.shape[1] or b.shape != (y.shape[1],):
        raise ValueError(f"responses {y.shape}, discrimination {a.shape} and difficulty "
                         f"{b.shape} disagree on the number of questions")
    if not prior_sd > 0:
        raise ValueError(f"prior_sd must be > 0; got {prior_sd!r}")
    prec = np.full(a.shape[1], prior_sd**-2.0)
    theta = np.zeros((len(y), a.shape[1]))
    z = theta @ a.T - b
    loss, p = _loss_and_prob(z, y)
    for _ in range(max_iter):
        old = theta
        theta, _ = _newton_blocks(y, a, -b, theta, prec, z, loss, p)
        if np.abs(theta - old).max(initial=0.0) <= tol:
            break
    outer = (a[:, :, None] * a[:, None, :]).reshape(len(a), -1)
    hess = ((p * (1.0 - p)) @ outer).reshape(len(y), a.shape[1], a.shape[1]) + np.diag(prec)
    return theta, np.linalg.inv(hess)


def _fill_empty_clusters(points, labels, centres, k):
    """Give each empty cluster the point farthest from its centre (in a cluster of 2+)."""
    labels, centres = labels.copy(), centres.copy()
    for c in np.flatnonzero(np.bincount(labels, minlength=k) == 0):
        sizes = np.bincount(labels, minlength=k)
        far = np.linalg.norm(points - centres[labels], axis=1)
        far[sizes[labels] < 2] = -1.0
        j = int(np.argmax(far))
        labels[j], centres[c] = c, points[j]
    return labels, centres


def irt_anchor_points(fit: IRTFit, source, n: int, rng, *, n_init: int = 3):
    """Coreset from k-means on the question parameters ``(a_j, b_j)``.

    Identical source columns (which share their fitted parameters) are
    clustered once, weighted by their count, so the coreset holds distinct
    questions.

    Parameters
    ----------
    fit : IRTFit
        Fitted on ``source``.
    source : array-like of shape (M, N)
    n : int
        Coreset size, ``1 <= n < N``, at most the number of distinct questions.
    rng : numpy.random.Generator
        Seeds k-means.
    n_init : int, default 3
        k-means restarts.

    Returns
    -------
    selected : ndarray of int, shape (n,)
        For each cluster, the question nearest its centre; ascending.
    weights : ndarray of shape (n,)
        Share of the questions in each selected question's cluster (sums to 1).
    """
    x = check_source(source)
    if fit.discrimination.shape[0] != x.shape[1]:
        raise ValueError(f"fit has {fit.discrimination.shape[0]} questions; "
                         f"source has {x.shape[1]}")
    check_n(n, x.shape[1])
    _, first, counts = np.unique(x.T, axis=0, return_index=True, return_counts=True)
    if n > len(first):
        raise ValueError(f"n must be at most the number of distinct questions "
                         f"({len(first)}); got {n}")
    points = np.c_[fit.discrimination[first], fit.difficulty[first]]
    km = KMeans(n_clusters=n, n_init=n_init, random_state=int(rng.integers(2**31 - 1)))
    km.fit(points, sample_weight=counts)
    labels, centres = _fill_empty_clusters(points, km.labels_, km.cluster_centers_, n)
    dist = np.linalg.norm(points - centres[labels], axis=1)
    order = np.lexsort((dist, labels))  # by cluster, nearest to its centre first
    chosen = first[order[np.searchsorted(labels[order], np.arange(n))]]
    sizes = np.bincount(labels, weights=counts, minlength=n)
    keep = np.argsort(chosen)
    return chosen[keep], sizes[keep] / x.shape[1]


def pirt_prediction(fit: IRTFit, selected, x_selected, *, prior_sd: float = 10.0):
    """p-IRT prediction (paper 002, eq. 12) and its delta-method standard deviation.

    Parameters
    ----------
    fit : IRTFit
    selected : array-like of int, shape (n,)
        Coreset question indices.
    x_selected : array-like of shape (R, n)
        Target scores on ``selected``.
    prior_sd : float, default 10.0
        Ability prior, see :func:`estimate_ability`.

    Returns
    -------
    mean, sd : ndarray of shape (R,)
    """
    selected = np.asarray(selected)
    x = np.atleast_2d(np.asarray(x_selected, dtype=float))
    a, b = fit.discrimination, fit.difficulty
    theta, cov = estimate_ability(x, a[selected], b[selected], prior_sd=prior_sd)
    rest = np.ones(len(b), bool)
    rest[selected] = False
    a_rest, n_rest = a[rest], rest.sum()
    p = expit(theta @ a_rest.T - b[rest])  # (R, N - n)
    share = n_rest / len(b)
    mean = share * p.mean(axis=1) + (1 - share) * x.mean(axis=1)
    w = p * (1 - p)
    grad = w @ a_rest / n_rest  # d mean(p_rest) / d theta, (R, d)
    var_theta = np.einsum("ri,rij,rj->r", grad, cov, grad)
    var_unseen = w.sum(axis=1) / n_rest**2  # Bernoulli scores on the unseen questions
    return mean, share * np.sqrt(var_theta + var_unseen)


class PIRT(CoresetMethod):
    """p-IRT: IRT anchor points, ability from the coreset, eq. 12 of paper 002.

    Parameters
    ----------
    n_questions : int, optional
    random_state : int, numpy.random.Generator or None, default None
        See :class:`~benchsel.coreset._base.CoresetMethod`; the generator
        seeds k-means (and gp-IRT's held-out halves).
    dim : int, default 5
        IRT dimension.
    hierarchical : bool, default True
        Learned question prior (see :func:`fit_irt`).
    prior_sd : float, default 10.0
        Standard deviation of a target's ability prior, in units of the
        source models' ability spread.
    n_init : int, default 3
        k-means restarts for the coreset.
    max_iter : int, default 50
        Most sweeps of the IRT fit (see :func:`fit_irt`).
    """

    name = "p-irt"
    _unit_interval = True

    def __init__(self, n_questions: int | None = None, *, random_state=None, dim: int = 5,
                 hierarchical: bool = True, prior_sd: float = 10.0, n_init: int = 3,
                 max_iter: int = 50):
        super().__init__(n_questions, random_state=random_state)
        self.dim = dim
        self.max_iter = max_iter
        self.hierarchical = hierarchical
        self.prior_sd = prior_sd
        self.n_init = n_init

    def _fit_irt(self, x: np.ndarray) -> IRTFit:
        # p-irt, gp-irt and gp-irt++ fit the same model on the same sources.
        return reused("irt", lambda: fit_irt(x, dim=self.dim, hierarchical=self.hierarchical,
                                             max_iter=self.max_iter),
                      x, dim=self.dim, hierarchical=self.hierarchical, max_iter=self.max_iter)

    def _fit(self, source: np.ndarray, n: int, rng) -> None:
        self.total_questions_ = source.shape[1]
        self.irt_ = self._fit_irt(source)
        self.selected_, self.weights_ = irt_anchor_points(self.irt_, source, n, rng,
                                                          n_init=self.n_init)
        self._fit_predictor(source, rng)

    def _fit_predictor(self, source: np.ndarray, rng) -> None:
        pass

    def _predict(self, x: np.ndarray):
        return pirt_prediction(self.irt_, self.selected_, x, prior_sd=self.prior_sd)


class GPIRT(PIRT):
    """gp-IRT: p-IRT mixed with the cluster-weighted coreset mean (paper 002, eq. 13).

    ``lambda`` follows paper 001, G.1 (see the module docstring) and needs at
    least 4 source models (two halves of two). Parameters as :class:`PIRT`.
    """

    name = "gp-irt"

    def _fit(self, source: np.ndarray, n: int, rng) -> None:
        if source.shape[0] < 4:  # before the IRT fit
            raise ValueError("gp-irt needs at least 4 source models to choose lambda; "
                             f"got {source.shape[0]}")
        super()._fit(source, n, rng)

    def _fit_predictor(self, source: np.ndarray, rng) -> None:
        m, total = source.shape
        models = rng.permutation(m)
        train, valid = models[: m // 2], models[m // 2:]
        half = self._fit_irt(source[train])
        seen = np.sort(rng.choice(total, total // 2, replace=False))
        unseen = np.setdiff1d(np.arange(total), seen)
        theta, _ = estimate_ability(source[np.ix_(valid, seen)], half.discrimination[seen],
                                    half.difficulty[seen], prior_sd=self.prior_sd)
        predicted = half.probabilities(theta)[:, unseen].mean(axis=1)
        truth = source[np.ix_(valid, unseen)].mean(axis=1)
        self.bias_ = float(np.mean(np.abs(predicted - truth)))
        self.variance_ = float(source.var(axis=1).mean() / (4 * len(self.selected_)))
        total_sq = self.bias_**2 + self.variance_
        self.lambda_ = self.bias_**2 / total_sq if total_sq > 0 else 0.0

    def _predict(self, x: np.ndarray):
        pirt, pirt_sd = super()._predict(x)
        lam = self.lambda_
        weighted = x @ self.weights_
        mean = lam * weighted + (1 - lam) * pirt
        var_weighted = (self.weights_**2).sum() * weighted * (1 - weighted)
        sd = np.sqrt(lam**2 * var_weighted + (1 - lam) ** 2 * (pirt_sd**2 + self.bias_**2))
        return mean, sd


METHODS = (PIRT, GPIRT)
