"""Cross-validated imputation quality of a selection (Smola 2026, Sec. 5.1).

For each fold: standardize with the training models' means and standard
deviations, estimate the covariance from the training models only, select
``k_max`` items greedily (the first ``k`` of that order are the size-``k``
selection), and predict each validation model's observed, unselected scores
from the selected scores it has. Standardized validation scores are clipped
to ``[-clip, clip]`` (for R²: a 90% interval is scored on the score itself);
conditional solves add ``ridge * I``.

R^2 bookkeeping (documented because papers differ on it): for one fold and
one ``k`` the R^2 is pooled over every scored cell of every validation model,
``1 - sum (y - yhat)^2 / sum y^2`` in standardized units (so predicting zero,
the training mean, scores 0). The reported ``r2_mean`` and ``r2_std`` are the
mean and standard deviation of the per-fold values. A cell is scored when the
validation model has it observed, it is not selected, and its column could be
standardized on the training models (two or more distinct observed values).

``scoring="paper"`` follows the published code of Smola (2026),
``code/eval_entropy_vs_mi.py``, in two places: a validation model with none
of the selected items observed is left out of the fold's sums (by default its
cells are scored against the training mean), and a column the fold cannot
standardize (fewer than two training scores, or no spread) is still scored
where a validation model has it, predicted as the training mean with the
published scale floor ``0.01 (|mean| + 1)`` (mean 0 when the column has no
training score). Under ``covariance="paper"`` the floor already keeps columns
with one training score in the model, so only columns with none are added.
The published code pools and clips as above; interval coverage counts only
modelled cells.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .. import names
from .._frames import rows_frame
from .._parallel import map_tasks
from ..matrix import ScoreMatrix
from ..prediction.registry import COMPLETERS
from ..selection.greedy import OBJECTIVES
from ..sources import as_scores
from ..splits import (
    FRONTIER_FRACTION,
    FRONTIER_MIN_TARGETS,
    SPLITTERS,
    Fold,
)
from .folds import SHIPPED_FIGURES, _fold, _nanmean, _nanstd
from .metrics import (
    json_record,
    nogueira_stability,
)
from .splitters import Dated, Extrapolation, Frontier, KFold, PaperKFold, Splits

__all__ = ["CVRow", "CVResult", "cross_validate", "extrapolate", "frontier", "paper_protocol",
           "SCORINGS"]

#: R^2 bookkeeping rules accepted by :func:`cross_validate`.
SCORINGS = names.SCORINGS




@dataclass(frozen=True)
class CVRow:
    """Cross-validated figures of one objective at one subset size ``k``.

    With a predictor other than the paper's ``gaussian`` (scored as
    ``predict`` ships it), ``interval_score`` and ``mae`` (standardized
    units, lower is better; :func:`~benchsel.evaluation.metrics.interval_score`)
    stand beside ``baseline_interval_score``, ``baseline_coverage`` and
    ``baseline_mae``: those of what ``predict`` says of a model it knows
    nothing of (each column's mean and calibrated spread among the training
    models), which every prediction from observed scores has to beat;
    ``cells`` counts the scored cells over every split. NaN (0 cells) for
    ``gaussian``.
    """

    objective: str
    k: int
    r2_mean: float
    r2_std: float
    residual_variance: float
    entropy: float
    mutual_information: float
    interval_coverage: float
    stability: float
    uncalibrated_coverage: float = float("nan")
    interval_score: float = float("nan")
    baseline_interval_score: float = float("nan")
    baseline_coverage: float = float("nan")
    mae: float = float("nan")
    baseline_mae: float = float("nan")
    cells: int = 0

    def to_dict(self) -> dict:
        """Plain values for JSON; a figure no fold could compute is ``None``, not NaN."""
        return json_record(self)


@dataclass(frozen=True)
class CVResult:
    """The whole cross-validation: one row per (objective, k), plus per-fold detail.

    Attributes
    ----------
    rows : list of CVRow
    r2 : dict objective -> ndarray (folds, k_max)
        Per-fold R^2 (NaN where a fold had no scored cell).
    orders : dict objective -> list of list of str
        Each fold's selection order.
    predictor : str
        What predicted the unselected items (``gaussian``: the conditional
        mean; otherwise a completion method or ``auto``).
    choices : dict objective -> list of list of str
        With a predictor other than ``gaussian``: per fold and k, the method
        that predicted (``auto``'s choice); empty otherwise.
    """

    dataset: str
    folds: int
    holdout: float
    seconds: float
    rows: list[CVRow]
    r2: dict = field(repr=False)
    orders: dict = field(repr=False)
    protocol: str = "cv"
    scoring: str = "default"
    predictor: str = "gaussian"
    choices: dict = field(default_factory=dict, repr=False)
    splitter: str = "default"

    def row(self, objective: str, k: int) -> CVRow:
        for r in self.rows:
            if r.objective == objective and r.k == k:
                return r
        raise KeyError((objective, k))

    def to_frame(self):
        """The table the command prints as a :class:`pandas.DataFrame`: one row per
        objective and subset size."""
        return rows_frame(self.rows, ["objective", "k"], CVRow)

    def to_dict(self) -> dict:
        return {
            "protocol": self.protocol,
            "dataset": self.dataset,
            "folds": self.folds,
            # The extrapolation split has no holdout fraction, only weak/strong shares.
            "holdout": self.holdout if self.protocol == "cv" else None,
            "splitter": self.splitter if self.protocol == "cv" else None,
            "scoring": self.scoring,
            "predictor": self.predictor,
            **({"choices": self.choices} if self.choices else {}),
            "seconds": self.seconds,
            "results": [r.to_dict() for r in self.rows],
            # Per split and k (null where a split scored no cell).
            "fold_r2": {obj: [[None if np.isnan(v) else float(v) for v in row] for row in a]
                        for obj, a in self.r2.items()},
            "orders": self.orders,
        }














def _check_common(scores: ScoreMatrix, objectives, k_max, scoring="default",
                  predictor="gaussian", transform="none") -> ScoreMatrix:
    if predictor not in COMPLETERS:
        raise ValueError(f"predictor must be one of {', '.join(COMPLETERS)}; got {predictor!r}")
    if predictor != "gaussian" and transform != "none":
        raise ValueError(f"predictor {predictor!r} works on raw scores; use it without a transform")
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {', '.join(SCORINGS)}; got {scoring!r}")
    for obj in objectives:
        if obj not in OBJECTIVES:
            raise ValueError(f"objectives must be among {', '.join(OBJECTIVES)}; got {obj!r}")
    if not (isinstance(k_max, int | np.integer) and k_max >= 1):
        raise ValueError(f"k_max must be a positive integer; got {k_max!r}")
    scores = as_scores(scores).cleaned()
    if scores.n_items < 2:
        raise ValueError(
            f"{scores._where()}evaluation needs at least 2 items (one to select, one "
            f"to predict); got {scores.n_items}"
        )
    return scores


def _evaluate(
    scores: ScoreMatrix,
    splits: list[Fold],
    protocol: str,
    holdout: float,
    objectives: tuple[str, ...],
    k_max: int,
    covariance: str,
    ridge: float,
    clip: float,
    level: float,
    seed: int,
    n_jobs: int,
    backend: str | None = None,
    progress=None,
    transform: str = "none",
    scoring: str = "default",
    calibrate: bool = True,
    predictor: str = "gaussian",
    splitter: str = "default",
    order_seeds=None,
    keep_aggregates: bool = False,
) -> CVResult:
    """Run every split and aggregate per (objective, k); ``order_seeds``: the
    random objective's seed per split (default ``[seed, split index]``)."""
    start = time.perf_counter()
    # The paper's bookkeeping selects from every column, as its published code does.
    items = None if keep_aggregates or scoring == "paper" else tuple(scores.items)
    args = (tuple(objectives), k_max, covariance, ridge, clip, seed, level, transform, scoring,
            calibrate, predictor, items)
    seeds = [None] * len(splits) if order_seeds is None else order_seeds
    tasks = ((scores.values, f, *args, s) for f, s in zip(splits, seeds, strict=True))
    per_fold = map_tasks(_fold, tasks, n_jobs=n_jobs, backend=backend, progress=progress)
    rows, r2, orders, choices = [], {}, {}, {}
    for obj in objectives:
        if predictor != "gaussian":
            choices[obj] = [pf[obj]["chosen"] for pf in per_fold]
        stack = {key: np.array([pf[obj][key] for pf in per_fold]) for key in
                 ("r2", "coverage", "raw_coverage", "entropy", "mi", "residual",
                  *SHIPPED_FIGURES)}
        r2[obj] = stack["r2"]
        fold_orders = [pf[obj]["order"] for pf in per_fold]
        orders[obj] = [[scores.items[j] for j in order] for order in fold_orders]
        for k in range(1, k_max + 1):
            if np.all(np.isnan(stack["residual"][:, k - 1])):
                break
            stability = (
                nogueira_stability([o[:k] for o in fold_orders], scores.n_items)
                if len(fold_orders) > 1
                else float("nan")
            )
            rows.append(
                CVRow(
                    objective=obj,
                    k=k,
                    r2_mean=_nanmean(stack["r2"][:, k - 1]),
                    r2_std=_nanstd(stack["r2"][:, k - 1]) if len(splits) > 1 else float("nan"),
                    residual_variance=_nanmean(stack["residual"][:, k - 1]),
                    entropy=_nanmean(stack["entropy"][:, k - 1]),
                    mutual_information=_nanmean(stack["mi"][:, k - 1]),
                    interval_coverage=_nanmean(stack["coverage"][:, k - 1]),
                    stability=stability,
                    uncalibrated_coverage=_nanmean(stack["raw_coverage"][:, k - 1]),
                    **{name: _nanmean(stack[name][:, k - 1])
                       for name in SHIPPED_FIGURES if name != "cells"},
                    cells=int(np.nansum(stack["cells"][:, k - 1])),
                )
            )
    return CVResult(
        dataset=scores.source or "",
        folds=len(splits),
        holdout=holdout,
        seconds=time.perf_counter() - start,
        rows=rows,
        r2=r2,
        orders=orders,
        protocol=protocol,
        scoring=scoring,
        predictor=predictor,
        choices=choices,
        splitter=splitter,
    )


def paper_protocol(**given) -> tuple:
    """The values of :data:`~benchsel.names.PAPER_PROTOCOL` for ``covariance``,
    ``scoring``, ``splitter``, ``predictor`` and ``seed``, in that order, after
    checking that ``given`` (each at its default, at the paper's value or None for
    not given) asks for nothing else."""
    defaults = {"covariance": "auto", "scoring": "default", "splitter": "default",
                "predictor": names.DEFAULT_PREDICTOR, "seed": 0}
    clash = [f"{name}={value!r}" for name, value in given.items()
             if value is not None and value not in (defaults[name], names.PAPER_PROTOCOL[name])]
    if clash:
        wanted = ", ".join(f"{k}={v!r}" for k, v in names.PAPER_PROTOCOL.items())
        raise ValueError(f"the paper's protocol is {wanted}; {', '.join(clash)} asks for "
                         "another (leave it out, or drop paper)")
    return tuple(names.PAPER_PROTOCOL[k] for k in defaults)


def cross_validate(
    scores: ScoreMatrix,
    *,
    objectives: tuple[str, ...] = ("mi", "entropy", "random"),
    k_max: int = 15,
    folds: int = 10,
    holdout: float = 0.1,
    covariance: str = "auto",
    ridge: float = 1e-2,
    clip: float = 10.0,
    level: float = 0.9,
    seed: int = 0,
    n_jobs: int = 1,
    backend: str | None = None,
    progress=None,
    transform: str = "none",
    scoring: str = "default",
    calibrate: bool = True,
    predictor: str = names.DEFAULT_PREDICTOR,
    splitter: str = "default",
    keep_aggregates: bool = False,
    paper: bool = False,
    cv=None,
) -> CVResult:
    """Cross-validation of selection + prediction over models, by any splitter.

    Parameters
    ----------
    scores : ScoreMatrix, pandas.DataFrame, path or str
        The leaderboard, or anything :func:`benchsel.as_scores` reads (a
        bundled name, a file, a folder of lm-eval runs); so for every
        protocol here.
    objectives : tuple of {"mi", "entropy", "random"}
        ``random`` draws a fresh order in every fold.
    k_max : int, default 15
        Largest subset size; every ``k = 1..k_max`` is evaluated.
    folds : int, default 10
    holdout : float, default 0.1
        Fraction ``p`` that sets the training subsample ``floor((1 - p) M)``.
    covariance : str, default "auto"
        Estimator, as in :class:`~benchsel.models.GaussianModel`.
    ridge : float, default 1e-2
        Added to observed blocks in conditional solves.
    clip : float, default 10
        Standardized validation scores are clipped to ``[-clip, clip]``.
    level : float, default 0.9
        Nominal coverage of the intervals whose empirical coverage is reported.
    seed : int, default 0
        Seeds the folds and the random orders.
    n_jobs : int, default 1
        Folds run in parallel through joblib when > 1 (or -1 for all cores).
    backend : str, optional
        A joblib backend for the folds, e.g. ``"dask"`` inside a
        ``dask.distributed.Client`` context to run them on a cluster.
    progress : callable, optional
        Called as ``progress(done, total)`` after each fold.
    transform : {"none", "logit"}, default "none"
        Fit, select and predict in transformed units (App. K); predictions
        and intervals are mapped back and scored in standardized raw units.
    scoring : {"default", "paper"}, default "default"
        Which cells the R^2 counts. ``"paper"`` follows the published code:
        validation models with no selected item observed are left out, and
        columns too sparse to model are scored against the training mean
        (see the module notes).
    calibrate : bool, default True
        Calibrate each fold's intervals on its own training models
        (:class:`~benchsel.models.calibrator.GaussianCalibrator`: three
        random folds and two strength splits, each a covariance fit) before
        measuring ``interval_coverage``; ``uncalibrated_coverage`` is that of
        the uncalibrated conditional variance. ``False`` skips the extra
        fits and reports the uncalibrated coverage in both.
    predictor : str, default :data:`benchsel.names.DEFAULT_PREDICTOR` (``auto``)
        What predicts the unselected items from the selected ones.
        ``gaussian``: the paper's protocol, the fold's Gaussian conditional
        mean (with ``ridge`` and ``clip``, no score bounds). Any other method
        of :data:`~benchsel.prediction.COMPLETERS` is scored as it ships:
        a :class:`~benchsel.models.GaussianModel` with its default options
        is fitted on the fold's training models and each validation model
        is predicted by its :meth:`~benchsel.models.GaussianModel.predict`
        from the selected scores alone, with ``method=predictor`` -- the
        bounded point and calibrated interval ``benchsel predict`` prints
        (``auto``: the winner of a cross-validation on the training models
        with the selected items given, per regime). Selection is the same
        for every predictor. Each ``k`` of each objective then costs a
        completion (``auto``: a dozen), so keep ``k_max`` and the objectives
        to what is needed.
    splitter : {"default", "paper"}, default "default"
        How folds are drawn: :func:`~benchsel.splits.kfold_with_holdout`, or
        the published code's :func:`~benchsel.splits.paper_kfold` (the same
        validation folds for the same seed, ``round((1 - p) M)`` training
        models drawn per fold); with ``"paper"`` the random objective's order
        is also drawn as there, from ``default_rng((seed + 7, fold,
        int(p * 10000)))`` over the fold's modelled items.
    keep_aggregates : bool, default False
        Let a column that aggregates the others (a mean win rate, an
        average; :func:`benchsel.aggregates.aggregate_columns` on each
        fold's training models) be selected. By default each fold leaves it
        out of the choice as :meth:`GaussianModel.select
        <benchsel.models.GaussianModel.select>` does (it is still
        predicted and scored); ``scoring="paper"`` selects from every
        column, as the published code does.
    paper : bool, default False
        The reference paper's whole protocol (:data:`benchsel.names.PAPER_PROTOCOL`:
        ``covariance="paper"``, ``scoring="paper"``, ``splitter="paper"``,
        ``predictor="gaussian"``, ``seed=42``): Table 4 as its published code
        runs it. Any of those arguments set to neither its default nor the
        paper's value is an error (one left at its default is taken as not
        given).
    cv : splitter, optional
        How the models are split (:mod:`benchsel.evaluation.splitters`):
        :class:`~benchsel.evaluation.splitters.KFold` (the default, from
        ``folds``, ``holdout`` and ``seed``),
        :class:`~benchsel.evaluation.splitters.PaperKFold` (``splitter="paper"``),
        or one split: :class:`~benchsel.evaluation.splitters.Extrapolation`,
        :class:`~benchsel.evaluation.splitters.Frontier`,
        :class:`~benchsel.evaluation.splitters.Dated`. Given, it carries its
        own settings (``folds``, ``holdout`` and ``splitter`` stay at their
        defaults) and its own seed for the folds; ``seed`` still seeds each
        fold's calibration and the random objective's orders
        (``[seed, fold index]``; :class:`~benchsel.evaluation.splitters.PaperKFold`
        draws the orders from its own seed, as the published code does).
        ``cv=KFold(folds, holdout, s)`` with ``seed=s`` is the default run.

    Returns
    -------
    CVResult
    """
    given = as_scores(scores)
    if paper:
        if cv is not None:
            raise ValueError("paper=True is the paper's splitter (PaperKFold(seed=42)); give "
                             "paper or cv, not both")
        covariance, scoring, splitter, predictor, seed = paper_protocol(
            covariance=covariance, scoring=scoring, splitter=splitter, predictor=predictor,
            seed=seed)
    if cv is None:
        if splitter not in SPLITTERS:
            raise ValueError(f"splitter must be one of {', '.join(SPLITTERS)}; got {splitter!r}")
        cv = (PaperKFold if splitter == "paper" else KFold)(folds, holdout, seed)
    elif (folds, holdout, splitter) != (10, 0.1, "default"):
        raise ValueError("folds, holdout and splitter set the default splitter; with cv= "
                         "give them to it (e.g. cv=KFold(folds=5, holdout=0.2))")
    scores = _check_common(given, objectives, k_max, scoring, predictor, transform)
    splits = cv.split(scores, given) if callable(getattr(cv, "split", None)) else None
    if not isinstance(splits, Splits):
        raise ValueError(f"cv must be a splitter of benchsel.evaluation.splitters (KFold, "
                         f"PaperKFold, Extrapolation, Frontier, Dated); got {cv!r}")
    return _evaluate(scores, splits.folds, cv.protocol, splits.held, objectives, k_max,
                     covariance, ridge, clip, level, seed, n_jobs, backend, progress,
                     transform, scoring, calibrate, predictor, cv.splitter,
                     splits.order_seeds, keep_aggregates)


def extrapolate(
    scores: ScoreMatrix,
    *,
    objectives: tuple[str, ...] = ("mi", "entropy", "random"),
    k_max: int = 15,
    train_fraction: float = 0.5,
    test_fraction: float = 0.3,
    covariance: str = "auto",
    ridge: float = 1e-2,
    clip: float = 10.0,
    level: float = 0.9,
    seed: int = 0,
    transform: str = "none",
    scoring: str = "default",
    calibrate: bool = True,
    predictor: str = names.DEFAULT_PREDICTOR,
    keep_aggregates: bool = False,
) -> CVResult:
    """Fit on the weakest models, evaluate on the strongest (Zhang et al., Sec. 4.3).

    Models are ranked by their mean standardized observed score; the
    covariance is fitted and the selection made on the lowest
    ``train_fraction``, and the top ``test_fraction`` are predicted as in
    :func:`cross_validate` (one split, so ``r2_std`` and ``stability`` are
    undefined and reported as ``None``). Interval coverage says whether the
    error bars stay honest for models stronger than any the model has seen.
    ``scoring``, ``calibrate``, ``predictor`` and ``keep_aggregates`` are as in
    :func:`cross_validate`.
    """
    return cross_validate(scores, cv=Extrapolation(train_fraction, test_fraction),
                          objectives=objectives, k_max=k_max, covariance=covariance,
                          ridge=ridge, clip=clip, level=level, seed=seed, transform=transform,
                          scoring=scoring, calibrate=calibrate, predictor=predictor,
                          keep_aggregates=keep_aggregates)


def dated(
    scores: ScoreMatrix,
    order,
    before,
    *,
    objectives: tuple[str, ...] = ("mi", "entropy", "random"),
    k_max: int = 15,
    covariance: str = "auto",
    ridge: float = 1e-2,
    clip: float = 10.0,
    level: float = 0.9,
    seed: int = 0,
    transform: str = "none",
    scoring: str = "default",
    calibrate: bool = True,
    predictor: str = names.DEFAULT_PREDICTOR,
    keep_aggregates: bool = False,
) -> CVResult:
    """Fit on the models that came out before ``before``, evaluate on the later ones.

    What a user's next model is to the models they already have
    (:func:`~benchsel.splits.dated_split`): selection and fit on the past,
    predictions scored on what came after, as in :func:`cross_validate`
    (one split: ``r2_std`` and ``stability`` are ``None``).

    Parameters
    ----------
    order : mapping {model: key} or array-like (M,)
        When each model came out: a number or an ISO date per model (an
        array in the order of the models of ``scores`` as given, before
        all-missing rows are dropped; :func:`benchsel.inputs.model_order_keys`).
    before : number or str
        The cut: models with a key below it are the sources.

    The other arguments are as in :func:`cross_validate`.
    """
    return cross_validate(scores, cv=Dated(order, before), objectives=objectives,
                          k_max=k_max, covariance=covariance, ridge=ridge, clip=clip,
                          level=level, seed=seed, transform=transform, scoring=scoring,
                          calibrate=calibrate, predictor=predictor,
                          keep_aggregates=keep_aggregates)


def frontier(
    scores: ScoreMatrix,
    *,
    objectives: tuple[str, ...] = ("mi", "entropy", "random"),
    k_max: int = 15,
    fraction: float = FRONTIER_FRACTION,
    min_targets: int = FRONTIER_MIN_TARGETS,
    covariance: str = "auto",
    ridge: float = 1e-2,
    clip: float = 10.0,
    level: float = 0.9,
    seed: int = 0,
    transform: str = "none",
    scoring: str = "default",
    calibrate: bool = True,
    predictor: str = names.DEFAULT_PREDICTOR,
    keep_aggregates: bool = False,
) -> CVResult:
    """Fit on every model but the strongest, evaluate on those (the frontier).

    The case a new checkpoint is usually in: at or just past the top of the
    models a plan was fitted on. The strongest ``fraction`` of models (at
    least ``min_targets``; :func:`~benchsel.splits.frontier_split`) are
    predicted as in :func:`cross_validate` from a fit on all the others (one
    split: ``r2_std`` and ``stability`` are ``None``). Unlike
    :func:`extrapolate`, no model is left out and the targets start where
    the sources stop. The other arguments are as in :func:`cross_validate`.
    """
    return cross_validate(scores, cv=Frontier(fraction, min_targets), objectives=objectives,
                          k_max=k_max, covariance=covariance, ridge=ridge, clip=clip,
                          level=level, seed=seed, transform=transform, scoring=scoring,
                          calibrate=calibrate, predictor=predictor,
                          keep_aggregates=keep_aggregates)
