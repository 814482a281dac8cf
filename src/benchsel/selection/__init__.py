"""Choosing which items to run: greedy entropy / mutual information with constraints."""

from .greedy import (
    OBJECTIVES,
    EntropyObjective,
    GreedyResult,
    MutualInformationObjective,
    greedy_entropy,
    greedy_mi,
    random_selection,
    run_greedy,
)

__all__ = [
    "OBJECTIVES",
    "EntropyObjective",
    "GreedyResult",
    "MutualInformationObjective",
    "greedy_entropy",
    "greedy_mi",
    "random_selection",
    "run_greedy",
]
