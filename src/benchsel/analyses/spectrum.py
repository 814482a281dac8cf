"""Spectral diagnostic (Smola 2026, Sec. 4.3 and 5.2, Lemma 1).

How many items are needed? The eigenvalues of the estimated correlation
matrix say how fast variance is explained by *any* k directions; the
residual trace of greedy entropy (pivoted Cholesky) says how fast it is
explained by k actual items. The eigenvalue tail is a lower bound for the
latter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..selection.greedy import greedy_entropy

__all__ = ["Spectrum", "spectrum"]

LEVELS = (0.90, 0.95, 0.99)


@dataclass(frozen=True)
class Spectrum:
    """Eigen-decay of a correlation matrix beside the greedy residual trace.

    Attributes
    ----------
    eigenvalues : ndarray of shape (N,)
        Descending eigenvalues of ``R = D^{-1/2} Sigma D^{-1/2}``.
    residual_fraction : ndarray of shape (N,)
        ``1 - rho(k)`` for k = 1..N, with ``rho(k) = sum_{j<=k} lambda_j / tr R``:
        the lower bound on the residual variance of any k items.
    greedy_residual : ndarray of shape (N,)
        ``tr(R - L_k L_k^T) / tr R`` of greedy entropy for k = 1..N.
    greedy_items : list
        The greedy entropy order (names when given).
    k_for : dict
        Smallest k with explained variance >= 0.90 / 0.95 / 0.99 (eigenvalues).
    """

    eigenvalues: np.ndarray
    residual_fraction: np.ndarray
    greedy_residual: np.ndarray
    greedy_items: list
    k_for: dict

    def to_frame(self):
        """Per ``k = 1..N`` as a :class:`pandas.DataFrame`: the k-th eigenvalue, the bound
        on any k items' residual variance, greedy entropy's residual and its k-th item."""
        import pandas as pd

        n = len(self.eigenvalues)
        items = list(self.greedy_items) + [None] * (n - len(self.greedy_items))
        return pd.DataFrame({"eigenvalue": self.eigenvalues,
                             "residual_bound": self.residual_fraction,
                             "greedy_residual": self.greedy_residual,
                             "greedy_item": items[:n]},
                            index=pd.RangeIndex(1, n + 1, name="k"))

    def to_dict(self) -> dict:
        return {
            "eigenvalues": [float(v) for v in self.eigenvalues],
            "residual_fraction": [float(v) for v in self.residual_fraction],
            "greedy_residual": [float(v) for v in self.greedy_residual],
            "greedy_items": list(self.greedy_items),
            "k_for_explained": {f"{int(round(100 * lvl))}%": k for lvl, k in self.k_for.items()},
        }


def spectrum(sigma: np.ndarray, names=None) -> Spectrum:
    """The spectral diagnostic of a covariance matrix.

    Parameters
    ----------
    sigma : ndarray of shape (N, N)
        Covariance (any scale; it is converted to a correlation matrix).
    names : sequence of str, optional
        Item names for ``greedy_items``.
    """
    sigma = np.asarray(sigma, dtype=np.float64)
    d = np.sqrt(np.diag(sigma))
    if np.any(d <= 0):
        raise ValueError("sigma has a zero variance; the correlation is undefined")
    corr = sigma / np.outer(d, d)
    corr = 0.5 * (corr + corr.T)
    eig = np.clip(np.linalg.eigvalsh(corr)[::-1], 0.0, None)
    total = float(np.trace(corr))
    residual = np.clip(1.0 - np.cumsum(eig) / total, 0.0, 1.0)
    n = corr.shape[0]
    greedy = greedy_entropy(corr, n)
    k_for = {lvl: int(np.argmax(residual <= 1 - lvl + 1e-12) + 1) for lvl in LEVELS}
    order = greedy.indices.tolist()
    return Spectrum(
        eigenvalues=eig,
        residual_fraction=residual,
        greedy_residual=greedy.residual_variance,
        greedy_items=[names[j] for j in order] if names is not None else order,
        k_for=k_for,
    )
