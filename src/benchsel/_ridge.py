"""Ridge regression with its penalty chosen by exact leave-one-out: the one implementation.

A ridge fit is a linear smoother, ``yhat = H y``, so the residual of row
``i`` when it is left out of the fit is ``(y_i - yhat_i) / (1 - H_ii)``,
exactly, with no refit. One decomposition serves every penalty ``alpha``:

* ridge with an unpenalized intercept (:func:`ridge_loo`): with the centred
  inputs ``X_c = U S V^T``, ``H = 1 1^T / m + U diag(s^2 / (s^2 + alpha)) U^T``
  (the centred columns are orthogonal to the ones, so the intercept adds
  ``1 / m`` to every leverage);
* kernel ridge without an intercept (:func:`kernel_ridge_loo`): with
  ``K = Q diag(lambda) Q^T``, ``H = Q diag(lambda / (lambda + alpha)) Q^T``.

The penalty kept is the one with the smallest mean squared leave-one-out
residual (the first on ties). ``alpha = 0`` is least squares: directions
whose singular value is below ``max(m, p) * eps`` times the largest one are
left out of the fit, as a pseudo-inverse does. A leverage is capped just
below 1 so that the division stays finite: a row alone in a direction of
the inputs has leverage 1 under least squares, the fit passes through it,
and its closed-form residual is 0/0 (it comes out as rounding noise; a
refit without the row could not identify that direction at all). Positive
penalties keep every leverage far below the cap.

Used by the coreset methods' predictors (``random-sampling-learn``,
``aipw``, ``anchor-points-predictor``, ``random-search-learn``, ``mrmr``, the
``+``/``++`` refits, the guarded ensemble) and by the aggregate-column check
(:mod:`benchsel.aggregates`, least squares).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "KernelRidgeFit",
    "RidgeFit",
    "kernel_ridge_loo",
    "polynomial_kernel",
    "ridge_loo",
]

#: Largest leverage used (see the module docstring).
_MAX_LEVERAGE = 1.0 - 1e-9


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
    if alphas.size == 0 or not np.all(np.isfinite(alphas) & (alphas >= 0)):
        raise ValueError(f"alphas must be non-negative and finite; got {alphas.tolist()}")
    return x, y, alphas


def _check_new(x, n_features: int) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.shape[1] != n_features:
        raise ValueError(
            f"expected scores of shape (models, {n_features}); got {x.shape}"
        )
    return x


def _shrinkage(spectrum: np.ndarray, alphas: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """``spectrum / (spectrum + alpha)`` per penalty (rows); least squares keeps ``kept``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        shrink = spectrum / (spectrum + alphas[:, None])
    unpenalized = alphas == 0
    if unpenalized.any():
        shrink[unpenalized] = kept.astype(float)
    return shrink


def _loo(basis: np.ndarray, shrink: np.ndarray, y: np.ndarray, coords: np.ndarray,
         base_leverage: float):
    """Leave-one-out residuals of the smoothers ``H = base + basis diag(shrink_a) basis^T``.

    Returns the mean squared residual per penalty, the index of the best
    and its residuals.
    """
    fitted = (shrink * coords) @ basis.T  # one row per penalty
    leverage = np.minimum(base_leverage + shrink @ (basis**2).T, _MAX_LEVERAGE)
    resid = (y - fitted) / (1.0 - leverage)
    loo_mse = np.mean(resid**2, axis=1)
    best = int(np.argmin(loo_mse))
    return loo_mse, best, resid[best]


@dataclass(frozen=True)
class _LeaveOneOutFit:
    """What a penalty search by leave-one-out leaves, whatever the model (see
    :class:`RidgeFit`)."""

    alpha: float
    alphas: np.ndarray
    loo_mse: np.ndarray
    loo_residuals: np.ndarray

    @property
    def sd(self) -> float:
        """Root mean squared leave-one-out residual at the chosen penalty."""
        return float(np.sqrt(np.mean(self.loo_residuals**2)))


@dataclass(frozen=True)
class RidgeFit(_LeaveOneOutFit):
    """Ridge regression fitted with its penalty chosen by leave-one-out.

    Attributes
    ----------
    alpha : float
        The chosen penalty.
    alphas : ndarray of shape (n_alphas,)
        The penalties searched.
    loo_mse : ndarray of shape (n_alphas,)
        Mean squared leave-one-out residual for each penalty.
    loo_residuals : ndarray of shape (n_models,)
        Leave-one-out residuals ``y_i - yhat_(-i)`` at ``alpha``.
    coef : ndarray of shape (n_features,)
    intercept : float
    """

    coef: np.ndarray
    intercept: float

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Predicted targets for rows of ``x`` (R x n_features)."""
        return _check_new(x, self.coef.size) @ self.coef + self.intercept


def ridge_loo(x: np.ndarray, y: np.ndarray, alphas) -> RidgeFit:
    """Ridge regression with an unpenalized intercept, penalty by exact leave-one-out.

    Minimizes ``||y - w0 - x w||^2 + alpha ||w||^2`` for every ``alpha``
    from one SVD of the centred ``x`` and keeps the penalty with the
    smallest mean squared leave-one-out residual (the first on ties); see
    the module docstring (``alpha = 0``: least squares).

    Parameters
    ----------
    x : array_like of shape (n_models, n_features)
    y : array_like of shape (n_models,)
    alphas : array_like of non-negative floats
        Penalties to search.

    Returns
    -------
    RidgeFit
    """
    x, y, alphas = _check_xy(x, y, alphas)
    m = x.shape[0]
    x_mean, y_mean = x.mean(axis=0), y.mean()
    u, s, vt = np.linalg.svd(x - x_mean, full_matrices=False)
    kept = s > max(x.shape) * np.finfo(float).eps * s.max(initial=0.0)
    centred = y - y_mean
    uty = u.T @ centred
    shrink = _shrinkage(s**2, alphas, kept)
    loo_mse, best, resid = _loo(u, shrink, centred, uty, 1.0 / m)
    alpha = alphas[best]
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = s / (s**2 + alpha) if alpha > 0 else np.where(kept, 1.0 / s, 0.0)
    coef = vt.T @ (gain * uty)
    return RidgeFit(
        alpha=float(alpha),
        coef=coef,
        intercept=float(y_mean - x_mean @ coef),
        alphas=alphas,
        loo_mse=loo_mse,
        loo_residuals=resid,
    )


def polynomial_kernel(a: np.ndarray, b: np.ndarray, *, degree: int = 2,
                      gamma: float = 1.0, coef0: float = 1.0) -> np.ndarray:
    """``(gamma <a_i, b_j> + coef0) ** degree`` for every row ``a_i`` of ``a``, ``b_j`` of ``b``."""
    return (gamma * (np.asarray(a, float) @ np.asarray(b, float).T) + coef0) ** degree


@dataclass(frozen=True)
class KernelRidgeFit(_LeaveOneOutFit):
    """Polynomial kernel ridge regression with its penalty chosen by leave-one-out.

    Attributes
    ----------
    alpha, alphas, loo_mse, loo_residuals
        As in :class:`RidgeFit`.
    dual_coef : ndarray of shape (n_models,)
        ``(K + alpha I)^-1 y``.
    train : ndarray of shape (n_models, n_features)
        The training inputs (kernel evaluations need them).
    degree, gamma, coef0 : kernel parameters, see :func:`polynomial_kernel`.
    """

    dual_coef: np.ndarray
    train: np.ndarray
    degree: int
    gamma: float
    coef0: float

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Predicted targets for rows of ``x`` (R x n_features)."""
        x = _check_new(x, self.train.shape[1])
        kernel = polynomial_kernel(x, self.train, degree=self.degree,
                                   gamma=self.gamma, coef0=self.coef0)
        return kernel @ self.dual_coef


def kernel_ridge_loo(
    x: np.ndarray,
    y: np.ndarray,
    alphas,
    *,
    degree: int = 2,
    gamma: float | None = None,
    coef0: float = 1.0,
) -> KernelRidgeFit:
    """Polynomial kernel ridge regression, penalty by exact leave-one-out.

    Solves ``(K + alpha I) a = y`` (no intercept: the kernel's constant term
    plays its part) for every ``alpha`` from one eigendecomposition of ``K``
    and keeps the penalty with the smallest mean squared leave-one-out
    residual (the first on ties).

    Parameters
    ----------
    x : array_like of shape (n_models, n_features)
    y : array_like of shape (n_models,)
    alphas : array_like of positive floats
        Penalties to search.
    degree : int, default 2
    gamma : float, optional
        Scale of the inner product; default ``1 / n_features``.
    coef0 : float, default 1.0

    Returns
    -------
    KernelRidgeFit
    """
    x, y, alphas = _check_xy(x, y, alphas)
    if not np.all(alphas > 0):
        raise ValueError(f"kernel ridge needs positive alphas; got {alphas.tolist()}")
    if degree < 1:
        raise ValueError(f"degree must be >= 1; got {degree}")
    gamma = 1.0 / x.shape[1] if gamma is None else float(gamma)
    kernel = polynomial_kernel(x, x, degree=degree, gamma=gamma, coef0=coef0)
    evals, evecs = np.linalg.eigh(kernel)
    # The kernel is positive semi-definite; negative eigenvalues are round-off.
    evals = np.clip(evals, 0.0, None)
    uty = evecs.T @ y
    shrink = evals / (evals + alphas[:, None])
    loo_mse, best, resid = _loo(evecs, shrink, y, uty, 0.0)
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
        loo_residuals=resid,
    )
