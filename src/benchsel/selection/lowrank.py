"""Greedy entropy and mutual information on a factor covariance, in ``O(N r^2)`` a pick.

The dense objectives (:mod:`.greedy`) keep an ``N x t`` Cholesky factor and,
for MI, the ``N x N`` inverse of the complement. With
``Sigma = W W^T + diag(psi)`` (:class:`~benchsel._lowrank.FactorCovariance`)
both sides reduce to ``r x r`` matrices:

* forward: given the picks ``A``, the factors' posterior covariance is
  ``C_A = inv(I + W_A^T diag(psi_A)^-1 W_A)`` and
  ``sigma^2(v | A) = w_v C_A w_v^T + psi_v``; a pick updates ``C_A`` by
  Sherman-Morrison;
* complement (MI): with ``R = V \\ A``, Woodbury gives
  ``inv(Sigma_RR)_vv = 1/psi_v - (w_v/psi_v) inv(K_R) (w_v/psi_v)^T`` with
  ``K_R = I + W_R^T diag(psi_R)^-1 W_R``; a pick subtracts its own term
  from ``K_R``.

The gains are those of the dense objectives on the dense matrix
(``tests/test_factor.py`` checks it), so :func:`~.greedy.run_greedy` runs
either unchanged.
"""

from __future__ import annotations

import numpy as np

from .._lowrank import FactorCovariance
from ._forward import LOG_2PIE, ForwardVariances

__all__ = ["FactorEntropyObjective", "FactorMutualInformationObjective"]


class FactorEntropyObjective(ForwardVariances):
    """Forward conditional variances ``sigma^2(j | A)`` from the factors' posterior."""

    def __init__(self, sigma: FactorCovariance):
        super().__init__(sigma.diagonal())
        self.sigma = sigma
        self.w = np.asarray(sigma.loadings, dtype=float)
        self.psi = np.asarray(sigma.noise, dtype=float)
        self.cov_f = np.eye(self.w.shape[1])  # the factors' posterior covariance given A

    def add(self, j: int) -> None:
        # Observing item j (variance psi_j around w_j f) is a rank-one update of C.
        cw = self.cov_f @ self.w[j]
        pivot = self.psi[j] + float(self.w[j] @ cw)
        self.cov_f = self.cov_f - np.outer(cw, cw) / pivot
        self.selected[j] = True
        self.d = np.einsum("ij,jk,ik->i", self.w, self.cov_f, self.w) + self.psi
        self.d[self.selected] = 0.0
        np.maximum(self.d, 0.0, out=self.d)

    def shift(self) -> float:
        """As :meth:`~.greedy.EntropyObjective.shift`, from the Woodbury inverse diagonal."""
        smallest = max(1.0 / float(self.sigma.inverse_diagonal().max()), self.floor)
        return -0.5 * (LOG_2PIE + np.log(smallest))


class FactorMutualInformationObjective(FactorEntropyObjective):
    """Adds ``sigma^2(v | V \\ A \\ v)`` from ``K_R``, the complement's factor precision."""

    name = "mi"

    def __init__(self, sigma: FactorCovariance):
        super().__init__(sigma)
        self.rest = np.arange(self.n)
        self.scaled = self.w / self.psi[:, None]  # w_v / psi_v
        self.k_rest = np.eye(self.w.shape[1]) + self.scaled.T @ self.w

    def complement_variance(self) -> np.ndarray:
        """``sigma^2(v | V \\ A \\ v)`` for every unselected ``v`` (in ``self.rest`` order)."""
        s = self.scaled[self.rest]
        precision = 1.0 / self.psi[self.rest] - np.einsum(
            "ij,ij->i", s @ np.linalg.inv(self.k_rest), s)
        return np.maximum(1.0 / np.maximum(precision, np.finfo(float).tiny), self.floor)

    def gains(self) -> np.ndarray:
        g = np.full(self.n, -np.inf)
        g[self.rest] = 0.5 * (np.log(self.forward_variance()[self.rest])
                              - np.log(self.complement_variance()))
        return g

    def add(self, j: int) -> None:
        super().add(j)
        self.rest = self.rest[self.rest != j]
        self.k_rest = self.k_rest - np.outer(self.scaled[j], self.w[j])
