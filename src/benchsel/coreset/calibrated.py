"""Calibrated error bars for any question-level method.

:class:`Calibrated` wraps a method: it fits the method as usual (same
questions, same predictions), then refits fresh copies of it on the
calibration splits of the source models (:func:`benchsel.calibration.calibration_splits`:
three random folds, and the weakest half predicting the strongest 30% and
the reverse), and measures how far each held-out model's predicted
full-benchmark score lies from its true one. Per regime -- the held-out
model's mean on the chosen questions inside or outside the range of its fit's
models' means on them -- the conformal multiplier of the method's standard
deviation follows (:func:`benchsel.calibration.fit_calibration`); with one
held-out cell per model (tens, not thousands) a multiplier only ever widens
the method's own error bar, and a regime needs 20 cells of its own. A method
without an error bar gets one: its standard deviation is taken as 1 and the
multiplier is then the calibrated half-width itself, divided by the
Gaussian quantile.

A standard deviation of 0 (a random sample whose answers all agree) claims
certainty no sample of ``n`` questions has; every standard deviation is
floored at the 5th percentile of the positive ones the method reported on
held-out models.
"""

from __future__ import annotations

import numpy as np

from ..calibration import Calibration, calibration_splits, fit_calibration, range_excess

__all__ = ["Calibrated"]

#: Quantile of the held-out models' positive standard deviations used as the floor.
FLOOR_QUANTILE = 0.05


class Calibrated:
    """A question-level method whose ``predict`` returns calibrated standard deviations.

    Parameters
    ----------
    factory : callable returning an unfitted method
        E.g. ``lambda: make_method("guarded-ensemble")``; called once for the
        fit and once per calibration split.
    level : float, default 0.9
        The interval coverage the multipliers are calibrated for.
    folds : int, default 3
        Random calibration folds (two strength splits come on top).

    Attributes
    ----------
    method_ : the fitted method
    selected_ : ndarray of int
        The method's questions.
    calibration_ : Calibration
    floor_ : float
    """

    def __init__(self, factory, *, level: float = 0.9, folds: int = 3):
        self.factory = factory
        self.level = level
        self.folds = folds

    @property
    def name(self) -> str:
        return self.method_.name if hasattr(self, "method_") else self.factory().name

    def fit(self, source: np.ndarray, n: int, rng) -> Calibrated:
        source = np.asarray(source, dtype=float)
        self.method_ = self.factory().fit(source, n, rng)
        self.selected_ = self.method_.selected_
        self.has_sd_ = True
        seed = int(rng.integers(2**32))
        parts = ([], [], [])
        for s, split in enumerate(calibration_splits(source, self.folds, seed)):
            train, held = source[split.train], source[split.validation]
            if split.train.size < 5 or held.shape[0] == 0:
                continue
            method = self.factory().fit(train, n, np.random.default_rng([seed, s]))
            sel = method.selected_
            mean, sd = method.predict(held[:, sel])
            if sd is None:
                self.has_sd_ = False
                sd = np.ones_like(mean)
            for bucket, values in zip(parts, (held.mean(axis=1) - mean, sd,
                                              range_excess(train[:, sel], held[:, sel]))):
                bucket.append(np.asarray(values, dtype=float))
        if parts[0]:
            residual, sd, excess = (np.concatenate(p) for p in parts)
            # One cell per held-out model: too few to narrow a design-based error bar.
            self.calibration_ = fit_calibration(residual, sd, excess, level=self.level,
                                                min_cells=20, min_multiplier=1.0)
            positive = sd[sd > 0]
            self.floor_ = float(np.quantile(positive, FLOOR_QUANTILE)) if positive.size else 0.0
        else:  # too few source models to hold any out
            self.calibration_, self.floor_ = Calibration(self.level), 0.0
        self._source = source
        return self

    def predict(self, x_selected: np.ndarray):
        """Mean and calibrated standard deviation of each target model's full-benchmark score."""
        x = np.atleast_2d(np.asarray(x_selected, dtype=float))
        mean, sd = self.method_.predict(x)
        self.raw_sd_ = None if sd is None else np.asarray(sd, dtype=float)
        sd = np.ones_like(mean) if sd is None else np.asarray(sd, dtype=float)
        excess = range_excess(self._source[:, self.selected_], x)
        self.outside_ = excess > 0
        return mean, np.maximum(sd, self.floor_) * self.calibration_.factor(excess)
