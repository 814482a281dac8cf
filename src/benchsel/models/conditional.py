"""The Gaussian conditional's own prediction of new rows for a fitted
:class:`~benchsel.models.GaussianModel`: conditioning (with measurement noise),
the frontier correction, the calibrated interval and the score bounds."""

from __future__ import annotations

import numpy as np

from .._patterns import unique_rows
from ..bounds import clip_to_bounds, truncated_interval, truncated_std
from ..calibration import limit_spread
from ..gaussian.conditional import conditional_moments
from ..gaussian.covariance import working_covariance
from .results import Prediction

__all__ = ["frontier_correction", "noise_variances", "predict_conditional"]


def predict_conditional(model, models: list, x: np.ndarray, level: float,
                        noise: np.ndarray | None, extrapolation: list) -> Prediction:
    """The Gaussian conditional's prediction of rows ``x`` (original units), with its
    frontier correction, calibrated interval and score bounds."""
    std, transform = model.standardizer_, model.transform_
    z = std.transform(transform.forward(x))
    mu_z, var_z = conditional_moments(
        z, model.estimate_.mean, working_covariance(model.estimate_), ridge=model.ridge,
        noise=noise)
    shift = frontier_correction(model, z, var_z)
    mu_z = mu_z + shift
    center = std.inverse(mu_z)
    calibration = model._calibrate(z, level)
    for record, moved in zip(calibration, (shift != 0).any(axis=1)):
        record["frontier_shift"] = bool(moved)
    factor = np.array([c["multiplier"] for c in calibration])[:, None]
    # A cell measured with noise keeps its own error: calibration is of
    # predictions of items not run.
    factor = np.where(np.isnan(x), factor, 1.0)
    spread, limited = limit_spread(np.sqrt(var_z) * std.scale * factor,
                                   model._spread_limit(level), np.isnan(x))
    # Cells measured with noise are predicted like the unobserved ones.
    observed = ~np.isnan(x) if noise is None else ~np.isnan(x) & (noise == 0)
    if transform.name == "none":
        mean, low, high = truncated_interval(
            np.where(observed, x, center), spread, observed, *model.bounds_, level,
            center_std=np.sqrt(var_z) * std.scale)
        reported = np.where(observed, spread, truncated_std(center, spread, *model.bounds_))
    else:
        from scipy.special import ndtri  # here: `select` never needs it

        # The transform is monotone: interval ends map through it (and
        # its range keeps them near the bounds); the standard deviation
        # by the delta method at the centre.
        half = ndtri(0.5 + level / 2) * spread
        mean, low, high = clip_to_bounds(
            [
                np.where(observed, x, transform.inverse(center)),
                np.where(observed, x, transform.inverse(center - half)),
                np.where(observed, x, transform.inverse(center + half)),
            ],
            observed,
            *model.bounds_,
        )
        # No distribution inside the bounds spreads more than half their width.
        reported = np.minimum(spread * transform.slope(center),
                              (model.bounds_[1] - model.bounds_[0]) / 2)
    return Prediction(
        calibration=calibration,
        extrapolation=extrapolation,
        models=models,
        items=list(model.items_),
        mean=mean,
        std=reported,
        low=low,
        high=high,
        observed=observed,
        level=float(level),
        limited=limited,
    )


def frontier_correction(model, z: np.ndarray, var_z: np.ndarray) -> np.ndarray:
    """Per row and item, the conditional mean's correction in model units.

    Rows at the frontier of the training models (:meth:`GaussianModel._frontier_rows`)
    are moved by the bias the frontier split of the calibrator measured
    (:meth:`GaussianCalibrator.frontier_shift`), times their own
    conditional standard deviation; other rows, and every row when
    calibration is off, by 0.
    """
    out = np.zeros_like(z)
    top = model._frontier_rows(z)
    if not top.any():
        return out
    patterns, inverse = unique_rows(~np.isnan(z[top]))
    rows = np.flatnonzero(top)
    for g, pattern in enumerate(patterns):
        members = rows[inverse == g]
        out[members] = model._gaussian_frontier_shift(pattern) * np.sqrt(var_z[members])
    return out


def noise_variances(model, observed_std, x: np.ndarray, method: str) -> np.ndarray | None:
    """Measurement variances in standardized units, or None when every score is exact."""
    if observed_std is None:
        return None
    if method != "gaussian" or model.transform_.name != "none":
        raise ValueError("observed_std works with the gaussian method and no transform")
    sd = np.asarray(observed_std, dtype=float)
    if sd.shape != x.shape:
        raise ValueError(f"observed_std must have shape {x.shape} (new models x the "
                         f"model's items); got {sd.shape}")
    sd = np.where(np.isnan(x), 0.0, sd)
    if not (np.all(np.isfinite(sd)) and np.all(sd >= 0)):
        raise ValueError("observed_std must be finite and non-negative where scores are "
                         "observed")
    return (sd / model.standardizer_.scale) ** 2
