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
from .model import GaussianModel, Prediction, Selection

__all__ = [
    "COVARIANCE_METHODS",
    "ConvergenceWarning",
    "CovarianceEstimate",
    "GaussianModel",
    "Prediction",
    "Selection",
    "conditional_moments",
    "em_covariance",
    "estimate_covariance",
    "pairwise_covariance",
]
