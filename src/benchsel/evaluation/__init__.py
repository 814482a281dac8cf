"""Diagnostics and evaluation of fitted models and selections."""

from ..splits import Fold, frontier_split, kfold_with_holdout, model_strength, strength_split
from .audit import AuditResult, audit
from .completion import CompletionResult, CompletionRow, completion_masks, evaluate_completion
from .cv import SCORINGS, CVResult, CVRow, cross_validate, extrapolate, frontier
from .diagnostics import NormalityReport, mardia, normality, shapiro_wilk_bh
from .discover import DiscoverResult, DiscoverRow, discover, novelty, read_correlation
from .metrics import (
    coverage,
    gaussian_entropy,
    gaussian_mutual_information,
    interval_coverage,
    nogueira_stability,
    r2_against_zero,
)
from .oracle import OracleResult, OracleRow, oracle_subsets
from .spectrum import Spectrum, spectrum

__all__ = [
    "SCORINGS",
    "CVResult",
    "CVRow",
    "Fold",
    "Spectrum",
    "CompletionResult",
    "CompletionRow",
    "AuditResult",
    "audit",
    "DiscoverResult",
    "DiscoverRow",
    "discover",
    "novelty",
    "read_correlation",
    "completion_masks",
    "cross_validate",
    "evaluate_completion",
    "extrapolate",
    "frontier",
    "frontier_split",
    "gaussian_entropy",
    "gaussian_mutual_information",
    "coverage",
    "interval_coverage",
    "kfold_with_holdout",
    "mardia",
    "normality",
    "NormalityReport",
    "shapiro_wilk_bh",
    "model_strength",
    "nogueira_stability",
    "oracle_subsets",
    "OracleResult",
    "OracleRow",
    "r2_against_zero",
    "spectrum",
    "strength_split",
]
