"""Gaussian model of scores: covariance estimation, conditioning, the fitted model."""

from .calibrate import GaussianCalibrator
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
