"""A completion method's bias at the top of the source models.

The Gaussian conditional has a frontier correction
(:meth:`benchsel.models.GaussianCalibrator.frontier_shift`): its mean
falls short on the strongest source models when they are predicted from
the others, and a new model at the sources' frontier is moved by that
shortfall. :func:`completion_frontier_shift` measures the same for a
completion method, on the split ``auto``'s ``near`` choice holds out (the
strongest 10% of the sources, at least 5, each given only the new model's
items and predicted from the others: :func:`~.holdout.choice_folds`), so
that a model at the frontier keeps the method ``auto`` chose for it, with
that method's own correction. Before, such a model was handed to the
shifted Gaussian whatever ``auto`` chose; on open_llm_v2 keeping the choice
gained up to 0.12 R² under the extrapolation protocol and closed the
frontier's k = 5 gap to ``gp`` (docs/experiments/reproduction.md, "Each
method with its own frontier shift").
"""

from __future__ import annotations

import numpy as np

from ..calibration import clear_column_bias, measures_frontier
from .cache import CompletionCache
from .choice import held_out_cells
from .fits import FitStore
from .holdout import choice_folds

__all__ = ["completion_frontier_shift"]


def completion_frontier_shift(values: np.ndarray, given, method: str, *,
                              cache: CompletionCache | None = None, fits=None) -> np.ndarray:
    """Per item, ``method``'s mean residual on the strongest sources, where it is clear.

    The strongest 10% of the source models (at least 5) that have a given
    item and another are predicted from the others, given only the
    ``given`` items, as a new model is. Per predicted item the mean of
    their residuals (score minus prediction) is returned where at least
    :data:`~benchsel.calibration.MIN_CELLS` of them have the item and the
    mean is more than two standard errors from 0, as the Gaussian's own
    shift is; elsewhere 0. All 0 when the sources are too few to hold
    that many strong models (:func:`~benchsel.calibration.measures_frontier`).

    Parameters
    ----------
    values : ndarray of shape (M, N)
        The source scores (NaN = missing), in the units ``method`` completes.
    given : array-like of bool, shape (N,)
    method : str
        A completion method (:data:`~benchsel.prediction.COMPLETERS`, not ``auto``).
    cache : CompletionCache, optional
        Shared with ``auto``'s ``near`` choice, which makes the same predictions.
    fits : FitStore, optional

    Returns
    -------
    ndarray of shape (N,)
        In the units of ``values``; 0 for the given items.
    """
    values = np.asarray(values, dtype=float)
    given = np.asarray(given, dtype=bool)
    shift = np.zeros(values.shape[1])
    if not given.any() or not measures_frontier(values):
        return shift
    folds = choice_folds(values, given, "near")
    if not folds or not folds[0][1].any():
        return shift
    held, hidden = folds[0]  # the strongest tail; the second is the weakest
    cache = cache or CompletionCache()
    fits = FitStore() if fits is None else fits
    residual = np.full(values.shape, np.nan)
    residual[hidden] = values[hidden] - held_out_cells(values, held, hidden, method, cache, fits)
    return clear_column_bias(residual)  # 0 on the given items: no held-out cell there
