"""PCA imputation: a learned question-level method.

From Zhang et al. (2025, paper 002, Sec. 3 and App. A). :class:`PCAImpute` is a
:class:`~benchsel.coreset._base.CoresetMethod` (``name``, ``fit(source)``,
``predict(x_selected)``); the array-level work is in plain functions beside it.

``pca`` -- random questions; the target models' unrun questions are imputed
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

Its standard deviation comes from cross-validated residuals on the source
models (see the class); it shares the blind spot of every learned method
under extrapolation.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import eigh

from .._parallel import one_blas_thread
from ._base import CoresetMethod, _check_positive, check_source, kfold_ids

__all__ = [
    "METHODS",
    "PCAImpute",
    "pca_impute",
]

PCA_RANKS = (2, 5, 10, 20)


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


METHODS = (PCAImpute,)
