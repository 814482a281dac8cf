"""``auto``: the completion method that wins a cross-validation on the matrix itself.

:func:`choose_completer` ranks the methods of :data:`AUTO_CANDIDATES` on
cells hidden from the matrix being completed (:mod:`.holdout`),
:func:`choose_for_new_models` makes that choice for new models inside and
beyond the source models' range, and :func:`complete_auto` completes with the
winner, the cells it cannot predict by the runner-up, and so on.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .._memory import MemoryBudgetError
from ..matrix import DataWarning
from ..progress import report as _report
from .cache import CompletionCache
from .completers import METHODS
from .fits import INDUCTIVE, FitStore
from .holdout import _auto_masks, choice_folds
from .latent import Completion

__all__ = [
    "AUTO_CANDIDATES",
    "auto_candidates",
    "AUTO_MIN_COVERAGE",
    "MethodChoice",
    "choose_completer",
    "choose_for_new_models",
    "complete_auto",
    "held_out_cells",
    "median_ape",
]


#: ``auto`` chooses among the methods that predict at least this share of held-out cells.
AUTO_MIN_COVERAGE = 0.99
#: What ``auto`` chooses from: every method but ``auto`` itself (``gaussian-em``
#: on complete boards only: :func:`auto_candidates`).
AUTO_CANDIDATES = tuple(METHODS)


def auto_candidates(values: np.ndarray) -> tuple[str, ...]:
    """The methods ``auto`` compares on ``values``: :data:`AUTO_CANDIDATES`, less
    ``gaussian-em`` when a cell is missing.

    ``gaussian-em`` (the plain EM Gaussian beside the shrunk one) earns its
    place on complete boards, where its EM is the sample covariance in a few
    iterations: without it a model far beyond the sources was predicted
    worse on the held-out boards. With missing cells its EM runs to its cap
    of 300 iterations (about 12 times ``gaussian``'s fits: most of the
    choice's time on a sparse board), and there it did not earn its place:
    leaving it out changed no interval score on MERGED or MTEB and improved
    the held-out sparse boards' by 0.008 (frontier) and 0.026
    (extrapolation) on average (docs/intervals.md, "Which rules earn their
    place").
    """
    if np.isnan(values).any():
        return tuple(m for m in AUTO_CANDIDATES if m != "gaussian-em")
    return AUTO_CANDIDATES


def median_ape(true: np.ndarray, pred: np.ndarray) -> float:
    """Median absolute percentage error over cells with a nonzero true score (NaN if none).

    A true score below a millionth of the typical one counts as zero: its
    percentage error is meaningless (and a subnormal one overflows).
    """
    size = np.abs(true)
    positive = size[size > 0]
    if not positive.size:
        return float("nan")
    nonzero = size > 1e-6 * np.median(positive)
    with np.errstate(over="ignore"):  # an error of 1e300 on a score of 1e-7 is infinite here
        ape = 100 * np.abs(pred[nonzero] - true[nonzero]) / size[nonzero]
    return float(np.median(ape)) if ape.size else float("nan")


@dataclass(frozen=True)
class MethodChoice:
    """The completion method ``auto`` chose, and the figures it chose by.

    Attributes
    ----------
    method : str
        The winner: lowest MedAPE among methods that predicted at least
        :data:`AUTO_MIN_COVERAGE` of the held-out cells (when none did, the
        method that predicted most).
    fallbacks : tuple of str
        The others in rank order, then ``mean``: who fills a cell the
        winner cannot predict.
    medape, coverage : dict
        Per method, MedAPE (%) and share of held-out cells predicted (%).
    cells : int
        Held-out cells the choice was made on (0: too few models to hold
        any out; the choice is then ``gaussian``).
    split : str
        What the held-out models were: ``"random"`` (random models, as a
        new model inside the source models' range), ``"near"`` (the
        strongest 10%, then the weakest 10%, at least 5 each, predicted from
        the other models: as a new model beyond the range), or ``"none"``
        for a new model with no score (it gets ``mean``:
        :func:`~benchsel.prediction.registry.complete_new_rows`).
    """

    method: str
    fallbacks: tuple
    medape: dict
    coverage: dict
    cells: int
    split: str = "random"

    @property
    def margin(self) -> float:
        """MedAPE of the runner-up minus the winner's (NaN without one)."""
        ranked = [m for m in (self.method, *self.fallbacks) if m in self.medape]
        if len(ranked) < 2:
            return float("nan")
        return float(self.medape[ranked[1]] - self.medape[ranked[0]])

    def to_dict(self) -> dict:
        def num(v):
            return None if v is None or not np.isfinite(v) else float(v)

        return {"method": self.method, "fallbacks": list(self.fallbacks),
                "margin": num(self.margin), "cells": self.cells, "split": self.split,
                "medape": {m: num(v) for m, v in self.medape.items()},
                "coverage": {m: num(v) for m, v in self.coverage.items()}}


def choose_completer(
    values: np.ndarray, *, methods=None, given=None, folds: int = 3, hide: float = 0.5,
    seed=0, cache: CompletionCache | None = None, split: str = "random",
    fits: FitStore | None = None,
) -> MethodChoice:
    """Cross-validate completion methods on ``values`` and rank them.

    The folds hide cells of the matrix itself: with ``given`` (a boolean
    mask of items, the pattern of a new model) each held-out model keeps
    only its given cells, as the new model has; otherwise a fraction
    ``hide`` of its cells, as in the ``complete`` protocol. Every method sees
    the same folds.

    With ``given``, which models a fold holds out does not depend on it
    (:func:`~benchsel.prediction.holdout.choice_folds`), and the
    Gaussian-based and low-rank methods
    (:data:`~benchsel.prediction.fits.INDUCTIVE`) are fitted on the models
    the fold keeps and predict the held-out ones from their given scores, as
    ``predict`` meets a new model
    (:func:`~benchsel.prediction.registry.complete_new_rows`: one fit on the
    sources, the new row conditioned on or folded in). Those fits, most of
    the choice's time, then depend on the board alone, and ``fits`` keeps
    them for every other set of given benchmarks. (Fitted on every row
    instead, as before, the held-out models' given scores took part in the
    fit: a third of the models, where a new model is one row.)

    ``split="near"`` (with ``given``) holds out the strongest 10% of the
    models (at least 5), predicted from the others, and then the weakest
    10%, as the frontier split does: the choice for a new model beyond the
    source models' range, where a new checkpoint usually is. Methods rank
    differently there: under the extrapolation protocol, choosing for the
    strong new models on random folds lost R^2 to the Gaussian on MERGED
    (0.21 against 0.47 at k = 2), HELM Lite and BigCodeBench
    (docs/experiments/reproduction.md). A second choice on 30% tails for
    models far beyond the range was removed: on boards no rule was tuned on
    it did not earn its place (docs/intervals.md, "Which rules earn their
    place").

    A candidate that would need more memory than the budget
    (:class:`~benchsel._memory.MemoryBudgetError`: ``ridge``'s ``N x N``
    correlations on a board of 25,000 benchmarks) predicts nothing, so it
    ranks last, with one :class:`~benchsel.matrix.DataWarning` naming it.

    Parameters
    ----------
    values : ndarray of shape (M, N)
    methods : sequence of str, optional
        Candidates (default: :func:`auto_candidates`).
    given : array-like of bool, shape (N,), optional
    folds : int, default 3
    hide : float, default 0.5
    seed : int, default 0
    cache : CompletionCache, optional
        Shared with the calls that calibrate and complete with the winner,
        so that what they repeat is computed once.
    split : {"random", "near"}, default "random"
    fits : FitStore, optional
        The fits made before on this board, where new ones are kept too.

    Returns
    -------
    MethodChoice
        With ``cells == 0`` when there were too few models to hold any out
        (then ``gaussian``).
    """
    values = np.asarray(values, dtype=float)
    methods = [m for m in (methods or auto_candidates(values)) if m != "auto"]
    for m in methods:
        if m not in METHODS:
            raise ValueError(f"unknown completion method {m!r}; methods: {', '.join(METHODS)}")
    if split not in ("random", "near"):
        raise ValueError(f"split must be 'random' or 'near'; got {split!r}")
    if split != "random" and given is None:
        raise ValueError(f"split={split!r} needs the given items")
    if given is None:
        parts = [(None, mask) for mask in _auto_masks(~np.isnan(values), folds, hide, seed)]
    else:
        parts = choice_folds(values, np.asarray(given, dtype=bool), split, folds, seed)
    parts = [(held, mask) for held, mask in parts if mask.any()]
    if not parts:
        return MethodChoice(*rank_methods({}, {}), {}, {}, 0, split)
    true = np.concatenate([values[mask] for _, mask in parts])
    pred = {m: [] for m in methods}
    cache = cache or CompletionCache()
    fits = FitStore() if fits is None else fits
    stage = {"random": "choosing the predictor",
             "near": "choosing the predictor beyond the sources' range"}[split]
    total, done = len(parts) * len(methods), 0
    over: dict[str, str] = {}  # methods the memory budget rules out, and why
    for held, mask in parts:
        for m in methods:
            _report(stage, done, total)
            try:
                cells = None if m in over else held_out_cells(values, held, mask, m, cache,
                                                               fits)
            except MemoryBudgetError as err:
                over[m] = str(err)
                cells = None
            # A method the budget rules out predicts nothing: it ranks last.
            pred[m].append(np.full(int(mask.sum()), np.nan) if cells is None else cells)
            done += 1
    for m, why in over.items():
        warnings.warn(f"auto leaves {m} out: {why}", DataWarning, stacklevel=2)
    _report(stage, total, total)
    medape, coverage = {}, {}
    for m in methods:
        p = np.concatenate(pred[m])
        got = ~np.isnan(p)
        coverage[m] = float(100 * got.mean())
        medape[m] = median_ape(true[got], p[got])
    return MethodChoice(*rank_methods(medape, coverage), medape, coverage, int(true.size),
                        split)


def rank_methods(medape: dict, coverage: dict) -> tuple[str, tuple]:
    """The winner and the fallbacks of :class:`MethodChoice` from its figures.

    Methods that predicted at least :data:`AUTO_MIN_COVERAGE` of the
    held-out cells by MedAPE, then the others by coverage; ties keep the
    figures' order. Without figures (no model could be held out) the
    choice is ``gaussian``. A kept choice is checked against it when it is
    read back (:meth:`~benchsel.prediction.memo.AutoMemo.from_json`).
    """
    if not medape:
        return "gaussian", ("mean",)
    full = sorted((m for m in medape if coverage[m] >= 100 * AUTO_MIN_COVERAGE
                   and np.isfinite(medape[m])), key=lambda m: medape[m])
    rest = sorted((m for m in medape if m not in full),
                  key=lambda m: (-coverage[m], medape[m] if np.isfinite(medape[m]) else np.inf))
    ranked = full + rest
    return ranked[0], tuple(ranked[1:]) + (() if "mean" in ranked else ("mean",))


def held_out_cells(values: np.ndarray, held, hidden: np.ndarray, method: str,
                   cache: CompletionCache, fits: FitStore) -> np.ndarray:
    """``method``'s predictions of the ``hidden`` cells of ``values`` (in
    ``values[hidden]`` order).

    An inductive method (:data:`~benchsel.prediction.fits.INDUCTIVE`) is
    fitted on the models ``held`` leaves and predicts the held-out ones from
    their other cells, as ``predict`` meets a new model; any other method
    (and every method when ``held`` is None) completes the matrix with the
    ``hidden`` cells removed.
    """
    if held is not None and method in INDUCTIVE:
        return cache.held_out(values, held, hidden, method, fits).mean[hidden]
    return cache.get(np.where(hidden, np.nan, values), method, hidden.any(axis=1)).mean[hidden]


def choose_for_new_models(
    values: np.ndarray, given, excess, *, cache: CompletionCache | None = None, memo=None,
) -> list[MethodChoice]:
    """``auto``'s choice for each new model run on the ``given`` items.

    ``excess`` (one per new model) is how far it lies beyond the source
    models' strength range (:func:`~benchsel.calibration.regime_excess`; 0
    inside), negative for a model below the range. Models inside get the
    choice of random held-out models, those beyond it that of the ``near``
    tails (:func:`choose_completer`). Each is computed only if some model
    needs it, and tails with too few models defer to random folds. With ``memo`` (an
    :class:`~benchsel.prediction.memo.AutoMemo` of ``values``) a choice made
    before is taken from it, and a new one kept in it.
    """
    excess = np.asarray(excess, dtype=float)
    cache = cache or CompletionCache()
    made: dict[str, MethodChoice] = {}

    def choose(split: str) -> MethodChoice:
        if split not in made:
            def run():
                return choose_completer(values, given=given, cache=cache, split=split,
                                        fits=None if memo is None else memo.fits)
            made[split] = run() if memo is None else memo.choice(given, split, run)
        return made[split]

    def beyond() -> MethodChoice:
        return choose("near") if choose("near").cells else choose("random")

    return [choose("random") if e == 0 else beyond() for e in excess]


def complete_auto(
    values: np.ndarray, choice: MethodChoice | None = None, *,
    cache: CompletionCache | None = None,
) -> Completion:
    """Complete with the method :func:`choose_completer` ranks first, gaps by the next ones."""
    values = np.asarray(values, dtype=float)
    cache = cache or CompletionCache()
    choice = choice or choose_completer(values, cache=cache)
    ranked = (choice.method, *choice.fallbacks)
    res = cache.get(values, choice.method)
    mean, std = res.mean.copy(), res.std.copy()
    for m in ranked[1:]:
        gap = np.isnan(mean)
        if not gap.any():
            break
        other = cache.get(values, m)
        mean[gap], std[gap] = other.mean[gap], other.std[gap]
    return Completion(mean, std)
