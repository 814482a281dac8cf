"""The held-out sets calibration measures a predictor on."""

from __future__ import annotations

import numpy as np

from ..splits import Fold, strength_split

__all__ = ["MAX_MODELS", "MIN_CALIBRATION_MODELS", "calibration_splits"]

#: Fewest source models for calibration; below it intervals stay uncalibrated.
MIN_CALIBRATION_MODELS = 10
#: Calibration splits are drawn from at most this many source models (a seeded subsample).
MAX_MODELS = 2000


def calibration_splits(
    values: np.ndarray, folds: int = 3, seed=0, max_models: int | None = MAX_MODELS
) -> list[Fold]:
    """Held-out sets for calibration: random folds plus two strength splits.

    ``folds`` random folds over the models (each held out once), then fit on
    the weakest half and hold out the strongest 30%, and fit on the strongest
    half and hold out the weakest 30% (strength as in
    :func:`~benchsel.matrix.model_strength`). Returns no split for fewer than
    :data:`MIN_CALIBRATION_MODELS` models.

    With more than ``max_models`` models the splits are made within a
    random subsample of that many (``None``: all). Every split refits the
    model, so calibration would otherwise cost five fits on thousands of
    models; 2,000 models still hold out hundreds per split, and fits on
    fewer models than the real one err a little more, which can only widen
    the intervals.
    """
    values = np.asarray(values, dtype=float)
    has_row = ~np.isnan(values).all(axis=1)
    if has_row.sum() < MIN_CALIBRATION_MODELS:
        return []
    rows = np.flatnonzero(has_row)
    rng = np.random.default_rng(seed)
    if max_models is not None and rows.size > max_models:
        # Drawn before the folds' permutation, so smaller boards split as before.
        rows = np.sort(rng.choice(rows, max_models, replace=False))
    out = []
    for f, part in enumerate(np.array_split(rng.permutation(rows), folds)):
        out.append(Fold(f, np.sort(np.setdiff1d(rows, part)), np.sort(part)))
    sub = values[rows]
    for sign in (1.0, -1.0):
        split = strength_split(sign * sub)
        out.append(Fold(len(out), rows[split.train], rows[split.validation]))
    return out
