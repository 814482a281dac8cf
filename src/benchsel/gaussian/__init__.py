"""Gaussian model of scores: covariance estimation, conditioning, the fitted model."""

from .conditional import conditional_moments
from .covariance import (
    COVARIANCE_METHODS,
    ConvergenceWarning,
    CovarianceEstimate,
    em_covariance,
    estimate_covariance,
    pairwise_covariance,
)
from .model import CALIBRATIONS, GaussianModel, NotFittedError
from .results import Prediction, Selection

__all__ = [
    "CALIBRATIONS",
    "COVARIANCE_METHODS",
    "ConvergenceWarning",
    "CovarianceEstimate",
    "GaussianCalibrator",
    "GaussianModel",
    "NotFittedError",
    "Prediction",
    "Selection",
    "conditional_moments",
    "em_covariance",
    "estimate_covariance",
    "pairwise_covariance",
]


def __getattr__(name: str):
    # GaussianCalibrator lives in benchsel.calibration.gaussian, which imports
    # this package: it is imported on first use (PEP 562).
    if name == "GaussianCalibrator":
        from ..calibration.gaussian import GaussianCalibrator

        globals()[name] = GaussianCalibrator
        return GaussianCalibrator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
