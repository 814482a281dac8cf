"""The range each item's scores can take, and keeping predictions inside it.

A prediction of 100.4 [96.5, 104.3] on a percent benchmark is not a score
anyone can get. Each item has bounds ``[low, high]``: given by the user, or
inferred from the training column by :func:`infer_bounds`. A Gaussian
prediction is reported as the median and central interval of its normal
distribution truncated to the bounds (:func:`truncated_interval`), so an
interval near a bound narrows but never collapses; ends computed on another
scale (a transform's) are clipped into them (:func:`clip_to_bounds`).

:func:`column_scale` is the one rule that tells fractions from percentages;
:func:`benchsel.prediction.percent_scale` reads it too.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from .matrix import _short_list

__all__ = [
    "BOUNDS_KEYWORDS",
    "clip_to_bounds",
    "column_scale",
    "infer_bounds",
    "parse_bounds",
    "resolve_bounds",
    "truncated_interval",
]

BOUNDS_KEYWORDS = ("infer", "none")

_EXPECTED = (
    "None or 'infer' (from the training columns), 'none' (unbounded), a (low, high) pair "
    "for every item, text 'LOW,HIGH', or a mapping {item: (low, high)}"
)


def column_scale(values: np.ndarray) -> np.ndarray:
    """Per column of ``values`` (M, N): ``"fraction"``, ``"percent"`` or ``""``.

    ``"fraction"`` when every observed score lies in ``[0, 1]``, ``"percent"``
    when every one lies in ``[0, 100]`` and some exceeds 1, ``""`` otherwise
    (negative scores, scores above 100, or no observed score).
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 2:
        raise ValueError(f"values must be a 2-d array (models x items); got shape {values.shape}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: NaN, unbounded
        low = np.nanmin(values, axis=0)
        high = np.nanmax(values, axis=0)
    nonneg = low >= 0  # False for NaN
    return np.where(
        nonneg & (high <= 1), "fraction", np.where(nonneg & (high <= 100), "percent", "")
    )


def infer_bounds(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Score bounds of each column, inferred from its observed scores.

    The rule, per column:

    * every observed score in ``[0, 1]``: a fraction (accuracy, win rate),
      bounded to ``[0, 1]``;
    * every observed score in ``[0, 100]`` and some above 1: a percentage,
      bounded to ``[0, 100]``;
    * otherwise (a negative score, a score above 100, or no observed score):
      unbounded, ``(-inf, inf)``. Elo ratings, correlations that can be
      negative, token counts and score differences fall here.

    The rule looks only at the range, so a column on another bounded scale
    (MT-Bench's 1-10) gets the loosest bound that holds it, ``[0, 100]``;
    give tighter bounds explicitly when they matter.

    Parameters
    ----------
    values : ndarray of shape (M, N)
        Scores, NaN where not observed.

    Returns
    -------
    low, high : ndarray of shape (N,)
        Lower and upper bound of each column; ``-inf`` / ``inf`` where
        unbounded.
    """
    scale = column_scale(values)
    low = np.where(scale == "", -np.inf, 0.0)
    high = np.where(scale == "fraction", 1.0, np.where(scale == "percent", 100.0, np.inf))
    return low, high


def parse_bounds(text: str) -> tuple[float, float]:
    """Parse command-line bounds ``"LOW,HIGH"`` (for example ``"0,1"`` or ``"0,100"``).

    Either end may be ``-inf`` / ``inf`` for a one-sided bound; ``"none"``
    means unbounded, ``(-inf, inf)``.

    Raises
    ------
    ValueError
        If ``text`` is not two numbers separated by a comma, or ``LOW`` is
        not below ``HIGH``.
    """
    if not isinstance(text, str):
        raise TypeError(f"bounds text must be a string 'LOW,HIGH'; got {type(text).__name__}")
    if text.strip().lower() == "none":
        return -np.inf, np.inf
    parts = text.split(",")
    try:
        if len(parts) != 2:
            raise ValueError
        low, high = (float(p) for p in parts)
    except ValueError:
        raise ValueError(
            f"bounds must be 'LOW,HIGH' (two numbers separated by a comma, e.g. '0,1' or "
            f"'0,100'; -inf/inf for one side) or 'none'; got {text!r}"
        ) from None
    return _check_pair((low, high), f"bounds {text!r}")


def _check_pair(pair, what: str) -> tuple[float, float]:
    """``pair`` as ``(low, high)`` floats with ``low < high``, or a ValueError naming ``what``."""
    if isinstance(pair, (str, bytes)) or not isinstance(pair, (Sequence, np.ndarray)):
        raise ValueError(f"{what} must be a (low, high) pair of numbers; got {pair!r}")
    try:
        if len(pair) != 2:
            raise ValueError
        low, high = float(pair[0]), float(pair[1])
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a (low, high) pair of numbers; got {pair!r}") from None
    if np.isnan(low) or np.isnan(high) or not low < high:
        raise ValueError(
            f"{what} must have low < high (either may be infinite, neither NaN); "
            f"got ({low!r}, {high!r})"
        )
    return low, high


def resolve_bounds(
    spec, items: Sequence[str], values: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Turn a ``bounds`` specification into per-item arrays and check them against ``values``.

    Parameters
    ----------
    spec : None, "infer", "none", (low, high), "LOW,HIGH" or mapping {item: (low, high)}
        ``None`` / ``"infer"``: :func:`infer_bounds` on ``values``; ``"none"``:
        unbounded; a pair or its text: the same bounds for every item; a
        mapping: bounds for the items it names, inferred for the others.
    items : sequence of str
        Names of the columns of ``values``.
    values : ndarray of shape (M, N)
        Training scores, NaN where not observed.

    Returns
    -------
    low, high : ndarray of shape (N,)

    Raises
    ------
    ValueError
        If ``spec`` is none of the above, a pair has ``low >= high``, a
        mapping names an unknown item, or a training score lies outside the
        bounds given for its item (bounds on the wrong scale).
    """
    items = [str(name) for name in items]
    values = np.asarray(values, dtype=float)
    inferred = infer_bounds(values)
    if spec is None or (isinstance(spec, str) and spec == "infer"):
        return inferred
    n = len(items)
    if isinstance(spec, str):
        if spec == "none":
            return np.full(n, -np.inf), np.full(n, np.inf)
        try:
            pair = parse_bounds(spec)
        except ValueError:
            raise ValueError(f"bounds must be {_EXPECTED}; got {spec!r}") from None
        low, high = np.full(n, pair[0]), np.full(n, pair[1])
    elif isinstance(spec, Mapping):
        low, high = inferred[0].copy(), inferred[1].copy()
        index = {name: j for j, name in enumerate(items)}
        unknown = [str(k) for k in spec if str(k) not in index]
        if unknown:
            raise ValueError(
                f"bounds name unknown item(s) {_short_list(unknown)}; valid names are: "
                f"{_short_list(items, limit=60)}"
            )
        for name, pair in spec.items():
            j = index[str(name)]
            low[j], high[j] = _check_pair(pair, f"bounds for {str(name)!r}")
    elif isinstance(spec, (Sequence, np.ndarray)):
        pair = _check_pair(spec, "bounds")
        low, high = np.full(n, pair[0]), np.full(n, pair[1])
    else:
        raise ValueError(f"bounds must be {_EXPECTED}; got {spec!r}")
    _check_values_inside(low, high, items, values)
    return low, high


def _check_values_inside(low, high, items, values) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        vmin = np.nanmin(values, axis=0)
        vmax = np.nanmax(values, axis=0)
    bad = np.flatnonzero((vmin < low) | (vmax > high))
    if bad.size:
        shown = "; ".join(
            f"{items[j]!r} has scores {vmin[j]:g} to {vmax[j]:g}, bounds [{low[j]:g}, {high[j]:g}]"
            for j in bad[:5]
        )
        more = f" (and {bad.size - 5} more)" if bad.size > 5 else ""
        raise ValueError(
            f"bounds exclude training scores of {bad.size} item(s): {shown}{more}; "
            "bounds must hold every training score (percent columns need '0,100', "
            "fractions '0,1')"
        )


def clip_to_bounds(
    arrays: Sequence[np.ndarray], observed: np.ndarray, low: np.ndarray, high: np.ndarray
) -> list[np.ndarray]:
    """Clip each array of shape (R, N) into ``[low_j, high_j]`` on unobserved cells.

    Observed cells are returned as given, even outside the bounds (a score on
    another scale is reported, not silently changed). Clipping a Gaussian's
    mean and central-interval ends gives the median and central interval of
    the *censored* variable ``clip(Y, low, high)``, whose quantiles are the
    clipped quantiles of ``Y``.
    """
    return [np.where(observed, a, np.clip(a, low, high)) for a in arrays]


def truncated_interval(
    mean: np.ndarray, std: np.ndarray, observed: np.ndarray, low: np.ndarray,
    high: np.ndarray, level: float, *, center_std: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Median and central ``level`` interval of ``N(mean, std^2)`` truncated to ``[low, high]``.

    A score cannot leave its bounds, so the prediction's distribution is
    the normal one conditioned on lying inside them. Unlike clipping the
    normal's quantiles (the censored variable), which turns a mean beyond a
    bound by more than ``z * std`` into the zero-width interval
    ``[high, high]``, the truncated interval always has positive width where
    ``std > 0``: it narrows toward the bound as the mean moves past it.
    Where the normal's own interval reaches a bound, the interval reaches it
    too (it is the union of the truncated and the censored intervals):
    scores pile up at a bound, a ceiling of 100 on an easy benchmark, and
    the truncated interval alone never holds the bound itself.
    Inside the bounds, a few standard deviations from both, it is the plain
    ``mean +- z * std``.

    Parameters
    ----------
    mean, std : ndarray of shape (R, N)
        The prediction's normal mean and standard deviation (NaN allowed).
    observed : ndarray of bool, shape (R, N)
        Cells returned unchanged (``mean`` as given, an interval of zero width).
    low, high : ndarray of shape (N,)
        Each item's bounds; infinite for an unbounded side.
    level : float in (0, 1)
    center_std : ndarray of shape (R, N), optional
        The standard deviation whose truncated median is the point
        prediction (default ``std``). Pass the predictor's own, uncalibrated
        one when ``std`` carries a calibration multiplier: the multiplier is
        measured per level and, for a model with no observed score, is
        several column spreads wide; the point should move with neither.
        The median is kept inside the interval.

    Returns
    -------
    median, lower, upper : ndarray of shape (R, N)
    """
    from scipy.special import ndtri

    mean = np.asarray(mean, dtype=float)
    std = np.asarray(std, dtype=float)
    low = np.broadcast_to(np.asarray(low, dtype=float), mean.shape)
    high = np.broadcast_to(np.asarray(high, dtype=float), mean.shape)
    tail = (1.0 - level) / 2.0
    z = ndtri(1.0 - tail)
    lower, upper = (_truncated_quantile(mean, std, low, high, q, fallback)
                    for q, fallback in ((tail, -z), (1.0 - tail, z)))
    # A bound the normal's own interval reaches is part of the interval: scores
    # pile up at a ceiling (100 on an easy benchmark), which is the normal
    # *censored* at the bound, and the truncated interval alone never reaches
    # it (on a synthetic board with ceilings it covered none of the 106 scores
    # of 100 a frontier model made, and 61% of all its scores).
    with np.errstate(invalid="ignore"):
        lower = np.fmin(lower, np.clip(mean - z * std, low, high))
        upper = np.fmax(upper, np.clip(mean + z * std, low, high))
    center = std if center_std is None else np.asarray(center_std, dtype=float)
    median = _truncated_quantile(mean, center, low, high, 0.5, 0.0)
    with np.errstate(invalid="ignore"):
        median = np.clip(median, lower, upper)  # NaN ends leave it as it is
    median = np.where(np.isnan(lower) | np.isnan(upper), np.clip(mean, low, high), median)
    return tuple(np.where(observed, mean, a) for a in (median, lower, upper))


def _truncated_quantile(mean, std, low, high, q: float, z: float) -> np.ndarray:
    """Quantile ``q`` of ``N(mean, std^2)`` truncated to ``[low, high]``, elementwise.

    Where there is no spread, or no mass left inside the bounds in floating
    point, the normal's own quantile ``mean + z * std`` clipped into the
    bounds (NaN where ``std`` is NaN) is all that can be said.
    """
    from scipy.special import log_ndtr, ndtri_exp  # here: importing bounds stays light

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a, b = (low - mean) / std, (high - mean) / std
        # Mirror so that the bounds' midpoint lies at or below the mean; then
        # the truncated mass sits in the normal's lower half or straddles it,
        # where the log CDF and its inverse keep full precision even for a
        # mean many standard deviations beyond a bound.
        flip = a + b > 0
        lo_t, hi_t = np.where(flip, -b, a), np.where(flip, -a, b)
        q_t = np.where(flip, 1.0 - q, q)
        # Phi(u) = (1 - q) Phi(lo) + q Phi(hi), in logs.
        log_p = np.logaddexp(log_ndtr(lo_t) + np.log1p(-q_t), log_ndtr(hi_t) + np.log(q_t))
        u = np.clip(ndtri_exp(np.minimum(log_p, 0.0)), lo_t, hi_t)
        value = np.where(flip, mean - u * std, mean + u * std)
        spread = np.where(std > 0, std, np.where(np.isnan(std), np.nan, 0.0))
        fallback = np.clip(mean + z * spread if z else mean, low, high)
    degenerate = ~(std > 0) | ~(hi_t > lo_t) | ~np.isfinite(value)
    return np.where(degenerate, fallback, value)


def truncated_std(mean: np.ndarray, std: np.ndarray, low: np.ndarray,
                  high: np.ndarray) -> np.ndarray:
    """Standard deviation of ``N(mean, std^2)`` truncated to ``[low, high]``, elementwise.

    The spread of the distribution whose median and interval
    :func:`truncated_interval` reports: never more than the normal's, nor
    than half the width of the bounds (no distribution on ``[low, high]``
    spreads more), and the normal's own where the bounds are infinite or
    many standard deviations away. Computed in logs on the side of the
    normal the bounds lie in, so a mean far beyond a bound still gets the
    narrow spread of the normal's tail (checked against
    :func:`scipy.stats.truncnorm` in the tests). Where there is no spread
    (``std`` 0 or NaN) ``std`` is returned.
    """
    from scipy.special import log_ndtr  # here: importing bounds stays light

    mean = np.asarray(mean, dtype=float)
    std = np.asarray(std, dtype=float)
    low = np.broadcast_to(np.asarray(low, dtype=float), np.broadcast(mean, std).shape)
    high = np.broadcast_to(np.asarray(high, dtype=float), low.shape)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a, b = (low - mean) / std, (high - mean) / std
        flip = a + b > 0  # mirror: the bounds' midpoint at or below the mean
        lo_t, hi_t = np.where(flip, -b, a), np.where(flip, -a, b)
        log_hi = log_ndtr(hi_t)
        log_z = log_hi + np.log1p(-np.exp(log_ndtr(lo_t) - log_hi))
        log_phi = -0.5 * np.log(2 * np.pi)

        def ratio(u):
            """phi(u) / Z, and u phi(u) / Z (0 at an infinite bound)."""
            r = np.exp(log_phi - 0.5 * u**2 - log_z)
            return r, np.where(np.isfinite(u), u * r, 0.0)

        r_lo, ur_lo = ratio(lo_t)
        r_hi, ur_hi = ratio(hi_t)
        var = 1.0 + ur_lo - ur_hi - (r_lo - r_hi) ** 2
        width = hi_t - lo_t
        # Far beyond a bound (a thousand SDs) the cancellation above loses every
        # digit: there the truncated normal is the normal's tail, an exponential
        # of spread 1 / distance (no wider than a uniform over the bounds).
        tail = np.minimum(1.0 / hi_t**2, width**2 / 12)
        far = (hi_t < -1e3) | ~np.isfinite(var) | ~(var > 0)
        var = np.where(far, tail, var)
        var = np.minimum(var, np.minimum(1.0, width**2 / 4))
        out = std * np.sqrt(var)
    return np.where(std > 0, out, std)
