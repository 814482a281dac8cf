"""The measurement noise of observed scores: ``--questions`` counts (binomial
standard errors), DATA's ``<benchmark>_stderr`` columns and lm-eval's
standard errors, for ``predict`` and ``compare``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..io import read_question_counts
from ..matrix import ScoreMatrix, did_you_mean
from ..observations import as_items
from ._args import UsageError


def _binomial_noise(spec: str | None, model, x: np.ndarray) -> np.ndarray:
    """``--questions``: the standard error sqrt(p(1-p)/N) of each observed score of ``x``
    (rows over ``model.items_``), on the benchmark's own scale ([0, 1] or [0, 100]);
    NaN where a score is observed without a count, 0 where none is observed."""
    out = np.where(np.isnan(x), 0.0, np.nan)
    if not spec:
        return out
    items = list(model.items_)
    counts = _question_counts(spec, items)
    for j, item in enumerate(items):
        n = counts.get(item, counts.get(None))
        rows = ~np.isnan(x[:, j])
        if n is None or not rows.any():
            continue
        low, high = model.bounds_[:, j]
        if not (low == 0 and high in (1, 100)):
            raise ValueError(f"--questions: {item!r} is not a score in [0, 1] or [0, 100] "
                             f"(bounds {low:g}, {high:g}); give its standard error in a "
                             "'_stderr' column instead")
        p = np.clip(x[rows, j] / high, 0.0, 1.0)
        out[rows, j] = high * np.sqrt(p * (1 - p) / n)
    return out


def _binomial_stderr(spec: str | None, observed: dict, model) -> dict:
    """``--questions`` for one model's ``{item: score}``: ``{item: standard error}``."""
    items = list(model.items_)
    x = np.full((1, len(items)), np.nan)
    for item, value in observed.items():
        x[0, items.index(item)] = value
    se = _binomial_noise(spec, model, x)[0]
    return {item: float(se[j]) for j, item in enumerate(items)
            if item in observed and np.isfinite(se[j])}


def _question_counts(spec: str, items: list[str]) -> dict:
    """``N`` (every benchmark, key None), ``NAME=N,...`` or a file of counts (as budget's
    ``--questions``: CSV ``benchmark,count`` or JSON), checked."""
    if Path(spec).is_file():
        counts = read_question_counts(spec)
        return dict(zip(as_items(list(counts), items), counts.values()))

    def count(text: str, where: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = 0
        if n < 1:
            raise UsageError(f"--questions {where}: {text!r} is not a positive whole number")
        return n

    if "=" not in spec:
        return {None: count(spec.strip(), "")}
    out = {}
    for part in filter(None, (t.strip() for t in spec.split(","))):
        name, _, value = part.rpartition("=")
        if name not in items:
            raise ValueError(f"--questions: no benchmark {name!r}{did_you_mean([name], items)}")
        out[name] = count(value.strip(), name)
    return out


def _split_stderr(scores: ScoreMatrix) -> tuple[ScoreMatrix, dict]:
    """DATA's ``<benchmark>_stderr`` columns apart: (the scores, model -> {item: stderr})."""
    pairs = {item: item[: -len("_stderr")] for item in scores.items
             if item.endswith("_stderr") and item[: -len("_stderr")] in scores.items}
    if not pairs:
        return scores, {}
    keep = [j for j, item in enumerate(scores.items) if item not in pairs]
    stderr = {}
    for i, model in enumerate(scores.models):
        stderr[model] = {
            pairs[item]: float(scores.values[i, j]) for j, item in enumerate(scores.items)
            if item in pairs and not np.isnan(scores.values[i, j])}
    return scores.subset(items=keep), stderr


def _stderr_rows(stderr: ScoreMatrix | None, names: list[str]) -> list[dict]:
    """``{item: standard error}`` of each named model, where one is known."""
    if stderr is None:
        return [{} for _ in names]
    return [{item: float(v) for item, v in zip(stderr.items, stderr.values[
        stderr.models.index(name)]) if np.isfinite(v)} if name in stderr.models else {}
        for name in names]
