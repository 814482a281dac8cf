"""Double-optimize: a learned question-level method.

From Zhang et al. (2025, paper 002, Sec. 3 and App. A). :class:`DoubleOptimize` is a
:class:`~benchsel.coreset._base.CoresetMethod` (``name``, ``fit(source)``,
``predict(x_selected)``); the array-level work is in plain functions beside it.

``double-optimize`` -- Adam on a selection vector ``pi`` and weights
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

Its standard deviation comes from cross-validated residuals on the source
models (see the class); it shares the blind spot of every learned method
under extrapolation.
"""

from __future__ import annotations

import numpy as np

from .._parallel import one_blas_thread
from ._base import CoresetMethod, _check_positive, check_n, check_source, kfold_ids

__all__ = [
    "METHODS",
    "DoubleOptimize",
    "double_optimize",
    "top_mask",
]


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


METHODS = (DoubleOptimize,)
