"""How a protocol splits the models into sources and targets: one object per protocol.

:func:`~benchsel.evaluation.cross_validate` takes one as ``cv=``, as
scikit-learn's ``cross_validate`` takes a splitter: :class:`KFold` (the
default), :class:`PaperKFold` (the published code's folds), and the single
splits :class:`Extrapolation`, :class:`Frontier` and :class:`Dated`. Each is
a frozen record of its settings with a :meth:`split` that returns the folds
(:class:`~benchsel.splits.Fold`) of a score matrix; the fold rules
themselves are :mod:`benchsel.splits`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ..inputs import model_order_keys
from ..matrix import ScoreMatrix
from ..splits import (
    FRONTIER_FRACTION,
    FRONTIER_MIN_TARGETS,
    Fold,
    dated_split,
    frontier_split,
    kfold_with_holdout,
    paper_kfold,
    strength_split,
)

__all__ = ["Dated", "Extrapolation", "Frontier", "KFold", "PaperKFold", "Splits"]


class Splits(NamedTuple):
    """What a splitter makes of a board.

    Attributes
    ----------
    folds : list of Fold
    held : float
        The share of the models each fold holds out (reported as ``holdout``).
    order_seeds : list or None
        The random objective's seed per fold, where the splitter fixes it
        (the published code's); None: ``[seed, fold index]``.
    """

    folds: list[Fold]
    held: float
    order_seeds: list | None = None


@dataclass(frozen=True)
class KFold:
    """K folds over the models, each trained on a subsample (Smola 2026, Sec. 5.1;
    :func:`~benchsel.splits.kfold_with_holdout`).

    Parameters
    ----------
    folds : int, default 10
    holdout : float, default 0.1
        Fraction ``p`` that sets the training subsample ``floor((1 - p) M)``.
    seed : int, default 0
    """

    folds: int = 10
    holdout: float = 0.1
    seed: Any = 0

    protocol: ClassVar[str] = "cv"
    splitter: ClassVar[str] = "default"

    def split(self, scores: ScoreMatrix, given: ScoreMatrix | None = None) -> Splits:
        """The folds of ``scores`` (``given``, the board before cleaning, is unused)."""
        return Splits(kfold_with_holdout(scores.n_models, self.folds, self.holdout, self.seed),
                      self.holdout)


@dataclass(frozen=True)
class PaperKFold(KFold):
    """The folds of the paper's published code (:func:`~benchsel.splits.paper_kfold`):
    the same validation folds as :class:`KFold` for a seed, ``round((1 - p) M)``
    training models drawn per fold, and the random objective's order drawn as
    there, from ``default_rng((seed + 7, fold, int(p * 10000)))``."""

    seed: Any = 42

    splitter: ClassVar[str] = "paper"

    def split(self, scores: ScoreMatrix, given: ScoreMatrix | None = None) -> Splits:
        folds = paper_kfold(scores.n_models, self.folds, self.holdout, self.seed)
        seeds = [(self.seed + 7, f.index, int(self.holdout * 10000)) for f in folds]
        return Splits(folds, self.holdout, seeds)


@dataclass(frozen=True)
class Extrapolation:
    """Fit on the weakest ``train_fraction`` of the models, predict the strongest
    ``test_fraction`` (Zhang et al., Sec. 4.3; :func:`~benchsel.splits.strength_split`)."""

    train_fraction: float = 0.5
    test_fraction: float = 0.3

    protocol: ClassVar[str] = "extrapolation"
    splitter: ClassVar[str] = "default"

    def split(self, scores: ScoreMatrix, given: ScoreMatrix | None = None) -> Splits:
        fold = strength_split(scores.values, self.train_fraction, self.test_fraction)
        return Splits([fold], 1 - self.train_fraction)


@dataclass(frozen=True)
class Frontier:
    """Predict the strongest ``fraction`` of the models (at least ``min_targets``) from
    all the others (:func:`~benchsel.splits.frontier_split`): where a new checkpoint
    usually is."""

    fraction: float = FRONTIER_FRACTION
    min_targets: int = FRONTIER_MIN_TARGETS

    protocol: ClassVar[str] = "frontier"
    splitter: ClassVar[str] = "default"

    def split(self, scores: ScoreMatrix, given: ScoreMatrix | None = None) -> Splits:
        return Splits([frontier_split(scores.values, self.fraction, self.min_targets)],
                      self.fraction)


@dataclass(frozen=True)
class Dated:
    """Fit on the models that came out before ``before``, predict the later ones
    (:func:`~benchsel.splits.dated_split`).

    Parameters
    ----------
    order : mapping {model: key} or array-like (M,)
        When each model came out: a number or an ISO date per model (an array
        in the order of the board's models as given, before all-missing rows
        are dropped; :func:`benchsel.inputs.model_order_keys`).
    before : number or str
        The cut: models with a key below it are the sources.
    """

    order: Any
    before: Any

    protocol: ClassVar[str] = "dated"
    splitter: ClassVar[str] = "default"

    def split(self, scores: ScoreMatrix, given: ScoreMatrix | None = None) -> Splits:
        """The split of ``scores``; the order is read against ``given`` (the board as
        given, before all-missing rows were dropped), where it was given as an array."""
        given = scores if given is None else given
        keys, cut = model_order_keys(given.models, self.order, self.before)
        by_model = dict(zip(given.models, keys))
        fold = dated_split(np.array([by_model[m] for m in scores.models]), cut)
        return Splits([fold], fold.validation.size / scores.n_models)
