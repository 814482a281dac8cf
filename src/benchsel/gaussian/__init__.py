"""The Gaussian of scores: covariance estimation (EM, factor model, shrinkage), the
E-step, conditioning, and the training models' range.

The fitted model that selects and predicts with it is
:class:`benchsel.models.GaussianModel`.
"""

from ..exceptions import ConvergenceWarning
from .conditional import conditional_moments
from .covariance import (
    COVARIANCE_METHODS,
    CovarianceEstimate,
    em_covariance,
    estimate_covariance,
    pairwise_covariance,
)

__all__ = [
    "COVARIANCE_METHODS",
    "ConvergenceWarning",
    "CovarianceEstimate",
    "conditional_moments",
    "em_covariance",
    "estimate_covariance",
    "pairwise_covariance",
]
