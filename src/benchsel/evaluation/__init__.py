"""Evaluation protocols and metrics of fitted models and selections.

The analyses of a board (spectrum, discover, audit, budget, paired,
normality) are in :mod:`benchsel.analyses`.
"""

from ..splits import (
    Fold,
    dated_split,
    frontier_split,
    kfold_with_holdout,
    model_strength,
    strength_split,
)
from .completion import CompletionResult, CompletionRow, completion_masks, evaluate_completion
from .cv import (
    SCORINGS,
    CVResult,
    CVRow,
    cross_validate,
    dated,
    extrapolate,
    frontier,
    paper_protocol,
)
from .metrics import (
    coverage,
    gaussian_entropy,
    gaussian_mutual_information,
    interval_coverage,
    nogueira_stability,
    r2_against_zero,
)
from .oracle import OracleResult, OracleRow, oracle_subsets
from .splitters import Dated, Extrapolation, Frontier, KFold, PaperKFold, Splits

__all__ = [
    "Dated",
    "Extrapolation",
    "Frontier",
    "KFold",
    "PaperKFold",
    "Splits",
    "SCORINGS",
    "CVResult",
    "CVRow",
    "Fold",
    "CompletionResult",
    "CompletionRow",
    "completion_masks",
    "cross_validate",
    "paper_protocol",
    "dated",
    "dated_split",
    "evaluate_completion",
    "extrapolate",
    "frontier",
    "frontier_split",
    "gaussian_entropy",
    "gaussian_mutual_information",
    "coverage",
    "interval_coverage",
    "kfold_with_holdout",
    "model_strength",
    "nogueira_stability",
    "oracle_subsets",
    "OracleResult",
    "OracleRow",
    "r2_against_zero",
    "strength_split",
]
