"""Predictors that are not the plain Gaussian conditional: matrix completion."""

from .completion import (
    COMPLETERS,
    Completion,
    MethodChoice,
    calibrate_completion,
    choose_completer,
    choose_for_new_models,
    complete,
    complete_auto,
    complete_new_rows,
    interval,
    percent_scale,
)

__all__ = [
    "COMPLETERS",
    "Completion",
    "MethodChoice",
    "calibrate_completion",
    "choose_completer",
    "choose_for_new_models",
    "complete",
    "complete_auto",
    "complete_new_rows",
    "interval",
    "percent_scale",
]
