"""Analyses of a score matrix and of models' answers.

What a board says about itself, as opposed to how well a selection predicts
(:mod:`benchsel.evaluation`, the protocols): how many benchmarks it holds in
effect (:mod:`~benchsel.analyses.spectrum`), which benchmarks add
information (:mod:`~benchsel.analyses.discover`), which scores look wrong
(:mod:`~benchsel.analyses.audit`), how many questions a selected benchmark
needs (:mod:`~benchsel.analyses.budget`), the paired difference of two
models' answers (:mod:`~benchsel.analyses.paired`) and the normality the
Gaussian model assumes (:mod:`~benchsel.analyses.diagnostics`).
"""

from .audit import AuditBenchmark, AuditCell, AuditResult, audit, loo_residuals
from .budget import MAX_TOTAL_QUESTIONS, BudgetResult, BudgetRow, question_budget, rest_variance
from .diagnostics import NormalityReport, mardia, normality, shapiro_wilk_bh
from .discover import DiscoverResult, DiscoverRow, discover, novelty, read_correlation
from .paired import PairedDifference, paired_difference
from .spectrum import Spectrum, spectrum

__all__ = [
    "MAX_TOTAL_QUESTIONS",
    "AuditBenchmark",
    "AuditCell",
    "AuditResult",
    "BudgetResult",
    "BudgetRow",
    "DiscoverResult",
    "DiscoverRow",
    "NormalityReport",
    "PairedDifference",
    "Spectrum",
    "audit",
    "discover",
    "loo_residuals",
    "mardia",
    "normality",
    "novelty",
    "paired_difference",
    "question_budget",
    "read_correlation",
    "rest_variance",
    "shapiro_wilk_bh",
    "spectrum",
]
