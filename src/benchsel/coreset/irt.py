"""p-IRT and gp-IRT (Maia Polo et al. 2024, "tinyBenchmarks").

Both rest on a two-parameter logistic IRT model (paper 001, eq. 14)::

    P(s(i, j) = 1) = sigmoid(theta_i . a_j - b_j)

with model ability ``theta_i`` in R^d, question discrimination ``a_j`` in R^d
and difficulty ``b_j``. Scores in [0, 1] that are not 0/1 enter the same
Bernoulli likelihood as fractional targets.

Fit. Penalized (MAP) joint maximum likelihood on the source models, with
independent Gaussian priors ``theta ~ N(0, ability_sd^2 I)``,
``a ~ N(0, discrimination_sd^2 I)``, ``b ~ N(0, difficulty_sd^2)`` (the
papers fit a hierarchical-prior model by variational inference; fixed priors
keep the fit a deterministic convex-per-block problem). The optimizer
alternates exact Newton steps on the two blocks: given the abilities every
question is an independent (d+1)-parameter penalized logistic regression,
given the questions every model is an independent d-parameter one, so each
step is a few matrix products over the M x N matrix plus batched (d+1) x
(d+1) solves, with step halving per question / per model so the objective
never increases. This is ``O(M N d^2)`` per sweep and needs tens of sweeps;
paper 002's reference code spends 586 s (p-IRT) on 50,000 questions.
Dimension: ``dim=1`` by default, the best binary setting in paper 001's
ablation (G.3); larger ``dim`` is supported.

Coreset (paper 001 Table 1 and Sec. 2.4; tinyBenchmarks' "IRT anchor
points"): k-means on the fitted question parameters ``(a_j, b_j)``; each
cluster contributes the member nearest its centre, weighted by the
cluster's share of the questions.

Prediction. A target's ability is its MAP estimate from its coreset scores
with the item parameters fixed (the same prior as in the fit: with n = 50
binary answers an all-correct coreset has no finite maximum-likelihood
ability). Then (paper 002, eq. 12)::

    p-IRT  = (N - n)/N * mean_{j not in C} sigmoid(theta . a_j - b_j) + n/N * mean(s(f, C))
    gp-IRT = lambda * sum_{j in C} w_j s(f, j) + (1 - lambda) * p-IRT        (eq. 13)

with ``lambda = b^2 / (b^2 + v)`` (paper 001, G.1): ``v = sigma^2 / (4 n)``
with ``sigma^2`` the source models' mean per-model variance of the question
scores, and ``b`` the mean absolute error of the IRT prediction on held-out
models: an IRT model is fitted on a random half of the source models, and for
each model of the other half the ability estimated from a random half of the
questions predicts its mean score on the remaining half.

Error bars. p-IRT: the delta-method standard deviation of the predicted
mean from the ability's posterior covariance, plus the Bernoulli variance of
the unseen questions under the model; it ignores the error in the item
parameters and model misfit, so it is optimistic. gp-IRT: the error model
the heuristic itself assumes, ``sqrt(lambda^2 v + (1 - lambda)^2 b^2)``
(which equals ``sqrt(lambda v)``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit
from sklearn.cluster import KMeans

from ._base import check_n
from .anchor import check_scores, check_selected

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
]

_MAX_HALVINGS = 30


@dataclass(frozen=True)
class IRTFit:
    """A fitted 2PL IRT model.

    Attributes
    ----------
    ability : ndarray of shape (M, d)
    discrimination : ndarray of shape (N, d)
    difficulty : ndarray of shape (N,)
    objective : float
        Negative log posterior at the fit (up to a constant).
    n_iter : int
        Newton sweeps (one step on each block per sweep).
    converged : bool
        Whether the relative objective change fell below the tolerance.
    """

    ability: np.ndarray
    discrimination: np.ndarray
    difficulty: np.ndarray
    objective: float
    n_iter: int
    converged: bool

    def probabilities(self, ability=None) -> np.ndarray:
        """``P(correct)`` for every question, for ``ability`` (R, d) or the fitted models."""
        theta = self.ability if ability is None else np.atleast_2d(ability)
        return expit(theta @ self.discrimination.T - self.difficulty)


def _loss_and_prob(z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bernoulli negative log-likelihood per entry and ``sigmoid(z)``, from one exp."""
    e = np.exp(-np.abs(z))
    loss = np.maximum(z, 0.0) + np.log1p(e) - y * z
    p = np.where(z >= 0, 1.0, e) / (1.0 + e)
    return loss, p


def _precisions(dim: int, discrimination_sd: float, difficulty_sd: float) -> np.ndarray:
    return np.r_[np.full(dim, discrimination_sd**-2.0), difficulty_sd**-2.0]


def irt_objective(scores, ability, discrimination, difficulty, *, ability_sd: float = 1.0,
                  discrimination_sd: float = 2.0, difficulty_sd: float = 3.0) -> float:
    """Negative log posterior of the 2PL model (see the module docstring), up to a constant.

    Parameters
    ----------
    scores : array-like of shape (M, N), values in [0, 1]
    ability : array-like of shape (M, d)
    discrimination : array-like of shape (N, d)
    difficulty : array-like of shape (N,)
    ability_sd, discrimination_sd, difficulty_sd : float
        Prior standard deviations.
    """
    y = np.asarray(scores, dtype=float)
    theta, a, b = (np.asarray(v, dtype=float) for v in (ability, discrimination, difficulty))
    loss, _ = _loss_and_prob(theta @ a.T - b, y)
    return float(loss.sum() + 0.5 * ((theta**2).sum() / ability_sd**2
                                     + (a**2).sum() / discrimination_sd**2
                                     + (b**2).sum() / difficulty_sd**2))


def irt_gradient(scores, ability, discrimination, difficulty, *, ability_sd: float = 1.0,
                 discrimination_sd: float = 2.0, difficulty_sd: float = 3.0):
    """Gradient of :func:`irt_objective`.

    Returns
    -------
    (d_ability, d_discrimination, d_difficulty) : tuple of ndarray
        Shapes (M, d), (N, d), (N,).
    """
    y = np.asarray(scores, dtype=float)
    theta, a, b = (np.asarray(v, dtype=float) for v in (ability, discrimination, difficulty))
    r = expit(theta @ a.T - b) - y
    return (r @ a + theta / ability_sd**2,
            r.T @ theta + a / discrimination_sd**2,
            -r.sum(axis=0) + b / difficulty_sd**2)


def _newton_blocks(y, design, offset, params, prec, z, loss, p):
    """One damped Newton step for independent penalized logistic regressions.

    Block ``k`` (a row of ``y``, ``z``, ``loss``, ``p``; transposed views work
    and are updated in place) has logits ``z[k] = design @ params[k] +
    offset`` for its responses ``y[k]`` and a Gaussian prior with precisions
    ``prec``; ``z``, ``loss`` and ``p`` hold the current logits, losses and
    probabilities. A block whose objective would rise halves its step until it
    does not (or keeps its parameters after ``_MAX_HALVINGS`` halvings).

    Returns
    -------
    ndarray : the updated ``params``; ``z``, ``loss`` and ``p`` are updated in place.
    """
    k, dim = params.shape
    f_old = loss.sum(axis=1) + 0.5 * (prec * params**2).sum(axis=1)
    grad = (p - y) @ design + prec * params
    outer = (design[:, :, None] * design[:, None, :]).reshape(len(design), dim * dim)
    hess = ((p * (1.0 - p)) @ outer).reshape(k, dim, dim) + np.diag(prec)
    step = np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
    scale = np.ones(k)
    new = params - step
    todo = slice(None)  # every block on the first try; then only those that got worse
    for _ in range(_MAX_HALVINGS):
        z_t = new[todo] @ design.T + offset
        loss_t, p_t = _loss_and_prob(z_t, y[todo])
        f_new = loss_t.sum(axis=1) + 0.5 * (prec * new[todo] ** 2).sum(axis=1)
        z[todo], loss[todo], p[todo] = z_t, loss_t, p_t
        worse = f_new > f_old[todo] + 1e-12 * np.abs(f_old[todo])
        if not worse.any():
            return new
        todo = np.arange(k)[todo][worse]
        scale[todo] *= 0.5
        new[todo] = params[todo] - scale[todo, None] * step[todo]
    new[todo] = params[todo]  # no decrease found: keep the old parameters
    z[todo] = new[todo] @ design.T + offset
    loss[todo], p[todo] = _loss_and_prob(z[todo], y[todo])
    return new


def _initial_ability(y: np.ndarray, dim: int) -> np.ndarray:
    """Top principal directions of the models, the first rising with accuracy."""
    centred = y - y.mean(axis=0)
    u, _, _ = np.linalg.svd(centred, full_matrices=False)
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
    ``b -> b - a . mu``; this pins the location, scale and correlation of the
    abilities, which the likelihood cannot see.
    """
    mu = theta.mean(axis=0)
    cov = np.atleast_2d(np.cov(theta, rowvar=False, bias=True))
    evals, evecs = np.linalg.eigh(cov)
    evals = np.maximum(evals, 1e-12 * max(1.0, evals.max()))
    root = evecs * np.sqrt(evals)  # root @ root.T == cov
    theta = np.linalg.solve(root, (theta - mu).T).T
    return theta, a @ root, b - a @ mu


def fit_irt(scores, *, dim: int = 1, discrimination_sd: float = 2.0,
            difficulty_sd: float = 3.0, max_iter: int = 300, tol: float = 1e-8) -> IRTFit:
    """Fit a 2PL IRT model by penalized joint maximum likelihood (alternating Newton).

    The abilities get a ``N(0, I)`` prior and, after every sweep, the fit is
    re-expressed so that they have mean 0 and identity covariance (the usual
    IRT identification; the likelihood cannot tell), so the item priors are in
    units of the source models' ability spread whatever ``N / M``.

    Parameters
    ----------
    scores : array-like of shape (M, N)
        Complete scores in [0, 1] (binary, or fractional Bernoulli targets).
    dim : int, default 1
        Dimension ``d`` of abilities and discriminations.
    discrimination_sd, difficulty_sd : float, default 2, 3
        Prior standard deviations of ``a`` and ``b``.
    max_iter : int, default 300
        Most sweeps (one Newton step on the questions, one on the models).
    tol : float, default 1e-8
        Stop when a sweep changes the objective by less than ``tol`` times its size.

    Returns
    -------
    IRTFit
    """
    y = check_scores(scores, unit_interval=True)
    if int(dim) != dim or dim < 1:
        raise ValueError(f"dim must be an integer >= 1; got {dim!r}")
    for name, sd in (("discrimination_sd", discrimination_sd), ("difficulty_sd", difficulty_sd)):
        if not sd > 0:
            raise ValueError(f"{name} must be > 0; got {sd!r}")
    m, n_q = y.shape
    theta = _initial_ability(y, dim)
    mean = np.clip(y.mean(axis=0), 0.5 / m, 1 - 0.5 / m)
    items = np.zeros((n_q, dim + 1))  # columns: a_j (dim), b_j
    items[:, -1] = np.log((1 - mean) / mean)
    theta, _, _ = _standardize(theta, items[:, :dim], items[:, -1])
    item_prec = _precisions(dim, discrimination_sd, difficulty_sd)
    model_prec = np.ones(dim)
    z = theta @ items[:, :dim].T - items[:, -1]  # (M, N)
    loss, p = _loss_and_prob(z, y)
    objective, converged, sweep = np.inf, False, 0
    for sweep in range(1, max_iter + 1):
        # Transposed views: questions are the blocks; z, loss, p update in place.
        items = _newton_blocks(y.T, np.c_[theta, -np.ones(m)], 0.0, items, item_prec,
                               z.T, loss.T, p.T)
        a, b = items[:, :dim], items[:, -1]
        theta = _newton_blocks(y, a, -b, theta, model_prec, z, loss, p)
        theta, a, b = _standardize(theta, a, b)
        items = np.c_[a, b]
        new = float(loss.sum() + 0.5 * ((items**2 * item_prec).sum() + (theta**2).sum()))
        if abs(objective - new) <= tol * abs(new):
            objective, converged = new, True
            break
        objective = new
    return IRTFit(ability=theta, discrimination=items[:, :dim].copy(),
                  difficulty=items[:, -1].copy(), objective=objective, n_iter=sweep,
                  converged=converged)


def estimate_ability(responses, discrimination, difficulty, *, prior_sd: float = 1.0,
                     max_iter: int = 100, tol: float = 1e-10):
    """MAP abilities of models from their scores on questions with known parameters.

    Parameters
    ----------
    responses : array-like of shape (R, n), values in [0, 1]
    discrimination : array-like of shape (n, d)
    difficulty : array-like of shape (n,)
    prior_sd : float, default 1.0
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
    prec = np.full(a.shape[1], prior_sd**-2.0)
    theta = np.zeros((len(y), a.shape[1]))
    z = theta @ a.T - b
    loss, p = _loss_and_prob(z, y)
    for _ in range(max_iter):
        old = theta
        theta = _newton_blocks(y, a, -b, theta, prec, z, loss, p)
        if np.abs(theta - old).max(initial=0.0) <= tol:
            break
    outer = (a[:, :, None] * a[:, None, :]).reshape(len(a), -1)
    hess = ((p * (1.0 - p)) @ outer).reshape(len(y), a.shape[1], a.shape[1]) + np.diag(prec)
    return theta, np.linalg.inv(hess)


def _empty_clusters_filled(points, labels, centres, k):
    """Move the member farthest from its centre into each empty cluster."""
    labels = labels.copy()
    for c in np.flatnonzero(np.bincount(labels, minlength=k) == 0):
        sizes = np.bincount(labels, minlength=k)
        far = np.linalg.norm(points - centres[labels], axis=1)
        far[sizes[labels] < 2] = -1.0
        j = int(np.argmax(far))
        labels[j] = c
        centres[c] = points[j]
    return labels


def irt_anchor_points(fit: IRTFit, source, n: int, rng, *, n_init: int = 3):
    """Coreset from k-means on the question parameters ``(a_j, b_j)``.

    Identical source columns are clustered once, weighted by their count.

    Returns
    -------
    selected : ndarray of int, shape (n,)
        For each cluster, the question nearest its centre; ascending.
    weights : ndarray of shape (n,)
        Share of the questions in each selected question's cluster.
    """
    x = check_scores(source)
    check_n(n, x.shape[1])
    _, first, inverse, counts = np.unique(x.T, axis=0, return_index=True,
                                          return_inverse=True, return_counts=True)
    if n > len(first):
        raise ValueError(f"n must be at most the number of distinct questions "
                         f"({len(first)}); got {n}")
    points = np.c_[fit.discrimination[first], fit.difficulty[first]]
    km = KMeans(n_clusters=n, n_init=n_init, random_state=int(rng.integers(2**31 - 1)))
    km.fit(points, sample_weight=counts)
    centres = km.cluster_centers_.copy()
    labels = _empty_clusters_filled(points, km.labels_, centres, n)
    dist = np.linalg.norm(points - centres[labels], axis=1)
    order = np.lexsort((dist, labels))  # by cluster, nearest to the centre first
    starts = np.searchsorted(labels[order], np.arange(n))
    chosen = first[order[starts]]
    sizes = np.bincount(labels, weights=counts, minlength=n)
    keep = np.argsort(chosen)
    return chosen[keep], sizes[keep] / x.shape[1]


def _pirt_mean(fit_disc, fit_diff, selected, x, prior_sd, n_questions):
    """p-IRT prediction (paper 002, eq. 12) and its delta-method standard deviation."""
    theta, cov = estimate_ability(x, fit_disc[selected], fit_diff[selected], prior_sd=prior_sd)
    rest = np.ones(n_questions, bool)
    rest[selected] = False
    a_rest, b_rest = fit_disc[rest], fit_diff[rest]
    p = expit(theta @ a_rest.T - b_rest)  # (R, N - n)
    share = rest.sum() / n_questions
    mean = share * p.mean(axis=1) + (1 - share) * x.mean(axis=1)
    w = p * (1 - p)
    grad = w @ a_rest / rest.sum()  # d mean(p_rest) / d theta, (R, d)
    var_theta = np.einsum("ri,rij,rj->r", grad, cov, grad)
    var_unseen = w.sum(axis=1) / rest.sum() ** 2
    return mean, share * np.sqrt(var_theta + var_unseen)


class PIRT:
    """p-IRT: IRT anchor points, ability from the coreset, eq. 12 of paper 002.

    Parameters
    ----------
    dim : int, default 1
        IRT dimension.
    discrimination_sd, difficulty_sd : float, default 2, 3
        Item prior standard deviations (see :func:`fit_irt`).
    prior_sd : float, default 1.0
        Standard deviation of a target's ability prior, in units of the
        source models' ability spread (the fit standardizes it to 1).
    n_init : int, default 3
        k-means restarts for the coreset.
    """

    name = "p-irt"

    def __init__(self, *, dim: int = 1, discrimination_sd: float = 2.0,
                 difficulty_sd: float = 3.0, prior_sd: float = 1.0, n_init: int = 3):
        self.dim = dim
        self.prior_sd = prior_sd
        self.discrimination_sd = discrimination_sd
        self.difficulty_sd = difficulty_sd
        self.n_init = n_init

    def _fit_irt(self, x: np.ndarray) -> IRTFit:
        return fit_irt(x, dim=self.dim, discrimination_sd=self.discrimination_sd,
                       difficulty_sd=self.difficulty_sd)

    def fit(self, source, n: int, rng):
        x = check_scores(source, unit_interval=True)
        self.n_questions = x.shape[1]
        check_n(n, self.n_questions)
        self.irt_ = self._fit_irt(x)
        self.selected_, self.weights_ = irt_anchor_points(self.irt_, x, n, rng,
                                                          n_init=self.n_init)
        self._fit(x, rng)
        return self

    def _fit(self, source: np.ndarray, rng) -> None:
        pass

    def _pirt(self, x_selected):
        x = check_selected(x_selected, len(self.selected_), unit_interval=True)
        return x, _pirt_mean(self.irt_.discrimination, self.irt_.difficulty, self.selected_,
                             x, self.prior_sd, self.n_questions)

    def predict(self, x_selected):
        _, (mean, sd) = self._pirt(x_selected)
        return mean, sd


class GPIRT(PIRT):
    """gp-IRT: p-IRT mixed with the cluster-weighted coreset mean (paper 002, eq. 13).

    ``lambda`` follows paper 001, G.1 (see the module docstring); it needs at
    least 4 source models (two halves of two).

    Parameters
    ----------
    As :class:`PIRT`.
    """

    name = "gp-irt"

    def _fit(self, source: np.ndarray, rng) -> None:
        m, total = source.shape
        if m < 4:
            raise ValueError(f"gp-irt needs at least 4 source models to choose lambda; got {m}")
        n = len(self.selected_)
        models = rng.permutation(m)
        train, valid = models[: m // 2], models[m // 2:]
        half_fit = self._fit_irt(source[train])
        seen = np.sort(rng.choice(total, total // 2, replace=False))
        unseen = np.setdiff1d(np.arange(total), seen)
        theta, _ = estimate_ability(source[np.ix_(valid, seen)], half_fit.discrimination[seen],
                                    half_fit.difficulty[seen], prior_sd=self.prior_sd)
        predicted = half_fit.probabilities(theta)[:, unseen].mean(axis=1)
        self.bias_ = float(np.mean(np.abs(predicted - source[np.ix_(valid, unseen)].mean(1))))
        self.variance_ = float(source.var(axis=1).mean() / (4 * n))
        total_sq = self.bias_**2 + self.variance_
        self.lambda_ = self.bias_**2 / total_sq if total_sq > 0 else 0.0

    def predict(self, x_selected):
        x, (pirt, _) = self._pirt(x_selected)
        lam = self.lambda_
        mean = lam * (x @ self.weights_) + (1 - lam) * pirt
        sd = np.sqrt(lam**2 * self.variance_ + (1 - lam) ** 2 * self.bias_**2)
        return mean, np.full(mean.shape, sd)


METHODS = (PIRT, GPIRT)
