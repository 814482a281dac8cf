"""Predictors that are not the plain Gaussian conditional: matrix completion."""

from .completion import (
    COMPLETERS,
    Completion,
    complete,
    complete_new_rows,
    interval,
    percent_scale,
)

__all__ = [
    "COMPLETERS",
    "Completion",
    "complete",
    "complete_new_rows",
    "interval",
    "percent_scale",
]
