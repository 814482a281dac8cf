"""The difference between two models on every benchmark, with an honest error bar.

Each model's unrun benchmarks are predicted as by
:meth:`~benchsel.gaussian.GaussianModel.predict` (Gaussian conditional,
calibrated standard deviations). The error bar of the difference
``B - A`` is ``sqrt(s_A^2 + s_B^2 - 2 rho s_A s_B)``: the two predictions'
errors are correlated when both come from the same fit -- for two models
beyond the range of the source models, the fit misses both the same way
(they are too strong for it), so their difference is known far better than
either score. ``rho`` is measured, not assumed: the intraclass correlation
of held-out models' errors on the same item in the calibration splits
(:meth:`~benchsel.gaussian.GaussianCalibrator.error_correlation`), the
``outside`` one when both models lie beyond the source range, else the
``inside`` one. A benchmark both models were run on has its observed
difference and no error bar.
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

    def to_dict(self) -> dict:
        return {
            "model_a": self.model_a, "model_b": self.model_b, "level": self.level,
            "error_correlation": self.correlation,
            "differences": [
                {"benchmark": name, "difference": float(self.difference[j]),
                 "std": float(self.std[j]), "low": float(self.low[j]),
                 "high": float(self.high[j]), "p_b_better": float(self.p_b_better[j]),
                 "observed": bool(self.observed[j])}
                for j, name in enumerate(self.items)
            ],
        }


def compare_models(model, observed_a, observed_b, *, names=("A", "B"),
                   level: float = 0.9) -> Comparison:
    """Predicted difference ``B - A`` of two new models on every item of ``model``.

    Parameters
    ----------
    model : GaussianModel
        Fitted on the source models (not on A or B).
    observed_a, observed_b : mapping {item: score}
        What each model was run on.
    names : (str, str)
    level : float, default 0.9

    Returns
    -------
    Comparison
    """
    from scipy.special import ndtr, ndtri

    x = np.vstack([model._rows(observed_a)[1], model._rows(observed_b)[1]])
    pred = model.predict(ScoreMatrix(x, list(names), list(model.items_)), level=level,
                         method="gaussian")  # the joint of A and B is the Gaussian's
    a, b = 0, 1
    rho = 0.0
    cal = pred.calibration
    if cal and all(c["method"] == "conformal" for c in cal) and model._calibrator is not None:
        both_out = all(c["regime"] == "outside" for c in cal)
        given = ~np.isnan(x)
        # The correlation of errors held out on the pattern both share.
        common = given[a] & given[b]
        if common.any():
            inside, outside = model._calibrator.error_correlation(common)
            rho = outside if both_out else inside
    s_a, s_b = pred.std[a], pred.std[b]
    diff = pred.mean[b] - pred.mean[a]
    var = s_a**2 + s_b**2 - 2 * rho * s_a * s_b
    std = np.sqrt(np.maximum(var, 0.0))
    half = ndtri(0.5 + level / 2) * std
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(std > 0, ndtr(diff / std), np.where(diff > 0, 1.0, np.where(
            diff < 0, 0.0, 0.5)))
    observed = pred.observed[a] & pred.observed[b]
    return Comparison(model_a=names[0], model_b=names[1], items=list(model.items_),
                      difference=diff, std=std, low=diff - half, high=diff + half,
                      p_b_better=p, observed=observed, correlation=float(rho),
                      level=float(level), std_a=s_a, std_b=s_b)
