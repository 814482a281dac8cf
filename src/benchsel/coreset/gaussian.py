"""benchsel's question-level method: a Gaussian model with low-rank-plus-diagonal covariance.

With ``N`` questions and ``M << N`` source models a full ``N x N`` covariance
is neither estimable nor storable. We fit ``Sigma = W W^T + D`` (``W`` the
top ``r`` principal directions of the centred source scores, ``D`` the
remaining per-question variance) and never form ``Sigma``.

The quantity to predict is the full-benchmark score ``f = mean_j x_j``. Under
the model, after running the questions ``A``,

    E[f | x_A]   = mean(mu) + (1/N) c_A^T Sigma_AA^{-1} (x_A - mu_A),   c = Sigma 1
    Var[f | x_A] = (1/N^2) 1^T R_A 1,
    R_A          = Sigma - Sigma_:A Sigma_AA^{-1} Sigma_A:

Used by the ``gaussian-greedy`` and ``gaussian-dr`` methods and inside the
default ``guarded-ensemble``; on its own, greedy selection fails under
extrapolation (see docs/experiments/question-level.md).

Selection is greedy on that variance: the question ``j`` that most reduces
``1^T R 1`` is the one maximizing ``(R 1)_j^2 / R_jj``. ``R`` is kept implicitly
by an incremental Cholesky factor of the selected columns (as in pivoted
Cholesky), so a step costs ``O(N (r + t))``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LowRankGaussian"]


@dataclass
class LowRankGaussian:
    """Low-rank-plus-diagonal Gaussian over questions, for predicting the mean score.

    Parameters
    ----------
    rank : int or None, default None
        Number of principal directions; None picks ``min(10, M // 4)``
        (at least 1).
    variance_floor : float, default 1e-4
        Smallest per-question residual variance kept in ``D``.
    """

    rank: int | None = None
    variance_floor: float = 1e-4

    def fit(self, scores: np.ndarray) -> LowRankGaussian:
        """Fit on source models' complete scores (M x N)."""
        x = np.asarray(scores, dtype=float)
        if np.isnan(x).any():
            raise ValueError("question-level scores must be complete for the low-rank model")
        m, n = x.shape
        if m < 3:
            raise ValueError(f"need at least 3 source models; got {m}")
        self.mean_ = x.mean(axis=0)
        centred = x - self.mean_
        rank = self.rank if self.rank is not None else max(1, min(10, m // 4))
        rank = min(rank, m - 1, n)
        u, s, vt = np.linalg.svd(centred, full_matrices=False)
        self.w_ = vt[:rank].T * (s[:rank] / np.sqrt(m - 1))  # (N, r)
        var = centred.var(axis=0, ddof=1)
        self.d_ = np.maximum(var - (self.w_**2).sum(axis=1), self.variance_floor)
        self.n_ = n
        self.c_ = self.w_ @ self.w_.sum(axis=0) + self.d_  # Sigma 1
        return self

    def _column(self, j: int) -> np.ndarray:
        col = self.w_ @ self.w_[j]
        col[j] += self.d_[j]
        return col

    def select(self, n_items: int) -> np.ndarray:
        """Greedy questions minimizing the posterior variance of the mean score."""
        n = self.n_
        if not 1 <= n_items <= n:
            raise ValueError(f"n must be in [1, {n}]; got {n_items}")
        diag = (self.w_**2).sum(axis=1) + self.d_  # R_jj
        r1 = self.c_.copy()  # R 1
        chol = np.zeros((n, n_items))
        chosen = np.zeros(n, dtype=bool)
        order = []
        for t in range(n_items):
            gain = np.where(chosen, -np.inf, r1**2 / np.maximum(diag, 1e-300))
            j = int(np.argmax(gain))
            col = self._column(j) - chol[:, :t] @ chol[j, :t]
            pivot = max(col[j], 1e-300)
            ell = col / np.sqrt(pivot)
            chol[:, t] = ell
            diag -= ell**2
            r1 -= ell * ell.sum()
            chosen[j] = True
            order.append(j)
        return np.array(order, dtype=np.intp)

    def predict_mean(self, x_selected: np.ndarray, selected: np.ndarray):
        """Mean score (and its standard deviation) of each model from its selected answers.

        Parameters
        ----------
        x_selected : ndarray (R, n)
            Scores on the selected questions, columns in ``selected`` order.
        selected : ndarray of int (n,)

        Returns
        -------
        mean, std : ndarray (R,)
        """
        a = np.asarray(selected)
        sigma_aa = self.w_[a] @ self.w_[a].T + np.diag(self.d_[a])
        c_a = self.c_[a]
        weights = np.linalg.solve(sigma_aa, c_a)  # Sigma_AA^{-1} c_A
        resid = np.asarray(x_selected, dtype=float) - self.mean_[a]
        mean = self.mean_.mean() + resid @ weights / self.n_
        total = self.c_.sum()  # 1^T Sigma 1
        var = max(total - c_a @ weights, 0.0) / self.n_**2
        return mean, np.full(mean.shape, np.sqrt(var))
