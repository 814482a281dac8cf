"""The fitted model's side of ``auto``: the memo of its decisions and the fits they share.

A model's :attr:`~benchsel.models.GaussianModel.auto_memo` starts from a
bundled board's shipped fits, takes the model's own fit of its board where
``auto``'s completion methods would make the same one, and tells the store
the board's factor-model options (:func:`new_memo`); :func:`prepare` makes
the decisions for a pattern of given benchmarks at once (plans store them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..calibration import measures_frontier
from ..prediction.cache import CompletionCache
from ..prediction.choice import choose_for_new_models
from ..prediction.fits import GaussianFit, new_row_covariance
from ..prediction.latent import column_prior
from ..prediction.memo import AutoMemo
from ..prediction.shipped import shipped_fits
from .routing import calibrate_completion, method_frontier_shift

__all__ = ["adopt_own_fit", "fits_are_autos", "new_memo", "prepare", "share_board_options",
           "shared_fits"]


def new_memo(model) -> AutoMemo:
    """A fitted ``model``'s first memo: the shipped fits of a bundled board, the model's
    own fit adopted where it is ``auto``'s, the board's factor options shared."""
    memo = AutoMemo()
    shipped = shipped_fits(model.scores_)  # a bundled board's fits, made once
    if shipped is not None:
        memo.fits = shipped
    adopt_own_fit(model, memo.fits)
    share_board_options(model, memo.fits)
    return memo


def share_board_options(model, store) -> None:
    """Where ``model``'s fit of its board is a factor model, every factor fit of
    ``store`` keeps its rank and prior (a fold choosing them again costs eight fits),
    and where that is because the board is too wide for EM, every fit of its rows is
    a factor model (:attr:`~benchsel.prediction.fits.FitStore.board_covariance`)."""
    if not hasattr(model.estimate_, "factors"):
        return
    store.factor_options = {"rank": model.estimate_.rank, "prior": model.estimate_.prior}
    if new_row_covariance(model.scores_.values) == "factor":
        store.board_covariance = "factor"


def fits_are_autos(model) -> bool:
    """Whether ``model`` fits as ``auto``'s completion methods fit (the raw scores
    standardized, the default estimator and options): then a fit of the same rows is
    the same fit. Not for the factor model, whose splits keep the full fit's rank."""
    defaults = type(model)()
    same = all(getattr(model, name) == getattr(defaults, name)
               for name in ("covariance", "floor", "max_iter", "tol", "shrinkage"))
    return (same and model.transform_.name == "none"
            and not hasattr(model.estimate_, "factors"))


def shared_fits(model):
    """``(scores, FitStore)`` when the calibration's splits can be ``auto``'s fits
    (:class:`~benchsel.models.calibrator.GaussianCalibrator`'s ``shared``), else None."""
    return (model.scores_.values, model.auto_memo.fits) if fits_are_autos(model) else None


def adopt_own_fit(model, store) -> None:
    """Give ``store`` ``model``'s fit of its board where ``auto``'s completion methods
    would make the same one (:func:`~benchsel.prediction.fits.new_row_covariance`):
    ``em-shrink`` under the default options and no transform, the same EM on the same
    standardized scores (they agree to rounding; on MERGED, where EM stops at its cap,
    to 1e-6). One EM fit fewer on a board's first prediction."""
    values = model.scores_.values
    if (not fits_are_autos(model) or model.estimate_.method != "em-shrink"
            or new_row_covariance(values) != "em-shrink"):
        return
    std = model.standardizer_
    prior = column_prior(values)
    store.adopt(values, "em-shrink", GaussianFit.from_arrays({
        "std_mean": std.mean, "std_scale": std.scale, "std_constant": std.constant,
        "fallback_mean": prior[0], "fallback_std": prior[1],
        "mean": model.estimate_.mean, "covariance": model.estimate_.covariance}))


def prepare(model, given: Sequence[str]) -> None:
    """:meth:`GaussianModel.prepare_auto <benchsel.models.GaussianModel.prepare_auto>`
    of the fitted ``model``."""
    model._check_fitted()
    pattern = np.zeros(len(model.items_), dtype=bool)
    pattern[model.scores_.item_indices(model._known(given, "given benchmarks", stacklevel=5),
                                       "benchmark")] = True
    if not pattern.any():
        return
    measures = model.calibration != "none" and measures_frontier(model._z)
    if model.calibration != "none":  # the Gaussian's own calibration, kept for predict
        model._calibrate(np.where(pattern, 0.0, np.nan)[None, :], 0.9)
    if measures:  # and its shift for a model at the top of the sources
        model._gaussian_frontier_shift(pattern)
    if model.transform_.name != "none":  # auto is the Gaussian there
        return
    x = np.where(pattern, np.nanmean(model.scores_.values, axis=0), np.nan)[None, :]
    cache = CompletionCache()
    # One new model inside the range, one beyond it.
    choices = choose_for_new_models(model.scores_.values, pattern, [0.0, np.inf],
                                    cache=cache, memo=model.auto_memo)
    for method in dict.fromkeys(c.method for c in choices):
        if method != "gaussian":
            calibrate_completion(model, x, method, 0.9, cache)
            if measures:  # the shift a model at the top of the sources gets
                method_frontier_shift(model, pattern, method, cache)
