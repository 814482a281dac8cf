"""What every question-level method shares: the estimator contract and small helpers.

Every method is a :class:`CoresetMethod`, a scikit-learn estimator
(:class:`sklearn.base.BaseEstimator`): the constructor only stores its
parameters, among them ``n_questions`` (how many questions to pick) and
``random_state`` (an int, a :class:`numpy.random.Generator` or None), so
``get_params``, ``set_params`` and :func:`sklearn.base.clone` work on every
method. A method has a registry ``name`` and three calls:

``fit(source) -> self``
    ``source`` is the source models' complete scores (M x N, float). The
    input and the parameters are checked once, up front; then ``selected_``
    holds the chosen question indices (ndarray of int, length
    ``n_questions``, unique, in the order the predictor expects their
    scores).

``predict(x_selected) -> (mean, sd)``
    ``x_selected`` is target models' scores on ``selected_`` (R x n, columns
    in ``selected_`` order). Returns the predicted full-benchmark mean score
    of each model (R,) and its standard deviation (R,), or ``None`` for
    ``sd`` when the method has no error bar. It changes nothing on the
    method.

``design_based(x_selected) -> ndarray of bool (R,)``
    Which rows of ``predict`` are design-based estimates (a consistent
    estimate with its design's error bar) rather than model-based ones;
    calibration treats those rows apart
    (:class:`~benchsel.coreset.calibrated.Calibrated`). False everywhere
    unless a method says otherwise.

``predict``, ``design_based`` and any fitted attribute (a name ending in
``_``) raise :class:`benchsel.exceptions.NotFittedError` before ``fit``.
A subclass implements ``_fit(source, n, rng)`` and ``_predict(x)`` on
checked arrays, and says how its input is checked (``_min_models``,
``_unit_interval``, ``_check_params``).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator

from ..exceptions import NotFittedError

__all__ = ["ALPHAS", "DRAWS", "CoresetMethod", "RandomQuestions", "as_generator", "check_n",
           "check_selected", "check_source", "difficulty_strata", "fpc", "inner_settings",
           "kfold_ids", "nonzero_design_sd", "question_difficulty", "resolve_n",
           "successive_difference_sd"]

ALPHAS = np.logspace(-3, 3, 13)  # ridge penalties searched by leave-one-out
N_FOLDS = 4  # each fold holds out 25% of the source models, as paper 001's split does
#: How a :class:`RandomQuestions` method draws its questions.
DRAWS = ("uniform", "stratified")


def fpc(n: int, total: int) -> float:
    """Finite-population correction of a standard error for ``n`` of ``total`` questions."""
    return np.sqrt((total - n) / (total - 1)) if total > 1 else 0.0


#: Two-sided 90% normal quantile: the interval level the zero-width floor is set for.
_Z90 = 1.6448536269514722


def nonzero_design_sd(mean, sd, n: int, total: int) -> np.ndarray:
    """A design-based SD that is never zero for scores in [0, 1].

    A sample whose answers all agree (every question right, or every one
    wrong) has sample SD 0, yet no ``n`` questions make a benchmark score
    certain. Where ``sd`` is 0 it is replaced by the Agresti-Coull SD: the
    binomial SD at ``p~ = (n p + z^2 / 2) / (n + z^2)`` over ``n + z^2``
    answers (``z`` the 90% quantile), with the finite-population
    correction, at ``p`` the estimate clipped into [0, 1]. For ``n = 50``
    answers all right that is 0.022: a 90% interval reaching down to 0.96,
    where a Wilson interval for 50 of 50 starts at 0.95.

    Parameters
    ----------
    mean, sd : ndarray (R,)
        Estimates of full-benchmark means in [0, 1] and their design SDs.
    n, total : int
        Questions run and questions in the benchmark.
    """
    mean, sd = np.asarray(mean, dtype=float), np.asarray(sd, dtype=float)
    z2 = _Z90**2
    p = (n * np.clip(mean, 0.0, 1.0) + z2 / 2) / (n + z2)
    floor = np.sqrt(p * (1 - p) / (n + z2)) * fpc(n, total)
    return np.where(sd > 0, sd, floor)


def successive_difference_sd(x: np.ndarray, weights: np.ndarray, fallback: float) -> np.ndarray:
    """SD of a stratified draw's weighted mean, one question per stratum.

    One question per stratum leaves no within-stratum variance to estimate;
    strata ordered by difficulty let neighbours stand in for each other
    (the successive-difference estimator of systematic sampling):
    ``s^2 = sum_h (y_{h+1} - y_h)^2 / (2 (n - 1))`` estimates a stratum's
    variance, a little conservatively since neighbours' means differ too,
    and ``Var = s^2 sum_h w_h^2``.

    Parameters
    ----------
    x : ndarray (R, n)
        Scores on the drawn questions, columns in stratum order.
    weights : ndarray (n,)
        Design weights (each stratum's share of the questions).
    fallback : float
        A model's spread over questions, for ``n = 1``.
    """
    n = x.shape[1]
    if n > 1:
        s2 = (np.diff(x, axis=1) ** 2).sum(axis=1) / (2 * (n - 1))
    else:
        s2 = np.full(x.shape[0], fallback**2)
    return np.sqrt(s2 * float(np.sum(np.square(weights))))


def check_n(n: int, total: int, name: str = "n") -> int:
    """``n`` as an int; raise unless it is a whole number with ``1 <= n < total``.

    A coreset is a strict subset of the ``total`` questions. ``name`` is the
    parameter the message names.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise ValueError(f"{name} must be a whole number in [1, {total - 1}]; got {n!r}")
    if not 1 <= n < total:
        raise ValueError(f"{name} must be in [1, {total - 1}]; got {n}")
    return int(n)


def resolve_n(n, total: int) -> int:
    """Coreset size from an int or a percentage string such as ``"5%"`` of ``total``."""
    if isinstance(n, str):
        text = n.strip()
        try:
            value = float(text[:-1]) if text.endswith("%") else float(text)
        except ValueError:
            raise ValueError(f"n must be a count or a percentage like '5%'; got {n!r}") from None
        if text.endswith("%"):
            if not 0 < value < 100:
                raise ValueError(f"a percentage n must be in (0%, 100%); got {n!r}")
            return max(1, int(round(total * value / 100)))
        if value != int(value):
            raise ValueError(f"n must be a whole number or a percentage; got {n!r}")
        n = int(value)
    if not 1 <= n < total:
        raise ValueError(f"n must be in [1, {total - 1}] for {total} questions; got {n}")
    return int(n)


def as_generator(random_state) -> np.random.Generator:
    """A :class:`numpy.random.Generator` from a ``random_state`` parameter.

    An int seeds a new generator; a Generator is used as it is (so a fit
    advances it, as scikit-learn does with a ``RandomState``); None draws a
    fresh seed from the operating system.
    """
    if random_state is None or isinstance(random_state, np.random.Generator):
        return np.random.default_rng(random_state)
    if (isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool)
            and random_state >= 0):
        return np.random.default_rng(int(random_state))
    raise ValueError("random_state must be a non-negative int, a numpy.random.Generator or "
                     f"None; got {random_state!r}")


def check_source(source, *, min_models: int = 2, unit_interval: bool = False) -> np.ndarray:
    """Source scores as a finite 2-D float array with at least ``min_models`` models.

    Parameters
    ----------
    source : array-like of shape (M, N)
        Source models' complete scores.
    min_models : int, default 2
    unit_interval : bool, default False
        Also require every score to lie in ``[0, 1]``.
    """
    x = np.asarray(source, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"source scores must be a 2-D (models x questions) array; "
                         f"got shape {x.shape}")
    if x.shape[0] < min_models:
        raise ValueError(f"need at least {min_models} source models; got {x.shape[0]}")
    if not np.isfinite(x).all():
        raise ValueError("source scores must be complete and finite (no NaN or inf)")
    if unit_interval and (x.min() < 0 or x.max() > 1):
        raise ValueError(f"scores must lie in [0, 1]; got values in [{x.min():g}, {x.max():g}]")
    return x


def check_selected(x_selected, n: int, *, unit_interval: bool = False) -> np.ndarray:
    """Target scores on the coreset as a finite (R, n) float array (one model may be 1-D)."""
    x = np.asarray(x_selected, dtype=float)
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2 or x.shape[1] != n:
        raise ValueError(f"x_selected must have shape (models, {n}); got {np.shape(x_selected)}")
    if not np.isfinite(x).all():
        raise ValueError("x_selected must be complete and finite (no NaN or inf)")
    if unit_interval and x.size and (x.min() < 0 or x.max() > 1):
        raise ValueError(f"scores must lie in [0, 1]; got values in [{x.min():g}, {x.max():g}]")
    return x


def _check_positive(name: str, value, *, integer: bool = False) -> None:
    if integer:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer; got {value!r}")
    elif not value > 0:
        raise ValueError(f"{name} must be > 0; got {value!r}")


def kfold_ids(m: int, rng, n_folds: int = N_FOLDS) -> np.ndarray:
    """Fold label (0 .. ``min(n_folds, m) - 1``) of each of ``m`` models, in random order."""
    k = min(n_folds, m)
    ids = np.empty(m, dtype=int)
    ids[rng.permutation(m)] = np.arange(m) % k
    return ids


def question_difficulty(source: np.ndarray) -> np.ndarray:
    """Each question's mean score over the source models, blended with its mean over the strongest.

    The average of the mean over all source models and the mean over the
    strongest quarter of them (at least two): a question every weak source
    misses is still told apart by the strongest ones, which is where a new,
    stronger model's answers differ.
    """
    strongest = np.argsort(source.mean(axis=1), kind="stable")[-max(2, source.shape[0] // 4):]
    return 0.5 * (source.mean(axis=0) + source[strongest].mean(axis=0))


def difficulty_strata(source: np.ndarray, n: int) -> np.ndarray:
    """Stratum (0 .. n-1) of each question: ``n`` near-equal groups by difficulty.

    Questions are ordered by :func:`question_difficulty` (ties by question
    index, so the strata are a fixed function of the source scores) and cut
    into ``n`` consecutive groups whose sizes differ by at most one.
    """
    total = source.shape[1]
    check_n(n, total)
    order = np.argsort(question_difficulty(source), kind="stable")
    strata = np.empty(total, dtype=np.intp)
    strata[order] = np.arange(total) * n // total
    return strata


class CoresetMethod(BaseEstimator):
    """Base class of the question-level methods: scikit-learn's estimator contract.

    Parameters
    ----------
    n_questions : int, optional
        Questions to pick, ``1 <= n_questions < N`` for ``N`` source
        questions; ``fit`` needs it.
    random_state : int, numpy.random.Generator or None, default None
        Seeds every random choice of ``fit``. A Generator is drawn from as it
        is (several methods given the same one draw alike when it is in the
        same state); None seeds from the operating system.

    Attributes
    ----------
    selected_ : ndarray of int, shape (n_questions,)
        The chosen question indices, in the order ``predict`` takes their
        scores.

    Notes
    -----
    A subclass lists every parameter in its own ``__init__`` (these two
    included) and stores each under its own name, as scikit-learn requires
    of ``get_params``; it checks them in ``_check_params`` and does its work
    in ``_fit(source, n, rng)`` and ``_predict(x)``.
    """

    #: Registry name (:func:`benchsel.coreset.registry.make_method`).
    name: ClassVar[str] = ""
    #: Fewest source models ``fit`` accepts.
    _min_models: ClassVar[int] = 2
    #: Whether scores must lie in [0, 1] (source and targets).
    _unit_interval: ClassVar[bool] = False
    #: Whether the model-based rows are only ever targets among the source models
    #: (the other rows design-based): their calibration may then narrow the error
    #: bar, not only widen it (:class:`~benchsel.coreset.calibrated.Calibrated`).
    model_rows_among_sources: ClassVar[bool] = False

    def __init__(self, n_questions: int | None = None, *, random_state=None):
        self.n_questions = n_questions
        self.random_state = random_state

    def fit(self, source) -> CoresetMethod:
        """Choose ``n_questions`` questions on the source models and fit the predictor.

        Parameters
        ----------
        source : array-like of shape (M, N)
            Source models' complete scores.

        Returns
        -------
        self
        """
        self._check_params()
        x = check_source(source, min_models=self._min_models, unit_interval=self._unit_interval)
        n_questions, random_state = self._fit_settings()
        n = check_n(n_questions, x.shape[1], "n_questions")
        self._fit(x, n, as_generator(random_state))
        return self

    def predict(self, x_selected):
        """Predicted full-benchmark mean of each target model and its standard deviation.

        Parameters
        ----------
        x_selected : array-like of shape (R, n_questions)
            Target models' scores on ``selected_``, in that order (one model
            may be 1-D).

        Returns
        -------
        mean : ndarray of shape (R,)
        sd : ndarray of shape (R,) or None
            None for a method without an error bar.
        """
        return self._predict(self._check_x(x_selected))

    def design_based(self, x_selected) -> np.ndarray:
        """Which rows of ``predict(x_selected)`` are design-based estimates (bool, (R,))."""
        return np.zeros(len(self._check_x(x_selected)), dtype=bool)

    def _check_x(self, x_selected) -> np.ndarray:
        if "selected_" not in vars(self):
            raise self._not_fitted()
        return check_selected(x_selected, len(self.selected_), unit_interval=self._unit_interval)

    def _not_fitted(self) -> NotFittedError:
        return NotFittedError(f"this {type(self).__name__} is not fitted yet; "
                              "call fit(source) first")

    def __getattr__(self, name: str):
        # Reached only when ordinary lookup fails: a fitted attribute read
        # before fit is a NotFittedError (an AttributeError too, so hasattr
        # and getattr with a default behave as usual).
        if name.endswith("_") and not name.startswith("_") and "selected_" not in vars(self):
            raise self._not_fitted()
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _fit_settings(self):
        """The ``(n_questions, random_state)`` that ``fit`` uses."""
        return self.n_questions, self.random_state

    def _check_params(self) -> None:
        """Raise ValueError for a parameter out of range (before any work)."""

    def _fit(self, source: np.ndarray, n: int, rng: np.random.Generator) -> None:
        raise NotImplementedError

    def _predict(self, x: np.ndarray):
        raise NotImplementedError


def inner_settings(wrapper: CoresetMethod) -> tuple:
    """``(n_questions, random_state)`` of a method that fits another one (its
    ``estimator``): its own, or where those are None, the estimator's."""
    n, state = wrapper.n_questions, wrapper.random_state
    return (wrapper.estimator.n_questions if n is None else n,
            wrapper.estimator.random_state if state is None else state)


class RandomQuestions(CoresetMethod):
    """Shared part of the methods that sample questions at random.

    ``draw = "uniform"`` takes ``n`` questions uniformly without replacement;
    ``"stratified"`` takes one uniformly from each of the ``n``
    :func:`difficulty_strata`. Either way ``weights_`` holds each selected
    question's design weight (its stratum's share of the questions; ``1/n``
    for a uniform draw), so that ``weights_ @ y`` is the design-unbiased
    estimate of a model's full-benchmark mean from its scores ``y`` on
    ``selected_``. Parameters as :class:`CoresetMethod`.

    Attributes
    ----------
    selected_ : ndarray of int, shape (n,)
        Ascending.
    weights_ : ndarray of shape (n,)
    strata_ : ndarray of int, shape (n,)
        The selected questions' strata (stratified draws only).
    total_questions_ : int
        Questions in the source.
    question_sd_ : float
        The source models' median spread over questions.
    unit_interval_ : bool
        Whether every source score lies in [0, 1].
    """

    draw: ClassVar[str] = "uniform"

    def _fit(self, source: np.ndarray, n: int, rng) -> None:
        self.total_questions_ = source.shape[1]
        if self.draw == "uniform":
            self.selected_ = np.sort(rng.choice(self.total_questions_, n, replace=False))
            self.weights_ = np.full(n, 1.0 / n)
        elif self.draw == "stratified":
            strata = difficulty_strata(source, n)
            sizes = np.bincount(strata, minlength=n)
            # Stratum h's questions sit at starts[h] .. starts[h] + sizes[h] in this order.
            by_stratum = np.argsort(strata, kind="stable")
            starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            picked = by_stratum[starts + (rng.random(n) * sizes).astype(np.intp)]
            order = np.argsort(picked)
            self.selected_ = picked[order]
            self.weights_ = sizes[order] / self.total_questions_
            # The selected questions' strata, for estimators that need the draw's order.
            self.strata_ = strata[self.selected_]
        else:
            raise ValueError(f"draw must be one of {', '.join(DRAWS)}; got {self.draw!r}")
        # A model's spread over questions, typical of the source models: the
        # sampling SD a single run question cannot estimate for itself.
        self.question_sd_ = (float(np.median(source.std(axis=1, ddof=1)))
                             if self.total_questions_ > 1 else 0.0)
        # Scores in [0, 1] get a binomial error bar where the sample's is zero.
        self.unit_interval_ = bool(source.min() >= 0 and source.max() <= 1)
        self._fit_predictor(source)

    def _fit_predictor(self, source: np.ndarray) -> None:
        """Fit what predicts from the drawn questions (nothing for a design-based mean)."""

    def _sample_sd(self, x: np.ndarray) -> np.ndarray:
        """Per-row SD of sampled scores (ddof 1); the source models' typical one for n = 1."""
        if x.shape[1] > 1:
            return x.std(axis=1, ddof=1)
        return np.full(x.shape[0], self.question_sd_)

    def design_estimate(self, x_selected: np.ndarray):
        """The design-weighted mean of the answers and its design-based SD.

        A uniform draw: the sample mean and its SD with the finite-population
        correction. A stratified one: the weighted mean and its
        :func:`successive_difference_sd`. Either SD is never zero on [0, 1]
        scores (:func:`nonzero_design_sd`).
        """
        x = np.asarray(x_selected, dtype=float)
        if self.draw == "stratified":
            order = np.argsort(self.strata_)  # columns follow selected_; strata in order
            x, w = x[:, order], self.weights_[order]
            mean = x @ w
            sd = successive_difference_sd(x, w, self.question_sd_)
        else:
            n = x.shape[1]
            mean = x.mean(axis=1)
            sd = self._sample_sd(x) / np.sqrt(n) * fpc(n, self.total_questions_)
        return mean, self._design_sd(mean, sd)

    def _design_sd(self, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
        """``sd`` with its zeros replaced by :func:`nonzero_design_sd` on [0, 1] scores."""
        if not self.unit_interval_:
            return sd
        return nonzero_design_sd(mean, sd, len(self.selected_), self.total_questions_)
