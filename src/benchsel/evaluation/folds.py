"""One fold of the cv protocols: select on the training models, predict the validation
models' other items, score R², coverage and the interval score
(:func:`~benchsel.evaluation.cv.cross_validate` runs the folds)."""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import ndtri

from .._parallel import one_blas_thread
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
from ..selection.greedy import run_greedy
from ..splits import (
    Fold,
)
from ..transforms import make_transform
from .metrics import (
    coverage,
    gaussian_entropy,
    gaussian_mutual_information,
    interval_score,
    r2_against_zero,
)

#: What a fold reports of the shipped predictor beside R² and coverage (_shipped_scores).
SHIPPED_FIGURES = ("interval_score", "baseline_interval_score", "baseline_coverage", "mae",
                   "baseline_mae", "cells")


#: The published code's scale floor, as a fraction of ``|mean| + 1``.
_PAPER_FLOOR = 0.01


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
