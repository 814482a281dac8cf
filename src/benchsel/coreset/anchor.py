"""Anchor points (Vivek et al. 2023): k-medoids medoids of the question vectors as the coreset.

Each question is described by its vector of scores across the source models
(a column of the M x N source matrix). Paper 002 (Zhang et al. 2025, App. A.2,
eqs. 9-11) describes two predictors on the same coreset:

* ``anchor-points-weighted`` -- the medoids of a k-medoids clustering are the
  coreset ``C``; a target's predicted mean is ``s(f, C)^T w`` with ``w`` the
  normalized cluster sizes (eq. 9).
* ``anchor-points-predictor`` -- the same coreset; a linear regression ``g``
  from the scores on ``C`` to the scores on the other ``N - n`` questions is
  fitted on the source models (eq. 11), and the full-benchmark mean combines
  the predicted rest with the observed coreset as in eq. 12:
  ``((N - n) mean(g[s(f, C)]) + n mean(s(f, C))) / N``.

Distance. Vivek et al. (and paper 002's reference code) cluster with the
correlation dissimilarity ``1 - corr(q_i, q_j)`` between question vectors;
paper 001 describes clustering the raw vectors ``q_i`` in Euclidean space.
Both are offered (``metric``); the default is ``"correlation"``, as in the
papers' code. A question every source model scores the same has no
correlation with anything: its dissimilarity to every other question is 1
(the reference code sets those NaN correlations to 0).

Scaling. A full N x N dissimilarity matrix is out of reach for N = 50,000
(20 GB), so :func:`kmedoids` never forms it:

1. identical question vectors are merged first and weighted by their count
   (so two medoids can never be the same vector, and benchmarks with many
   all-right / all-wrong questions shrink);
2. up to ``sample_size`` (2,000) distinct questions: weighted PAM on the dense
   matrix -- FasterPAM-style eager swaps, each candidate pricing all ``k``
   swaps from one column (FastPAM1), from weighted k-means++ seeds, best of
   ``n_init``. This is the algorithm of the papers' reference code;
3. more: CLARA -- the same PAM on ``n_init`` uniform samples of
   ``sample_size`` distinct questions (weighted by count), each medoid set
   scored on all questions (``O(N k M)``, one matrix product in blocks); the
   best is refined on all questions by alternating assignment with a
   per-cluster medoid update (each member's weighted dissimilarity sum to its
   cluster, ``O(s^2 M)`` for ``s`` members; a cluster larger than
   ``max_candidates`` tries only the ``max_candidates`` members nearest its
   mean). Neither step raises the objective, so it stops when the medoids
   repeat.

Memory stays at ``sample_size^2`` floats plus fixed-size blocks. Alternating
k-medoids alone was tried first and rejected: with question vectors of ~100
noisy coordinates every k-means++ seed is already the medoid of its own
Voronoi cell, so it never moves. On a 110 x 50,000 binary matrix the whole fit
takes about 1 s on two cores (paper 002's reference code: 84 s, dense FasterPAM).

Error bars. ``anchor-points-weighted``: the root-mean-square error of the
weighted estimate on the source models, whose true means are known (the
weights are cluster sizes, not fitted to those means, but the coreset was
chosen on the same models, so this leans optimistic).
``anchor-points-predictor``: the ridge's leave-one-out error, scaled by
``(N - n) / N`` (the coreset part is observed exactly).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._reuse import reused
from .._ridge import ridge_loo
from ._base import ALPHAS, CoresetMethod, check_n, check_source

__all__ = [
    "METHODS",
    "METRICS",
    "AnchorPointsPredictor",
    "AnchorPointsWeighted",
    "KMedoidsResult",
    "anchor_points",
    "dissimilarity",
    "kmedoids",
]

METRICS = ("correlation", "euclidean")
_BLOCK = 1 << 22  # entries per dissimilarity block (32 MB of float64)


def _check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}; got {metric!r}")


def _features(points: np.ndarray, metric: str) -> np.ndarray:
    """Rows in the space where the dissimilarity is a function of dot products."""
    x = np.asarray(points, dtype=float)
    if metric == "euclidean":
        return x.copy()
    x = x - x.mean(axis=1, keepdims=True)
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    # Rounding leaves tiny residues on constant rows; treat them as constant.
    floor = 1e-12 * np.sqrt(x.shape[1]) * max(1.0, float(np.abs(points).max(initial=0.0)))
    return np.divide(x, norm, out=np.zeros_like(x), where=norm > floor)


def _block_dissimilarity(fa, fb, sqa, sqb, metric: str) -> np.ndarray:
    gram = fa @ fb.T
    if metric == "correlation":
        return np.clip(1.0 - gram, 0.0, 2.0)
    return np.sqrt(np.maximum(sqa[:, None] + sqb[None, :] - 2.0 * gram, 0.0))


def dissimilarity(a, b, metric: str = "correlation") -> np.ndarray:
    """Dissimilarities between the rows of ``a`` and of ``b`` (dense; for small inputs).

    ``"correlation"``: ``1 - Pearson correlation`` (1 against a constant row);
    ``"euclidean"``: the Euclidean distance.

    Returns
    -------
    ndarray of shape (len(a), len(b))
    """
    _check_metric(metric)
    fa, fb = _features(np.atleast_2d(a), metric), _features(np.atleast_2d(b), metric)
    return _block_dissimilarity(fa, fb, (fa**2).sum(1), (fb**2).sum(1), metric)


@dataclass(frozen=True)
class KMedoidsResult:
    """Outcome of :func:`kmedoids`.

    Attributes
    ----------
    medoids : ndarray of int, shape (k,)
        Row index of each cluster's medoid (the first of identical rows).
    labels : ndarray of int, shape (n_rows,)
        Cluster of every row; ``medoids[labels[i]]`` is row ``i``'s medoid.
    objective : float
        Weighted sum over rows of the dissimilarity to their medoid.
    n_iter : int
        PAM swaps of the best start, plus (CLARA) refinement rounds on all rows.
    """

    medoids: np.ndarray
    labels: np.ndarray
    objective: float
    n_iter: int


class _Space:
    """Deduplicated rows with their weights and squared norms; dissimilarity blocks."""

    def __init__(self, feats: np.ndarray, weights: np.ndarray, metric: str):
        self.f = feats
        self.w = weights
        self.sq = (feats**2).sum(axis=1)
        self.metric = metric

    def to(self, rows: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Dissimilarities of rows ``rows`` to rows ``idx``, shape (len(rows), len(idx))."""
        return _block_dissimilarity(self.f[rows], self.f[idx], self.sq[rows], self.sq[idx],
                                    self.metric)

    def to_all(self, idx: np.ndarray) -> np.ndarray:
        """Dissimilarities of every row to rows ``idx``, computed in row blocks."""
        u, out = len(self.f), np.empty((len(self.f), len(idx)))
        step = max(1, _BLOCK // max(1, len(idx)))
        for lo in range(0, u, step):
            rows = np.arange(lo, min(u, lo + step))
            out[rows] = self.to(rows, idx)
        return out

    def dense(self, rows: np.ndarray) -> np.ndarray:
        """Full dissimilarity matrix among ``rows``, with an exact zero diagonal.

        Except, under the correlation metric, for a constant row: it has no
        correlation with anything, itself included, so its dissimilarity to
        itself is 1 as to every other row (the reference code's NaN
        correlations set to 0). As a medoid it would otherwise cover itself
        at no cost: on HELM MMLU's frontier split k-medoids spent a medoid on
        the one question every source model missed, one swap (0.89) above
        the objective the reference code reaches.
        """
        d = self.to(rows, rows)
        diagonal = np.zeros(len(rows))
        if self.metric == "correlation":
            diagonal[self.sq[rows] == 0] = 1.0
        d[np.arange(len(rows)), np.arange(len(rows))] = diagonal
        return d


def _seed(dist_to, weights: np.ndarray, k: int, rng) -> np.ndarray:
    """Weighted k-means++ seeding; ``dist_to(i)`` gives every row's dissimilarity to row i."""
    u = len(weights)
    first = int(rng.choice(u, p=weights / weights.sum()))
    chosen, closest = [first], dist_to(first)
    taken = np.zeros(u, bool)
    taken[first] = True
    for _ in range(1, k):
        prob = np.where(taken, 0.0, weights * closest**2)
        total = prob.sum()
        if total > 0:
            new = int(rng.choice(u, p=prob / total))
        else:  # every free row coincides with a seed (possible only up to rounding)
            new = int(rng.choice(np.flatnonzero(~taken)))
        chosen.append(new)
        taken[new] = True
        closest = np.minimum(closest, dist_to(new))
    return np.array(chosen)


def _nearest_two(d_med: np.ndarray, medoids: np.ndarray):
    """Nearest medoid (label), its dissimilarity and the second-nearest's, per row."""
    rows = np.arange(len(d_med))
    own = d_med[medoids, np.arange(len(medoids))].copy()  # 0, or 1 for a constant row
    d_med = d_med.copy()
    d_med[medoids, np.arange(len(medoids))] = -1.0  # a medoid is in its own cluster, even on ties
    labels = np.argmin(d_med, axis=1)
    nearest = np.maximum(d_med[rows, labels], 0.0)
    nearest[medoids] = own
    if d_med.shape[1] == 1:  # no second medoid: removing the only one costs "infinity"
        return labels, nearest, np.full(len(rows), np.inf)
    d_med[rows, labels] = np.inf
    return labels, nearest, np.maximum(d_med.min(axis=1), 0.0)


def _pam(d: np.ndarray, w: np.ndarray, medoids: np.ndarray) -> tuple[np.ndarray, int]:
    """Weighted PAM swap search on a dense matrix, taking each improving swap at once.

    For a candidate ``c`` replacing medoid ``i``, a row ``o`` of cluster ``i``
    moves to ``min(d_oc, ds_o)`` and any other row to ``min(d_oc, dn_o)``
    (``dn``/``ds``: nearest / second-nearest medoid). So the change of the
    objective is ``sum_o w_o min(d_oc - dn_o, 0)`` over all rows plus
    ``sum_o w_o (clip(d_oc, dn_o, ds_o) - dn_o)`` over the rows of cluster
    ``i``: one column of ``d`` prices all ``k`` swaps for ``c`` (FastPAM1's
    trick; eager swaps as in FasterPAM). Stops after a full pass over the rows
    without an improvement. Returns the medoids and the number of swaps.
    """
    u, k = len(d), len(medoids)
    medoids = medoids.copy()
    is_med = np.zeros(u, bool)
    is_med[medoids] = True
    labels, dn, ds = _nearest_two(d[:, medoids], medoids)
    tol = 1e-12 * max(1.0, float(w @ dn))
    c, since, swaps = 0, 0, 0
    while since < u:
        if not is_med[c]:
            col = d[c]
            gain = np.minimum(col - dn, 0.0)
            shared = w @ gain
            own = np.bincount(labels, weights=w * (np.clip(col, dn, ds) - dn), minlength=k)
            i = int(np.argmin(own))
            if shared + own[i] < -tol:
                is_med[medoids[i]] = False
                medoids[i], is_med[c] = c, True
                labels, dn, ds = _nearest_two(d[:, medoids], medoids)
                since, swaps = 0, swaps + 1
        c, since = (c + 1) % u, since + 1
    return medoids, swaps


def _assign(space: _Space, medoids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    labels, cost, _ = _nearest_two(space.to_all(medoids), medoids)
    return labels, cost


def _best_member(space: _Space, members: np.ndarray, current: int,
                 max_candidates: int) -> int:
    """The member minimizing the weighted dissimilarity sum to the cluster."""
    if len(members) <= max_candidates:
        cand_pos = np.arange(len(members))
    else:
        w = space.w[members]
        centre = (w @ space.f[members]) / w.sum()
        d = _block_dissimilarity(space.f[members], centre[None, :], space.sq[members],
                                 np.array([centre @ centre]), space.metric)[:, 0]
        cand_pos = np.argpartition(d, max_candidates - 1)[:max_candidates]
        cand_pos = np.union1d(cand_pos, np.flatnonzero(members == current))
    w = space.w[members]
    costs = np.empty(len(cand_pos))
    step = max(1, _BLOCK // len(members))
    for lo in range(0, len(cand_pos), step):
        pos = cand_pos[lo:lo + step]
        block = space.to(members[pos], members)
        block[np.arange(len(pos)), pos] = 0.0  # exact self-dissimilarity
        costs[lo:lo + step] = block @ w
    cur = np.flatnonzero(members[cand_pos] == current)[0]
    best = int(np.argmin(costs))
    # Keep the current medoid unless strictly better: guarantees termination.
    if costs[best] < costs[cur] - 1e-12 * max(1.0, abs(costs[cur])):
        return int(members[cand_pos[best]])
    return current


def _alternate(space: _Space, medoids: np.ndarray, max_iter: int, max_candidates: int):
    """Alternate assignment and per-cluster medoid update until the medoids repeat."""
    rounds = 0
    while rounds < max_iter:
        rounds += 1
        labels, _ = _assign(space, medoids)
        order = np.argsort(labels, kind="stable")
        bounds = np.searchsorted(labels[order], np.arange(len(medoids) + 1))
        new = np.array([
            _best_member(space, order[bounds[c]:bounds[c + 1]], medoids[c], max_candidates)
            for c in range(len(medoids))
        ])
        if np.array_equal(new, medoids):
            break
        medoids = new
    labels, cost = _assign(space, medoids)
    return medoids, labels, float(space.w @ cost), rounds


def _pam_seeded(d: np.ndarray, w: np.ndarray, k: int, rng) -> tuple[np.ndarray, int]:
    return _pam(d, w, _seed(lambda i: d[:, i], w, k, rng))


def _pam_dense(space: _Space, k: int, rng, n_init: int):
    """PAM on the dense matrix of all distinct rows, best of ``n_init`` seedings."""
    d = space.dense(np.arange(len(space.w)))
    best = None
    for _ in range(n_init):
        medoids, swaps = _pam_seeded(d, space.w, k, rng)
        labels, cost, _ = _nearest_two(d[:, medoids], medoids)
        objective = float(space.w @ cost)
        if best is None or objective < best[2]:
            best = (medoids, labels, objective, swaps)
    return best


def _clara(space: _Space, k: int, rng, n_init: int, sample_size: int, max_iter: int,
           max_candidates: int):
    """PAM on uniform samples of the distinct rows (weighted), best on all rows, polished."""
    best = None
    for _ in range(n_init):
        sample = np.sort(rng.choice(len(space.w), sample_size, replace=False))
        picked, swaps = _pam_seeded(space.dense(sample), space.w[sample], k, rng)
        medoids = sample[picked]
        _, cost = _assign(space, medoids)
        objective = float(space.w @ cost)
        if best is None or objective < best[1]:
            best = (medoids, objective, swaps)
    medoids, labels, objective, rounds = _alternate(space, best[0], max_iter, max_candidates)
    return medoids, labels, objective, best[2] + rounds


def kmedoids(points, n_clusters: int, *, metric: str = "correlation", weights=None,
             rng=None, n_init: int = 3, sample_size: int = 2000, max_iter: int = 100,
             max_candidates: int = 500) -> KMedoidsResult:
    """Weighted k-medoids of the rows of ``points`` without a full dissimilarity matrix.

    PAM swaps on the dense matrix when there are at most ``sample_size``
    distinct rows; otherwise CLARA (PAM on samples, then alternating
    refinement on all rows). See the module docstring.

    Parameters
    ----------
    points : array-like of shape (n_rows, dim)
        One row per object (for anchor points: one question's scores across
        the source models).
    n_clusters : int
        Number of medoids, ``1 <= n_clusters <=`` number of distinct rows
        (distinct under ``metric``: for ``"correlation"`` every constant row
        is the same point).
    metric : {"correlation", "euclidean"}, default "correlation"
    weights : array-like of shape (n_rows,), optional
        Positive row weights (default 1).
    rng : numpy.random.Generator, optional
    n_init : int, default 3
        Seedings (dense) or samples (CLARA) tried; the lowest objective wins.
    sample_size : int, default 2000
        Most distinct rows clustered with a dense matrix (``sample_size^2``
        floats), and the CLARA sample size above that.
    max_iter : int, default 100
        Most alternating rounds after CLARA.
    max_candidates : int, default 500
        In the alternating rounds, the largest cluster whose every member is
        tried as its medoid; larger clusters try the ``max_candidates``
        members nearest their mean.

    Returns
    -------
    KMedoidsResult
    """
    _check_metric(metric)
    x = np.asarray(points, dtype=float)
    if x.ndim != 2 or not np.isfinite(x).all():
        raise ValueError(f"points must be a finite 2-D array; got shape {x.shape}")
    w = np.ones(len(x)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (len(x),) or not np.all(w > 0):
        raise ValueError("weights must be positive, one per row")
    for name, value in (("n_init", n_init), ("sample_size", sample_size),
                        ("max_iter", max_iter), ("max_candidates", max_candidates)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be an integer >= 1; got {value!r}")
    rng = np.random.default_rng() if rng is None else rng
    feats = _features(x, metric)
    uniq, first, inverse = np.unique(feats, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if not 1 <= n_clusters <= len(uniq):
        raise ValueError(f"n_clusters must be in [1, {len(uniq)}] (the number of distinct "
                         f"rows under the {metric} metric); got {n_clusters}")
    space = _Space(uniq, np.bincount(inverse, weights=w, minlength=len(uniq)), metric)
    if len(uniq) <= max(sample_size, n_clusters):
        medoids, labels, objective, n_iter = _pam_dense(space, n_clusters, rng, n_init)
    else:
        medoids, labels, objective, n_iter = _clara(
            space, n_clusters, rng, n_init, max(sample_size, 2 * n_clusters), max_iter,
            max_candidates)
    return KMedoidsResult(medoids=first[medoids], labels=labels[inverse],
                          objective=objective, n_iter=n_iter)


def anchor_points(source, n: int, *, metric: str = "correlation", rng=None,
                  n_init: int = 3, max_candidates: int = 500):
    """Anchor-point coreset: k-medoids medoids of the questions and their cluster weights.

    Parameters
    ----------
    source : array-like of shape (M, N)
        Source models' complete scores.
    n : int
        Coreset size, ``1 <= n < N`` and at most the number of distinct questions.
    metric, rng, n_init, max_candidates
        As in :func:`kmedoids`.

    Returns
    -------
    selected : ndarray of int, shape (n,)
        Medoid question indices, ascending.
    weights : ndarray of shape (n,)
        Fraction of the questions in each medoid's cluster (sums to 1).
    result : KMedoidsResult
    """
    x = check_source(source)
    check_n(n, x.shape[1])
    # The anchor methods and their refits cluster the same sources alike (same rng).
    result = reused("kmedoids", lambda: kmedoids(x.T, n, metric=metric, rng=rng, n_init=n_init,
                                                 max_candidates=max_candidates),
                    x, rng=rng, n=n, metric=metric, n_init=n_init,
                    max_candidates=max_candidates)
    order = np.argsort(result.medoids)
    sizes = np.bincount(result.labels, minlength=n)[order]
    return result.medoids[order], sizes / x.shape[1], result


class _AnchorBase(CoresetMethod):
    """Shared fit: cluster the questions, keep the medoids and their weights."""

    def __init__(self, n_questions: int | None = None, *, random_state=None,
                 metric: str = "correlation", n_init: int = 3, max_candidates: int = 500):
        super().__init__(n_questions, random_state=random_state)
        self.metric = metric
        self.n_init = n_init
        self.max_candidates = max_candidates

    def _check_params(self) -> None:
        _check_metric(self.metric)

    def _fit(self, source: np.ndarray, n: int, rng) -> None:
        self.total_questions_ = source.shape[1]
        self.selected_, self.weights_, self.clustering_ = anchor_points(
            source, n, metric=self.metric, rng=rng, n_init=self.n_init,
            max_candidates=self.max_candidates)
        self._fit_predictor(source)

    def _fit_predictor(self, source: np.ndarray) -> None:
        pass


class AnchorPointsWeighted(_AnchorBase):
    """Cluster-size-weighted mean of the medoid questions (paper 002, eq. 9).

    Parameters
    ----------
    n_questions : int, optional
    random_state : int, numpy.random.Generator or None, default None
        See :class:`~benchsel.coreset._base.CoresetMethod`; the generator
        seeds k-medoids.
    metric : {"correlation", "euclidean"}, default "correlation"
    n_init : int, default 3
    max_candidates : int, default 500
        See :func:`kmedoids`.
    """

    name = "anchor-points-weighted"

    def _fit_predictor(self, source: np.ndarray) -> None:
        err = source[:, self.selected_] @ self.weights_ - source.mean(axis=1)
        self.sd_ = float(np.sqrt(np.mean(err**2)))

    def _predict(self, x: np.ndarray):
        mean = x @ self.weights_
        return mean, np.full(mean.shape, self.sd_)


class AnchorPointsPredictor(_AnchorBase):
    """Ridge regression from the medoid questions to the rest (paper 002, eqs. 10-12).

    The regression of eq. 11 predicts each of the ``N - n`` other questions;
    only their mean is used, and a ridge's predictions are linear in its
    targets, so one ridge onto the mean of the rest gives the same answer for
    the same penalty. The penalty is chosen by leave-one-out over
    ``10^-3 .. 10^3`` for that mean (with ``M`` about ``n`` an unpenalized fit
    is ill-posed). Parameters as :class:`AnchorPointsWeighted`.
    """

    name = "anchor-points-predictor"

    def _fit_predictor(self, source: np.ndarray) -> None:
        rest = np.ones(self.total_questions_, bool)
        rest[self.selected_] = False
        self.model_ = ridge_loo(source[:, self.selected_], source[:, rest].mean(axis=1), ALPHAS)
        share = rest.sum() / self.total_questions_
        self.sd_ = float(self.model_.sd * share)

    def _predict(self, x: np.ndarray):
        n, total = len(self.selected_), self.total_questions_
        mean = ((total - n) * self.model_.predict(x) + n * x.mean(axis=1)) / total
        return mean, np.full(mean.shape, self.sd_)


METHODS = (AnchorPointsWeighted, AnchorPointsPredictor)
