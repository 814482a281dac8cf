"""The difference between two models on every benchmark, with an honest error bar.

Each model's unrun benchmarks are predicted as by
:meth:`~benchsel.models.GaussianModel.predict` (Gaussian conditional,
calibrated standard deviations). The error bar of the difference
``B - A`` is ``sqrt(s_A^2 + s_B^2 - 2 rho s_A s_B)``: the two predictions'
errors are correlated when both come from the same fit -- for two models
beyond the range of the source models, the fit misses both the same way
(they are too strong for it), so their difference is known far better than
either score. ``rho`` is measured, not assumed: the intraclass correlation
of held-out models' errors on the same item in the calibration splits
(:meth:`~benchsel.models.GaussianCalibrator.error_correlation`), the
``outside`` one when both models lie beyond the source range, else the
``inside`` one.

A benchmark score is itself an estimate from a finite set of questions. Where
its standard error is known (lm-eval's ``*_stderr``, a ``_stderr`` column, or
a question count), an observed score is conditioned on with that noise, and a
benchmark both models were run on gets its observed difference with the
error bar ``sqrt(se_A^2 + se_B^2)``. Where it is not known, such a difference
gets no error bar and no ``P(B > A)`` (``null`` in JSON; the table says
"no measurement noise known") rather than a certainty the scores do not have.

Two scores inside their bounds differ by at most the bounds' width, so the
interval of a difference is cut there. Where either model's prediction is
only its column's spread among the source models (the method knew no more:
:attr:`Prediction.limited <benchsel.models.Prediction.limited>`), the
difference cannot be predicted from what the two were run on, and
:meth:`Comparison.unpredictable` names those items.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..matrix import ScoreMatrix

__all__ = ["Comparison", "compare_models"]


@dataclass(frozen=True)
class Comparison:
    """Predicted ``B - A`` per item, its standard deviation and interval, ``P(B > A)``;
    ``std_a`` / ``std_b`` are each model's own calibrated standard deviation."""

    model_a: str
    model_b: str
    items: list
    difference: np.ndarray
    std: np.ndarray
    low: np.ndarray
    high: np.ndarray
    p_b_better: np.ndarray
    observed: np.ndarray
    correlation: float
    level: float
    std_a: np.ndarray = None
    std_b: np.ndarray = None
    noise_known: np.ndarray = None
    column_spread_only: np.ndarray = None

    def unpredictable(self) -> list[str]:
        """The items whose difference cannot be predicted from what was run: one of the
        two predictions there is only the column's spread among the source models
        (:attr:`Prediction.limited <benchsel.models.Prediction.limited>`)."""
        if self.column_spread_only is None:
            return []
        return [item for item, flag in zip(self.items, self.column_spread_only) if flag]

    def to_frame(self):
        """Per benchmark as a :class:`pandas.DataFrame`: ``B - A`` with its std, interval and
        ``P(B > A)``, and whether both models were run on it (``observed``)."""
        import pandas as pd

        return pd.DataFrame({"difference": self.difference, "std": self.std, "low": self.low,
                             "high": self.high, "p_b_better": self.p_b_better,
                             "observed": np.asarray(self.observed, dtype=bool)},
                            index=pd.Index(list(self.items), name="benchmark"))

    def to_dict(self) -> dict:
        """JSON-ready; ``null`` where a difference has no known error bar."""
        def number(v) -> float | None:
            return float(v) if np.isfinite(v) else None

        known = np.ones(len(self.items), bool) if self.noise_known is None else self.noise_known
        limited = (np.zeros(len(self.items), bool) if self.column_spread_only is None
                   else self.column_spread_only)
        return {
            "model_a": self.model_a, "model_b": self.model_b, "level": self.level,
            "error_correlation": self.correlation,
            "differences": [
                {"benchmark": name, "difference": float(self.difference[j]),
                 "std": number(self.std[j]), "low": number(self.low[j]),
                 "high": number(self.high[j]), "p_b_better": number(self.p_b_better[j]),
                 "observed": bool(self.observed[j]),
                 "measurement_noise_known": bool(known[j]),
                 "column_spread_only": bool(limited[j])}
                for j, name in enumerate(self.items)
            ],
        }


def compare_models(model, observed_a, observed_b, *, names=("A", "B"),
                   level: float = 0.9, stderr_a=None, stderr_b=None) -> Comparison:
    """Predicted difference ``B - A`` of two new models on every item of ``model``.

    Parameters
    ----------
    model : GaussianModel
        Fitted on the source models (not on A or B).
    observed_a, observed_b : mapping {item: score}
        What each model was run on.
    names : (str, str)
    level : float, default 0.9
    stderr_a, stderr_b : mapping {item: standard error}, optional
        Measurement standard errors of observed scores (finite, >= 0). An
        observed score without one is taken as exact for predicting the
        other items; a difference observed on both sides needs both.

    Returns
    -------
    Comparison
        On items both models were run on: the observed difference, and its
        measurement error bar where both standard errors are known (else
        ``std``, ``low``, ``high`` and ``p_b_better`` are NaN,
        ``noise_known`` False).
    """
    from scipy.special import ndtr, ndtri

    x = np.vstack([model._rows(observed_a)[1], model._rows(observed_b)[1]])
    se = np.vstack([_stderr_row(model, x[0], stderr_a, names[0]),
                    _stderr_row(model, x[1], stderr_b, names[1])])
    noisy = np.nan_to_num(se, nan=0.0)
    pred = model.predict(ScoreMatrix(x, list(names), list(model.items_)), level=level,
                         method="gaussian",  # the joint of A and B is the Gaussian's
                         observed_std=noisy if (noisy > 0).any() else None)
    a, b = 0, 1
    rho = 0.0
    cal = pred.calibration
    given = ~np.isnan(x)
    if cal and all(c["method"] == "conformal" for c in cal):
        both_out = all(c["regime"] == "outside" for c in cal)
        # The correlation of errors held out on the pattern both share (the
        # calibrator is built here when the calibration came from kept residuals).
        common = given[a] & given[b]
        if common.any():
            inside, outside = model._calibrator_for_predict().error_correlation(common)
            rho = outside if both_out else inside
    # A score run is itself (with its measurement error); a score not run is predicted.
    mean = np.where(given, x, pred.mean)
    s = np.where(given, noisy, pred.std)
    s_a, s_b = s[a], s[b]
    diff = mean[b] - mean[a]
    # Prediction errors of the two are correlated; measurement errors are not.
    both_predicted = ~given[a] & ~given[b]
    var = s_a**2 + s_b**2 - 2 * np.where(both_predicted, rho, 0.0) * s_a * s_b
    std = np.sqrt(np.maximum(var, 0.0))
    observed = given[a] & given[b]
    noise_known = ~observed | ~np.isnan(se).any(axis=0)
    std = np.where(noise_known, std, np.nan)
    half = ndtri(0.5 + level / 2) * std
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(std > 0, ndtr(diff / std), np.where(diff > 0, 1.0, np.where(
            diff < 0, 0.0, 0.5)))
    p = np.where(noise_known, p, np.nan)
    # Two scores inside [low, high] differ by at most its width.
    width = model.bounds_[1] - model.bounds_[0]
    low, high = np.maximum(diff - half, -width), np.minimum(diff + half, width)
    limited = (np.zeros_like(given) if pred.limited is None else pred.limited).any(axis=0)
    return Comparison(model_a=names[0], model_b=names[1], items=list(model.items_),
                      difference=diff, std=std, low=low, high=high,
                      p_b_better=p, observed=observed, correlation=float(rho),
                      level=float(level), std_a=s_a, std_b=s_b, noise_known=noise_known,
                      column_spread_only=limited & ~observed)


def _stderr_row(model, x: np.ndarray, stderr, name: str) -> np.ndarray:
    """Standard errors over ``model.items_``: given ones, NaN where unknown, 0 where not run."""
    out = np.where(np.isnan(x), 0.0, np.nan)
    index = {item: j for j, item in enumerate(model.items_)}
    for item, value in (stderr or {}).items():
        if item not in index:
            if item in model.dropped_items_:  # left out of the fit, like its score
                continue
            raise ValueError(f"stderr of {name}: {item!r} is not a benchmark of the model")
        value = float(value)
        if not (np.isfinite(value) and value >= 0):
            raise ValueError(f"stderr of {name}, {item!r}: {value!r}; expected a finite "
                             "standard error >= 0")
        if not np.isnan(x[index[item]]):
            out[index[item]] = value
    return out
