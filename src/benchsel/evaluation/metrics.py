"""Metrics for predictions and selections."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "json_record",
    "r2_against_zero",
    "interval_coverage",
    "interval_score",
    "nogueira_stability",
    "hamming_stability",
    "model_similarity",
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


def coverage(y, low, high) -> float:
    """Fraction of ``y`` inside ``[low, high]`` (ends included); NaN for no cells.

    The one definition of interval coverage every protocol reports.
    """
    y = np.asarray(y, dtype=float)
    if y.size == 0:
        return float("nan")
    return float(np.mean((np.asarray(low, dtype=float) <= y)
                         & (y <= np.asarray(high, dtype=float))))


def interval_score(y, low, high, level: float = 0.9) -> float:
    """Mean interval score of central ``level`` intervals (NaN for no cells).

    ``(high - low) + (2 / alpha) (low - y)`` where ``y < low``, ``+ (2 /
    alpha) (y - high)`` where ``y > high``, with ``alpha = 1 - level``
    (Gneiting and Raftery 2007, Sec. 6.2; Winkler 1972): lower is better,
    and it charges width and misses together, so an interval cannot win by
    being wide (misses are cheap) or narrow (width is cheap) alone.
    """
    y = np.asarray(y, dtype=float)
    if y.size == 0:
        return float("nan")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level!r}")
    low = np.asarray(low, dtype=float)
    high = np.asarray(high, dtype=float)
    alpha = 1.0 - level
    score = (high - low) + (2 / alpha) * (np.maximum(low - y, 0.0) + np.maximum(y - high, 0.0))
    return float(np.mean(score))


def interval_coverage(y, mean, std, level: float = 0.9) -> float:
    """Fraction of ``y`` inside the central Gaussian interval ``mean +- z * std``."""
    from scipy.special import ndtri

    half = ndtri(0.5 + level / 2) * np.asarray(std, dtype=float)
    mean = np.asarray(mean, dtype=float)
    return coverage(y, mean - half, mean + half)


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


def hamming_stability(selections: Sequence[Sequence[int]], n_items: int) -> float:
    """Hamming stability (Bowyer et al., App. C, eq. 35): the mean number of items in
    which two selections differ, over all pairs. 0 when every set is identical."""
    if len(selections) < 2:
        raise ValueError("stability needs at least two selections")
    z = np.zeros((len(selections), n_items))
    for row, s in enumerate(selections):
        z[row, np.asarray(s, dtype=int)] = 1.0
    # |a xor b| = |a| + |b| - 2 |a and b| for 0/1 vectors, for all pairs at once.
    sizes = z.sum(axis=1)
    dist = sizes[:, None] + sizes[None, :] - 2 * (z @ z.T)
    upper = np.triu_indices(len(selections), k=1)
    return float(dist[upper].mean())


def model_similarity(target: np.ndarray, source: np.ndarray) -> np.ndarray:
    """Similarity of each target model to the source models (Zhang et al. 2025, eq. 4).

    The mean over source models of Cohen's-kappa-like agreement
    ``(c_obs - c_exp) / (1 - c_exp)``: ``c_obs`` the fraction of questions both
    models got equally right or wrong, ``c_exp`` the agreement expected if
    their answers were independent given their accuracies. Needs 0/1 scores.

    Parameters
    ----------
    target : ndarray (R, N)
    source : ndarray (M, N)

    Returns
    -------
    ndarray (R,)
    """
    t, s = np.asarray(target, dtype=float), np.asarray(source, dtype=float)
    if not (np.isin(t, (0.0, 1.0)).all() and np.isin(s, (0.0, 1.0)).all()):
        raise ValueError("model similarity needs binary (0/1) scores")
    n = t.shape[1]
    c_obs = (t @ s.T + (1 - t) @ (1 - s).T) / n
    pt, ps = t.mean(axis=1)[:, None], s.mean(axis=1)[None, :]
    c_exp = pt * ps + (1 - pt) * (1 - ps)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = (c_obs - c_exp) / (1 - c_exp)
    # A pair with c_exp = 1 (both models all right or all wrong) carries no signal;
    # a target with no informative pair has no similarity (NaN, reported as null).
    informative = c_exp < 1
    count = informative.sum(axis=1)
    total = np.where(informative, kappa, 0.0).sum(axis=1)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


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
