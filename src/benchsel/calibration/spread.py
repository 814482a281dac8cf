"""The widest interval a prediction may have: what knowing nothing about a model gives.

A model that was run on nothing is predicted by each column's mean among
the source models, with the column's spread widened by the multiplier
:func:`~benchsel.calibration.unknown_calibration` measures on held-out
source models (random ones, and the strongest 30% against the weakest
half's moments, so that a model stronger than the sources is covered too).
A prediction from observed scores that is less sure than that claims less
knowledge than knowing nothing: its calibration multiplier was learned
from models unlike it (a column with five source models made a model look
"far beyond the range", x11 its standard deviation: a std of 172.7 on a
0-100 score, and differences of two models' scores of [-648, 719]).
:func:`limit_spread` caps every predicted cell's standard deviation at the
column's calibrated spread and says which cells it capped; the point
prediction keeps the method's mean, which knows where the model stands, so
a model at the frontier keeps its shift.
"""

from __future__ import annotations

import numpy as np

from ..matrix import column_moments
from .conformal import unknown_calibration

__all__ = ["limit_spread", "spread_limit"]


def spread_limit(values: np.ndarray, level: float = 0.9, seed=0) -> np.ndarray:
    """Per column, the standard deviation of a prediction that knows nothing of the model.

    The column's sample standard deviation among the source models times
    the multiplier of :func:`~benchsel.calibration.unknown_calibration` at
    ``level``; ``inf`` (no limit) for a column with fewer than two observed
    scores or no spread, and everywhere when the sources are too few to
    calibrate that multiplier.

    Parameters
    ----------
    values : ndarray of shape (M, N)
        Source scores in the units the prediction's standard deviation is
        in (NaN = missing).
    level : float, default 0.9
    seed : int, default 0

    Returns
    -------
    ndarray of shape (N,)
    """
    values = np.asarray(values, dtype=float)
    count, _, sd = column_moments(values)
    cal = unknown_calibration(values, level, seed)
    if not cal.calibrated:
        return np.full(values.shape[1], np.inf)
    return np.where((count > 1) & (sd > 0), cal.inside * sd, np.inf)


def limit_spread(std: np.ndarray, limit: np.ndarray, predicted: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Standard deviations capped at the column's :func:`spread_limit` on predicted cells.

    Parameters
    ----------
    std : ndarray of shape (R, N)
    limit : ndarray of shape (N,)
    predicted : ndarray of bool, shape (R, N)
        The cells to cap (given cells keep their own, a measurement's).

    Returns
    -------
    std : ndarray of shape (R, N)
    limited : ndarray of bool, shape (R, N)
        The cells whose standard deviation was the column's spread: the
        method knew no more than the column.
    """
    std = np.asarray(std, dtype=float)
    with np.errstate(invalid="ignore"):
        limited = np.asarray(predicted, dtype=bool) & (std > limit)
    return np.where(limited, np.broadcast_to(limit, std.shape), std), limited
