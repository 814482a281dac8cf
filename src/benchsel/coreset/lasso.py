"""Lasso coreset: a learned question-level method.

From Zhang et al. (2025, paper 002, Sec. 3 and App. A). :class:`LassoCoreset` is a
:class:`~benchsel.coreset._base.CoresetMethod` (``name``, ``fit(source)``,
``predict(x_selected)``); the array-level work is in plain functions beside it.

``lasso`` -- Lasso from all ``N`` question scores to the full mean at a
penalty where exactly ``n`` weights are non-zero (a descent of the
penalty, then bisection to the count; see :func:`lasso_coreset`), and the
coreset is that support. A lasso has at
most about ``M - 1`` non-zero weights, so with few source models the
support can be smaller than ``n``; the coreset is then filled with the
questions that would enter the path next (the largest
``|x_j^T residual|``), at zero weight. The prediction is the lasso itself,
not a refit on its support, as in the paper.

Its standard deviation comes from cross-validated residuals on the source
models (see the class); it shares the blind spot of every learned method
under extrapolation.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso

from .._parallel import one_blas_thread
from ._base import CoresetMethod, kfold_ids

__all__ = [
    "METHODS",
    "LassoCoreset",
    "lasso_coreset",
]


def _lasso(alpha: float, max_iter: int, tol: float) -> Lasso:
    return Lasso(alpha=alpha, warm_start=True, max_iter=max_iter, tol=tol)


def lasso_coreset(
    x: np.ndarray,
    y: np.ndarray,
    n: int,
    *,
    n_alphas: int = 60,
    eps: float = 1e-3,
    bisect: int = 20,
    probes: int = 32,
    max_iter: int = 10_000,
    tol: float = 1e-4,
) -> Lasso:
    """A lasso with exactly ``n`` non-zero weights, at the largest such penalty found.

    On 0/1 scores many questions are near-identical, and the lasso's
    weights are then not unique (its fitted values are): the number of
    non-zero weights coordinate descent returns depends on where it starts,
    and is far from monotone in the penalty (on one real split it runs 44,
    56, 53, 51, 46, 50, 49 over a 0.5% change of the penalty). So the penalty
    is searched for in two passes:

    1. walk the penalty down a geometric grid from ``alpha_max`` (where
       every weight is zero) to ``eps * alpha_max``, warm-starting each fit,
       to the first point whose support exceeds ``n``, then bisect (in log
       scale) from there with warm starts, stopping at exactly ``n``: cheap,
       and enough wherever the solution is unique;
    2. if that missed ``n``, take counts from fits that start at zero (a
       function of the penalty alone): from two grid points above the first
       pass's crossing (further up while the support there exceeds ``n``)
       walk down to the first point whose support exceeds ``n``;
    3. bisect that bracket with cold fits, stopping at exactly ``n``;
    4. if bisection closed in on a jump past ``n``, fit ``probes``
       penalties spread over the bracket and keep the largest with exactly
       ``n``.

    Only when no fit has ``n`` is the one with the most non-zeros below
    ``n`` returned (also when the support never reaches ``n``: a lasso on
    ``M`` models has at most about ``M - 1`` when its solution is unique).

    Parameters
    ----------
    x : ndarray, shape (M, N)
    y : ndarray, shape (M,)
    n : int
        Non-zero weights wanted.
    n_alphas, eps : int, float
        The grid of penalties.
    bisect : int
        Most bisection steps.
    probes : int
        Fits spread over the bracket when bisection does not reach ``n``.
    max_iter, tol
        Passed to :class:`sklearn.linear_model.Lasso`.

    Returns
    -------
    Lasso
        The fitted model; its ``alpha`` is the penalty chosen.
    """
    m = len(x)
    alpha_max = np.abs((x - x.mean(axis=0)).T @ (y - y.mean())).max() / m
    if alpha_max == 0:  # the target is constant: nothing ever enters
        return _lasso(1.0, max_iter, tol).fit(x, y)
    grid = alpha_max * np.logspace(0, np.log10(eps), n_alphas)
    best = (alpha_max, np.zeros(x.shape[1]), float(y.mean()))  # the most non-zeros <= n

    def fit(alpha, init=None):
        """Fit at ``alpha`` from ``init`` (coef, intercept) or from zero; keep the best; count."""
        nonlocal best
        model = _lasso(alpha, max_iter, tol)
        if init is not None:
            model.coef_, model.intercept_ = init[0].copy(), init[1]
        model.fit(x, y)
        count = np.count_nonzero(model.coef_)
        have = np.count_nonzero(best[1])
        if count <= n and (count > have or (count == have and alpha > best[0])):
            best = (alpha, model.coef_.copy(), float(model.intercept_))
        return count, (model.coef_, float(model.intercept_))

    def found() -> bool:
        return np.count_nonzero(best[1]) == n

    # Points on the way to the chosen penalty needn't be exact: their
    # convergence warnings are noise.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # 1. Warm starts all the way: cheap, and exact wherever the solution is unique.
        state, start, bad = None, len(grid) - 1, None
        for i, alpha in enumerate(grid[1:], start=1):
            count, next_state = fit(alpha, state)
            if count > n:
                start, bad = i, alpha
                break
            state, good = next_state, alpha
        if bad is not None and state is not None:
            for _ in range(bisect):
                if found():
                    break
                alpha = np.sqrt(good * bad)
                count, next_state = fit(alpha, state)
                if count > n:
                    bad = alpha
                else:
                    state, good = next_state, alpha
        if found():
            return _as_model(best, max_iter, tol)
        # 2-4. Counts from cold starts: walk, bisect, probe.
        i = max(start - 2, 1)
        while i > 0 and fit(grid[i])[0] > n:  # the cold count can exceed n earlier
            i -= 1
        good, bad = grid[i], None
        for alpha in grid[i + 1:]:
            if fit(alpha)[0] > n:
                bad = alpha
                break
            good = alpha
        if bad is not None:
            bracket = (bad, good)
            for _ in range(bisect):
                if found():
                    break
                alpha = np.sqrt(good * bad)
                if fit(alpha)[0] > n:
                    bad = alpha
                else:
                    good = alpha
            if probes > 0 and not found():
                for alpha in np.geomspace(bracket[1], bracket[0], probes + 2)[1:-1]:
                    if fit(alpha)[0] == n:
                        break
    return _as_model(best, max_iter, tol)


def _as_model(best, max_iter: int, tol: float) -> Lasso:
    model = _lasso(best[0], max_iter, tol)
    model.coef_, model.intercept_ = best[1], best[2]
    return model


def _fill_next_to_enter(x, y, coef, intercept, support: np.ndarray, n: int) -> np.ndarray:
    """``n - len(support)`` inactive questions most correlated with the lasso's residual.

    On the lasso path a question enters when ``|x_j^T r| / M`` reaches the
    penalty, so these are the next to enter as the penalty decreases.
    """
    resid = y - x @ coef - intercept
    score = np.abs((x - x.mean(axis=0)).T @ resid)
    score[support] = -np.inf
    order = np.argsort(-score, kind="stable")
    return order[: n - len(support)]


class LassoCoreset(CoresetMethod):
    """Lasso: the support of a lasso from all questions to the full mean.

    Parameters
    ----------
    n_questions : int, optional
    random_state : int, numpy.random.Generator or None, default None
        See :class:`~benchsel.coreset._base.CoresetMethod`; the generator
        draws the cross-validation folds of the error bar.
    n_alphas : int, default 60
        Points on the penalty grid from ``alpha_max`` to ``eps * alpha_max``.
    eps : float, default 1e-3
    bisect : int, default 20
        Bisection steps towards exactly ``n`` non-zero weights.
    probes : int, default 32
        Cold-start fits when bisection does not land on exactly ``n``
        (:func:`lasso_coreset`).

    Attributes
    ----------
    selected_ : ndarray of int, shape (n,)
        The lasso's support (sorted), then any fill-up questions.
    alpha_ : float
        The penalty chosen.
    coef_ : ndarray, shape (N,)
        Lasso weights on all questions (at most ``n`` non-zero).
    weights_ : ndarray, shape (n,)
        ``coef_[selected_]`` (zero for fill-up questions).
    intercept_ : float
    n_filled_ : int
        Questions added because the support had fewer than ``n``.
    sd_ : float
        Root-mean-square residual of 4-fold cross-validation at ``alpha_``
        (the lasso refitted on each fold's other models).
    """

    name = "lasso"

    def __init__(self, n_questions: int | None = None, *, random_state=None,
                 n_alphas: int = 60, eps: float = 1e-3, bisect: int = 20, probes: int = 32):
        super().__init__(n_questions, random_state=random_state)
        self.n_alphas = n_alphas
        self.eps = eps
        self.bisect = bisect
        self.probes = probes

    def _check_params(self) -> None:
        if isinstance(self.n_alphas, bool) or not isinstance(self.n_alphas, (int, np.integer)) \
                or self.n_alphas < 2:
            raise ValueError(f"n_alphas must be an integer >= 2; got {self.n_alphas!r}")
        if not 0 < self.eps < 1:
            raise ValueError(f"eps must be in (0, 1); got {self.eps!r}")
        if self.bisect < 0:
            raise ValueError(f"bisect must be >= 0; got {self.bisect!r}")
        if self.probes < 0:
            raise ValueError(f"probes must be >= 0; got {self.probes!r}")

    @one_blas_thread()
    def _fit(self, x: np.ndarray, n: int, rng) -> None:
        y = x.mean(axis=1)
        model = lasso_coreset(x, y, n, n_alphas=self.n_alphas, eps=self.eps, bisect=self.bisect,
                              probes=self.probes)
        self.alpha_, self.coef_, self.intercept_ = model.alpha, model.coef_, float(model.intercept_)
        support = np.flatnonzero(self.coef_)
        fill = _fill_next_to_enter(x, y, self.coef_, self.intercept_, support, n)
        self.n_filled_ = len(fill)
        self.selected_ = np.concatenate([support, np.sort(fill)])
        self.weights_ = self.coef_[self.selected_]
        self.sd_ = self._cv_sd(x, y, model, rng)

    def _cv_sd(self, x, y, model: Lasso, rng) -> float:
        folds = kfold_ids(len(x), rng)
        resid = np.empty(len(x))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # only an error bar
            for f in np.unique(folds):
                test = folds == f
                fold_model = _lasso(self.alpha_, model.max_iter, model.tol)
                fold_model.coef_, fold_model.intercept_ = self.coef_.copy(), self.intercept_
                fold_model.fit(x[~test], y[~test])
                resid[test] = y[test] - fold_model.predict(x[test])
        return float(np.sqrt(np.mean(resid**2)))

    @one_blas_thread()
    def _predict(self, x: np.ndarray):
        mean = x @ self.weights_ + self.intercept_
        return mean, np.full(mean.shape, self.sd_)


METHODS = (LassoCoreset,)
