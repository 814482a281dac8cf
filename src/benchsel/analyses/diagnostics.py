"""Normality diagnostics (Smola 2026, App. H).

The Gaussian model is a working approximation; these tests say how far the
scores are from it. Per benchmark: Shapiro-Wilk on the observed scores with
a Benjamini-Hochberg correction across benchmarks. Jointly: Mardia's
multivariate skewness and kurtosis on the models observed on every
benchmark.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..matrix import ScoreMatrix
from ..sources import as_scores

__all__ = ["NormalityReport", "normality", "mardia", "shapiro_wilk_bh"]


@dataclass(frozen=True)
class NormalityReport:
    """Shapiro-Wilk per item (BH-corrected) and Mardia's tests.

    Attributes
    ----------
    items : list of str
        Items tested (three or more observed scores).
    w, p, p_adjusted : ndarray
        Shapiro-Wilk statistic, raw p-value and Benjamini-Hochberg adjusted
        p-value per item.
    reject : ndarray of bool
        ``p_adjusted < alpha``.
    mardia : dict or None
        ``skewness``, ``skewness_p``, ``kurtosis``, ``kurtosis_expected``,
        ``kurtosis_z``, ``kurtosis_p``, ``n_models``; None with ``mardia_note``
        saying why when too few models are observed on every item.
    """

    items: list
    w: np.ndarray
    p: np.ndarray
    p_adjusted: np.ndarray
    reject: np.ndarray
    alpha: float
    mardia: dict | None
    mardia_note: str

    def to_frame(self):
        """Shapiro-Wilk per item as a :class:`pandas.DataFrame` (Mardia's tests: :attr:`mardia`)."""
        import pandas as pd

        return pd.DataFrame({"w": self.w, "p": self.p, "p_adjusted": self.p_adjusted,
                             "reject": self.reject},
                            index=pd.Index(list(self.items), name="benchmark"))

    def to_dict(self) -> dict:
        return {
            "alpha": self.alpha,
            "rejected": int(self.reject.sum()),
            "tested": len(self.items),
            "median_w": float(np.median(self.w)) if len(self.w) else None,
            "shapiro_wilk": [
                {"benchmark": name, "w": float(w), "p": float(p), "p_adjusted": float(q),
                 "reject": bool(r)}
                for name, w, p, q, r in zip(self.items, self.w, self.p, self.p_adjusted,
                                            self.reject)
            ],
            "mardia": self.mardia,
            "mardia_note": self.mardia_note,
        }


def shapiro_wilk_bh(values: np.ndarray, alpha: float = 0.05):
    """Per-column Shapiro-Wilk (columns with >= 3 distinct observed values) and BH adjustment.

    Returns the tested column indices, W, p, adjusted p and the rejections.
    """
    cols, w, p = [], [], []
    for j in range(values.shape[1]):
        col = values[:, j]
        col = col[~np.isnan(col)]
        if col.size < 3 or np.ptp(col) == 0:
            continue
        res = stats.shapiro(col)
        cols.append(j)
        w.append(res.statistic)
        p.append(res.pvalue)
    p = np.array(p)
    q = stats.false_discovery_control(p, method="bh") if p.size else p
    return np.array(cols, dtype=int), np.array(w), p, q, q < alpha


def mardia(x: np.ndarray) -> dict:
    """Mardia's multivariate skewness and kurtosis of complete rows ``x`` (M x N), eq. 21.

    Uses the maximum-likelihood covariance. Under normality
    ``M b1 / 6 ~ chi2(N (N+1) (N+2) / 6)`` and ``b2 ~ Normal(N (N+2), 8 N (N+2) / M)``.
    """
    x = np.asarray(x, dtype=float)
    m, n = x.shape
    if m <= n:
        raise ValueError(f"Mardia's tests need more complete rows ({m}) than variables ({n})")
    centred = x - x.mean(axis=0)
    cov = centred.T @ centred / m
    w = np.linalg.eigvalsh(cov)
    if w[0] <= 1e-10 * max(w[-1], np.finfo(float).tiny):
        raise ValueError(
            "the covariance of the complete rows is singular (some benchmarks are exact "
            "linear combinations of others, e.g. an average column); Mardia's tests need "
            "it to be invertible"
        )
    d = centred @ np.linalg.solve(cov, centred.T)  # d_ij
    b1 = float(np.sum(d**3) / m**2)
    b2 = float(np.mean(np.diag(d) ** 2))
    dof = n * (n + 1) * (n + 2) / 6
    skew_stat = m * b1 / 6
    expected = n * (n + 2)
    z = (b2 - expected) / np.sqrt(8 * n * (n + 2) / m)
    return {
        "skewness": b1,
        "skewness_statistic": skew_stat,
        "skewness_p": float(stats.chi2.sf(skew_stat, dof)),
        "kurtosis": b2,
        "kurtosis_expected": float(expected),
        "kurtosis_z": float(z),
        "kurtosis_p": float(2 * stats.norm.sf(abs(z))),
        "n_models": m,
    }


def normality(scores: ScoreMatrix, alpha: float = 0.05) -> NormalityReport:
    """Run both diagnostics on a score matrix."""
    scores = as_scores(scores).cleaned()
    cols, w, p, q, reject = shapiro_wilk_bh(scores.values, alpha)
    complete = ~np.isnan(scores.values).any(axis=1)
    varying = np.ptp(np.nan_to_num(scores.values[complete]), axis=0) > 0 if complete.any() else []
    note = ""
    result = None
    x = scores.values[complete][:, varying] if complete.any() else np.zeros((0, 0))
    if x.shape[0] > x.shape[1] + 1 and x.shape[1] > 0:
        try:
            result = mardia(x)
        except ValueError as err:
            note = str(err)
    else:
        note = (
            f"only {int(complete.sum())} model(s) are observed on every benchmark; Mardia's "
            f"tests need more than {x.shape[1] + 1 if x.size else scores.n_items + 1}"
        )
    return NormalityReport(
        items=[scores.items[j] for j in cols],
        w=w,
        p=p,
        p_adjusted=q,
        reject=reject,
        alpha=alpha,
        mardia=result,
        mardia_note=note,
    )
