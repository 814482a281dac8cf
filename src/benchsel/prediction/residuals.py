"""Held-out residuals of a completion method, and the calibration of its error bars.

The residuals come from the matrix the method will complete
(:func:`completion_residuals`); :func:`calibrate_completion` fits the
per-regime conformal multipliers of :mod:`benchsel.calibration` on them.
"""

from __future__ import annotations

import numpy as np

from ..calibration import Calibration, fit_calibration, range_excess
from ..matrix import Standardizer
from ..progress import report as _report
from ..splits import completion_masks
from .cache import CompletionCache
from .fits import INDUCTIVE, FitStore
from .holdout import _strength_splits, choice_folds
from .registry import complete

__all__ = ["calibrate_completion", "completion_residuals"]


def completion_residuals(
    values: np.ndarray, method: str, *, given=None, hide: float = 0.5, seed=0,
    cache: CompletionCache | None = None, fits: FitStore | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Held-out residuals of a completion method on the matrix it will complete.

    A third of the models hide cells and the method completes the rest:
    with ``given`` (a boolean mask of items, the pattern a new model was run
    on) the models of ``auto``'s first random fold
    (:func:`~benchsel.prediction.holdout.choice_folds`) that have a given
    item and another keep only their given cells, as a new model does, and
    a Gaussian-based method is fitted without them
    (:func:`~benchsel.prediction.fits.held_out_completion`; ``fits`` keeps
    those fits, which depend on the board alone); without ``given``, models
    with at least two observed scores hide a fraction ``hide`` of their
    cells, as in the ``complete`` protocol. The regime of a hiding model
    compares its strength on its kept cells with the other models'.

    With ``given`` two strength splits come on top, as for the Gaussian
    (:func:`benchsel.calibration.calibration_splits`): the weakest half of
    the models completes the strongest 30% from their given cells, and the
    strongest half the weakest 30%. A new model is often stronger than every
    source model; without these splits the ``outside`` regime learned only
    from the few held-out models that happened to lie outside the others'
    range, and a method's intervals covered 67-81% under the extrapolation
    protocol on MTEB (docs/experiments/reproduction.md).

    Returns
    -------
    residual, std : ndarray of shape (n,)
        ``y - mean`` and the method's standard deviation on hidden cells it
        predicted.
    excess : ndarray of shape (n,)
        How far the hiding model lies outside the others' strength range.
    """
    values = np.asarray(values, dtype=float)
    observed = ~np.isnan(values)
    empty = (np.empty(0), np.empty(0), np.empty(0))
    if given is None:
        try:
            mask = completion_masks(observed, hide, 3, min(8, values.shape[1]), seed)[0]
        except ValueError:  # too few models to hold any out
            return empty
        return _hidden_residuals(values, mask, method, cache)
    given = np.asarray(given, dtype=bool)
    folds = choice_folds(values, given, "random", 3, seed)
    if not folds:
        return empty
    fits = FitStore() if fits is None else fits
    splits = [(values, *folds[0]), *_strength_splits(values, given)]
    parts = []
    for done, (sub, held, mask) in enumerate(splits):
        _report(f"calibrating {method}'s intervals", done, len(splits))
        parts.append(_hidden_residuals(sub, mask, method, cache, held, fits))
    _report(f"calibrating {method}'s intervals", len(splits), len(splits))
    return tuple(np.concatenate(p) for p in zip(*parts))


def _hidden_residuals(values, mask, method, cache, held=None, fits=None):
    """Residuals, standard deviations and range excess on the cells ``mask`` hides.

    With ``held`` (the held-out rows) an :data:`~benchsel.prediction.fits.INDUCTIVE`
    method is fitted on the other rows (:func:`~benchsel.prediction.fits.held_out_completion`).
    """
    train = np.where(mask, np.nan, values)
    if held is not None and method in INDUCTIVE:
        res = (cache or CompletionCache()).held_out(values, held, mask, method, fits)
    else:
        res = complete(train, method, cache=cache, rows=mask.any(axis=1))
    hiding = mask.any(axis=1)
    z = Standardizer.fit(train).transform(train)
    outside = np.zeros(values.shape[0])
    outside[hiding] = range_excess(z[~hiding], z[hiding])
    cells = mask & ~np.isnan(res.mean)
    rows = np.nonzero(cells)[0]
    return values[cells] - res.mean[cells], res.std[cells], outside[rows]


def calibrate_completion(
    values: np.ndarray, method: str, *, level: float = 0.9, given=None, hide: float = 0.5,
    seed=0, cache: CompletionCache | None = None,
) -> Calibration:
    """Per-regime conformal multipliers of a completion method's standard deviation.

    From :func:`completion_residuals` (one held-out third of the models, and
    with ``given`` two strength splits; see :mod:`benchsel.calibration`).
    Uncalibrated when the matrix is too small.
    """
    residual, std, excess = completion_residuals(values, method, given=given, hide=hide,
                                                  seed=seed, cache=cache)
    return fit_calibration(residual, std, excess, level=level)
