"""What a fitted Gaussian model returns: the items to run and the predictions."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._text import text_table

__all__ = ["Prediction", "Selection"]


@dataclass(frozen=True)
class Selection:
    """Items chosen to run, in order, with the bookkeeping of the greedy run.

    Attributes
    ----------
    items : list of str
        Selected item names in selection order.
    indices : ndarray of int
        Their columns in the fitted matrix.
    gains, residual_variance
        As in :class:`~benchsel.selection.greedy.GreedyResult`.
    objective, covariance, strategy : str
    cost : float or None
    stopped_by : str
        ``"k"``, ``"budget"``, ``"target_residual"``, ``"no positive gain"`` or
        ``"exhausted"``.
    certificate : dict or None
        What is proved about the selection's quality: for entropy, the share
        of the optimum of its size it provably reaches
        (:func:`~benchsel.selection.greedy.entropy_certificate`); for MI,
        why no such bound holds and the exhaustive oracle's value where
        affordable (:func:`~benchsel.selection.greedy.mi_oracle_gap`).
    aggregates : dict
        Columns left out of the choice as aggregates of the others
        (:func:`benchsel.aggregates.aggregate_columns`), each with the reason.
    """

    items: list[str]
    indices: np.ndarray
    gains: np.ndarray
    residual_variance: np.ndarray
    objective: str
    covariance: str
    strategy: str
    cost: float | None
    stopped_by: str
    certificate: dict | None = None
    aggregates: dict = field(default_factory=dict)

    def to_frame(self):
        """The selection in order as a :class:`pandas.DataFrame`: each item, its gain and
        the residual variance left once it is run (index: its rank, from 1)."""
        import pandas as pd

        return pd.DataFrame({"item": list(self.items), "gain": np.asarray(self.gains),
                             "residual_variance": np.asarray(self.residual_variance)},
                            index=pd.RangeIndex(1, len(self.items) + 1, name="rank"))

    def to_dict(self) -> dict:
        out = {
            "selected": list(self.items),
            "gains": [float(g) for g in self.gains],
            "residual_variance": [float(r) for r in self.residual_variance],
            "objective": self.objective,
            "covariance": self.covariance,
            "strategy": self.strategy,
            "stopped_by": self.stopped_by,
            "certificate": self.certificate,
            "aggregates_left_out": dict(self.aggregates),
        }
        if self.cost is not None:
            out["cost"] = float(self.cost)
        return out


@dataclass(frozen=True)
class Prediction:
    """Predicted scores of new models on the items they were not run on.

    All arrays have shape (R, N) over the fitted items; entries for observed
    cells hold the observed value with ``std = 0``.

    Attributes
    ----------
    models : list of str
    items : list of str
    mean, std, low, high : ndarray
        Conditional mean, standard deviation and the central interval at
        ``level``, in the items' original units. On predicted cells
        ``mean``, ``low`` and ``high`` lie within the item's score bounds
        (:attr:`GaussianModel.bounds_`): they are the median and central
        interval of the prediction's normal distribution truncated to the
        bounds (:func:`~benchsel.bounds.truncated_interval`; under a
        transform, its ends mapped back and clipped), and ``std`` is that
        truncated distribution's (:func:`~benchsel.bounds.truncated_std`):
        never more than half the width of the bounds. Near a bound the
        interval is not centred on the mean, but never of zero width.
        Observed cells are never changed.
    observed : ndarray of bool
        Which cells were given (and so not predicted).
    level : float
    method : str
    extrapolation : list of dict
        Per model, whether the prediction is an extrapolation (see
        :meth:`GaussianModel.extrapolation`): ``flag``, ``direction``,
        ``reasons``, ``strength``, ``strength_percentile``,
        ``items_above_training_max``, ``items_below_training_min`` and
        ``scale_mismatch``. Predictions for flagged models are
        extrapolations: in the extrapolation protocol on MTEB and MERGED
        the Gaussian's own 90% intervals covered 77%; calibrated ones (see
        ``calibration``) use the wider multiplier of models outside the
        training range.
    calibration : list of dict
        Per model, how its intervals were calibrated: ``method``
        (``conformal`` or ``none``), ``regime`` (``inside`` or ``outside``
        the training models' range on the observed items: outside when the
        model's strength lies beyond theirs or any observed score beyond
        every training score on its item, as :attr:`extrapolation` flags;
        see :func:`~benchsel.calibration.regime_excess`),
        ``multiplier`` (applied to the method's own standard deviation) and
        ``cells`` (held-out cells behind it).
    choices : list of dict
        With ``method="auto"``, per model, the method that won the
        cross-validation on the training models for its observed items
        (:meth:`benchsel.prediction.MethodChoice.to_dict`).
    item_kind : str
        What the items are: ``benchmark``, ``model`` (a new benchmark predicted
        on the board's models, ``predict --axis models``) or, for a
        question-level plan's prediction, ``task`` (the index name of
        :meth:`to_frame`).
    limited : ndarray of bool, optional
        The predicted cells whose standard deviation is the column's own
        calibrated spread among the source models
        (:func:`~benchsel.calibration.spread_limit`): the method was less
        sure than knowing nothing of the model would be, so its interval
        was narrowed to that; there the prediction says no more than the
        column does. No cell of an uncalibrated prediction is limited (all False);
        ``None`` where a prediction does not say (a question-level plan's
        task scores, estimated from their questions).
    """

    models: list[str]
    items: list[str]
    mean: np.ndarray
    std: np.ndarray
    low: np.ndarray
    high: np.ndarray
    observed: np.ndarray
    level: float
    method: str = "gaussian"
    extrapolation: list = field(default_factory=list)
    calibration: list = field(default_factory=list)
    choices: list = field(default_factory=list)
    item_kind: str = "benchmark"
    limited: np.ndarray | None = None

    def limited_items(self, row: int = 0) -> list[str]:
        """The items whose prediction for model ``row`` is only the column's spread
        (:attr:`limited`)."""
        if self.limited is None:
            return []
        return [self.items[j] for j in np.flatnonzero(self.limited[row])]

    def to_frame(self):
        """Every cell as a :class:`pandas.DataFrame`.

        Columns ``mean, std, low, high, observed`` (an observed cell holds the
        given score with std 0); index the items (named :attr:`item_kind`),
        or ``(model, item)`` when several models were predicted.
        """
        import pandas as pd

        rows, index = [], []
        for i, model in enumerate(self.models):
            for j, item in enumerate(self.items):
                rows.append((float(self.mean[i, j]), float(self.std[i, j]),
                             float(self.low[i, j]), float(self.high[i, j]),
                             bool(self.observed[i, j])))
                index.append((model, item))
        columns = ["mean", "std", "low", "high", "observed"]
        if len(self.models) == 1:
            idx = pd.Index([item for _, item in index], name=self.item_kind)
        else:
            idx = pd.MultiIndex.from_tuples(index, names=["model", self.item_kind])
        return pd.DataFrame(rows, index=idx, columns=columns)

    def records(self, row: int = 0, *, include_observed: bool = False) -> list[dict]:
        """One dict per predicted (unobserved) item of model ``row``.

        With ``include_observed`` every item is listed, each with
        ``"observed"``: true for a given score (``std`` 0).
        """
        cells = np.arange(len(self.items)) if include_observed else \
            np.flatnonzero(~self.observed[row])
        out = []
        for j in cells:
            record = {
                "benchmark": self.items[j],
                "mean": float(self.mean[row, j]),
                "std": float(self.std[row, j]),
                "low": float(self.low[row, j]),
                "high": float(self.high[row, j]),
            }
            if include_observed:
                record["observed"] = bool(self.observed[row, j])
            if self.limited is not None:
                record["column_spread_only"] = bool(self.limited[row, j])
            out.append(record)
        return out

    def explain(self, *, include_observed: bool | None = None, noisy: bool | str = False) -> str:
        """What ``benchsel predict`` prints: per model, how it was predicted, then a table.

        The head says how many items were predicted from how many given, the
        method ``auto`` chose and on what, a frontier correction, how the
        intervals were calibrated and in which regime, the items whose
        interval is only the column's own spread (marked ``*``), and a
        warning with its reasons where the model lies outside what the
        source models cover.

        Parameters
        ----------
        include_observed : bool, optional
            List the given items too (default: for a question-level plan's
            tasks, where a task run in full is listed as such).
        noisy : bool or str, default False
            The observed scores were given with measurement noise
            (``observed_std``): they are predicted too. A string names where
            the noise came from (``predict`` passes ``"--questions"``).
        """
        tasks = self.item_kind == "task"
        include_observed = tasks if include_observed is None else include_observed
        pct = f"{100 * self.level:g}%"
        blocks = []
        for i, name in enumerate(self.models):
            records = self.records(i, include_observed=include_observed)
            rows = [[r["benchmark"] + (" (run in full)" if r.get("observed") else "")
                     + (" *" if r.get("column_spread_only") else ""), r["mean"],
                     r["std"], r["low"], r["high"]] for r in records]
            given = int(self.observed[i].sum())
            if tasks:
                predicted = len(rows) - given if include_observed else len(rows)
                head = (f"{name}: {predicted} task score(s) predicted from the planned "
                        "questions" + (f", {given} task(s) run in full" if given else ""))
            elif noisy:
                head = (f"{name}: {len(rows)} predicted, its observed scores among them: the "
                        "Gaussian conditioned on them with their measurement noise"
                        + (f" ({noisy})" if isinstance(noisy, str) else ""))
            else:
                head = f"{name}: {len(rows)} predicted from {given} observed"
            head += self._how(i)
            spread_only = self.limited_items(i)
            if spread_only:
                head += (f"\n  * {len(spread_only)} of {len(rows)}: the method knew no more "
                         "than the benchmark's own spread among the source models, so that is "
                         "the interval (run them to know more)")
            ex = self.extrapolation[i] if self.extrapolation else {}
            if ex.get("flag"):
                head += ("\n  WARNING: extrapolation -- this model lies outside what the "
                         "source models cover; predictions are less reliable:")
                head += "".join(f"\n  - {reason}" for reason in ex.get("reasons", []))
            table = text_table([self.item_kind, "mean", "std", f"low ({pct})", f"high ({pct})"],
                               rows)
            blocks.append(head + "\n" + table)
        return "\n\n".join(blocks)

    def _how(self, i: int) -> str:
        """The lines of :meth:`explain` on model ``i``'s method, frontier correction
        and calibration."""
        out = ""
        if self.choices:
            choice = self.choices[i]
            margin = choice["margin"]
            held = {"near": "cells of the strongest and weakest 10% of the source models, as "
                            "this model lies beyond the others' range"}.get(
                choice.get("split"), "held-out source cells")
            if choice.get("split") == "none":
                out += (f"\n  method: {choice['method']} (auto: no observed score to choose "
                        "by; the source models' mean and spread)")
            else:
                out += (f"\n  method: {choice['method']} (auto: best of a cross-validation "
                        f"on {choice['cells']} {held}"
                        + (f", MedAPE {margin:.2f} points below the runner-up)"
                           if margin is not None else ")"))
        cal = self.calibration[i] if self.calibration else {}
        if cal.get("frontier_shift"):
            out += ("\n  mean: this model is at the top of the source models; corrected by "
                    "the shortfall its method showed on the strongest 10% of them")
        if cal.get("method") == "conformal":
            where = ("no observed score: as wide as a model beyond the source models' "
                     "strength range needs" if cal.get("regime") == "unknown"
                     else f"{cal['regime']} the source models' range")
            out += ("\n  intervals: calibrated on held-out source models, "
                    f"x{cal['multiplier']:.2f} ({where})")
        return out

    def to_dict(self, *, include_observed: bool = False) -> dict:
        """JSON-ready: one model's ``predictions``, or ``models`` for several (see records)."""
        out: dict = {"method": self.method, "level": self.level}
        entries = [
            {"model": name, "extrapolation": self.extrapolation[i],
             **({"calibration": self.calibration[i]} if self.calibration else {}),
             **({"choice": self.choices[i]} if self.choices else {}),
             "predictions": self.records(i, include_observed=include_observed)}
            for i, name in enumerate(self.models)
        ]
        if len(entries) == 1:
            out.update(entries[0])
        else:
            out["models"] = entries
        return out
