"""Calibrated error bars: conformal multipliers of a predictor's standard deviation.

A predictor's own standard deviation (the Gaussian conditional variance, a
completion method's residual spread) ignores that its parameters were
estimated from a few hundred models, and it says nothing about a new model
that is stronger than every model it was fitted on. Calibration measures
how wrong the predictor is on models it did not see and widens (or narrows)
its intervals to match:

1. Hold out source models -- random folds, plus *strength splits* that fit
   on the weakest models and predict the strongest (and the reverse), so
   that the held-out set contains models outside the range of the fit.
2. For every held-out cell take the normalized residual
   ``|y - mean| / std``.
3. Split the cells by *regime*: ``outside`` when the held-out model's
   strength on the items it was given lies beyond every training model's
   strength on the same items, ``inside`` otherwise.
4. Per regime, the multiplier is the conformal quantile of the normalized
   residuals at ``level`` (the ``ceil((n + 1) level)``-th smallest of ``n``),
   divided by the Gaussian quantile ``z_{(1 + level) / 2}``.

A new model's interval is ``mean +- z std * multiplier(regime)``, the regime
judged the same way against the full source set. Beyond the range the
multiplier is the larger of two, each calibrated on the outside cells: a
constant, and one proportional to ``1 + e``, where the *excess* ``e`` is how
far beyond the range the model lies (in standard deviations of the training
models' strengths) -- so a model further out than any held-out one gets
wider intervals still. The constant is taken from the held-out cells at
most as far out as the new model (the nearest eighth of them, at least
30, then two eighths, ..., ``Calibration.outside_steps``): the strength
splits hold out models far beyond their fit, and a new checkpoint just
past the top of its sources is calibrated by those that lay about as far
out. This is Mondrian (category
-conditional) split-conformal calibration (Vovk et al. 2005): coverage holds
within each regime when new models resemble its held-out ones, and the
``outside`` regime, learned from models that really lay beyond their fit,
is what keeps intervals honest under extrapolation. An ``outside``
multiplier is never smaller than the ``inside`` one, and with fewer than
``min_cells`` outside cells it is the pooled one. (Either outside multiplier
alone under-covers some bundled board under extrapolation: the constant one
open_llm_v2 and WildBench, the growing one MTEB and HELM Lite; the larger
of the two covers both, at the price of wider intervals where the constant
one sufficed.)

A new model with no observed score has no regime: nothing places it among
the source models. :func:`unknown_calibration` gives it the multiplier a
model beyond the range needs.

Modules: :mod:`~benchsel.calibration.conformal` (the multipliers),
:mod:`~benchsel.calibration.regimes` (inside or beyond the fitted range),
:mod:`~benchsel.calibration.splits` (the held-out sets) and
:mod:`~benchsel.calibration.spread` (the widest interval). The calibrators
that use them sit with what they calibrate, a layer up:
:class:`~benchsel.models.GaussianCalibrator` (the Gaussian conditional's
residuals and frontier shift) and :class:`~benchsel.coreset.calibrated.Calibrated`
(any question-level method).
"""

from __future__ import annotations

from .conformal import (
    MIN_CELLS,
    Calibration,
    conformal_quantile,
    fit_calibration,
    unknown_calibration,
)
from .regimes import (
    FRONTIER_APPLY_FRACTION,
    FRONTIER_FRACTION,
    _range_excess_loop,  # noqa: F401  (tests/test_fast_paths.py)
    clear_column_bias,
    frontier_rows,
    measures_frontier,
    outside_range,
    range_excess,
    regime_excess,
)
from .splits import MAX_MODELS, MIN_CALIBRATION_MODELS, calibration_splits
from .spread import limit_spread, spread_limit

__all__ = [
    "FRONTIER_APPLY_FRACTION",
    "FRONTIER_FRACTION",
    "MAX_MODELS",
    "MIN_CELLS",
    "MIN_CALIBRATION_MODELS",
    "Calibration",
    "calibration_splits",
    "clear_column_bias",
    "conformal_quantile",
    "fit_calibration",
    "frontier_rows",
    "limit_spread",
    "measures_frontier",
    "outside_range",
    "range_excess",
    "regime_excess",
    "spread_limit",
    "unknown_calibration",
]
