"""Is a new model's prediction an extrapolation? The training models' range, and scale slips.

A fitted :class:`~benchsel.models.GaussianModel` keeps one
:class:`TrainingRange`: each item's lowest and highest training score, its
scale (fractions or percent) and the training models' strengths. It says
whether a new model lies beyond them (:meth:`TrainingRange.report`, what
:meth:`GaussianModel.extrapolation <benchsel.models.GaussianModel.extrapolation>`
returns) and puts a score given on the other scale of its column back on
its own (:meth:`TrainingRange.rescale`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..bounds import column_scale
from ..matrix import Standardizer, _short_list

__all__ = ["TrainingRange"]


def _gap(value: float, lo: float, hi: float) -> float:
    """Distance from ``value`` to the interval ``[lo, hi]`` (0 inside)."""
    return max(lo - value, value - hi, 0.0)


@dataclass(frozen=True)
class TrainingRange:
    """Where the training models' scores lie, item by item (raw scores, no transform).

    Extrapolation is judged on the raw scores: a transform may clip
    everything above the training maximum onto it.

    Attributes
    ----------
    items : list of str
    low, high : ndarray (N,)
        The items' score bounds (:attr:`GaussianModel.bounds_`).
    item_min, item_max : ndarray (N,)
        Each item's lowest and highest training score.
    scale : list of str
        Each item's scale (:func:`~benchsel.bounds.column_scale`).
    standardizer : Standardizer
        Of the raw training scores.
    z : ndarray (M, N)
        The training scores standardized by it.
    """

    items: list
    low: np.ndarray
    high: np.ndarray
    item_min: np.ndarray
    item_max: np.ndarray
    scale: list
    standardizer: Standardizer
    z: np.ndarray

    @classmethod
    def fit(cls, values: np.ndarray, items, bounds: np.ndarray) -> TrainingRange:
        """The range of the training ``values`` (M x N, NaN = missing) with ``bounds`` (2 x N)."""
        standardizer = Standardizer.fit(values)
        return cls(list(items), bounds[0], bounds[1], np.nanmin(values, axis=0),
                   np.nanmax(values, axis=0), column_scale(values), standardizer,
                   standardizer.transform(values))

    def scale_mismatch(self, raw: np.ndarray) -> tuple[list[int], list[str]]:
        """Observed columns of ``raw`` (one model, over :attr:`items`) on another scale, and why."""
        cols, reasons = [], []
        for j in np.flatnonzero(~np.isnan(raw)):
            v, scale = raw[j], self.scale[j]
            lo, hi = self.item_min[j], self.item_max[j]
            span = f"training range {lo:.4g}-{hi:.4g}"
            if scale == "percent" and 0 <= v <= 1 < lo:
                # MT-Bench's 1-10 is "percent" to the bounds rule; do not call it that.
                unit = "the column is in percent" if hi > 10 else "every training score is above 1"
                why = f"looks like a fraction but {unit}"
            elif scale == "fraction" and v > 1 and _gap(v / 100, lo, hi) < _gap(v, lo, hi):
                why = "looks like a percent but the column is in fractions"
            elif not self.low[j] <= v <= self.high[j]:
                why = f"lies outside the score range [{self.low[j]:g}, {self.high[j]:g}]"
            else:
                continue
            cols.append(int(j))
            reasons.append(f"{self.items[j]} = {v:.4g} {why} ({span})")
        if len(reasons) > 3:
            reasons = reasons[:3] + [f"... and {len(reasons) - 3} more"]
        return cols, reasons

    def rescale(self, models: list[str], x: np.ndarray) -> list[tuple]:
        """Put scores given on the other scale of their column on its own, in place.

        A percent (62) given for a column of fractions becomes 0.62, a
        fraction (0.62) for a column in percent 62 -- where the rescaled
        value fits the training scores better. Returns ``(model, item,
        given, rescaled)`` per changed score.
        """
        notes = []
        for i in range(len(models)):
            for j in self.scale_mismatch(x[i])[0]:
                v, scale = x[i, j], self.scale[j]
                if scale == "fraction" and v > 1:
                    new = v / 100
                elif scale == "percent" and 0 <= v <= 1 and self.item_max[j] > 10:
                    new = v * 100  # not on a 1-10 scale (MT-Bench), where x100 means nothing
                else:
                    continue  # outside the range, but not a scale slip
                notes.append((models[i], self.items[j], float(v), float(new)))
                x[i, j] = new
        return notes

    def report(self, raw: np.ndarray) -> dict:
        """One model's extrapolation record (see :meth:`GaussianModel.extrapolation
        <benchsel.models.GaussianModel.extrapolation>`); ``raw`` over :attr:`items`."""
        out = {
            "flag": False, "direction": None, "reasons": [], "strength": None,
            "strength_percentile": None, "items_above_training_max": 0,
            "items_below_training_min": 0, "scale_mismatch": [],
        }
        mismatch, scale_reasons = self.scale_mismatch(raw)
        if mismatch:
            out["scale_mismatch"] = [self.items[j] for j in mismatch]
            out["reasons"].append("scores on another scale: " + "; ".join(scale_reasons))
        seen = ~np.isnan(raw)
        if seen.any():
            row = self.standardizer.transform(raw[None, :])[0]
            strength = float(row[seen].mean())
            above = [self.items[j] for j in np.flatnonzero(seen & (raw > self.item_max))]
            below = [self.items[j] for j in np.flatnonzero(seen & (raw < self.item_min))]
            # Training models' strength on the same items (those they have).
            sub = self.z[:, seen]
            has = ~np.isnan(sub).all(axis=1)
            ref = np.nanmean(sub[has], axis=1)
            stronger, weaker = strength > ref.max(), strength < ref.min()
            for hit, text in (
                (stronger, "stronger than every model fitted on"),
                (above, f"above the best training score on {len(above)} benchmark(s): "
                        f"{_short_list(above, limit=5)}"),
                (weaker, "weaker than every model fitted on"),
                (below, f"below the worst training score on {len(below)} benchmark(s): "
                        f"{_short_list(below, limit=5)}"),
            ):
                if hit:
                    out["reasons"].append(text)
            up, down = stronger or bool(above), weaker or bool(below)
            out.update(
                direction="mixed" if up and down else "stronger" if up else
                "weaker" if down else None,
                strength=strength,
                strength_percentile=float(100 * np.mean(ref < strength)),
                items_above_training_max=len(above),
                items_below_training_min=len(below),
            )
        out["flag"] = bool(out["reasons"])
        return out
