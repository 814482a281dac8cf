"""Splits of models into training and validation sets, and of cells into kept and hidden."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import names
from .matrix import MIN_MODELS, model_strength

__all__ = [
    "FRONTIER_FRACTION",
    "FRONTIER_MIN_TARGETS",
    "frontier_size",
    "Fold", "SPLITTERS", "completion_masks", "dated_split", "frontier_split", "kfold_with_holdout",
    "model_strength", "paper_kfold", "random_split", "strength_split",
]

#: The frontier: the strongest 10% of the models, at least 5 (:func:`frontier_size`):
#: the ``frontier`` protocols' targets, the held-out set of the Gaussian's frontier
#: shift, and each tail of ``auto``'s choice for a model beyond the sources.
FRONTIER_FRACTION = 0.1
FRONTIER_MIN_TARGETS = 5

#: Fold rules of :func:`~benchsel.evaluation.cross_validate`: benchsel's
#: (:func:`kfold_with_holdout`) and the paper's published one (:func:`paper_kfold`).
SPLITTERS = names.FOLD_SPLITTERS


@dataclass(frozen=True)
class Fold:
    """One cross-validation fold: disjoint training and validation model indices."""

    index: int
    train: np.ndarray
    validation: np.ndarray


def kfold_with_holdout(
    n_models: int, n_folds: int = 10, holdout: float = 0.1, seed=None
) -> list[Fold]:
    """K folds over models with a training subsample (Smola 2026, Sec. 5.1).

    The models are permuted and split into ``n_folds`` folds whose sizes
    differ by at most one. Each fold is the validation set once; from the
    other folds (the pool) a second permutation draws ``floor((1 - holdout) M)``
    training models (the whole pool when it is smaller).

    Parameters
    ----------
    n_models : int
        ``M``, at least ``n_folds``.
    n_folds : int, default 10
    holdout : float in (0, 1), default 0.1
        ``p``: at 0.1 the training set is the pool or the pool less one model
        (when the pool has ``ceil(0.9 M)`` models); at 0.9 it holds about
        ``M / 10`` models.
    seed : int or numpy Generator, optional

    Returns
    -------
    list of Fold
    """
    _check_folds(n_models, n_folds, holdout)
    rng = np.random.default_rng(seed)
    parts = np.array_split(rng.permutation(n_models), n_folds)
    # The tolerance keeps (1 - 0.9) * 100 = 9.999999999999998 from flooring to 9.
    n_train = int(np.floor((1 - holdout) * n_models + 1e-9))
    folds = []
    for f, validation in enumerate(parts):
        pool = np.concatenate([p for g, p in enumerate(parts) if g != f])
        train = rng.permutation(pool)[: min(n_train, pool.size)]
        folds.append(Fold(f, np.sort(train), np.sort(validation)))
    return folds


def _check_folds(n_models: int, n_folds: int, holdout: float) -> None:
    if not (isinstance(n_folds, int | np.integer) and n_folds >= 2):
        raise ValueError(f"n_folds must be an integer >= 2; got {n_folds!r}")
    if n_models < n_folds:
        raise ValueError(f"cannot make {n_folds} folds from {n_models} models")
    if not 0 < holdout < 1:
        raise ValueError(f"holdout must be in (0, 1); got {holdout!r}")


def paper_kfold(
    n_models: int, n_folds: int = 10, holdout: float = 0.1, seed: int = 42
) -> list[Fold]:
    """The folds of the paper's published code (``code/cv_split.py``).

    The same validation folds as :func:`kfold_with_holdout` with the same
    seed (one permutation from ``default_rng(seed)``, split into folds whose
    sizes differ by at most one); the training models are drawn differently:
    ``round((1 - holdout) M)`` of them (Python's rounding) and, when the pool
    of the other folds holds more, the first ones of a permutation of the
    pool (taken in fold order) by ``default_rng((seed, fold, int(holdout *
    10000)))``, so that each fold's draw does not depend on the others.

    Parameters
    ----------
    n_models : int
        ``M``, at least ``n_folds``.
    n_folds : int, default 10
    holdout : float in (0, 1), default 0.1
    seed : int, default 42
        The published experiments' seed.

    Returns
    -------
    list of Fold
    """
    _check_folds(n_models, n_folds, holdout)
    if not (isinstance(seed, int | np.integer) and seed >= 0):
        raise ValueError(f"seed must be a non-negative integer; got {seed!r}")
    parts = np.array_split(np.random.default_rng(seed).permutation(n_models), n_folds)
    n_train = round((1 - holdout) * n_models)
    folds = []
    for f, validation in enumerate(parts):
        pool = np.concatenate([p for g, p in enumerate(parts) if g != f])
        train = pool
        if n_train < pool.size:
            draw = np.random.default_rng((int(seed), f, int(holdout * 10000)))
            train = draw.permutation(pool)[:n_train]
        folds.append(Fold(f, np.sort(train), np.sort(validation)))
    return folds


def random_split(n_models: int, rng, train_fraction: float = 0.75, min_train: int = 1) -> Fold:
    """A random ``train_fraction`` of the models for training, the rest to test.

    The interpolation split of the question-level protocols (Zhang et al.,
    2025: 75% / 25%). ``rng`` is a :class:`numpy.random.Generator`; the
    training set has at least ``min_train`` models.
    """
    if not 0 < train_fraction < 1:
        raise ValueError(f"train_fraction must be in (0, 1); got {train_fraction!r}")
    order = rng.permutation(n_models)
    cut = max(int(min_train), int(train_fraction * n_models))
    return Fold(0, np.sort(order[:cut]), np.sort(order[cut:]))


def strength_split(
    values: np.ndarray, train_fraction: float = 0.5, test_fraction: float = 0.3,
    strength=None,
) -> Fold:
    """Weakest ``train_fraction`` of models for training, strongest ``test_fraction`` to test.

    The extrapolation split of Zhang et al. (2025, Sec. 4.3); models in
    between are not used. Ties in strength are broken by row order.
    ``strength`` is as in :func:`frontier_split`.
    """
    if not (0 < train_fraction < 1 and 0 < test_fraction < 1):
        raise ValueError(
            f"train and test fractions must be in (0, 1); got {train_fraction}, {test_fraction}"
        )
    if train_fraction + test_fraction > 1:
        raise ValueError("train and test fractions must not add up to more than 1")
    m = values.shape[0]
    order = np.argsort(_strength(values, strength), kind="stable")
    n_train = int(np.floor(train_fraction * m))
    n_test = int(np.floor(test_fraction * m))
    if n_train < MIN_MODELS or n_test < 1:
        raise ValueError(f"{m} models are too few for a {train_fraction:g}/{test_fraction:g} split")
    return Fold(0, np.sort(order[:n_train]), np.sort(order[m - n_test:]))


def frontier_size(n_models: int, fraction: float = FRONTIER_FRACTION,
                  min_targets: int = FRONTIER_MIN_TARGETS) -> int:
    """How many of ``n_models`` models the frontier holds: the strongest ``fraction``,
    at least ``min_targets``."""
    return max(int(min_targets), int(np.floor(fraction * n_models)))


def frontier_split(
    values: np.ndarray, fraction: float = FRONTIER_FRACTION,
    min_targets: int = FRONTIER_MIN_TARGETS, strength=None
) -> Fold:
    """The strongest models as targets, every other model as a source: the frontier.

    A new checkpoint is usually at or just past the top of the models a
    plan was fitted on. The strongest ``fraction`` of models (at least
    ``min_targets`` of them) are predicted from all the others. Ties in
    strength are broken by row order.

    Parameters
    ----------
    values : ndarray (M, N)
        Scores, NaN for missing.
    fraction : float in (0, 1), default :data:`FRONTIER_FRACTION` (0.1)
    min_targets : int, default :data:`FRONTIER_MIN_TARGETS` (5)
    strength : ndarray (M,), optional
        Each model's strength; by default :func:`model_strength` (the mean
        standardized observed score, which compares models run on different
        benchmarks). The question level passes the plain mean score: its
        matrices are complete, and a question every model answers alike has
        no standard deviation to standardize by.
    """
    if not 0 < fraction < 1:
        raise ValueError(f"fraction must be in (0, 1); got {fraction!r}")
    if not (isinstance(min_targets, int | np.integer) and min_targets >= 1):
        raise ValueError(f"min_targets must be a positive integer; got {min_targets!r}")
    m = values.shape[0]
    n_test = frontier_size(m, fraction, min_targets)
    if m - n_test < MIN_MODELS:
        raise ValueError(
            f"{m} models are too few for a frontier split: {n_test} targets leave "
            f"{m - n_test} source(s); need at least {MIN_MODELS}"
        )
    order = np.argsort(_strength(values, strength), kind="stable")
    return Fold(0, np.sort(order[:m - n_test]), np.sort(order[m - n_test:]))


def _strength(values: np.ndarray, strength) -> np.ndarray:
    """``strength`` checked to hold one value per model, or :func:`model_strength`."""
    m = values.shape[0]
    if strength is None:
        return model_strength(values)
    if np.shape(strength) != (m,):
        raise ValueError(f"strength must hold one value per model ({m}); "
                         f"got shape {np.shape(strength)}")
    return np.asarray(strength, dtype=float)


def dated_split(order, before: float) -> Fold:
    """Models that came out before ``before`` as sources, the others as targets.

    What a user's next model is to the models they already have: trained
    on the past, tested on what came after.

    Parameters
    ----------
    order : ndarray (M,)
        Each model's sort key (a release date as seconds since 1970, or any
        number; see :func:`benchsel.inputs.read_model_order`).
    before : float
        The cut, in the same units: keys strictly below it are sources.
    """
    keys = np.asarray(order, dtype=float)
    if keys.ndim != 1 or not np.isfinite(keys).all():
        raise ValueError("order must hold one finite key per model")
    if not np.isfinite(before):
        raise ValueError(f"before must be a finite number or date; got {before!r}")
    train, validation = np.flatnonzero(keys < before), np.flatnonzero(keys >= before)
    if train.size < 3 or validation.size < 1:
        raise ValueError(
            f"the cut leaves {train.size} model(s) before it and {validation.size} from it on; "
            "need at least 3 before and 1 after")
    return Fold(0, train, validation)


def completion_masks(
    observed: np.ndarray, hide: float = 0.5, folds: int = 3, min_observed: int = 8, seed=0
) -> list[np.ndarray]:
    """One boolean mask of hidden cells per fold: the ``complete`` protocol's split.

    Models with at least ``min_observed`` observed scores are split at
    random into ``folds`` folds; every model of a fold hides a random
    fraction ``hide`` of its observed scores (rounded, at least one, never
    all of them).
    """
    if not 0 < hide < 1:
        raise ValueError(f"hide must be in (0, 1); got {hide!r}")
    if min_observed < 2:
        raise ValueError(
            f"min_observed must be at least 2 (one hidden, one kept); got {min_observed}"
        )
    rng = np.random.default_rng(seed)
    counts = observed.sum(axis=1)
    eligible = np.flatnonzero(counts >= min_observed)
    if eligible.size < folds:
        raise ValueError(
            f"only {eligible.size} model(s) have at least {min_observed} observed scores; "
            f"need at least {folds}"
        )
    masks = []
    for part in np.array_split(rng.permutation(eligible), folds):
        mask = np.zeros_like(observed)
        for i in part:
            cells = np.flatnonzero(observed[i])
            n_hide = min(max(1, int(round(hide * cells.size))), cells.size - 1)
            mask[i, rng.choice(cells, n_hide, replace=False)] = True
        masks.append(mask)
    return masks
