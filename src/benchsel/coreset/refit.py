"""The "+" and "++" refits: any coreset's scores -> full-benchmark mean by (kernel) ridge.

Bowyer et al. (2026, Sec. 2.3-2.4 "Refitting Ridge", App. B and D.1) keep a
selector's questions and replace its predictor:

* ``+`` -- ridge regression from the coreset scores to the full-benchmark
  mean, with an unpenalized intercept (their eq. 12);
* ``++`` -- kernel ridge regression (their eq. 13, no intercept) with the
  degree-2 polynomial kernel ``(gamma <x, x'> + 1)^2``.

The penalty is chosen by exact leave-one-out RMSE over the paper's grid
(App. D.1): ``{10^-1, 10^-0.5, ..., 10}`` when every score is 0 or 1,
``{10^-2, 10^-1.5, ..., 10^2}`` otherwise. Both searches are closed form:
one SVD (ridge) or one eigendecomposition of the M x M kernel (kernel ridge)
serves every penalty, and the leave-one-out residual of model ``i`` is
``(y_i - yhat_i) / (1 - H_ii)`` with ``H`` the hat matrix. The prediction's
standard deviation is the root mean squared leave-one-out residual.

Kernel scale: eq. 16 writes ``(<x, x'> + 1)^d`` with no scale, but the
authors' released code fits scikit-learn's ``KernelRidge(kernel="poly",
degree=2, coef0=1)``, whose default ``gamma`` is ``1 / n_features``; the
grid above was tuned for that scale (with ``gamma = 1`` a 50-question kernel
reaches ~2,600 and every penalty on the grid is negligible). benchsel uses
``gamma = 1 / n`` by default.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.base import clone

from ._base import CoresetMethod, inner_settings

__all__ = [
    "BINARY_ALPHAS",
    "CONTINUOUS_ALPHAS",
    "KINDS",
    "KernelRidgeFit",
    "Refit",
    "RidgeFit",
    "is_binary",
    "kernel_ridge_loo",
    "make_refit",
    "paper_alphas",
    "polynomial_kernel",
    "ridge_loo",
]

BINARY_ALPHAS = np.logspace(-1, 1, 5)  # App. D.1, binary metrics
CONTINUOUS_ALPHAS = np.logspace(-2, 2, 9)  # App. D.1, continuous metrics
KINDS = ("+", "++")


def is_binary(values: np.ndarray) -> bool:
    """True when every entry of ``values`` is exactly 0 or 1."""
    values = np.asarray(values)
    return bool(np.all((values == 0) | (values == 1)))


def paper_alphas(values: np.ndarray) -> np.ndarray:
    """The paper's penalty grid for these scores: binary or continuous (App. D.1)."""
    return BINARY_ALPHAS if is_binary(values) else CONTINUOUS_ALPHAS


def _check_xy(x, y, alphas) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    alphas = np.atleast_1d(np.asarray(alphas, dtype=float))
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D (models x questions); got shape {x.shape}")
    if y.shape != (x.shape[0],):
        raise ValueError(f"y must have shape ({x.shape[0]},) to match x; got {y.shape}")
    if x.shape[0] < 2:
        raise ValueError(f"leave-one-out needs at least 2 models; got {x.shape[0]}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("x and y must be finite (no NaN or inf scores)")
    if alphas.size == 0 or not np.all(np.isfinite(alphas) & (alphas > 0)):
        raise ValueError(f"alphas must be positive and finite; got {alphas.tolist()}")
    return x, y, alphas


def _check_new(x, n_features: int) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.shape[1] != n_features:
        raise ValueError(
            f"expected scores of shape (models, {n_features}); got {x.shape}"
        )
    return x


@dataclass(frozen=True)
class RidgeFit:
    """Ridge regression fitted with its penalty chosen by leave-one-out.

    Attributes
    ----------
    alpha : float
        The chosen penalty.
    coef : ndarray of shape (n_features,)
    intercept : float
    alphas : ndarray of shape (n_alphas,)
        The penalties searched.
    loo_mse : ndarray of shape (n_alphas,)
        Mean squared leave-one-out residual for each penalty.
    loo_residuals : ndarray of shape (n_models,)
        Leave-one-out residuals ``y_i - yhat_(-i)`` at ``alpha``.
    """

    alpha: float
    coef: np.ndarray
    intercept: float
    alphas: np.ndarray
    loo_mse: np.ndarray
    loo_residuals: np.ndarray

    @property
    def sd(self) -> float:
        """Root mean squared leave-one-out residual at the chosen penalty."""
        return float(np.sqrt(np.mean(self.loo_residuals**2)))

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Predicted targets for rows of ``x`` (R x n_features)."""
        return _check_new(x, self.coef.size) @ self.coef + self.intercept


def ridge_loo(x: np.ndarray, y: np.ndarray, alphas=BINARY_ALPHAS) -> RidgeFit:
    """Ridge regression with an unpenalized intercept, penalty by exact leave-one-out.

    Minimizes ``||y - w0 - x w||^2 + alpha ||w||^2`` (Bowyer et al. eq. 12)
    for every ``alpha`` from one SVD of the centred ``x`` and keeps the
    penalty with the smallest mean squared leave-one-out residual (the first
    on ties).

    Parameters
    ----------
    x : array_like of shape (n_models, n_features)
    y : array_like of shape (n_models,)
    alphas : array_like of positive floats, default :data:`BINARY_ALPHAS`

    Returns
    -------
    RidgeFit
    """
    x, y, alphas = _check_xy(x, y, alphas)
    m = x.shape[0]
    x_mean, y_mean = x.mean(axis=0), y.mean()
    u, s, vt = np.linalg.svd(x - x_mean, full_matrices=False)
    uty = u.T @ (y - y_mean)
    shrink = s**2 / (s**2 + alphas[:, None])  # (n_alphas, rank)
    fitted = (shrink * uty) @ u.T  # centred fitted values, one row per alpha
    # The intercept adds 1/m to every leverage: the centred columns are orthogonal to 1.
    leverage = 1.0 / m + shrink @ (u**2).T
    resid = (y - y_mean - fitted) / (1.0 - leverage)
    loo_mse = np.mean(resid**2, axis=1)
    best = int(np.argmin(loo_mse))
    coef = vt.T @ (s / (s**2 + alphas[best]) * uty)
    return RidgeFit(
        alpha=float(alphas[best]),
        coef=coef,
        intercept=float(y_mean - x_mean @ coef),
        alphas=alphas,
        loo_mse=loo_mse,
        loo_residuals=resid[best],
    )


def polynomial_kernel(a: np.ndarray, b: np.ndarray, *, degree: int = 2,
                      gamma: float = 1.0, coef0: float = 1.0) -> np.ndarray:
    """``(gamma <a_i, b_j> + coef0) ** degree`` for every row ``a_i`` of ``a``, ``b_j`` of ``b``."""
    return (gamma * (np.asarray(a, float) @ np.asarray(b, float).T) + coef0) ** degree


@dataclass(frozen=True)
class KernelRidgeFit:
    """Polynomial kernel ridge regression with its penalty chosen by leave-one-out.

    Attributes
    ----------
    alpha : float
        The chosen penalty.
    dual_coef : ndarray of shape (n_models,)
        ``(K + alpha I)^-1 y``.
    train : ndarray of shape (n_models, n_features)
        The training inputs (kernel evaluations need them).
    degree, gamma, coef0 : kernel parameters, see :func:`polynomial_kernel`.
    alphas, loo_mse, loo_residuals : as in :class:`RidgeFit`.
    """

    alpha: float
    dual_coef: np.ndarray
    train: np.ndarray
    degree: int
    gamma: float
    coef0: float
    alphas: np.ndarray
    loo_mse: np.ndarray
    loo_residuals: np.ndarray

    @property
    def sd(self) -> float:
        """Root mean squared leave-one-out residual at the chosen penalty."""
        return float(np.sqrt(np.mean(self.loo_residuals**2)))

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Predicted targets for rows of ``x`` (R x n_features)."""
        x = _check_new(x, self.train.shape[1])
        kernel = polynomial_kernel(x, self.train, degree=self.degree,
                                   gamma=self.gamma, coef0=self.coef0)
        return kernel @ self.dual_coef


def kernel_ridge_loo(
    x: np.ndarray,
    y: np.ndarray,
    alphas=BINARY_ALPHAS,
    *,
    degree: int = 2,
    gamma: float | None = None,
    coef0: float = 1.0,
) -> KernelRidgeFit:
    """Polynomial kernel ridge regression, penalty by exact leave-one-out.

    Solves ``(K + alpha I) a = y`` (Bowyer et al. eq. 13; no intercept, the
    kernel's constant term plays its part) for every ``alpha`` from one
    eigendecomposition of ``K`` and keeps the penalty with the smallest mean
    squared leave-one-out residual (the first on ties).

    Parameters
    ----------
    x : array_like of shape (n_models, n_features)
    y : array_like of shape (n_models,)
    alphas : array_like of positive floats, default :data:`BINARY_ALPHAS`
    degree : int, default 2
    gamma : float, optional
        Scale of the inner product; default ``1 / n_features`` (see the
        module docstring).
    coef0 : float, default 1.0

    Returns
    -------
    KernelRidgeFit
    """
    x, y, alphas = _check_xy(x, y, alphas)
    if degree < 1:
        raise ValueError(f"degree must be >= 1; got {degree}")
    gamma = 1.0 / x.shape[1] if gamma is None else float(gamma)
    kernel = polynomial_kernel(x, x, degree=degree, gamma=gamma, coef0=coef0)
    evals, evecs = np.linalg.eigh(kernel)
    # The kernel is positive semi-definite; negative eigenvalues are round-off.
    evals = np.clip(evals, 0.0, None)
    uty = evecs.T @ y
    shrink = evals / (evals + alphas[:, None])  # (n_alphas, n_models)
    fitted = (shrink * uty) @ evecs.T
    leverage = shrink @ (evecs**2).T
    resid = (y - fitted) / (1.0 - leverage)
    loo_mse = np.mean(resid**2, axis=1)
    best = int(np.argmin(loo_mse))
    dual = evecs @ (uty / (evals + alphas[best]))
    return KernelRidgeFit(
        alpha=float(alphas[best]),
        dual_coef=dual,
        train=x.copy(),
        degree=int(degree),
        gamma=gamma,
        coef0=float(coef0),
        alphas=alphas,
        loo_mse=loo_mse,
        loo_residuals=resid[best],
    )


class Refit(CoresetMethod):
    """A selector's questions with a (kernel) ridge predictor of the full-benchmark mean.

    Parameters
    ----------
    estimator : CoresetMethod
        The selector; only its questions are used. ``fit`` fits a clone of
        it (:func:`sklearn.base.clone`) with this method's ``n_questions``
        and ``random_state``.
    kind : {"+", "++"}
        ``"+"``: ridge (:func:`ridge_loo`); ``"++"``: degree-2 polynomial
        kernel ridge (:func:`kernel_ridge_loo`).
    n_questions : int, optional
        Questions to pick; None takes the estimator's.
    random_state : int, numpy.random.Generator or None, default None
        Seeds the selector; None takes the estimator's.
    alphas : array_like, optional
        Penalties to search; default the paper's grid for the source scores
        (:func:`paper_alphas`).
    gamma : float, optional
        Kernel scale for ``"++"``; default ``1 / n``.

    Attributes
    ----------
    name : str
        ``estimator.name + kind``, e.g. ``"mrmr++"``.
    estimator_ : CoresetMethod
        The fitted selector.
    selected_ : ndarray of int
        The selector's questions, in its order.
    model_ : RidgeFit or KernelRidgeFit
    sd_ : float
        Root mean squared leave-one-out residual, the standard deviation
        ``predict`` reports for every model.
    """

    def __init__(self, estimator, kind: str, *, n_questions: int | None = None,
                 random_state=None, alphas=None, gamma: float | None = None):
        super().__init__(n_questions, random_state=random_state)
        self.estimator = estimator
        self.kind = kind
        self.alphas = alphas
        self.gamma = gamma

    @property
    def name(self) -> str:
        return f"{self.estimator.name}{self.kind}"

    def _check_params(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(map(repr, KINDS))}; "
                             f"got {self.kind!r}")

    def _fit_settings(self):
        return inner_settings(self)

    def _fit(self, source: np.ndarray, n: int, rng) -> None:
        self.estimator_ = clone(self.estimator).set_params(n_questions=n, random_state=rng)
        self.estimator_.fit(source)
        self.selected_ = np.asarray(self.estimator_.selected_, dtype=int)
        alphas = paper_alphas(source) if self.alphas is None else self.alphas
        x, y = source[:, self.selected_], source.mean(axis=1)
        if self.kind == "+":
            self.model_ = ridge_loo(x, y, alphas)
        else:
            self.model_ = kernel_ridge_loo(x, y, alphas, degree=2, gamma=self.gamma)
        self.sd_ = self.model_.sd

    def _predict(self, x: np.ndarray):
        mean = self.model_.predict(x)
        return mean, np.full(mean.shape, self.sd_)


def make_refit(base_method, kind: str, **options) -> Refit:
    """Wrap a method to predict with ridge (``"+"``) or kernel ridge (``"++"``).

    ``base_method`` is a :class:`~benchsel.coreset._base.CoresetMethod` (a
    class is instantiated with no arguments); ``options`` go to
    :class:`Refit` (``n_questions``, ``random_state``, ``alphas``,
    ``gamma``).
    """
    if isinstance(base_method, type):
        base_method = base_method()
    return Refit(base_method, kind, **options)
