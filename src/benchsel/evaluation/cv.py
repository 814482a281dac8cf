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
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.special import ndtri

from .. import names
from .._frames import rows_frame
from .._parallel import map_tasks, one_blas_thread
from ..aggregates import aggregate_columns
from ..calibration import (
    FRONTIER_APPLY_FRACTION,
    frontier_rows,
    regime_excess,
    unknown_calibration,
)
from ..exceptions import ConvergenceWarning
from ..gaussian.conditional import conditional_moments
from ..gaussian.covariance import estimate_covariance, fit_standardizer
from ..matrix import DataWarning, ScoreMatrix
from ..models import GaussianModel
from ..models.calibrator import GaussianCalibrator
from ..prediction.registry import COMPLETERS
from ..selection.greedy import OBJECTIVES, run_greedy
from ..sources import as_scores
from ..splits import (
    FRONTIER_FRACTION,
    FRONTIER_MIN_TARGETS,
    SPLITTERS,
    Fold,
)
from ..transforms import make_transform
from .metrics import (
    coverage,
    gaussian_entropy,
    gaussian_mutual_information,
    interval_score,
    json_record,
    nogueira_stability,
    r2_against_zero,
)
from .splitters import Dated, Extrapolation, Frontier, KFold, PaperKFold, Splits

__all__ = ["CVRow", "CVResult", "cross_validate", "extrapolate", "frontier", "paper_protocol",
           "SCORINGS"]

#: R^2 bookkeeping rules accepted by :func:`cross_validate`.
SCORINGS = names.SCORINGS
#: The published code's scale floor, as a fraction of ``|mean| + 1``.
_PAPER_FLOOR = 0.01


#: What a fold reports of the shipped predictor beside R² and coverage (_shipped_scores).
SHIPPED_FIGURES = ("interval_score", "baseline_interval_score", "baseline_coverage", "mae",
                   "baseline_mae", "cells")


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


# One BLAS thread per fold, in the parent as in joblib's workers: the
# matrices are small, and the same thread count makes serial and parallel
# runs agree to the last bit (near-ties in greedy gains would otherwise break
# differently).
@one_blas_thread()
def _fold(
    values: np.ndarray,
    fold: Fold,
    objectives: tuple[str, ...],
    k_max: int,
    covariance: str,
    ridge: float,
    clip: float,
    seed: int,
    level: float,
    transform: str = "none",
    scoring: str = "default",
    calibrate: bool = True,
    predictor: str = "gaussian",
    items=None,
    order_seed=None,
) -> dict:
    std = fit_standardizer(values[fold.train], covariance)
    cols = np.flatnonzero(~std.constant)
    # The benchmarks `select` and `plan` may choose from: given the item names,
    # a column that aggregates the others (a mean win rate) is left out of the
    # choice as there, judged on the fold's training models; still predicted.
    leave_out = []
    if items is not None:
        col_names = [items[j] for j in cols]
        dropped = aggregate_columns(values[np.ix_(fold.train, cols)], col_names)
        leave_out = [i for i, name in enumerate(col_names) if name in dropped]
    paper = scoring == "paper"
    # Columns outside the model that the paper's bookkeeping still scores
    # (predicted as the training mean, i.e. 0 in standardized units).
    extra = np.flatnonzero(std.constant) if paper else np.empty(0, dtype=int)
    extra_scale = _PAPER_FLOOR * (np.abs(std.mean[extra]) + 1.0)
    z_extra = np.clip((values[np.ix_(fold.validation, extra)] - std.mean[extra]) / extra_scale,
                      -clip, clip)
    extra_observed = ~np.isnan(z_extra)
    # Targets are always the raw scores standardized with training statistics,
    # clipped for R²; an interval is scored on the score itself (``z_true``): a
    # score 12 SD out clipped to 10 is not missed by an interval at 11-14.
    z_true = std.transform(values[np.ix_(fold.validation, cols)], cols)
    z_val = np.clip(z_true, -clip, clip)
    quantile = ndtri(0.5 + level / 2)
    if transform == "none":
        z_train = std.transform(values[np.ix_(fold.train, cols)], cols)
        z_in = z_val

        def to_targets(mu, sd):
            return mu, mu - quantile * sd, mu + quantile * sd
    else:
        # Model in transformed units; map predictions and interval ends back
        # to standardized raw units before scoring (App. K).
        tf = make_transform(transform, values[np.ix_(fold.train, cols)])
        latent = tf.forward(values[np.ix_(fold.train, cols)])
        lat_std = fit_standardizer(latent, covariance)
        z_train = lat_std.transform(latent)
        z_in = np.clip(lat_std.transform(tf.forward(values[np.ix_(fold.validation, cols)])),
                       -clip, clip)

        def to_targets(mu, sd):
            def back(u):
                return std.transform(tf.inverse(lat_std.inverse(u)), cols)

            return back(mu), back(mu - quantile * sd), back(mu + quantile * sd)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = estimate_covariance(z_train, covariance)
    sigma, mean = est.covariance, est.mean
    observed = ~np.isnan(z_val)
    # Any predictor but the paper's conditional mean is scored as it ships: the
    # fold's training models fitted by GaussianModel, each k's prediction made by
    # its predict (see _shipped_scores), calibrated by its own calibration.
    shipped = (None if predictor == "gaussian" else
               _shipped_model(values[fold.train], covariance, transform, calibrate))
    # The splits refit the fold's own estimator: a factor model keeps its rank and prior.
    split_fit = ({"covariance": "factor", "rank": est.rank, "prior": est.prior}
                 if hasattr(est, "factors") else {"covariance": covariance, "start": (mean, sigma)})
    calibrator = (GaussianCalibrator(z_train, ridge=ridge, clip=clip, seed=[seed, fold.index],
                                     **split_fit)
                  if calibrate and shipped is None else None)
    # A validation model with none of the selected scores is predicted as the
    # mean; its intervals get the width a model beyond every training model
    # needs, as `predict` gives it (unknown_calibration, made once if needed).
    blank_width = []

    def blank_factor() -> float:
        if not blank_width:
            blank_width.append(unknown_calibration(values[fold.train], level).inside)
        return blank_width[0]
    k_top = min(k_max, cols.size - max(1, len(leave_out)))
    if k_top < 1:
        raise ValueError(
            f"fold {fold.index}: fewer than 2 items vary among its training models; "
            "use fewer folds or a larger holdout-free training set" if cols.size < 2 else
            f"fold {fold.index}: every item that varies is an aggregate of the others; "
            "keep_aggregates=True (--keep-aggregates) lets them be selected"
        )
    out = {}
    for objective in objectives:
        greedy = run_greedy(sigma, k_top, objective=objective, exclude=leave_out,
                            seed=[seed, fold.index] if order_seed is None else order_seed)
        r2 = np.full(k_max, np.nan)
        cover = np.full(k_max, np.nan)
        raw_cover = np.full(k_max, np.nan)
        ent = np.full(k_max, np.nan)
        mi = np.full(k_max, np.nan)
        chosen = [None] * k_max
        shipped_figures = {name: np.full(k_max, np.nan) for name in SHIPPED_FIGURES}
        for k in range(1, k_top + 1):
            sel = greedy.indices[:k]
            given = np.full_like(z_in, np.nan)
            given[:, sel] = z_in[:, sel]
            mu, var = conditional_moments(given, mean, sigma, ridge=ridge)
            given_items = np.zeros(cols.size, dtype=bool)
            given_items[sel] = True
            if calibrator is not None:
                # As GaussianModel.predict: a model at the frontier of the training
                # models is moved by the bias measured on their strongest ones.
                top = frontier_rows(z_train[:, sel], given[:, sel], FRONTIER_APPLY_FRACTION)
                if top.any():
                    shift = calibrator.frontier_shift(given_items)
                    mu[top] += shift * np.sqrt(var[top])
            # How far each validation model's selected scores lie beyond the training models'.
            excess = regime_excess(z_train[:, sel], given[:, sel])
            scored = observed.copy()
            scored[:, sel] = False
            y_extra = np.empty(0)
            if paper:
                keep = observed[:, sel].any(axis=1)
                scored &= keep[:, None]
                y_extra = z_extra[extra_observed & keep[:, None]]
            y, pred = z_val[scored], np.empty(0)
            if shipped is not None:
                pred, figures, chosen[k - 1] = _shipped_scores(
                    shipped, values[fold.validation], cols, sel, std, clip, level, predictor,
                    scored)
                cover[k - 1], raw_cover[k - 1] = figures["coverage"], figures["raw_coverage"]
                for name in SHIPPED_FIGURES:
                    shipped_figures[name][k - 1] = figures[name]
            elif y.size:
                sd = np.sqrt(var)
                factor = np.ones(len(sd))
                if calibrator is not None:
                    cal = calibrator.calibration(given_items, level)
                    factor = cal.factor(excess)
                    blank = ~observed[:, sel].any(axis=1)
                    if blank.any():
                        factor[blank] = blank_factor()
                sd_cal = sd * factor[:, None]
                pred, low, high = (a[scored] for a in to_targets(mu, sd))
                raw_cover[k - 1] = cover[k - 1] = coverage(z_true[scored], low, high)
                if calibrator is not None:
                    _, low, high = (a[scored] for a in to_targets(mu, sd_cal))
                    cover[k - 1] = coverage(z_true[scored], low, high)
            y = np.concatenate([y, y_extra])
            if np.any(y != 0):
                pred = np.concatenate([pred, np.zeros_like(y_extra)])
                r2[k - 1] = r2_against_zero(y, pred)
            ent[k - 1] = gaussian_entropy(sigma, sel)
            mi[k - 1] = gaussian_mutual_information(sigma, sel)
        resid = np.full(k_max, np.nan)
        resid[:k_top] = greedy.residual_variance
        out[objective] = {
            "r2": r2,
            "coverage": cover,
            "raw_coverage": raw_cover,
            "entropy": ent,
            "mi": mi,
            "residual": resid,
            "order": cols[greedy.indices],
            "chosen": chosen,
            **shipped_figures,
        }
    return out


def _shipped_model(train: np.ndarray, covariance: str, transform: str, calibrate: bool):
    """The :class:`~benchsel.models.GaussianModel` ``predict`` would fit on ``train``.

    Items are named by column position, so that predictions map back to the
    protocol's columns; options other than these are the model's defaults,
    as ``benchsel predict`` uses them.
    """
    scores = ScoreMatrix(train, [f"m{i}" for i in range(len(train))],
                         [str(j) for j in range(train.shape[1])])
    model = GaussianModel(covariance=covariance, transform=transform,
                          calibration="conformal" if calibrate else "none")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", DataWarning)
        return model.fit(scores)


def _shipped_scores(model, validation: np.ndarray, cols, sel, std, clip: float, level: float,
                    predictor: str, scored: np.ndarray):
    """Score ``model.predict`` of the validation models from their selected scores.

    As a user predicts a new model: each validation model gives the selected
    items' scores (and nothing else), :meth:`GaussianModel.predict
    <benchsel.models.GaussianModel.predict>` with ``method=predictor``
    predicts the rest -- its bounded point prediction and its calibrated
    interval, exactly what ``benchsel predict`` prints. They are scored in
    the protocol's standardized units: the point clipped as the targets are
    for R², the interval against the unclipped score.

    Returns
    -------
    pred : ndarray
        Standardized point predictions of the ``scored`` cells.
    figures : dict
        ``coverage`` and ``raw_coverage``: the share of scored cells inside
        the printed interval, and inside ``mean +- z * std`` with the
        method's own, uncalibrated ``std``; ``interval_score`` and ``mae``
        (:func:`~benchsel.evaluation.metrics.interval_score`, mean absolute
        error), and ``baseline_interval_score`` and ``baseline_mae``, the
        same of what ``predict`` says of a model it knows nothing of (each
        column's mean and calibrated spread among the training models), all
        in the protocol's standardized units, and ``baseline_coverage``; ``cells``: how
        many were scored.
    label : str
        The method used; with ``auto`` and models in both regimes,
        ``"A (outside: B)"``.
    """
    given = cols[sel]
    x = ScoreMatrix(validation[:, given], [f"v{i}" for i in range(len(validation))],
                    [str(j) for j in given])
    blank = ScoreMatrix(np.full((1, 1), np.nan), ["blank"], [str(given[0])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", DataWarning)  # validation models with no given score
        p = model.predict(x, level=level, method=predictor)
        known = model.predict(blank, level=level, method=predictor)  # knowing nothing
    where = np.array([int(name) for name in p.items])
    full = {}
    multiplier = np.array([c.get("multiplier", 1.0) for c in p.calibration]) \
        if p.calibration else np.ones(len(validation))
    own = p.std / multiplier[:, None]
    half = ndtri(0.5 + level / 2) * own
    for name, a in (("mean", p.mean), ("low", p.low), ("high", p.high),
                    ("raw_low", p.mean - half), ("raw_high", p.mean + half),
                    *((f"base_{n}", np.broadcast_to(getattr(known, n), p.mean.shape))
                      for n in ("mean", "low", "high"))):
        out = np.full((len(validation), validation.shape[1]), np.nan)
        out[:, where] = a
        full[name] = std.transform(out[:, cols], cols)
    y = std.transform(validation[:, cols], cols)[scored]  # unclipped: as _fold scores intervals
    pred = np.clip(full["mean"], -clip, clip)[scored]
    at = {name: a[scored] for name, a in full.items()}
    figures = {
        "coverage": coverage(y, at["low"], at["high"]),
        "raw_coverage": coverage(y, at["raw_low"], at["raw_high"]),
        "interval_score": interval_score(y, at["low"], at["high"], level),
        "baseline_interval_score": interval_score(y, at["base_low"], at["base_high"], level),
        "baseline_coverage": coverage(y, at["base_low"], at["base_high"]),
        "mae": float(np.mean(np.abs(y - at["mean"]))) if y.size else float("nan"),
        "baseline_mae": float(np.mean(np.abs(y - at["base_mean"]))) if y.size else float("nan"),
        "cells": int(y.size),
    }
    if p.choices:
        # Models with no given score get the column means (split "none"): not a choice.
        # Models missing some selected scores have other patterns, so other choices.
        def names(methods) -> str:
            return "/".join(dict.fromkeys(methods))

        inner = names(c["method"] for c in p.choices if c.get("split") == "random")
        outer = names(c["method"] for c in p.choices if c.get("split") == "near")
        if inner and outer and inner != outer:
            label = f"{inner} (outside: {outer})"
        else:
            label = inner or outer or names(c["method"] for c in p.choices)
    else:
        label = p.method
    return pred, figures, label


def _scaled(a: np.ndarray) -> tuple[np.ndarray, float]:
    """The non-NaN values of ``a`` over their largest magnitude, and that magnitude.

    A fold's R² on extreme scores can be -1e200: its square (in ``std``) or a
    sum of several (in ``mean``) overflows, which numpy would report as
    "overflow encountered"; on the scaled values neither can.
    """
    a = a[~np.isnan(a)]
    top = float(np.max(np.abs(a))) if a.size else 0.0
    if top == 0.0 or not np.isfinite(top):
        return a, 1.0
    return a / top, top


def _nanmean(a: np.ndarray) -> float:
    a, top = _scaled(a)
    return float(top * a.mean()) if a.size else float("nan")


def _nanstd(a: np.ndarray) -> float:
    a, top = _scaled(a)
    if not a.size:
        return float("nan")
    if not np.all(np.isfinite(a)):
        return float("nan")  # an infinite value has no spread to report
    return float(top * a.std())


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
