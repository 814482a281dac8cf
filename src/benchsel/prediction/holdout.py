"""The models that hide cells when completion methods are compared or calibrated.

Random held-out models, and the strength splits that play new models beyond
the source models' range: for ``auto``'s choice (:mod:`.choice`) and for the
held-out residuals that calibrate a method (:mod:`.residuals`).
"""

from __future__ import annotations

import numpy as np

from ..calibration import MIN_MODELS
from ..matrix import model_strength
from ..splits import completion_masks


def _usable_rows(observed: np.ndarray, given: np.ndarray) -> np.ndarray:
    """Models that can play a new model run on ``given``: they have a given item and another."""
    return np.flatnonzero((observed & given).any(axis=1) & (observed & ~given).any(axis=1))


def _tails(values: np.ndarray, given: np.ndarray) -> tuple:
    """Models by strength, and the strongest and weakest 30% of them that can hide cells.

    Returns ``(order, strongest, weakest)``: all models, weakest first, and
    the two tails restricted to :func:`_usable_rows`.
    """
    usable = np.zeros(values.shape[0], dtype=bool)
    usable[_usable_rows(~np.isnan(values), given)] = True
    order = np.argsort(model_strength(values), kind="stable")
    tail = (3 * values.shape[0]) // 10
    strongest, weakest = order[values.shape[0] - tail:], order[:tail]
    return order, strongest[usable[strongest]], weakest[usable[weakest]]


def _strength_splits(values: np.ndarray, given: np.ndarray) -> list[tuple]:
    """The two strength splits of a matrix for a new model run on ``given`` items.

    The weakest half of the models with the strongest 30%, and the
    strongest half with the weakest 30%; the 30% keep only their given
    cells (those of them that have a given item and another). Returns
    ``(matrix, hidden)`` pairs, the rows in the models' order; [] below
    :data:`~benchsel.calibration.MIN_MODELS` models.
    """
    if values.shape[0] < MIN_MODELS:
        return []
    observed = ~np.isnan(values)
    order, strongest, weakest = _tails(values, given)
    half, tail = values.shape[0] // 2, (3 * values.shape[0]) // 10
    out = []
    for fit, held, hiding in ((order[:half], order[-tail:], strongest),
                              (order[-half:], order[:tail], weakest)):
        keep = np.sort(np.concatenate([fit, held]))
        hidden = np.zeros((keep.size, values.shape[1]), dtype=bool)
        rows = np.isin(keep, hiding)
        hidden[rows] = observed[keep][rows] & ~given
        out.append((values[keep], hidden))
    return out


def _extreme_masks(values: np.ndarray, given: np.ndarray) -> list[np.ndarray]:
    """Hidden cells of the strongest 30% of the models, then of the weakest 30%.

    Each hiding model keeps its ``given`` cells (those that have a given
    item and another); [] below :data:`~benchsel.calibration.MIN_MODELS` models.
    """
    if values.shape[0] < MIN_MODELS:
        return []
    observed = ~np.isnan(values)
    masks = []
    for rows in _tails(values, given)[1:]:
        mask = np.zeros_like(observed)
        mask[rows] = observed[rows] & ~given
        masks.append(mask)
    return masks


def _auto_masks(observed, given, folds, hide, seed) -> list[np.ndarray]:
    """Hidden cells for :func:`choose_completer` (see there); [] when too few models."""
    if given is None:
        try:
            return completion_masks(observed, hide, folds, max(2, min(8, observed.shape[1])),
                                    seed)
        except ValueError:
            return []
    given = np.asarray(given, dtype=bool)
    usable = _usable_rows(observed, given)
    if usable.size < folds:
        return []
    rng = np.random.default_rng(seed)
    masks = []
    for part in np.array_split(rng.permutation(usable), folds):
        mask = np.zeros_like(observed)
        mask[part] = observed[part] & ~given
        masks.append(mask)
    return masks
