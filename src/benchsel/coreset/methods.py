"""Question-level methods: each picks ``n`` questions and predicts the full-benchmark mean.

Every method is fitted on the source models' complete scores (M x N), then
``predict`` maps target models' scores on the chosen questions to predicted
full-benchmark means (and standard deviations where the method has them).

* ``random-sampling`` -- the mean of ``n`` uniformly random questions; its
  standard error is the sample's, with the finite-population correction.
* ``stratified-sampling`` -- the default's own draw (one random question from
  each of ``n`` difficulty strata) estimated by its design-weighted mean:
  what averaging the answers the default asks for gives. Its standard error
  is the successive-difference one of the ordered strata.
* ``random-sampling-learn`` -- random questions; ridge regression from their
  scores to the full mean, fitted on the source models (alpha by
  leave-one-out over ``10^-3 .. 10^3``).
* ``aipw`` -- Zhang et al. (2025, eq. 3): random questions; for each target
  model a ridge regression predicts its score on every question from the
  source models' scores on it, fitted on the sampled questions, and the
  sample mean is corrected by the predicted difference between unsampled
  and sampled questions. Its standard error uses the ridge's leave-one-out
  residuals.
* ``gaussian-greedy`` -- benchsel's low-rank Gaussian: greedy questions that
  minimize the posterior variance of the mean, conditional-mean prediction.
* ``gaussian-dr`` -- random questions, the low-rank Gaussian's prediction of
  the unrun questions, debiased by the mean leave-one-out residual on the run
  ones (consistent like AIPW; design-based standard error).
* ``guarded-ensemble`` (the default) -- random questions, one from each of
  ``n`` strata of near-equal size by difficulty (the source models' mean
  score on a question blended with the strongest quarter's); the mean of three
  predictions (degree-2 polynomial kernel ridge from the run questions to
  the mean, as in Bowyer et al.'s "++"; the low-rank Gaussian's conditional
  mean; aipw) where the target's own answers place it among the source
  models (the 90% interval of their design-weighted mean inside the range
  of the sources' scores, or at the bottom that mean no more than one of
  its standard deviations below the weakest 10% of them), with the largest
  of the three parts' standard errors
  (their errors are strongly correlated, so averaging does not shrink them
  much); elsewhere -- at the frontier, beyond the sources --
  ``stratified-sampling``'s estimate and error bar, since every learned part
  regresses toward the sources, or aipw's design-unbiased difference
  estimator where it predicted the strongest sources better.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from .._ridge import ridge_loo
from ..splits import frontier_split
from ._base import ALPHAS, CoresetMethod, RandomQuestions, fpc, successive_difference_sd
from .gaussian import LowRankGaussian
from .refit import kernel_ridge_loo, paper_alphas

__all__ = ["AIPW", "METHODS", "GaussianDR", "GaussianGreedy", "GuardedEnsemble",
           "RandomSampling", "RandomSamplingLearn", "StratifiedSampling", "aipw_estimate"]

class RandomSampling(RandomQuestions):
    """The mean of ``n_questions`` uniformly random questions, with its design-based SD.

    Parameters
    ----------
    n_questions : int, optional
    random_state : int, numpy.random.Generator or None, default None
        See :class:`~benchsel.coreset._base.CoresetMethod`.
    """

    name = "random-sampling"

    def _predict(self, x: np.ndarray):
        return self.design_estimate(x)


class StratifiedSampling(RandomQuestions):
    """The guarded ensemble's questions, estimated by their design-weighted mean.

    The honest baseline of the default: what a user gets by averaging the
    answers the default asked for (weighted by stratum size, which is 1/n up
    to rounding). Parameters as :class:`RandomSampling`.
    """

    name = "stratified-sampling"
    draw = "stratified"

    def _predict(self, x: np.ndarray):
        return self.design_estimate(x)


class RandomSamplingLearn(RandomQuestions):
    """Random questions; ridge regression from their scores to the full-benchmark mean.

    Parameters as :class:`RandomSampling`.
    """

    name = "random-sampling-learn"

    def _fit_predictor(self, source: np.ndarray) -> None:
        self.model_ = ridge_loo(source[:, self.selected_], source.mean(axis=1), ALPHAS)
        self.sd_ = self.model_.sd

    def _predict(self, x: np.ndarray):
        mean = self.model_.predict(x)
        return mean, np.full(mean.shape, self.sd_)


def aipw_estimate(features: np.ndarray, selected: np.ndarray, rows: np.ndarray,
                  fallback_sd: float, weights: np.ndarray | None = None,
                  order: np.ndarray | None = None):
    """Zhang et al. (2025) eq. 3 for each row of ``rows`` (scores on ``selected``).

    Per target model, a ridge regression (alpha by leave-one-out over
    :data:`ALPHAS`) predicts its score on a question from that question's
    ``features``; fitted on the sampled questions, it corrects the sample mean
    by the predicted difference between the unsampled and sampled questions.
    Written as a difference estimator, ``mean(pred over all questions) +
    sum_i w_i (y_i - pred_i)`` over the sampled questions, which is eq. 3 for
    uniform weights ``w_i = 1/n`` and stays design-unbiased for a stratified
    draw with its design weights. The standard error uses the ridge's
    leave-one-out residuals (in-sample ones would understate it) in the
    formula for a uniform draw; for a draw stratified by difficulty that is
    conservative, since the strata only remove variance between them.

    Parameters
    ----------
    features : ndarray (N, p)
        One row per question.
    selected : ndarray of int (n,)
        The sampled questions.
    rows : ndarray (R, n)
        Target models' scores on them.
    fallback_sd : float
        A model's spread over questions, for fewer than three run questions:
        too few to fit the ridge and its leave-one-out error, so the estimate
        is design-based (their weighted mean), with this spread when only one
        was run.
    weights : ndarray (n,), optional
        Design weights of the sampled questions (summing to 1); uniform by
        default.
    order : ndarray of int (n,), optional
        For a draw of one question per stratum, the sampled questions in
        stratum order: the standard error is then the design's own, the
        :func:`~benchsel.coreset._base.successive_difference_sd` of the
        leave-one-out residuals, instead of the uniform draw's.

    Returns
    -------
    mean, sd : ndarray (R,)
    """
    total, n = features.shape[0], len(selected)
    w = np.full(n, 1.0 / n) if weights is None else np.asarray(weights, dtype=float)
    if n < 3:
        spread = rows.std(axis=1, ddof=1) if n > 1 else np.full(len(rows), fallback_sd)
        return rows @ w, spread / np.sqrt(n) * fpc(n, total)
    means, sds = [], []
    for row in rows:
        ridge = ridge_loo(features[selected], row, ALPHAS)
        pred = ridge.predict(features)
        means.append(pred.mean() + (row - pred[selected]) @ w)
        loo = ridge.loo_residuals
        if order is not None:
            sds.append(successive_difference_sd(loo[None, order], w[order], fallback_sd)[0])
        else:
            sds.append(np.sqrt((loo**2).mean() * n / (n - 1)) / np.sqrt(n) * fpc(n, total))
    return np.array(means), np.array(sds)


class AIPW(RandomQuestions):
    """Zhang et al. (2025, eq. 3): random questions, the sample mean corrected by ridge.

    See :func:`aipw_estimate`. Parameters as :class:`RandomSampling`.
    """

    name = "aipw"

    def _fit_predictor(self, source: np.ndarray) -> None:
        self.features_ = source.T  # one row per question: the source models' scores

    def _predict(self, x: np.ndarray):
        mean, sd = aipw_estimate(self.features_, self.selected_, x, self.question_sd_)
        return mean, self._design_sd(mean, sd)


class GaussianGreedy(CoresetMethod):
    """Greedy questions of a low-rank Gaussian, its conditional mean as the prediction.

    Deterministic: ``random_state`` is accepted for the common contract and
    unused. Parameters as :class:`~benchsel.coreset._base.CoresetMethod`.
    """

    name = "gaussian-greedy"
    _min_models = 3

    def _fit(self, source: np.ndarray, n: int, rng) -> None:
        self.model_ = LowRankGaussian().fit(source)
        self.selected_ = self.model_.select(n)

    def _predict(self, x: np.ndarray):
        return self.model_.predict_mean(x, self.selected_)


class GaussianDR(RandomQuestions):
    """Random questions; the low-rank Gaussian's prediction of the rest, debiased.

    Parameters as :class:`RandomSampling`.
    """

    name = "gaussian-dr"
    _min_models = 3

    def _fit_predictor(self, source: np.ndarray) -> None:
        self.model_ = LowRankGaussian().fit(source)

    def _predict(self, x_selected: np.ndarray):
        m, a, total = self.model_, self.selected_, self.total_questions_
        w, d = m.w_[a], m.d_[a]
        prec = np.linalg.inv(w @ w.T + np.diag(d))
        alpha = (x_selected - m.mean_[a]) @ prec
        unrun = np.ones(total, bool)
        unrun[a] = False
        # Conditional means of the unrun questions: mu + Sigma[unrun, A] alpha.
        cond = m.mean_[unrun] + alpha @ (w @ m.w_[unrun].T)
        loo = x_selected - alpha / np.diag(prec)  # leave-one-out predictions of the run ones
        resid = x_selected - loo
        n_unrun = unrun.sum()
        mean = (x_selected.sum(axis=1) + cond.sum(axis=1) + resid.mean(axis=1) * n_unrun) / total
        sd = self._sample_sd(resid) / np.sqrt(len(a)) * n_unrun / total
        return mean, sd


#: How :class:`GuardedEnsemble` estimates a target beyond the sources: ``"auto"``
#: (aipw where the sources' own frontier shows it better, else the design-weighted
#: mean) or ``"design"`` (always the design-weighted mean, as up to v4).
BEYOND = ("auto", "design")
#: The paired t statistic (aipw's absolute error minus the design-weighted mean's, on
#: the strongest 10% of the sources) below minus which ``"auto"`` takes aipw.
BEYOND_EVIDENCE = 2.0
#: Fewer source models than this leave too few to hold out: the design-weighted mean.
BEYOND_MIN_SOURCES = 20


class GuardedEnsemble(RandomQuestions):
    """Model-based prediction where the target's own answers place it among the sources.

    Its questions are drawn one per difficulty stratum (see
    :class:`~benchsel.coreset._base.RandomQuestions`). Every model-based
    predictor learned on the sources regresses toward them: it pulls a model
    at or past the strongest source back into their range (at the frontier
    split, the ensemble alone was 26% worse than the plain weighted mean of
    its own answers, averaged over the ten shared files). So the ensemble is
    used only where the target's own answers place it among the sources:
    the design-based estimate's central ``guard_level`` interval lies inside
    the range of the sources' full-benchmark means, except that at the
    bottom it is enough for the estimate to lie no more than
    ``floor_margin`` of its standard deviations below the weakest
    ``floor_share`` of them. Elsewhere the estimate is design-consistent
    (:meth:`beyond_estimate`): the design-weighted mean of the answers with
    its successive-difference error bar (:class:`StratifiedSampling`'s), or
    aipw's difference estimator on the same answers where the sources' own
    frontier shows it better (``beyond``).

    The two ends differ because the models do. At the top a new checkpoint
    is usually at or past the strongest source, and the interval keeps the
    ensemble from pulling it back. At the bottom weak models often crowd
    near chance, so the interval of almost any weak target reaches below
    the weakest source; the interval alone gave up the ensemble for many
    targets among the sources (interpolation EGR -25.3% against -31.1% with
    the share and margin, 30 trials on the ten shared files, no file
    worse), while a model weaker than every source still mostly gets its
    own answers (docs/experiments/question-level.md, "v4").

    Parameters
    ----------
    n_questions : int, optional
    random_state : int, numpy.random.Generator or None, default None
        See :class:`~benchsel.coreset._base.CoresetMethod`.
    guard_level : float in (0, 1), default 0.9
        Coverage of the design-based interval that must lie inside the
        sources' range. Larger is safer beyond the sources and learns from
        fewer models inside them.
    floor_share : float in [0, 1), default 0.1
        At the bottom, it is enough for the estimate plus ``floor_margin`` of
        its standard deviations to lie above this share of the sources'
        full-benchmark means (0: above the weakest source's).
    floor_margin : float >= 0, default 1.0
        See ``floor_share``; 0 asks the estimate itself to lie above them.
    beyond : {"auto", "design"}, default "auto"
        The estimate of a target not among the sources. Both are
        design-unbiased; ``"design"`` is always the design-weighted mean.
        ``"auto"`` plays the frontier on the sources: their strongest 10%
        (at least 5; with :data:`BEYOND_MIN_SOURCES` sources or more) answer
        the drawn questions and are predicted by both, aipw from the other
        sources, and aipw is taken where its absolute errors are smaller by a
        paired t statistic beyond :data:`BEYOND_EVIDENCE`
        (docs/experiments/question-level.md, "v5").

    Attributes
    ----------
    beyond_ : {"aipw", "design"}
        The estimate used for targets not among the sources.
    beyond_evidence_ : float
        The paired t statistic ``beyond="auto"`` decided by (NaN with too
        few sources, or with ``beyond="design"``).
    """

    name = "guarded-ensemble"
    draw = "stratified"
    _min_models = 3
    model_rows_among_sources = True

    def __init__(self, n_questions: int | None = None, *, random_state=None,
                 guard_level: float = 0.9, floor_share: float = 0.1, floor_margin: float = 1.0,
                 beyond: str = "auto"):
        super().__init__(n_questions, random_state=random_state)
        self.guard_level = guard_level
        self.floor_share = floor_share
        self.floor_margin = floor_margin
        self.beyond = beyond

    def _check_params(self) -> None:
        if not 0 < self.guard_level < 1:
            raise ValueError(f"guard_level must be in (0, 1); got {self.guard_level!r}")
        if not 0 <= self.floor_share < 1:
            raise ValueError(f"floor_share must be in [0, 1); got {self.floor_share!r}")
        if not (np.isfinite(self.floor_margin) and self.floor_margin >= 0):
            raise ValueError(f"floor_margin must be a non-negative number; got "
                             f"{self.floor_margin!r}")
        if self.beyond not in BEYOND:
            raise ValueError(f"beyond must be one of {', '.join(map(repr, BEYOND))}; got "
                             f"{self.beyond!r}")

    def _fit_predictor(self, source: np.ndarray) -> None:
        self.kernel_ = kernel_ridge_loo(source[:, self.selected_], source.mean(axis=1),
                                        paper_alphas(source))
        self.gaussian_ = LowRankGaussian().fit(source)
        self.raw_features_ = source.T
        means = source.mean(axis=1)
        self.range_ = (means.min(), means.max())
        self.floor_ = float(np.quantile(means, self.floor_share))
        self.beyond_evidence_ = self._beyond_evidence(source) if self.beyond == "auto" \
            else float("nan")
        self.beyond_ = "aipw" if self.beyond_evidence_ < -BEYOND_EVIDENCE else "design"

    def _beyond_evidence(self, source: np.ndarray) -> float:
        """How much better aipw than the design-weighted mean predicts the strongest sources.

        The sources' own frontier: the strongest 10% of them (at least 5)
        answer the drawn questions, each estimator predicts their
        full-benchmark means (aipw's ridge from the other sources' scores),
        and the paired t statistic of the absolute errors (aipw minus design)
        is returned: negative where aipw is better. NaN with too few sources
        to hold any out.
        """
        if source.shape[0] < BEYOND_MIN_SOURCES:
            return float("nan")
        fold = frontier_split(source, strength=source.mean(axis=1))
        rest, held = source[fold.train], source[fold.validation]
        x, truth = held[:, self.selected_], held.mean(axis=1)
        design = self.design_estimate(x)[0]
        aipw = aipw_estimate(rest.T, self.selected_, x, self.question_sd_, self.weights_)[0]
        diff = np.abs(aipw - truth) - np.abs(design - truth)
        spread = diff.std(ddof=1)
        if not spread > 0:
            return 0.0
        return float(diff.mean() / (spread / np.sqrt(diff.size)))

    def _inside(self, x_selected: np.ndarray):
        """Whether the target's own answers place each row among the sources (see the
        class), and the design-based estimate and SD."""
        design_mean, design_sd = self.design_estimate(x_selected)
        half = ndtri(0.5 + self.guard_level / 2) * design_sd
        above_bottom = ((design_mean - half >= self.range_[0])
                        | (design_mean + self.floor_margin * design_sd >= self.floor_))
        inside = above_bottom & (design_mean + half <= self.range_[1])
        return inside, design_mean, design_sd

    def design_based(self, x_selected) -> np.ndarray:
        """Rows estimated design-consistently (:meth:`beyond_estimate`): those not among
        the sources."""
        return ~self._inside(self._check_x(x_selected))[0]

    def beyond_estimate(self, x_selected) -> tuple[np.ndarray, np.ndarray]:
        """(mean, SD) for every row as if it lay beyond the sources.

        The design-weighted mean of its answers, or where the sources' own
        frontier showed aipw better (``beyond_ == "aipw"``) aipw's
        difference estimator on the same draw; both are design-unbiased.
        """
        return self._beyond(self._check_x(x_selected))

    def _beyond(self, x_selected: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.beyond_ == "design":
            return self.design_estimate(x_selected)
        mean, sd = aipw_estimate(self.raw_features_, self.selected_, x_selected,
                                 self.question_sd_, self.weights_,
                                 order=np.argsort(self.strata_, kind="stable"))
        return mean, self._design_sd(mean, sd)

    def model_based_estimate(self, x_selected) -> tuple[np.ndarray, np.ndarray]:
        """The ensemble's (mean, SD) for every row, whether the guard uses it or not."""
        return self._ensemble(self._check_x(x_selected))

    def _ensemble(self, x_selected: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a, w = self.selected_, self.weights_
        parts = [
            (self.kernel_.predict(x_selected), np.full(len(x_selected), self.kernel_.sd)),
            self.gaussian_.predict_mean(x_selected, a),
            aipw_estimate(self.raw_features_, a, x_selected, self.question_sd_, w),
        ]
        # The parts' errors are strongly correlated: averaging hardly shrinks them.
        return np.mean([m for m, _ in parts], axis=0), np.max([sd for _, sd in parts], axis=0)

    def _predict(self, x_selected: np.ndarray):
        inside = self._inside(x_selected)[0]
        mean, sd = self._ensemble(x_selected)  # x is checked already
        if self.beyond_ == "design":
            design_mean, design_sd = self.design_estimate(x_selected)
            return np.where(inside, mean, design_mean), np.where(inside, sd, design_sd)
        # aipw refits a ridge per row: only for the rows beyond the sources.
        out = ~inside
        if out.any():
            mean[out], sd[out] = self._beyond(x_selected[out])
        return mean, sd


METHODS = (RandomSampling, StratifiedSampling, RandomSamplingLearn, AIPW, GaussianGreedy,
           GaussianDR, GuardedEnsemble)
