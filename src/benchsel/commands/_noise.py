"""The measurement noise of observed scores as ``predict`` and ``compare`` take it:
``--questions`` (:func:`benchsel.observations.binomial_stderr`), DATA's
``<benchmark>_stderr`` columns and lm-eval's standard errors."""

from __future__ import annotations

import numpy as np

from ..matrix import ScoreMatrix
from ..observations import binomial_stderr
from ._args import _as_flags


def _binomial_noise(spec: str | None, model, x: np.ndarray) -> np.ndarray:
    """``--questions``: :func:`~benchsel.observations.binomial_stderr` of ``x`` (NaN where
    a score is observed without a count, 0 where none is observed)."""
    if not spec:
        return np.where(np.isnan(x), 0.0, np.nan)
    with _as_flags(questions="--questions"):
        return binomial_stderr(model, x, spec)


def _binomial_stderr(spec: str | None, observed: dict, model) -> dict:
    """``--questions`` for one model's ``{item: score}``: ``{item: standard error}``."""
    items = list(model.items_)
    x = np.full((1, len(items)), np.nan)
    for item, value in observed.items():
        x[0, items.index(item)] = value
    se = _binomial_noise(spec, model, x)[0]
    return {item: float(se[j]) for j, item in enumerate(items)
            if item in observed and np.isfinite(se[j])}


def _stderr_rows(stderr: ScoreMatrix | None, names: list[str]) -> list[dict]:
    """``{item: standard error}`` of each named model, where one is known."""
    if stderr is None:
        return [{} for _ in names]
    return [{item: float(v) for item, v in zip(stderr.items, stderr.values[
        stderr.models.index(name)]) if np.isfinite(v)} if name in stderr.models else {}
        for name in names]
