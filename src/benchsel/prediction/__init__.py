"""Predictors that are not the plain Gaussian conditional: matrix completion."""

from .choice import MethodChoice, choose_completer, choose_for_new_models, complete_auto
from .latent import Completion, interval, percent_scale
from .registry import COMPLETERS, complete, complete_new_rows
from .residuals import calibrate_completion

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
