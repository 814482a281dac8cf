"""The models that hide cells when completion methods are compared or calibrated.

Random held-out models, and the strength splits that play new models beyond
the source models' range: for ``auto``'s choice (:mod:`.choice`) and for the
held-out residuals that calibrate a method (:mod:`.residuals`).
"""

from __future__ import annotations

import numpy as np

from ..calibration import MIN_CALIBRATION_MODELS
from ..matrix import model_strength
from ..splits import completion_masks, frontier_size


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
    tail = _far_tail(values.shape[0])
    strongest, weakest = order[values.shape[0] - tail:], order[:tail]
    return order, strongest[usable[strongest]], weakest[usable[weakest]]


def _strength_splits(values: np.ndarray, given: np.ndarray) -> list[tuple]:
    """The two strength splits of a matrix for a new model run on ``given`` items.

    The weakest half of the models with the strongest 30%, and the
    strongest half with the weakest 30%; the 30% are held out, and those of
    them that have a given item and another hide everything but their given
    cells. Returns ``(matrix, held, hidden)`` triples, the rows in the
    models' order; [] below :data:`~benchsel.calibration.MIN_CALIBRATION_MODELS` models.
    """
    if values.shape[0] < MIN_CALIBRATION_MODELS:
        return []
    observed = ~np.isnan(values)
    order, strongest, weakest = _tails(values, given)
    half, tail = values.shape[0] // 2, _far_tail(values.shape[0])
    out = []
    for fit, held, hiding in ((order[:half], order[-tail:], strongest),
                              (order[-half:], order[:tail], weakest)):
        keep = np.sort(np.concatenate([fit, held]))
        hidden = np.zeros((keep.size, values.shape[1]), dtype=bool)
        rows = np.isin(keep, hiding)
        hidden[rows] = observed[keep][rows] & ~given
        out.append((values[keep], np.isin(keep, held), hidden))
    return out


def _far_tail(n_models: int) -> int:
    """Models in each tail of the calibration's strength splits: 30%."""
    return (3 * n_models) // 10


def choice_folds(values: np.ndarray, given: np.ndarray, split: str, folds: int = 3,
                 seed=0) -> list[tuple[np.ndarray, np.ndarray]]:
    """The held-out models of :func:`~benchsel.prediction.choose_completer`, and their hidden cells.

    Which models a fold holds out does not depend on ``given``: ``random``
    splits every model into ``folds`` parts, ``near`` holds out the
    strongest and then the weakest 10% (at least 5) of the models by their
    strength over all their scores. So a method fitted on
    the models a fold keeps is fitted on the same rows whatever the new
    model was run on (:class:`~benchsel.prediction.fits.FitStore` keeps it).
    The hidden cells are those of the held-out models that can play the
    new model (they have a given item and another): everything but their
    given cells.

    Returns
    -------
    list of (held, hidden)
        ``held``, boolean of shape (M,); ``hidden``, boolean of the shape of
        ``values``. [] when too few models can hide cells: fewer than
        ``folds`` for ``random``, fewer than
        :data:`~benchsel.calibration.MIN_CALIBRATION_MODELS` models for ``near``.
    """
    n_models = values.shape[0]
    observed = ~np.isnan(values)
    usable = np.zeros(n_models, dtype=bool)
    usable[_usable_rows(observed, given)] = True
    if split == "random":
        if usable.sum() < folds:
            return []
        parts = np.array_split(np.random.default_rng(seed).permutation(n_models), folds)
    else:
        if n_models < MIN_CALIBRATION_MODELS:
            return []
        order = np.argsort(model_strength(values), kind="stable")
        tail = frontier_size(n_models)  # each tail is the size of the frontier
        parts = [order[n_models - tail:], order[:tail]]
    out = []
    for part in parts:
        held = np.zeros(n_models, dtype=bool)
        held[part] = True
        hidden = np.zeros_like(observed)
        hidden[held & usable] = observed[held & usable] & ~given
        out.append((held, hidden))
    return out


def _auto_masks(observed, folds, hide, seed) -> list[np.ndarray]:
    """Hidden cells for :func:`choose_completer` without given items (the ``complete``
    protocol's); [] when too few models."""
    try:
        return completion_masks(observed, hide, folds, max(2, min(8, observed.shape[1])), seed)
    except ValueError:
        return []
