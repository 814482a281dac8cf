"""Random-search-learn: a learned question-level method.

From Zhang et al. (2025, paper 002, Sec. 3 and App. A). :class:`RandomSearchLearn` is a
:class:`~benchsel.coreset._base.CoresetMethod` (``name``, ``fit(source)``,
``predict(x_selected)``); the array-level work is in plain functions beside it.

``random-search-learn`` -- draw ``n_search`` (10,000) random coresets, score
each by cross-validated ridge regression from its scores to the full mean on
the source models, keep the best and refit ridge on all sources.
Cross-validation: the source models are split into 4 folds once, shared by
every candidate; each fold is paper 001's "fit on 75%, test on 25%" and the
score is the mean absolute error over all source models, each predicted
from the fold that held it out. The ridge penalty is fixed during the
search (the one with the best mean score over a pilot of 100 candidates,
from :data:`~benchsel.coreset._base.ALPHAS`); the final refit picks its own
by leave-one-out over the same grid. All the candidates' small ridge
problems are solved at once, from per-fold sufficient statistics
(:func:`coreset_cv_predictions`).

Its standard deviation comes from cross-validated residuals on the source
models (see the class); it shares the blind spot of every learned method
under extrapolation.
"""

from __future__ import annotations

import numpy as np

from .._parallel import one_blas_thread
from .._ridge import ridge_loo
from ._base import ALPHAS, CoresetMethod, _check_positive, check_n, kfold_ids

__all__ = [
    "METHODS",
    "RandomSearchLearn",
    "batched_ridge",
    "coreset_cv_predictions",
    "draw_coresets",
]


def draw_coresets(rng, n_questions: int, n: int, count: int) -> np.ndarray:
    """``count`` uniformly random coresets of ``n`` distinct questions, each sorted.

    Returns
    -------
    ndarray of int, shape (count, n)
    """
    check_n(n, n_questions)
    return np.stack(
        [np.sort(rng.choice(n_questions, n, replace=False)) for _ in range(count)]
    )


def batched_ridge(x: np.ndarray, y: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Ridge regressions with intercept for a batch of design matrices at once.

    Public for batches of unrelated problems; the search's folds share their
    models, which :func:`coreset_cv_predictions` exploits instead.

    Minimizes ``||y - X w - b||^2 + alpha ||w||^2`` for every ``X`` in the
    batch (the intercept unpenalized, as :class:`sklearn.linear_model.Ridge`).
    The ``n x n`` normal equations are solved when ``n <= m``, else the
    ``m x m`` dual ones, whichever system is smaller.

    Parameters
    ----------
    x : ndarray, shape (B, m, n)
        One design matrix per problem.
    y : ndarray, shape (m,) or (B, m)
        Targets, shared by all problems or one row per problem.
    alpha : float
        Ridge penalty, > 0 (the centred dual system is singular without it).

    Returns
    -------
    coef : ndarray, shape (B, n)
    intercept : ndarray, shape (B,)
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 3:
        raise ValueError(f"x must be a (batch, models, features) array; got shape {x.shape}")
    _check_positive("alpha", alpha)
    b, m, n = x.shape
    y = np.broadcast_to(np.asarray(y, dtype=float), (b, m))
    x_mean, y_mean = x.mean(axis=1), y.mean(axis=1)
    xc = x - x_mean[:, None, :]
    yc = y - y_mean[:, None]
    if n <= m:
        gram = np.matmul(xc.transpose(0, 2, 1), xc)
        gram[:, np.arange(n), np.arange(n)] += alpha
        rhs = np.einsum("bmn,bm->bn", xc, yc)
        coef = np.linalg.solve(gram, rhs[..., None])[..., 0]
    else:
        kernel = np.matmul(xc, xc.transpose(0, 2, 1))
        kernel[:, np.arange(m), np.arange(m)] += alpha
        dual = np.linalg.solve(kernel, yc[..., None])[..., 0]
        coef = np.einsum("bmn,bm->bn", xc, dual)
    intercept = y_mean - np.einsum("bn,bn->b", x_mean, coef)
    return coef, intercept


def coreset_cv_predictions(
    source: np.ndarray,
    target: np.ndarray,
    coresets: np.ndarray,
    folds: np.ndarray,
    alpha: float,
    *,
    chunk: int | None = None,
) -> np.ndarray:
    """Out-of-fold ridge predictions of ``target`` from each coreset's scores.

    The ridges of :func:`batched_ridge` (intercept unpenalized), solved from
    sufficient statistics. Each fold's Gram matrix ``X_f^T X_f``, sums and
    ``X_f^T y`` come from that fold's models alone (their scores stored by
    question, so a candidate's are one contiguous block); all models' are
    their sum, and a fold's training models have all models' minus the
    fold's, centred as ``G - m_train xbar xbar^T`` (and likewise for the
    right-hand side). That is one pass over each candidate's scores where
    centring a copy per fold took three. The tests check it against
    scikit-learn fold by fold.

    Parameters
    ----------
    source : ndarray, shape (M, N)
        Source models' scores.
    target : ndarray, shape (M,)
        What to predict (the full-benchmark means).
    coresets : ndarray of int, shape (C, n)
        Question indices of each candidate.
    folds : ndarray of int, shape (M,)
        Fold label of each model; each model is predicted by the ridge fitted
        on the models of the other folds.
    alpha : float
        Ridge penalty.
    chunk : int, optional
        Candidates per batch; default keeps a batch near 4 million numbers.

    Returns
    -------
    ndarray, shape (C, M)
    """
    _check_positive("alpha", alpha)
    m = source.shape[0]
    n = coresets.shape[1]
    chunk = chunk or max(1, 4_000_000 // (m * n))
    y = np.asarray(target, dtype=float)
    source = np.asarray(source, dtype=float)
    members = [np.flatnonzero(folds == f) for f in np.unique(folds)]
    by_fold = [np.ascontiguousarray(source[rows].T) for rows in members]  # (N, m_f) each
    ones_and_y = [np.stack([np.ones(len(rows)), y[rows]], axis=1) for rows in members]
    y_total = y.sum()
    diagonal = np.arange(n)
    out = np.empty((len(coresets), m))
    for start in range(0, len(coresets), chunk):
        picked = coresets[start:start + chunk]
        xs = [scores[picked] for scores in by_fold]  # (B, n, m_f) each
        grams = [x @ x.transpose(0, 2, 1) for x in xs]
        stats = [x @ w for x, w in zip(xs, ones_and_y)]  # (B, n, 2): sums and X^T y
        gram_all, stats_all = sum(grams), sum(stats)
        for f, (x, rows) in enumerate(zip(xs, members)):
            m_train = m - len(rows)
            train = stats_all - stats[f]
            xbar = train[:, :, 0] / m_train
            ybar = (y_total - y[rows].sum()) / m_train
            gram = gram_all - grams[f]
            gram -= m_train * (xbar[:, :, None] * xbar[:, None, :])
            gram[:, diagonal, diagonal] += alpha
            # over the training models, sum (x - xbar)(y - ybar) = x^T y - m xbar ybar
            rhs = train[:, :, 1] - m_train * ybar * xbar
            coef = np.linalg.solve(gram, rhs[..., None])  # (B, n, 1)
            intercept = ybar - (xbar[:, None, :] @ coef)[:, 0, 0]
            out[start:start + chunk, rows] = (coef.transpose(0, 2, 1) @ x)[:, 0, :] \
                + intercept[:, None]
    return out


class RandomSearchLearn(CoresetMethod):
    """Random-search-learn: the best of many random coresets by cross-validated ridge.

    Parameters
    ----------
    n_questions : int, optional
    random_state : int, numpy.random.Generator or None, default None
        See :class:`~benchsel.coreset._base.CoresetMethod`; the generator
        draws the folds and the candidates.
    n_search : int, default 10000
        Random coresets drawn (paper 001 and 002 use 10,000).
    n_pilot : int, default 100
        Candidates on which the search's fixed ridge penalty is chosen.

    Attributes
    ----------
    selected_ : ndarray of int, shape (n,)
    candidates_ : ndarray of int, shape (n_search, n)
        Every coreset drawn, each sorted.
    cv_mae_ : ndarray, shape (n_search,)
        Each candidate's cross-validated mean absolute error.
    folds_ : ndarray of int, shape (M,)
        Fold label of each source model.
    alpha_search_ : float
        Ridge penalty used during the search.
    model_ : RidgeFit
        The final ridge on all source models (penalty by leave-one-out,
        :func:`benchsel._ridge.ridge_loo`).
    sd_ : float
        The error bar: root-mean-square out-of-fold residual of the median
        candidate (see :meth:`fit`).
    """

    name = "random-search-learn"

    def __init__(self, n_questions: int | None = None, *, random_state=None,
                 n_search: int = 10_000, n_pilot: int = 100):
        super().__init__(n_questions, random_state=random_state)
        self.n_search = n_search
        self.n_pilot = n_pilot

    def _check_params(self) -> None:
        _check_positive("n_search", self.n_search, integer=True)
        _check_positive("n_pilot", self.n_pilot, integer=True)

    @one_blas_thread()
    def _fit(self, x: np.ndarray, n: int, rng) -> None:
        """Search ``n_search`` random coresets of ``n`` questions on ``x`` (M x N).

        The error bar is the cross-validated RMSE of the *median* candidate,
        not of the winner: the winner's own cross-validated error is biased
        low by the selection among thousands, and its coreset is a random
        one with a favourable draw on these source models.
        """
        target = x.mean(axis=1)
        self.folds_ = kfold_ids(len(x), rng)
        self.candidates_ = draw_coresets(rng, x.shape[1], n, self.n_search)
        self.alpha_search_ = self._pilot_alpha(x, target)
        oof = coreset_cv_predictions(x, target, self.candidates_, self.folds_, self.alpha_search_)
        resid = oof - target
        self.cv_mae_ = np.abs(resid).mean(axis=1)
        self.selected_ = self.candidates_[np.argmin(self.cv_mae_)]
        rmse = np.sqrt((resid**2).mean(axis=1))
        self.sd_ = float(np.median(rmse))
        self.model_ = ridge_loo(x[:, self.selected_], target, ALPHAS)

    def _pilot_alpha(self, x: np.ndarray, target: np.ndarray) -> float:
        pilot = self.candidates_[: self.n_pilot]
        scores = [
            np.abs(coreset_cv_predictions(x, target, pilot, self.folds_, a) - target).mean()
            for a in ALPHAS
        ]
        return float(ALPHAS[int(np.argmin(scores))])

    @one_blas_thread()
    def _predict(self, x: np.ndarray):
        mean = self.model_.predict(x)
        return mean, np.full(mean.shape, self.sd_)


METHODS = (RandomSearchLearn,)
