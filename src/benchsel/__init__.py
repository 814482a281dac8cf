"""benchsel: choose which benchmarks (or questions) to run on a new model and
predict the rest with error bars.

The data flow is one way: :mod:`benchsel.io` reads a
:class:`~benchsel.matrix.ScoreMatrix`; :class:`~benchsel.gaussian.GaussianModel`
fits it, selects items and predicts the others; :mod:`benchsel.evaluation`
diagnoses; :mod:`benchsel.cli` is a thin layer on top.
"""

from .datasets import list_datasets, load_dataset
from .evaluation import Spectrum, spectrum
from .gaussian import (
    ConvergenceWarning,
    CovarianceEstimate,
    GaussianModel,
    Prediction,
    Selection,
    em_covariance,
    estimate_covariance,
    pairwise_covariance,
)
from .io import read_costs, read_scores
from .lmeval import read_lm_eval, write_samples
from .matrix import DataWarning, ScoreMatrix, Standardizer
from .plan import Plan, load_plan, plan_benchmarks, plan_mixed, plan_questions
from .selection import GreedyResult, greedy_entropy, greedy_mi, random_selection

__version__ = "0.1.0"

__all__ = [
    "ConvergenceWarning",
    "CovarianceEstimate",
    "DataWarning",
    "GaussianModel",
    "GreedyResult",
    "Prediction",
    "ScoreMatrix",
    "Selection",
    "Spectrum",
    "Standardizer",
    "em_covariance",
    "estimate_covariance",
    "greedy_entropy",
    "greedy_mi",
    "list_datasets",
    "load_dataset",
    "pairwise_covariance",
    "random_selection",
    "read_costs",
    "Plan",
    "load_plan",
    "plan_benchmarks",
    "plan_mixed",
    "plan_questions",
    "read_lm_eval",
    "read_scores",
    "spectrum",
    "write_samples",
    "__version__",
]
