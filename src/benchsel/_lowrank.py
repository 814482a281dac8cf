"""A covariance kept as low rank plus a diagonal, and its algebra through Woodbury.

``Sigma = W W^T + diag(psi)`` with ``W`` of shape ``(N, r)``: the diagonal,
the diagonal of the inverse and the factors' posterior precision cost
``O(N r^2)`` at most (conditioning on it is
:func:`benchsel.gaussian.conditional_moments`'s), and nothing ``N x N`` is formed unless
:meth:`FactorCovariance.dense` is asked for (and the memory budget allows
it). :mod:`benchsel.gaussian.factor` fits one; greedy selection
(:mod:`benchsel.selection.lowrank`) works from it directly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._memory import check_memory

__all__ = ["FactorCovariance"]


@dataclass(frozen=True, eq=False)
class FactorCovariance:
    """The covariance ``W W^T + diag(psi)``, kept as its factors.

    Attributes
    ----------
    loadings : ndarray of shape (N, r)
        ``W``.
    noise : ndarray of shape (N,)
        ``psi``, each positive: what of an item's variance its factors leave.
    """

    loadings: np.ndarray
    noise: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        n = self.noise.size
        return n, n

    @property
    def rank(self) -> int:
        return self.loadings.shape[1]

    def diagonal(self) -> np.ndarray:
        return np.einsum("ij,ij->i", self.loadings, self.loadings) + self.noise

    def dense(self, what: str = "the factor model's covariance") -> np.ndarray:
        """The ``N x N`` matrix, after checking that it fits the memory budget."""
        n = self.noise.size
        check_memory(3.0 * 8.0 * n * n, f"{what} ({n} x {n})",
                     "use a method that works from the factors (select does)")
        out = self.loadings @ self.loadings.T
        out[np.diag_indices(n)] += self.noise
        return out

    def factor_precision(self, items) -> np.ndarray:
        """``I + W_A^T diag(psi_A)^-1 W_A``: the precision of the factors given items ``A``."""
        w = self.loadings[items]
        return np.eye(self.rank) + (w / self.noise[items, None]).T @ w

    def inverse_diagonal(self, items=None) -> np.ndarray:
        """Diagonal of ``inv(Sigma[items, items])`` (all items by default), by Woodbury."""
        items = np.arange(self.noise.size) if items is None else np.asarray(items, np.intp)
        w = self.loadings[items] / self.noise[items, None]
        cov_f = np.linalg.inv(self.factor_precision(items))
        return 1.0 / self.noise[items] - np.einsum("ij,jk,ik->i", w, cov_f, w)
