"""How stable a selection is: how often each benchmark is selected over resamples of the models."""

from __future__ import annotations

import warnings

import numpy as np

from ..matrix import DataWarning, ScoreMatrix
from ..models import GaussianModel
from ..sources import as_scores

__all__ = ["selection_frequency"]


def selection_frequency(
    scores: ScoreMatrix, k, *, bootstrap: int, seed: int = 0, progress=None,
    model_options: dict | None = None, select_options: dict | None = None,
) -> tuple[dict[str, float], int]:
    """Share of model resamples in which each benchmark is selected.

    Each resample draws the models with replacement, refits a
    :class:`~benchsel.models.GaussianModel` (``model_options``) and
    selects ``k`` items (``select_options`` as in
    :meth:`~benchsel.models.GaussianModel.select`). ``seed`` draws the
    resamples.

    Returns
    -------
    frequency : dict item -> share in [0, 1]
        Every item selected in at least one resample.
    skipped : int
        Resamples in which the fit or the selection failed (e.g. a column
        left with one distinct score); the shares count the others.
    """
    if not (isinstance(bootstrap, int | np.integer) and bootstrap >= 1):
        raise ValueError(f"bootstrap must be a positive whole number; got {bootstrap!r}")
    scores = as_scores(scores).cleaned()
    rng = np.random.default_rng(seed)
    counts: dict[str, int] = {}
    done = skipped = 0
    for b in range(bootstrap):
        rows = rng.integers(scores.n_models, size=scores.n_models)
        resample = ScoreMatrix(scores.values[rows], [f"resample{i}" for i in range(rows.size)],
                               scores.items)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DataWarning)
                model = GaussianModel(**(model_options or {})).fit(resample)
                chosen = model.select(k, **(select_options or {})).items
        except ValueError:
            skipped += 1
            continue
        done += 1
        for name in chosen:
            counts[name] = counts.get(name, 0) + 1
        if progress is not None:
            progress(b + 1, bootstrap)
    return ({name: c / done for name, c in counts.items()} if done else {}), skipped
