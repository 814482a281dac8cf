"""What every greedy objective keeps: the forward conditional variances and the picks.

:class:`ForwardVariances` holds ``d_j = sigma^2(j | A)`` for the picks ``A``
so far and turns it into entropy gains and the residual variance fraction;
how ``d`` is updated after a pick (a Cholesky column on a dense covariance,
the factors' posterior on a factor one) is the subclass's.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ForwardVariances", "LOG_2PIE", "variance_floor"]

LOG_2PIE = float(np.log(2 * np.pi * np.e))


def variance_floor(diagonal: np.ndarray) -> float:
    # Conditional variances below 1e-10 of the average variance are rounding
    # noise: an item determined by others up to that level carries no
    # information we could measure.
    average = float(np.mean(diagonal)) if diagonal.size else 0.0
    return 1e-10 * max(average, np.finfo(float).tiny)


class ForwardVariances:
    """Forward conditional variances from the prior variances ``diagonal``; nothing picked."""

    name = "entropy"

    def __init__(self, diagonal: np.ndarray):
        self.d = np.asarray(diagonal, dtype=np.float64).copy()
        self.n = self.d.size
        self.floor = variance_floor(self.d)
        self.total = float(self.d.sum())
        self.selected = np.zeros(self.n, dtype=bool)
        self.n_refactorizations = 0

    def forward_variance(self) -> np.ndarray:
        return np.maximum(self.d, self.floor)

    def gains(self) -> np.ndarray:
        """Entropy gain of adding each item now (selected items: -inf)."""
        g = 0.5 * (LOG_2PIE + np.log(self.forward_variance()))
        return np.where(self.selected, -np.inf, g)

    def residual_fraction(self) -> float:
        return float(self.d[~self.selected].sum()) / self.total if self.total > 0 else 0.0
