"""Metrics for predictions and selections."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "json_record",
    "r2_against_zero",
    "interval_coverage",
    "nogueira_stability",
    "gaussian_entropy",
    "gaussian_mutual_information",
]


def json_record(row) -> dict:
    """A result dataclass as plain JSON values: a figure that could not be
    computed (NaN or infinite) becomes ``None``, so the JSON stays valid."""
    out = {}
    for name in row.__dataclass_fields__:
        value = getattr(row, name)
        if isinstance(value, float) and not np.isfinite(value):
            value = None
        out[name] = value
    return out


def r2_against_zero(y: np.ndarray, pred: np.ndarray) -> float:
    """``1 - sum (y - pred)^2 / sum y^2``: R^2 against predicting zero.

    In standardized space zero is the training mean, so this is the R^2 of
    Smola (2026, Sec. 5.1). NaN-free inputs are required; an empty input
    has no R^2 and is an error.
    """
    y = np.asarray(y, dtype=float)
    pred = np.asarray(pred, dtype=float)
    if y.size == 0:
        raise ValueError("R^2 of no cells is undefined")
    denom = float(np.sum(y**2))
    if denom == 0:
        raise ValueError("R^2 is undefined when every target is zero")
    return 1.0 - float(np.sum((y - pred) ** 2)) / denom


def interval_coverage(y, mean, std, level: float = 0.9) -> float:
    """Fraction of ``y`` inside the central Gaussian interval ``mean +- z * std``."""
    from scipy.stats import norm

    half = norm.ppf(0.5 + level / 2) * np.asarray(std, dtype=float)
    y = np.asarray(y, dtype=float)
    return float(np.mean(np.abs(y - np.asarray(mean, dtype=float)) <= half))


def nogueira_stability(selections: Sequence[Sequence[int]], n_items: int) -> float:
    """Nogueira et al. (2018) stability of feature sets (Bowyer et al., App. C.3, eq. 33).

    1 when every set is identical; about 0 when sets are drawn at random.
    Sets may differ in size.
    """
    sets = [set(int(i) for i in s) for s in selections]
    if len(sets) < 2:
        raise ValueError("stability needs at least two selections")
    n_sel = len(sets)
    z = np.zeros((n_sel, n_items))
    for row, s in enumerate(sets):
        z[row, list(s)] = 1.0
    p = z.mean(axis=0)
    s2 = n_sel / (n_sel - 1) * p * (1 - p)
    kbar = z.sum(axis=1).mean()
    expected = (kbar / n_items) * (1 - kbar / n_items)
    if expected == 0:
        return 1.0  # every set is empty or full: nothing can vary
    return float(1.0 - s2.mean() / expected)


def gaussian_entropy(sigma: np.ndarray, selected: Sequence[int]) -> float:
    """``H(X_A) = 0.5 log det(2 pi e Sigma_AA)`` in nats."""
    a = list(selected)
    if not a:
        return 0.0
    sign, logdet = np.linalg.slogdet(2 * np.pi * np.e * sigma[np.ix_(a, a)])
    if sign <= 0:
        raise ValueError("Sigma_AA is not positive definite")
    return 0.5 * float(logdet)


def gaussian_mutual_information(sigma: np.ndarray, selected: Sequence[int]) -> float:
    """``I(X_A; X_rest) = 0.5 [log det S_AA + log det S_rest - log det S]`` (eq. 8), nats."""
    n = sigma.shape[0]
    a = list(selected)
    rest = [j for j in range(n) if j not in set(a)]
    if not a or not rest:
        return 0.0

    def logdet(idx):
        sign, value = np.linalg.slogdet(sigma[np.ix_(idx, idx)])
        if sign <= 0:
            raise ValueError("a block of Sigma is not positive definite")
        return value

    return 0.5 * float(logdet(a) + logdet(rest) - logdet(list(range(n))))
