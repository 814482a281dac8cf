"""benchsel: choose which benchmarks (or questions) to run on a new model and
predict the rest with error bars.

The data flow is one way: :mod:`benchsel.io` reads a
:class:`~benchsel.matrix.ScoreMatrix`; :class:`~benchsel.models.GaussianModel`
fits it, selects items and predicts the others; :mod:`benchsel.evaluation`
evaluates and :mod:`benchsel.analyses` diagnoses; :mod:`benchsel.cli` is a
thin layer on top.

The names below are imported on first use (PEP 562), so that importing
``benchsel`` -- and starting the command line -- costs nothing until a
name is needed.
"""

from __future__ import annotations

import importlib

from ._version import __version__

#: Public name -> the submodule that defines it.
_EXPORTS = {
    "ConvergenceWarning": "exceptions",
    "CovarianceEstimate": "gaussian",
    "GaussianModel": "models",
    "NotFittedError": "exceptions",
    "Prediction": "models",
    "Selection": "models",
    "em_covariance": "gaussian",
    "estimate_covariance": "gaussian",
    "pairwise_covariance": "gaussian",
    "DataWarning": "matrix",
    "ScoreMatrix": "matrix",
    "Standardizer": "matrix",
    "GreedyResult": "selection",
    "greedy_entropy": "selection",
    "greedy_mi": "selection",
    "random_selection": "selection",
    "Spectrum": "analyses",
    "spectrum": "analyses",
    "list_datasets": "datasets",
    "load_dataset": "datasets",
    "read_costs": "inputs",
    "read_scores": "io",
    "read_lm_eval": "lmeval",
    "write_samples": "lmeval",
    "Plan": "plan",
    "load_plan": "plan",
    "plan_benchmarks": "plan",
    "plan_mixed": "plan",
    "plan_questions": "plan",
    "Observations": "observations",
    "observe": "observations",
    "as_scores": "sources",
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'benchsel' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
