"""Small dense linear-algebra helpers shared by estimation, selection and prediction.

Rules: solve rather than invert, except where the inverse itself is the
quantity needed (precision diagonals for mutual information); Cholesky first,
with a stated jitter and an eigendecomposition fallback for near-singular
blocks; symmetrize after updates; clamp variances at a floor.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

__all__ = [
    "EPS",
    "symmetrize",
    "psd_project",
    "shrink_to_identity",
    "cholesky",
    "inverse_diagonal",
    "spd_inverse",
]

EPS = np.finfo(np.float64).eps


def symmetrize(a: np.ndarray) -> np.ndarray:
    """``(a + a.T) / 2``: rounding makes updated covariances drift from symmetry."""
    return 0.5 * (a + a.T)


def psd_project(a: np.ndarray, floor: float) -> tuple[np.ndarray, bool]:
    """Clamp the eigenvalues of symmetric ``a`` at ``floor`` (> 0).

    Returns the projected matrix and whether anything changed. A Cholesky of
    ``a - floor I`` decides cheaply whether the clamp is needed, so the
    eigendecomposition runs only when some eigenvalue is below the floor.
    """
    n = a.shape[0]
    shifted = a - floor * np.eye(n)
    _, info = lapack.dpotrf(shifted, lower=1, clean=0)
    if info == 0:
        return a, False
    w, v = np.linalg.eigh(a)
    w = np.maximum(w, floor)
    return symmetrize((v * w) @ v.T), True


def shrink_to_identity(a: np.ndarray, alpha: float) -> np.ndarray:
    """Linear shrinkage ``(1 - alpha) a + alpha (tr(a)/N) I`` (trace-preserving).

    The formula of scikit-learn's ``shrunk_covariance`` (the tests check the
    two agree), written out so that fitting a model never imports scikit-learn.
    """
    if alpha <= 0:
        return a
    n = a.shape[0]
    out = (1.0 - alpha) * np.asarray(a, dtype=float)
    out.flat[:: n + 1] += alpha * np.trace(a) / n
    return out


def cholesky(a: np.ndarray, jitter: float = 0.0) -> tuple[np.ndarray, float]:
    """Lower Cholesky factor of symmetric ``a``, adding jitter only if needed.

    Tries ``a`` as given, then ``a + t I`` for ``t`` growing by 100x from
    ``max(jitter, 1e-12 * mean(diag a))`` until the factorization succeeds.

    Returns
    -------
    L : ndarray
        Lower-triangular factor (upper triangle zeroed).
    added : float
        The jitter that was added (0 when none was needed).
    """
    n = a.shape[0]
    if n == 0:
        return np.zeros((0, 0)), 0.0
    scale = max(float(np.mean(np.diag(a))), np.finfo(float).tiny)
    t = 0.0
    step = max(jitter, 1e-12 * scale)
    for _ in range(12):
        c, info = lapack.dpotrf(a + t * np.eye(n) if t else a, lower=1, clean=1)
        if info == 0:
            return c, t
        t = step if t == 0 else t * 100.0
    raise np.linalg.LinAlgError("matrix is not positive semidefinite even with jitter")


def spd_inverse(a: np.ndarray) -> tuple[np.ndarray | None, float]:
    """Inverse of symmetric positive definite ``a`` and its condition estimate.

    LAPACK ``potrf`` + ``potri`` (about ``2N^3/3`` flops) with the 1-norm
    condition estimate of ``pocon``. Returns ``(None, inf)`` when ``a`` is
    not numerically positive definite.
    """
    n = a.shape[0]
    if n == 0:
        return np.zeros((0, 0)), 1.0
    c, info = lapack.dpotrf(a, lower=1, clean=1)
    if info != 0:
        return None, np.inf
    anorm = float(np.abs(a).sum(axis=0).max())
    rcond, _ = lapack.dpocon(c, anorm, uplo="L")
    inv, info = lapack.dpotri(c, lower=1)
    if info != 0 or not rcond > 0:
        return None, np.inf
    inv = np.tril(inv) + np.tril(inv, -1).T
    return inv, 1.0 / rcond


def inverse_diagonal(a: np.ndarray, floor: float) -> tuple[np.ndarray, float]:
    """Diagonal of ``inv(a)`` for symmetric PSD ``a``, and its condition estimate.

    Cholesky when ``a`` is positive definite; otherwise an eigendecomposition
    with eigenvalues clamped at ``floor``, reported as an infinite condition
    number.
    """
    inv, cond = spd_inverse(a)
    if inv is not None:
        return np.diag(inv).copy(), cond
    w, v = np.linalg.eigh(a)
    w = np.maximum(w, floor)
    return (v**2) @ (1.0 / w), np.inf
