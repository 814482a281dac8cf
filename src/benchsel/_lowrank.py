"""A covariance kept as low rank plus a diagonal, and its algebra through Woodbury.

``Sigma = W W^T + diag(psi)`` with ``W`` of shape ``(N, r)``: a column, the
diagonal of the inverse, a conditional and the factors' posterior all cost
``O(N r^2)`` at most, and nothing ``N x N`` is formed unless
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

    def column(self, j: int) -> np.ndarray:
        """``Sigma[:, j]`` in ``O(N r)``."""
        col = self.loadings @ self.loadings[j]
        col[j] += self.noise[j]
        return col

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

    def conditional(self, given, values) -> tuple[np.ndarray, np.ndarray]:
        """Mean shift and variance of every item given ``values`` (centred) on items ``given``.

        Returns ``(mean, variance)`` of shape ``(M, N)`` and ``(N,)``: the
        conditional mean of each item minus its unconditional mean, and its
        conditional variance (0 on the given items, where the mean is the
        given value). ``values`` has shape ``(M, len(given))``.
        """
        given = np.asarray(given, dtype=np.intp)
        values = np.atleast_2d(np.asarray(values, dtype=float))
        w = self.loadings
        cov_f = np.linalg.inv(self.factor_precision(given))
        f = values @ (w[given] / self.noise[given, None]) @ cov_f  # (M, r)
        mean = f @ w.T
        var = np.einsum("ij,jk,ik->i", w, cov_f, w) + self.noise
        mean[:, given] = values
        var[given] = 0.0
        return mean, var

    def inverse_diagonal(self, items=None) -> np.ndarray:
        """Diagonal of ``inv(Sigma[items, items])`` (all items by default), by Woodbury."""
        items = np.arange(self.noise.size) if items is None else np.asarray(items, np.intp)
        w = self.loadings[items] / self.noise[items, None]
        cov_f = np.linalg.inv(self.factor_precision(items))
        return 1.0 / self.noise[items] - np.einsum("ij,jk,ik->i", w, cov_f, w)
