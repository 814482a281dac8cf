"""Learned question-level methods of Zhang et al. (2025, paper 002, Sec. 3 and App. A).

Each is a :class:`~benchsel.coreset._base.CoresetMethod` (``name``,
``fit(source)``, ``predict(x_selected)``); the array-level work is in plain
functions beside them.

* ``random-search-learn`` -- draw ``n_search`` (10,000) random coresets, score
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
* ``lasso`` -- Lasso from all ``N`` question scores to the full mean at a
  penalty where exactly ``n`` weights are non-zero (a descent of the
  penalty, then bisection to the count; see :func:`lasso_coreset`), and the
  coreset is that support. A lasso has at
  most about ``M - 1`` non-zero weights, so with few source models the
  support can be smaller than ``n``; the coreset is then filled with the
  questions that would enter the path next (the largest
  ``|x_j^T residual|``), at zero weight. The prediction is the lasso itself,
  not a refit on its support, as in the paper.
* ``double-optimize`` -- Adam on a selection vector ``pi`` and weights
  ``theta`` jointly, with the straight-through ``TopMask(pi; n)``: 1000
  steps of size 0.001, ``theta`` starting at ``1/n`` and ``pi`` at small
  noise (a random first coreset). The coreset is the mask and the predictor
  is ``theta``, with no intercept, as in the paper's eq. 18, both taken at
  the step with the lowest error on 20% of the sources held out
  (early stopping, as in the authors' code). The step size was set on the
  interpolation splits of glue_mrpc, helm_gsm8k, helm_math and
  openllm_arc_challenge (5 trials, n = 50; ``python
  benchmarks/learned_checks.py --double-optimize``): mean gap 3.52 points
  at 0.001, 3.92 at 0.0003, 3.86 at 0.003; without early stopping the best
  was 4.83 (at 0.0003).
* ``pca`` -- random questions; the target models' unrun questions are imputed
  by iterative rank-``k`` PCA (paper 002, Algorithm 1) with ``k`` chosen by
  cross-validation over ``{2, 5, 10, 20}``; the prediction is the mean of the
  observed and imputed scores. The imputation runs in the ``M + R``
  dimensional row space (:func:`pca_impute`), so its cost does not grow with
  ``N`` after one ``M x M`` Gram matrix. It stops after at most 100
  iterations: with ``n << N`` it contracts slowly (about ``1 - n/N`` per
  step) and the stopped iterate still leans towards the starting column
  means. Run longer (``max_iter``), it extrapolated much better on two of
  four benchmarks we tried, at ten times the cost, and higher ranks did not
  settle.

Standard deviations come from cross-validated residuals on the source models
(see each class); they share the methods' blind spot under extrapolation.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.linalg import eigh
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso

from .._parallel import one_blas_thread
from .._ridge import ridge_loo
from ._base import ALPHAS, CoresetMethod, check_n, check_source

__all__ = [
    "METHODS",
    "DoubleOptimize",
    "LassoCoreset",
    "PCAImpute",
    "RandomSearchLearn",
    "batched_ridge",
    "coreset_cv_predictions",
    "double_optimize",
    "draw_coresets",
    "kfold_ids",
    "lasso_coreset",
    "pca_impute",
    "top_mask",
]

N_FOLDS = 4  # each fold holds out 25% of the source models, as paper 001's split does
PCA_RANKS = (2, 5, 10, 20)


# --------------------------------------------------------------------------- validation


def _check_positive(name: str, value, *, integer: bool = False) -> None:
    if integer:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer; got {value!r}")
    elif not value > 0:
        raise ValueError(f"{name} must be > 0; got {value!r}")


def kfold_ids(m: int, rng, n_folds: int = N_FOLDS) -> np.ndarray:
    """Fold label (0 .. ``min(n_folds, m) - 1``) of each of ``m`` models, in random order."""
    k = min(n_folds, m)
    ids = np.empty(m, dtype=int)
    ids[rng.permutation(m)] = np.arange(m) % k
    return ids


# --------------------------------------------------------------------------- random search


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


# --------------------------------------------------------------------------- lasso


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


# --------------------------------------------------------------------------- double optimize


def top_mask(pi: np.ndarray, n: int) -> np.ndarray:
    """``TopMask(pi; n)``: 1.0 at the ``n`` largest entries of ``pi``, 0.0 elsewhere.

    ``pi`` may be a batch (..., N); each row gets its own mask. Ties are
    broken by :func:`numpy.argpartition`, so exactly ``n`` entries are 1.
    """
    pi = np.asarray(pi, dtype=float)
    if pi.ndim == 0 or not 1 <= n <= pi.shape[-1]:
        raise ValueError(f"need 1 <= n <= {pi.shape[-1] if pi.ndim else 0}; got n={n}")
    return _mask_of(_top_indices(pi, n), pi.shape)


def _top_indices(pi: np.ndarray, n: int) -> np.ndarray:
    return np.argpartition(-pi, n - 1, axis=-1)[..., :n]


def _mask_of(indices: np.ndarray, shape) -> np.ndarray:
    mask = np.zeros(shape)
    np.put_along_axis(mask, indices, 1.0, axis=-1)
    return mask


class _Adam:
    """Adam (Kingma and Ba, 2015) on one parameter array, PyTorch's defaults.

    Updates in place through one scratch buffer: the arrays are (runs x N)
    and a step is a handful of passes over them, so temporaries would cost
    as much as the arithmetic.
    """

    def __init__(self, shape, lr: float, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-8):
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.m, self.v, self.t = np.zeros(shape), np.zeros(shape), 0
        self.buf = np.empty(shape)

    def step(self, param: np.ndarray, grad: np.ndarray) -> None:
        self.t += 1
        buf = self.buf
        self.m *= self.beta1
        np.multiply(grad, 1 - self.beta1, out=buf)
        self.m += buf
        self.v *= self.beta2
        np.square(grad, out=buf)
        buf *= 1 - self.beta2
        self.v += buf
        # param -= lr * m_hat / (sqrt(v_hat) + eps), with the bias corrections folded in
        np.sqrt(self.v, out=buf)
        buf *= 1 / np.sqrt(1 - self.beta2**self.t)
        buf += self.eps
        np.divide(self.m, buf, out=buf)
        buf *= self.lr / (1 - self.beta1**self.t)
        param -= buf


def _double_optimize_runs(x, y, n, rng, train, steps, lr, validation=None):
    """Independent double-optimize runs, run ``k`` fitted on the rows ``train[k]``.

    The runs share one pass over the scores per step: the backward product
    of all runs is one (runs x M) @ (M x N) product. With ``validation``
    (runs x M, disjoint from ``train``), each run returns the mask and
    weights of the step with the lowest mean squared error on its
    validation rows (early stopping, as the authors' code does) instead of
    the last step's.

    Returns
    -------
    selected : ndarray of int, shape (runs, n)
    theta : ndarray, shape (runs, n)
    """
    runs, total = len(train), x.shape[1]
    weight = train / train.sum(axis=1, keepdims=True)  # each run's mean over its rows
    # The backward product reads all M x N scores every step; single precision
    # halves that traffic, and Adam rescales the gradient anyway.
    x32 = x.astype(np.float32)
    pi = rng.normal(scale=lr, size=(runs, total))
    theta = np.full((runs, total), 1.0 / n)
    opt_pi, opt_theta = _Adam(pi.shape, lr), _Adam(theta.shape, lr)
    back, grad = np.empty((runs, total)), np.zeros((runs, total))
    if validation is not None:
        held = validation / np.maximum(validation.sum(axis=1, keepdims=True), 1)
        best_loss = np.full(runs, np.inf)
        best_on, best_theta = np.zeros((runs, n), dtype=np.intp), np.zeros((runs, n))
    for _ in range(steps):
        on = _top_indices(pi, n)
        th = np.take_along_axis(theta, on, axis=1)
        pred = np.einsum("kmn,kn->km", x[:, on].transpose(1, 0, 2), th)
        if validation is not None:
            loss = np.einsum("km,km->k", held, (pred - y) ** 2)
            better = loss < best_loss
            best_loss[better], best_on[better], best_theta[better] = \
                loss[better], on[better], th[better]
        resid = 2.0 * weight * (pred - y)  # d loss / d pred
        # d loss / d (x_j * mask_j * theta_j) for every question j and run
        back[:] = resid.astype(np.float32) @ x32
        grad.fill(0.0)
        np.put_along_axis(grad, on, np.take_along_axis(back, on, axis=1), axis=1)
        back *= theta  # with theta before its step: one backward pass gives both gradients
        opt_theta.step(theta, grad)  # zero off the mask
        opt_pi.step(pi, back)  # straight-through: d mask / d pi := 1
    if validation is None:
        selected = np.sort(_top_indices(pi, n), axis=1)
        return selected, np.take_along_axis(theta, selected, axis=1)
    order = np.argsort(best_on, axis=1)
    return np.take_along_axis(best_on, order, axis=1), np.take_along_axis(best_theta, order,
                                                                          axis=1)


def _hold_out(train: np.ndarray, share: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """Split each run's rows into fitting rows and ``share`` of validation rows."""
    fit, held = train.copy(), np.zeros_like(train)
    for k, row in enumerate(train):
        rows = np.flatnonzero(row)
        count = int(round(share * rows.size))
        if share > 0 and count >= 2 and rows.size - count >= 2:
            chosen = rng.choice(rows, count, replace=False)
            fit[k, chosen], held[k, chosen] = False, True
    return fit, held


def double_optimize(
    x: np.ndarray, y: np.ndarray, n: int, rng, *, steps: int = 1000, lr: float = 0.001,
    holdout: float = 0.2,
) -> tuple[np.ndarray, np.ndarray]:
    """Jointly learn a selection vector ``pi`` and weights ``theta`` (paper 002, eqs. 18-19).

    Minimizes ``mean_f ([x_f * TopMask(pi; n)]^T theta - y_f)^2`` with Adam on
    both. The gradient with respect to the mask is passed to ``pi`` unchanged
    (straight-through). As in eq. 18 there is no intercept: the prediction
    is a weighted sum of the coreset's raw scores. ``theta`` starts at ``1/n``
    (the coreset's mean), ``pi`` at ``N(0, lr^2)`` noise, so the first mask is
    a random coreset. A random ``holdout`` share of the rows is not fitted:
    the step with the lowest error on them is returned (early stopping, as
    in the authors' code).

    Parameters
    ----------
    x : ndarray, shape (M, N)
    y : ndarray, shape (M,)
    n : int
    rng : numpy.random.Generator
    steps : int, default 1000
    lr : float, default 0.001
        Adam's step size for both vectors.
    holdout : float, default 0.2
        Share of the rows held out for early stopping (0: none, the last
        step is returned).

    Returns
    -------
    selected : ndarray of int, shape (n,)
        The chosen ``TopMask(pi; n)``'s questions, sorted.
    theta : ndarray, shape (n,)
        Their learned weights.
    """
    x = check_source(x)
    check_n(n, x.shape[1])
    train = np.ones((1, len(x)), bool)
    fit, held = _hold_out(train, holdout, rng)
    selected, theta = _double_optimize_runs(x, np.asarray(y, float), n, rng, fit, steps, lr,
                                            held if held.any() else None)
    return selected[0], theta[0]


class DoubleOptimize(CoresetMethod):
    """Double-optimize: gradient descent on the coreset and the regression together.

    The model of paper 002, eq. 18: ``h(f) = [s(f) * TopMask(pi; n)]^T theta``,
    with no intercept (an intercept pulls predictions toward the source
    models' mean, which costs most under extrapolation).

    Parameters
    ----------
    n_questions : int, optional
    random_state : int, numpy.random.Generator or None, default None
        See :class:`~benchsel.coreset._base.CoresetMethod`; the generator
        draws the folds, the held-out models and ``pi``'s starts.
    steps : int, default 1000
        Adam steps.
    lr : float, default 0.001
        Adam's step size (weights start at ``1/n``, 0.02 for ``n = 50``).
    holdout : float, default 0.2
        Share of each run's models held out for early stopping
        (:func:`double_optimize`).

    Attributes
    ----------
    selected_ : ndarray of int, shape (n,)
    theta_ : ndarray, shape (n,)
        Learned weights on the coreset's scores.
    sd_ : float
        Root-mean-square residual of 4-fold cross-validation of the whole
        procedure (coreset and weights learned again without the held-out
        models).
    """

    name = "double-optimize"

    def __init__(self, n_questions: int | None = None, *, random_state=None,
                 steps: int = 1000, lr: float = 0.001, holdout: float = 0.2):
        super().__init__(n_questions, random_state=random_state)
        self.steps = steps
        self.lr = lr
        self.holdout = holdout

    def _check_params(self) -> None:
        _check_positive("steps", self.steps, integer=True)
        _check_positive("lr", self.lr)
        if not 0 <= self.holdout < 1:
            raise ValueError(f"holdout must be in [0, 1); got {self.holdout!r}")

    @one_blas_thread()
    def _fit(self, x: np.ndarray, n: int, rng) -> None:
        y = x.mean(axis=1)
        folds = kfold_ids(len(x), rng)
        ids = np.unique(folds)
        # Run 0 fits all the models; run 1 + f leaves out fold f, for the error bar.
        train = np.vstack([np.ones(len(x), bool), folds[None, :] != ids[:, None]])
        fit, held = _hold_out(train, self.holdout, rng)
        selected, theta = _double_optimize_runs(x, y, n, rng, fit, self.steps, self.lr,
                                                held if held.any() else None)
        self.selected_, self.theta_ = selected[0], theta[0]
        resid = np.empty(len(x))
        for k, f in enumerate(ids, start=1):
            test = folds == f
            resid[test] = y[test] - x[np.ix_(test, selected[k])] @ theta[k]
        self.sd_ = float(np.sqrt(np.mean(resid**2)))

    @one_blas_thread()
    def _predict(self, x: np.ndarray):
        mean = x @ self.theta_
        return mean, np.full(mean.shape, self.sd_)


# --------------------------------------------------------------------------- PCA imputation


def _impute_weights(
    src_obs: np.ndarray,
    tgt_obs: np.ndarray,
    gram: np.ndarray,
    rank: int,
    max_iter: int,
    tol: float,
) -> np.ndarray:
    """Algorithm 1 in the row space: weights ``A`` with imputed scores ``= A @ S_U``.

    Rows are the ``M`` sources then the ``R`` targets; columns are the
    observed questions ``C`` (all rows known) and the rest ``U`` (known for
    sources: ``S_U``). Starting from column means (``A = 1/M``), imputed
    target rows stay affine combinations of source rows, ``T_U = A S_U``. The
    column means of ``U`` are then ``w^T S_U`` with ``w = (1 + A^T 1)/(M+R)``,
    the centred block is ``B S_U`` with ``B = [I; A] - 1 w^T``, the Gram
    matrix of all centred rows is ``Zc_C Zc_C^T + B G B^T`` (``G = S_U
    S_U^T``), and reconstructing from its top-``rank`` eigenvectors ``V``
    gives ``A <- 1 w^T + (V V^T)[targets] B``. Everything is ``(M+R)``
    sized.

    Parameters
    ----------
    src_obs : ndarray, shape (M, n)
        ``S_C``.
    tgt_obs : ndarray, shape (R, n)
        ``T_C``.
    gram : ndarray, shape (M, M)
        ``G = S_U S_U^T``.
    rank : int
        PCA components kept.
    max_iter, tol
        Stop when the imputed values change by less than ``tol`` times their
        norm (Frobenius), or after ``max_iter`` iterations.

    Returns
    -------
    ndarray, shape (R, M)
    """
    m, r = len(src_obs), len(tgt_obs)
    rows = m + r
    known = np.vstack([src_obs, tgt_obs])
    known = known - known.mean(axis=0)
    k_known = known @ known.T
    weights = np.full((r, m), 1.0 / m)
    weighted_gram = weights @ gram  # A G, carried from one iteration to the next
    kernel = np.empty((rows, rows))
    for _ in range(max_iter):
        w = (1.0 + weights.sum(axis=0)) / rows
        # B G B^T with B = S - 1 w^T and S = [I; A], from its blocks: S G S^T is
        # [[G, G A^T], [A G, A G A^T]], and the centring subtracts u 1^T + 1 u^T
        # and adds (w^T G w) 1 1^T, with u = S G w. Only A G costs O(R M^2),
        # where the plain product B G B^T costs O((M + R)^2 M).
        gw = gram @ w
        u = np.concatenate([gw, weights @ gw])
        kernel[:m, :m] = gram
        kernel[m:, :m] = weighted_gram
        kernel[:m, m:] = weighted_gram.T
        kernel[m:, m:] = weighted_gram @ weights.T
        kernel -= u[:, None] + u[None, :] - w @ gw
        kernel += k_known
        _, vecs = eigh(kernel, subset_by_index=[rows - rank, rows - 1])
        # V^T B, again from the blocks of S: V_S^T + V_A^T A - (V^T 1) w^T.
        projected = vecs[:m].T + vecs[m:].T @ weights - np.outer(vecs.sum(axis=0), w)
        new = w + vecs[m:] @ projected
        new_gram = new @ gram
        change = np.sum((new_gram - weighted_gram) * (new - weights))
        size = np.sum(new_gram * new)
        weights, weighted_gram = new, new_gram
        if change <= tol**2 * size:
            break
    return weights


def pca_impute(
    source: np.ndarray,
    target_observed: np.ndarray,
    observed: np.ndarray,
    rank: int,
    *,
    max_iter: int = 100,
    tol: float = 1e-5,
) -> np.ndarray:
    """Complete target models' scores by iterative PCA imputation (paper 002, Algorithm 1).

    Stacks the source models (complete) on the targets (known on
    ``observed`` only), fills the gaps with column means, then repeatedly
    reconstructs the matrix from its top ``rank`` principal components (the
    columns centred) and replaces the gaps with the reconstruction.

    Parameters
    ----------
    source : ndarray, shape (M, N)
    target_observed : ndarray, shape (R, n)
        Targets' scores on ``observed``.
    observed : ndarray of int, shape (n,)
        Question indices the targets were run on.
    rank : int
        Principal components kept, ``1 <= rank < M + R``.
    max_iter : int, default 100
    tol : float, default 1e-5
        Relative change of the imputed values at which to stop.

    Returns
    -------
    ndarray, shape (R, N)
        ``target_observed`` in the ``observed`` columns, imputations elsewhere.
    """
    source = check_source(source)
    observed = np.asarray(observed)
    tgt = np.asarray(target_observed, dtype=float)
    m, total = source.shape
    if (observed.ndim != 1 or not np.issubdtype(observed.dtype, np.integer)
            or len(np.unique(observed)) != len(observed)
            or (len(observed) and not 0 <= observed.min() <= observed.max() < total)):
        raise ValueError(f"observed must be distinct question indices in [0, {total}); "
                         f"got {observed!r}")
    if tgt.ndim != 2 or tgt.shape[1] != len(observed):
        raise ValueError(
            f"target_observed must be (models x {len(observed)}); got shape {tgt.shape}"
        )
    if not 1 <= rank < m + len(tgt):
        raise ValueError(f"rank must be in [1, {m + len(tgt) - 1}]; got {rank}")
    unrun = np.ones(total, bool)
    unrun[observed] = False
    s_u = source[:, unrun]
    weights = _impute_weights(source[:, observed], tgt, s_u @ s_u.T, rank, max_iter, tol)
    full = np.empty((len(tgt), total))
    full[:, observed] = tgt
    full[:, unrun] = weights @ s_u
    return full


class PCAImpute(CoresetMethod):
    """PCA: random questions, the rest imputed by iterative low-rank PCA.

    Parameters
    ----------
    n_questions : int, optional
    random_state : int, numpy.random.Generator or None, default None
        See :class:`~benchsel.coreset._base.CoresetMethod`; the generator
        draws the questions and the cross-validation folds.
    ranks : tuple of int, default (2, 5, 10, 20)
        Candidate numbers of components; those below the number of models in
        a cross-validation fit are tried, and the best by 4-fold
        cross-validation on the source models is kept (the held-out models
        play the targets: only the coreset is observed).
    max_iter : int, default 100
        Most imputation iterations (see the module notes on convergence).
    tol : float, default 1e-5
        Passed to the imputation (see :func:`pca_impute`).

    Attributes
    ----------
    selected_ : ndarray of int, shape (n,)
    rank_ : int
        The rank chosen.
    cv_mae_ : dict
        Cross-validated mean absolute error of the predicted mean, by rank.
    sd_ : float
        Root-mean-square cross-validated residual at ``rank_``.
    """

    name = "pca"

    def __init__(self, n_questions: int | None = None, *, random_state=None,
                 ranks=PCA_RANKS, max_iter: int = 100, tol: float = 1e-5):
        super().__init__(n_questions, random_state=random_state)
        self.ranks = ranks
        self.max_iter = max_iter
        self.tol = tol

    def _check_params(self) -> None:
        ranks = tuple(self.ranks)
        if not ranks or any(
            isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 for k in ranks
        ):
            raise ValueError(f"ranks must be positive integers; got {self.ranks!r}")
        _check_positive("max_iter", self.max_iter, integer=True)
        _check_positive("tol", self.tol)

    @one_blas_thread()
    def _fit(self, source: np.ndarray, n: int, rng) -> None:
        """Draw ``n`` random questions and choose the rank on ``source`` (M x N)."""
        self.total_questions_ = source.shape[1]
        # The same draw as RandomQuestions, so that a shared rng gives the same questions.
        self.selected_ = np.sort(rng.choice(self.total_questions_, n, replace=False))
        self._choose_rank(source, rng)

    def _choose_rank(self, source: np.ndarray, rng) -> None:
        run = source[:, self.selected_]
        unrun = np.ones(source.shape[1], bool)
        unrun[self.selected_] = False
        s_u = source[:, unrun]
        self.gram_ = s_u @ s_u.T
        self.unrun_sums_ = s_u.sum(axis=1)
        self.source_run_ = run
        truth = source.mean(axis=1)
        folds = kfold_ids(len(source), rng)
        smallest_train = len(source) - np.bincount(folds).max()
        ranks = [k for k in self.ranks if k < smallest_train] or [max(1, smallest_train - 1)]
        resid = {}
        for k in ranks:
            pred = np.empty(len(source))
            for f in np.unique(folds):
                test, train = folds == f, folds != f
                pred[test] = self._predict_mean(
                    run[train], run[test], self.gram_[np.ix_(train, train)],
                    self.unrun_sums_[train], k,
                )
            resid[k] = pred - truth
        self.cv_mae_ = {k: float(np.abs(e).mean()) for k, e in resid.items()}
        self.rank_ = min(self.cv_mae_, key=self.cv_mae_.get)
        self.sd_ = float(np.sqrt(np.mean(resid[self.rank_] ** 2)))

    def _predict_mean(self, src_run, tgt_run, gram, unrun_sums, rank) -> np.ndarray:
        weights = _impute_weights(src_run, tgt_run, gram, rank, self.max_iter, self.tol)
        return (tgt_run.sum(axis=1) + weights @ unrun_sums) / self.total_questions_

    @one_blas_thread()
    def _predict(self, x: np.ndarray):
        mean = self._predict_mean(self.source_run_, x, self.gram_, self.unrun_sums_, self.rank_)
        return mean, np.full(mean.shape, self.sd_)


METHODS = (RandomSearchLearn, LassoCoreset, DoubleOptimize, PCAImpute)
