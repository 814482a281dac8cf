"""The fitted Gaussian model of scores: fit, select, predict."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from .. import names
from .._linalg import cholesky
from .._parallel import one_blas_thread
from .._patterns import unique_rows
from ..bounds import resolve_bounds
from ..calibration import (
    FRONTIER_APPLY_FRACTION,
    fit_calibration,
    frontier_rows,
    measures_frontier,
    spread_limit,
    unknown_calibration,
)
from ..exceptions import NotFittedError
from ..gaussian.covariance import (
    COVARIANCE_METHODS,
    estimate_covariance,
    fit_standardizer,
)
from ..gaussian.extrapolation import TrainingRange
from ..matrix import DataWarning, ScoreMatrix, Standardizer, _short_list
from ..prediction.memo import GAUSSIAN_CONDITIONAL
from ..sources import as_scores
from ..transforms import TRANSFORMS, ScoreTransform, make_transform
from .auto import new_memo, prepare, share_board_options, shared_fits
from .calibrator import GaussianCalibrator
from .conditional import noise_variances, predict_conditional
from .results import Prediction, Selection
from .routing import (
    calibration_records,
    predict_auto,
    predict_by_completion,
)
from .selecting import select_items

__all__ = ["GaussianModel", "NotFittedError", "Selection", "Prediction"]


#: Accepted values of ``GaussianModel(calibration=...)``.
CALIBRATIONS = names.CALIBRATIONS


class GaussianModel:
    """Multivariate Gaussian model of benchmark scores (Smola 2026).

    Parameters
    ----------
    covariance : {"auto", "em-shrink", "em", "pairwise", "factor", "paper"}, default "auto"
        Estimator of the covariance of standardized scores: ``em`` is the
        paper's EM, ``em-shrink`` the same with a small pull of correlations
        toward zero at every step, ``pairwise`` the pairwise-complete
        estimate, ``factor`` a few factors plus each item's own noise
        (:mod:`~benchsel.gaussian.factor`; its selection and conditioning
        work from the factors, so nothing ``N x N`` is formed for them).
        ``auto`` is pairwise on a fully observed matrix with more models
        than items, factor on one with no more (its sample covariance is
        singular), em-shrink otherwise, and factor where EM would cost more than
        :data:`~benchsel.gaussian.covariance.EM_MAX_FLOPS` per iteration or
        more memory than the budget. ``paper`` follows the paper's published code (see
        :func:`~benchsel.gaussian.covariance.paper_covariance`), including its
        standardization floor; it ignores ``shrinkage``, ``floor``,
        ``max_iter`` and ``tol``. The published code conditions with
        ``ridge=0.01``.
    shrinkage : float in [0, 1] or "auto", default "auto"
        Shrinkage toward ``tr/N * I``; ``auto`` is ``(N - M)/N`` when there
        are fewer models than items, none otherwise.
    floor : float, default 1e-3
        Eigenvalue floor of the covariance (standardized units).
    max_iter : int, default 300
        EM iteration cap (the paper reports about 300 on MTEB and 274 on
        MERGED). The factor model keeps its own cap (2,000 E-steps, each
        far cheaper).
    tol : float, default 1e-5
        EM convergence tolerance on the relative change of the covariance
        and of the observed-data log-likelihood.
    ridge : float, default 0
        Added to the diagonal of observed blocks when conditioning.
    transform : {"none", "logit"}, default "none"
        Per-column transform applied before everything else (Smola 2026,
        App. K); predictions are mapped back, and intervals through the
        transform (so they stay within ``[0, training max]``).
    bounds : None, "infer", "none", (low, high), "LOW,HIGH" or mapping, default None
        The range each item's scores can take; predictions and interval
        ends are clipped into it. ``None`` / ``"infer"``: from the training
        columns by :func:`benchsel.bounds.infer_bounds` (``[0, 1]`` for
        fractions, ``[0, 100]`` for percentages, unbounded otherwise);
        ``"none"``: unbounded; a pair such as ``(0, 100)`` or its text
        ``"0,100"``: the same bounds for every item; a mapping
        ``{item: (low, high)}``: for the items it names, inferred for the
        rest. Bounds that exclude a training score are an error.
    calibration : {"conformal", "none"}, default "conformal"
        ``conformal``: the conditional standard deviation is multiplied by
        conformal multipliers measured on the training models themselves
        (three random folds and two strength splits, refitted; see
        :mod:`benchsel.calibration`), one for a new model within the
        strength range of the training models and a wider one for a model
        beyond it, so that intervals cover what they claim on held-out
        models. Calibrating costs five more covariance fits, done on the
        first :meth:`predict` and reused. ``none``: the Gaussian
        conditional variance alone.

    Attributes
    ----------
    scores_ : ScoreMatrix
        The cleaned training matrix.
    items_ : list of str
        Items the model covers (non-constant columns).
    dropped_items_ : list of str
        Items of the input left out (no observed score, or constant). Inputs
        that name them (observed scores, costs, exclusions) ignore them with
        a warning.
    standardizer_ : Standardizer
    estimate_ : CovarianceEstimate
        Mean and covariance in standardized units, and how they were fitted.
    mean_ : ndarray
        Means in the items' original units.
    transform_ : ScoreTransform
        The fitted per-column transform (identity for ``"none"``).
    covariance_ : ndarray
        Covariance in the items' units (logit units under the logit
        transform).
    item_max_, item_min_ : ndarray
        Best and worst score of any training model on each item (original
        units).
    range_ : TrainingRange
        Where the training models' raw scores lie, which judges
        :meth:`extrapolation` (:mod:`benchsel.gaussian.extrapolation`).
    bounds_ : ndarray of shape (2, N)
        Lower (row 0) and upper (row 1) score bound of each item, ``-inf`` /
        ``inf`` where unbounded; ``low, high = model.bounds_``.
    """

    def __init__(
        self,
        *,
        covariance: str = "auto",
        shrinkage: float | str = "auto",
        floor: float = 1e-3,
        max_iter: int = 300,
        tol: float = 1e-5,
        ridge: float = 0.0,
        transform: str = "none",
        bounds=None,
        calibration: str = "conformal",
    ):
        self.covariance = covariance
        self.shrinkage = shrinkage
        self.floor = floor
        self.max_iter = max_iter
        self.tol = tol
        self.ridge = ridge
        self.transform = transform
        self.bounds = bounds
        self.calibration = calibration

    # ------------------------------------------------------------------ fit
    def _validate_params(self) -> None:
        if self.covariance not in COVARIANCE_METHODS:
            raise ValueError(
                f"covariance must be one of {', '.join(COVARIANCE_METHODS)}; "
                f"got {self.covariance!r}"
            )
        if not (np.isfinite(self.floor) and self.floor > 0):
            raise ValueError(f"floor must be a positive number; got {self.floor!r}")
        if not (np.isfinite(self.ridge) and self.ridge >= 0):
            raise ValueError(f"ridge must be a non-negative number; got {self.ridge!r}")
        if self.calibration not in CALIBRATIONS:
            raise ValueError(
                f"calibration must be one of {', '.join(CALIBRATIONS)}; got {self.calibration!r}"
            )
        if self.transform not in TRANSFORMS:
            raise ValueError(
                f"transform must be one of {', '.join(TRANSFORMS)}; got {self.transform!r}"
            )

    def get_params(self, deep: bool = True) -> dict:
        """The constructor parameters and their values (scikit-learn's convention, so that
        ``sklearn.base.clone`` copies an unfitted model)."""
        import inspect

        return {name: getattr(self, name) for name in inspect.signature(type(self)).parameters}

    def set_params(self, **params) -> GaussianModel:
        """Set constructor parameters by name (checked when the model is next fitted)."""
        valid = self.get_params()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"GaussianModel has no parameter {name!r}; parameters are "
                                 f"{', '.join(valid)}")
            setattr(self, name, value)
        return self

    def fit(self, scores) -> GaussianModel:
        """Estimate the mean and covariance from a score matrix.

        ``scores`` is a :class:`ScoreMatrix` or anything
        :func:`benchsel.as_scores` reads (a bundled name, a file, a
        DataFrame, a folder of lm-eval runs). All-missing rows/columns are
        dropped with a warning; constant columns (no spread, or fewer than
        two observed values) cannot be standardized and are left out with a
        warning naming them.
        """
        self._validate_params()
        if not isinstance(scores, ScoreMatrix):
            scores = as_scores(scores)
        given_items = scores.items
        scores = scores.cleaned()
        transform = make_transform(self.transform, scores.values)
        latent = transform.forward(scores.values)
        std = fit_standardizer(latent, self.covariance)
        if std.constant.any():
            names = np.array(scores.items)[std.constant]
            warnings.warn(
                f"{scores._where()}leaving out {len(names)} constant item(s) that cannot "
                f"be standardized: {_short_list(names)}",
                DataWarning,
                stacklevel=2,
            )
            keep = np.flatnonzero(~std.constant)
            if keep.size == 0:
                raise ValueError(f"{scores._where()}every item is constant; nothing to model")
            scores = scores.subset(items=keep)
            std = Standardizer(std.mean[keep], std.scale[keep], std.constant[keep])
            transform = ScoreTransform(transform.name, transform.scale[keep], transform.eps)
            latent = latent[:, keep]
        items = list(scores.items)
        kept = set(items)
        self.dropped_items_ = [name for name in given_items if name not in kept]
        bounds = self.bounds
        if isinstance(bounds, Mapping):
            bounds = {str(k): bounds[k] for k in bounds}
            bounds = {k: bounds[k] for k in self._known(bounds, "bounds")}
        low, high = resolve_bounds(bounds, items, scores.values)
        z = std.transform(latent)
        self.estimate_ = estimate_covariance(
            z,
            self.covariance,
            floor=self.floor,
            shrinkage=self.shrinkage,
            max_iter=self.max_iter,
            tol=self.tol,
        )
        self.scores_ = scores
        self._z = z
        self._calibrator = None
        self._spread_limits: dict[float, np.ndarray] = {}
        self._auto_memo = None  # auto's decisions on this training matrix, made on first use
        self.items_ = items
        self.bounds_ = np.vstack([low, high])
        self.standardizer_ = std
        self.transform_ = transform
        self.mean_ = transform.inverse(std.inverse(self.estimate_.mean))
        self.range_ = TrainingRange.fit(scores.values, items, self.bounds_)
        self.item_max_, self.item_min_ = self.range_.item_max, self.range_.item_min
        return self

    @property
    def covariance_(self) -> np.ndarray:
        """The covariance in the units the model works in: the items' own units, or
        logit units under ``transform="logit"``."""
        self._check_fitted()
        scale = self.standardizer_.scale
        with np.errstate(over="ignore"):
            cov = self.estimate_.covariance * np.outer(scale, scale)
        if not np.all(np.isfinite(cov)):
            raise OverflowError(
                "the covariance in original units overflows float64 (scores near 1e154 or "
                "more); use estimate_.covariance, which is in standardized units"
            )
        return cov

    def _check_fitted(self) -> None:
        if not hasattr(self, "estimate_"):
            raise NotFittedError("this GaussianModel is not fitted yet; call fit(scores) first")

    # --------------------------------------------------------------- select
    def select(
        self,
        k: int | None = None,
        *,
        objective: str = "mi",
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        costs: Mapping[str, float] | np.ndarray | None = None,
        budget: float | None = None,
        target_residual: float | None = None,
        seed=0,
        keep_aggregates: bool = False,
    ) -> Selection:
        """Choose the items to run on a new model.

        Parameters
        ----------
        k : int or "auto", optional
            Number of items (``include`` counted). Required unless ``budget``
            or ``target_residual`` is given. ``"auto"`` (MI only): stop before
            the first pick whose gain is not positive -- MI is not monotone,
            and past that point more benchmarks lower it.
        objective : {"mi", "entropy", "random"}, default "mi"
        include, exclude : sequence of str
            Item names that must / must not be selected.
        costs : mapping name -> cost or array, optional
            Per-item costs; defaults to the matrix's own costs if it has them.
        budget : float, optional
            Cap on the total cost.
        target_residual : float in (0, 1), optional
            Stop once the unexplained variance fraction is at or below this.
        seed : int, numpy Generator or None, default 0
            For ``objective="random"``: 0, as ``benchsel select --seed``, so
            that the library and the CLI pick the same; ``None`` draws afresh.
        keep_aggregates : bool, default False
            Columns that aggregate the others (a mean win rate, an average,
            a rank: :func:`benchsel.aggregates.aggregate_columns`) cannot be
            run on a new model and are left out of the choice, with a
            warning naming them, unless kept here or named in ``include``.
            They are still predicted.

        Returns
        -------
        Selection
        """
        return select_items(self, k, objective=objective, include=include, exclude=exclude,
                            costs=costs, budget=budget, target_residual=target_residual,
                            seed=seed, keep_aggregates=keep_aggregates)

    def _known(self, names, what: str, stacklevel: int = 3) -> list[str]:
        """``names`` without the items left out at fit time (warning about them, at
        ``stacklevel`` frames above this one: the user's call)."""
        names = [str(name) for name in names]
        dropped = [name for name in names if name in self.dropped_items_]
        if dropped:
            warnings.warn(
                f"ignoring {_short_list(dropped)} in the {what}: left out of the model "
                "(no observed score, or constant)",
                DataWarning,
                stacklevel=stacklevel,
            )
        return [name for name in names if name not in self.dropped_items_]

    # -------------------------------------------------------------- predict
    def _rows(self, observed) -> tuple[list[str], np.ndarray]:
        """Observed input as (model names, R x N array over ``items_``, NaN = unobserved)."""
        n = len(self.items_)
        if isinstance(observed, ScoreMatrix):
            names = self._known(observed.items, "observed scores")
            cols = self.scores_.item_indices(names, "benchmark")
            x = np.full((observed.n_models, n), np.nan)
            x[:, cols] = observed.values[:, [observed.items.index(name) for name in names]]
            return list(observed.models), x
        if isinstance(observed, Mapping):
            observed = {str(k): v for k, v in observed.items()}
            names = self._known(observed.keys(), "observed scores")
            cols = self.scores_.item_indices(names, "benchmark")
            values = []
            for name in names:
                try:
                    values.append(float(observed[name]))
                except (TypeError, ValueError):
                    values.append(np.nan)
            values = np.array(values)
            if not np.all(np.isfinite(values)):
                bad = [k for k, v in zip(names, values) if not np.isfinite(v)]
                raise ValueError(f"observed scores must be finite numbers; got {bad}")
            x = np.full((1, n), np.nan)
            x[0, cols] = values
            return ["new model"], x
        raise TypeError(
            "observed must be a mapping {benchmark: score} or a ScoreMatrix of new models; "
            f"got {type(observed).__name__}"
        )

    # ``auto`` compares and calibrates methods by hundreds of factorizations of
    # matrices of a few hundred rows: with BLAS threads on two cores its first
    # prediction on MTEB took 10 s, with one 5.4-6.2 s (the same output;
    # docs/experiments/scaling.md). Both entry points of its decisions pin them.
    @one_blas_thread()
    def predict(self, observed, *, level: float = 0.9, method: str | None = None,
                observed_std: np.ndarray | None = None) -> Prediction:
        """Predict every unobserved item of one or more new models.

        Parameters
        ----------
        observed : mapping {item: score} or ScoreMatrix
            Scores the new model(s) were run on, in original units. Items not
            known to the model are an error listing the valid names.
        level : float in (0, 1), default 0.9
            Coverage of the central interval ``[low, high]``.
        method : str, optional
            Default :data:`benchsel.names.DEFAULT_PREDICTOR` (``auto``), as
            ``benchsel predict``. ``gaussian``: this model's conditional
            distribution. ``auto``:
            per pattern of observed items, the method that predicts the
            training models' other items best from the same items
            (:func:`benchsel.prediction.choose_completer`; the Gaussian
            conditional when that wins, and always for noisy scores or
            under a transform; per regime, see
            :func:`benchsel.prediction.choose_for_new_models`). Any other
            name of :data:`benchsel.prediction.COMPLETERS` completes each
            new row with the training matrix by that method instead
            (:func:`benchsel.prediction.complete_new_rows`; the ``complete``
            protocol compares them); cells it cannot predict fall back to
            the Gaussian conditional with a warning.
        observed_std : ndarray of shape (R, len(items_)), optional
            Standard error of each observed score (0 for an exact one), e.g.
            a task score estimated from a sample of its questions. Such a
            score is a noisy measurement: it is conditioned on with that
            noise, and the item itself is predicted (``observed`` is False
            there). Gaussian method, no transform.

        Returns
        -------
        Prediction
            Means and interval ends of predicted cells lie within
            :attr:`bounds_`, whatever the method.
        """
        self._check_fitted()
        if not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1); got {level!r}")
        method = names.DEFAULT_PREDICTOR if method is None else method
        models, x = self._rows(observed)
        transform = self.transform_
        if method == "auto" and (observed_std is not None or transform.name != "none"):
            method = "gaussian"  # the only method for noisy scores or transformed units
        blank = [m for m, row in zip(models, x) if np.isnan(row).all()]
        if blank:
            warnings.warn(
                f"{_short_list(blank)}: no observed score; each benchmark is predicted "
                + ("as the Gaussian's unconditional mean" if method == "gaussian"
                   else "as the source models' mean"),
                DataWarning, stacklevel=2)
        noise = noise_variances(self, observed_std, x, method)
        if method not in ("gaussian", "auto") and transform.name != "none":
            raise ValueError(f"method {method!r} works on raw scores; use it without a transform")
        extrapolation = self.extrapolation(x)

        def gaussian(rows=slice(None)) -> Prediction:
            # The Gaussian conditional of some rows, made only where it is used: its
            # calibration refits the covariance on five splits of the sources, which a
            # row that auto or ``method`` predicts otherwise never needs.
            picked = np.arange(len(models))[rows]
            return predict_conditional(
                self, [models[r] for r in picked], x[picked], level,
                None if noise is None else noise[picked], [extrapolation[r] for r in picked])

        if method == "gaussian":
            return gaussian()
        if method == "auto":
            return predict_auto(self, models, x, gaussian, extrapolation, level)
        return predict_by_completion(self, models, x, gaussian, method, extrapolation, level)

    def _spread_limit(self, level: float) -> np.ndarray:
        """Per item, the widest standard deviation a prediction may have, in the units
        the model works in (:func:`~benchsel.calibration.spread_limit`); no limit when
        calibration is off (the paper's uncalibrated conditional)."""
        if self.calibration == "none":
            return np.full(len(self.items_), np.inf)
        if level not in self._spread_limits:
            latent = self.transform_.forward(self.scores_.values)
            self._spread_limits[level] = spread_limit(latent, level)
        return self._spread_limits[level]

    def _at_frontier(self, x: np.ndarray) -> np.ndarray:
        """Per row of ``x`` (original units, NaN = not given): whether it is at the
        frontier of the training models, where every method's frontier shift applies
        (:meth:`_frontier_rows`)."""
        return self._frontier_rows(self.standardizer_.transform(self.transform_.forward(x)))

    def _frontier_rows(self, z: np.ndarray) -> np.ndarray:
        """Per standardized row: at the frontier of the training models on its given
        items (:func:`~benchsel.calibration.frontier_rows`, the strongest 3%: see
        :data:`~benchsel.calibration.FRONTIER_APPLY_FRACTION`), where the training
        models are enough to measure a frontier shift and calibration is on."""
        out = np.zeros(z.shape[0], dtype=bool)
        if self.calibration == "none" or not measures_frontier(self._z):
            return out
        patterns, inverse = unique_rows(~np.isnan(z))
        for g, pattern in enumerate(patterns):
            if pattern.any():
                rows = np.flatnonzero(inverse == g)
                out[rows] = frontier_rows(self._z[:, pattern],
                                          z[np.ix_(rows, np.flatnonzero(pattern))],
                                          FRONTIER_APPLY_FRACTION)
        return out

    def _calibrator_for_predict(self) -> GaussianCalibrator:
        """The calibrator on the training models, made on first use."""
        if self._calibrator is None:
            est = self.estimate_
            covariance = self.covariance
            if hasattr(est, "factors"):
                # The splits' factor models keep the full fit's rank and prior (chosen on
                # its held-out cells) rather than choosing again, eight fits each.
                covariance, start = "factor", None
                fixed = {"rank": est.rank, "prior": est.prior}
            else:  # EM's splits start from the full fit
                start, fixed = (est.mean, est.covariance), {}
            self._calibrator = GaussianCalibrator(
                self._z, covariance=covariance, ridge=self.ridge, floor=self.floor,
                max_iter=self.max_iter, tol=self.tol, shrinkage=self.shrinkage, start=start,
                shared=shared_fits(self), **fixed)
        return self._calibrator

    def _gaussian_frontier_shift(self, pattern: np.ndarray) -> np.ndarray:
        """The calibrator's frontier shift for ``pattern``, kept with auto's decisions
        (and so in a plan): measuring it refits the covariance on the sources' split."""
        return self.auto_memo.frontier_shift(
            GAUSSIAN_CONDITIONAL, pattern,
            lambda: self._calibrator_for_predict().frontier_shift(pattern))

    def _calibrate(self, z: np.ndarray, level: float) -> list[dict]:
        """Per new row (standardized, NaN = not given): its regime and multiplier."""
        def calibrate(pattern):
            # The calibrator refits the covariance on five splits of the sources: its
            # residuals are kept with auto's decisions (and so in a plan) for reuse.
            residuals = self.auto_memo.residuals(
                GAUSSIAN_CONDITIONAL, pattern,
                lambda: self._calibrator_for_predict().residuals(pattern))
            return fit_calibration(*residuals, level=level)

        return calibration_records(
            self, self._z, z, calibrate,
            unknown=lambda: unknown_calibration(self.scores_.values, level))

    def benchmarks_needed(self, explained: float = 0.9, *, objective: str = "mi",
                          keep_aggregates: bool = False) -> int:
        """How many benchmarks the greedy selection picks before ``explained`` of the
        (standardized) variance is explained: the one answer to "how many" that
        ``select --target-residual``, ``spectrum`` and ``report`` give.

        Parameters
        ----------
        explained : float in (0, 1), default 0.9
            Share of the variance to explain (``target_residual = 1 - explained``).
        objective, keep_aggregates
            As in :meth:`select`.
        """
        if not 0 < explained < 1:
            raise ValueError(f"explained must be in (0, 1); got {explained!r}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)  # said by the caller's own select
            sel = self.select(None, objective=objective, target_residual=1 - explained,
                              keep_aggregates=keep_aggregates)
        return len(sel.items)

    @one_blas_thread()
    def prepare_auto(self, given: Sequence[str]) -> None:
        """Make ``auto``'s decisions for new models run on ``given`` now, once.

        Chooses the method for a new model inside the training models' range
        and for one beyond it, and collects each
        winner's held-out residuals (its calibration), its frontier shift
        where the training models measure one
        (:func:`~benchsel.prediction.frontier.completion_frontier_shift`) and
        the Gaussian conditional's own residuals, keeping them in
        this model (:attr:`auto_memo`): a later :meth:`predict` of that
        pattern only completes the new rows. Plans call this for their
        selection and store the result.
        """
        prepare(self, given)

    @property
    def auto_memo(self):
        """``auto``'s decisions so far (:class:`~benchsel.prediction.memo.AutoMemo`)."""
        self._check_fitted()
        if self._auto_memo is None:
            self._auto_memo = new_memo(self)
        return self._auto_memo

    @auto_memo.setter
    def auto_memo(self, memo) -> None:
        self._check_fitted()
        share_board_options(self, memo.fits)
        self._auto_memo = memo

    def extrapolation(self, observed) -> list[dict]:
        """Whether predictions for new models are extrapolations, and why.

        Parameters
        ----------
        observed : mapping {item: score}, ScoreMatrix or ndarray of shape (R, N)
            New models' scores as for :meth:`predict` (an array is over
            :attr:`items_`, NaN where not observed).

        Returns
        -------
        list of dict
            One JSON-ready dict per model (None where a number is undefined):

            ``scale_mismatch`` : list of str
                Observed items whose score is not on the column's scale: a
                score in ``[0, 1]`` on a percent column where every training
                score is above 1 (a fraction given for a percentage), a
                score above 1 on a fraction column that divided by 100 is
                nearer the training range (a percentage given for a
                fraction), or any other score outside the item's
                :attr:`bounds_`.
            ``strength`` : float or None
                Mean standardized observed score.
            ``strength_percentile`` : float or None
                Share (in %) of training models weaker on the same items.
            ``items_above_training_max``, ``items_below_training_min`` : int
                Observed items where the model beats every training model /
                trails every one.
            ``direction`` : {"stronger", "weaker", "mixed"} or None
                Outside the training range above, below, or both.
            ``reasons`` : list of str
                Why ``flag`` is set, one short sentence each.
            ``flag`` : bool
                Any of the above: the model lies outside the range the
                model was fitted on, or its scores are on another scale.
        """
        self._check_fitted()
        if isinstance(observed, np.ndarray):
            x = np.atleast_2d(np.asarray(observed, dtype=float))
            if x.shape[1] != len(self.items_):
                raise ValueError(
                    f"observed must have one column per fitted item ({len(self.items_)}); "
                    f"got shape {x.shape}"
                )
        else:
            x = self._rows(observed)[1]
        return [self.range_.report(row) for row in x]

    def rescaled(self, observed) -> tuple[ScoreMatrix, list[tuple]]:
        """``observed`` with scores given on the other scale of their column put on its own.

        A percent (62) given for a column of fractions becomes 0.62, a fraction
        (0.62) given for a column in percent 62 -- where the rescaled value
        fits the training scores better (the rule :meth:`extrapolation` flags
        ``scale_mismatch`` by). Returns the scores (a ScoreMatrix over the
        observed items) and ``(model, item, given, rescaled)`` per changed score;
        nothing else moves.
        """
        self._check_fitted()
        models, x = self._rows(observed)
        notes = self.range_.rescale(models, x)
        given = np.flatnonzero(~np.isnan(x).all(axis=0))
        return ScoreMatrix(x[:, given], models, [self.items_[j] for j in given]), notes

    def conditional_covariance(self, observed_items: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """Joint covariance of the other items given ``observed_items`` (eq. 7).

        In the items' own units, or logit units under ``transform="logit"``.

        It does not depend on the observed values. Returns the names of the
        unobserved items and their covariance matrix.
        """
        self._check_fitted()
        o = self.scores_.item_indices(observed_items, "benchmark")
        m = np.setdiff1d(np.arange(len(self.items_)), o)
        s = self.estimate_.covariance
        if o.size:
            factor, _ = cholesky(s[np.ix_(o, o)] + self.ridge * np.eye(o.size))
            from scipy.linalg import cho_solve

            cov = s[np.ix_(m, m)] - s[np.ix_(m, o)] @ cho_solve((factor, True), s[np.ix_(o, m)])
        else:
            cov = s[np.ix_(m, m)]
        scale = self.standardizer_.scale[m]
        return [self.items_[j] for j in m], 0.5 * (cov + cov.T) * np.outer(scale, scale)
