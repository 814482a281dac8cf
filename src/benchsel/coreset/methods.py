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
  mean; aipw), unless AIPW with question features that extrapolate (logit
  difficulty and principal loadings) puts the model outside the range of
  the source models' scores: then that consistent estimate is returned with
  its design-based standard error. Its standard error inside the range is
  the largest of the three parts' (the parts' errors are strongly
  correlated, so averaging does not shrink them much).
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import RidgeCV

from .. import names
from . import anchor, irt, learned, mrmr
from ._base import ALPHAS, RandomQuestions, fpc, successive_difference_sd
from .gaussian import LowRankGaussian
from .refit import kernel_ridge_loo, make_refit, paper_alphas

__all__ = ["METHODS", "DEFAULT_METHOD", "PAPER_REFITS", "make_method", "method_names"]

class RandomSampling(RandomQuestions):
    name = "random-sampling"

    def predict(self, x_selected: np.ndarray):
        n = x_selected.shape[1]
        sd = self._sample_sd(x_selected) / np.sqrt(n) * fpc(n, self.n_questions)
        mean = x_selected.mean(axis=1)
        return mean, self._design_sd(mean, sd)


class StratifiedSampling(RandomQuestions):
    """The guarded ensemble's questions, estimated by their design-weighted mean.

    The honest baseline of the default: what a user gets by averaging the
    answers the default asked for (weighted by stratum size, which is 1/n up
    to rounding).
    """

    name = "stratified-sampling"
    draw = "stratified"

    def predict(self, x_selected: np.ndarray):
        # Columns follow selected_ (question order); the estimator needs stratum order.
        x = x_selected[:, np.argsort(self.strata_)]
        w = self.weights_[np.argsort(self.strata_)]
        mean = x @ w
        sd = successive_difference_sd(x, w, self.question_sd_)
        return mean, self._design_sd(mean, sd)


class RandomSamplingLearn(RandomQuestions):
    name = "random-sampling-learn"

    def _fit(self, source: np.ndarray) -> None:
        self.model_ = RidgeCV(alphas=ALPHAS, store_cv_results=True)
        target = source.mean(axis=1)
        self.model_.fit(source[:, self.selected_], target)
        loo = self.model_.cv_results_[:, list(ALPHAS).index(self.model_.alpha_)]
        self.sd_ = float(np.sqrt(np.mean(loo)))

    def predict(self, x_selected: np.ndarray):
        mean = self.model_.predict(x_selected)
        return mean, np.full(mean.shape, self.sd_)


def aipw_estimate(features: np.ndarray, selected: np.ndarray, rows: np.ndarray,
                  fallback_sd: float, weights: np.ndarray | None = None):
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
        ridge = RidgeCV(alphas=ALPHAS, store_cv_results=True)
        ridge.fit(features[selected], row)
        pred = ridge.predict(features)
        means.append(pred.mean() + (row - pred[selected]) @ w)
        loo_sq = ridge.cv_results_[:, list(ALPHAS).index(ridge.alpha_)]
        sds.append(np.sqrt(loo_sq.mean() * n / (n - 1)) / np.sqrt(n) * fpc(n, total))
    return np.array(means), np.array(sds)


def lowrank_question_features(source: np.ndarray, rank: int = 5) -> np.ndarray:
    """Question features for AIPW that extrapolate: logit difficulty and top loadings.

    The raw source scores (the paper's features) give the ridge one weight per
    source model; a target stronger than every source then leans on the
    strongest few. The logit of each question's source mean plus its top
    ``rank`` principal loadings (scaled by their singular values) describe
    the question instead of the models, which carries over to a stronger
    model better (measured: extrapolation EGR -15.6% vs -13.1%).
    """
    centred = source - source.mean(axis=0)
    _, sv, vt = np.linalg.svd(centred, full_matrices=False)
    rank = min(rank, len(sv))
    p = np.clip(source.mean(axis=0), 0.01, 0.99) if source.min() >= 0 and source.max() <= 1 \
        else None
    first = np.log(p / (1 - p)) if p is not None else source.mean(axis=0)
    return np.column_stack([first, vt[:rank].T * sv[:rank]])


class AIPW(RandomQuestions):
    name = "aipw"

    def _fit(self, source: np.ndarray) -> None:
        self.features_ = source.T  # one row per question: the source models' scores

    def predict(self, x_selected: np.ndarray):
        mean, sd = aipw_estimate(self.features_, self.selected_, x_selected, self.question_sd_)
        return mean, self._design_sd(mean, sd)


class GaussianGreedy:
    name = "gaussian-greedy"

    def fit(self, source: np.ndarray, n: int, rng) -> GaussianGreedy:
        self.model_ = LowRankGaussian().fit(source)
        self.selected_ = self.model_.select(n)
        return self

    def predict(self, x_selected: np.ndarray):
        return self.model_.predict_mean(x_selected, self.selected_)


class GaussianDR(RandomQuestions):
    name = "gaussian-dr"

    def _fit(self, source: np.ndarray) -> None:
        self.model_ = LowRankGaussian().fit(source)

    def predict(self, x_selected: np.ndarray):
        m, a, total = self.model_, self.selected_, self.n_questions
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


class GuardedEnsemble(RandomQuestions):
    """Model-based prediction where the sources support it, design-based beyond them.

    Its questions are drawn one per difficulty stratum (see
    :class:`~benchsel.coreset._base.RandomQuestions`), which lowers the
    variance of the design-based estimate without giving up its consistency.
    """

    name = "guarded-ensemble"
    draw = "stratified"

    def _fit(self, source: np.ndarray) -> None:
        self.kernel_ = kernel_ridge_loo(source[:, self.selected_], source.mean(axis=1),
                                        paper_alphas(source))
        self.gaussian_ = LowRankGaussian().fit(source)
        self.raw_features_ = source.T
        self.features_ = lowrank_question_features(source)
        means = source.mean(axis=1)
        self.range_ = (means.min(), means.max())

    def predict(self, x_selected: np.ndarray):
        a, w = self.selected_, self.weights_
        parts = [
            (self.kernel_.predict(x_selected), np.full(len(x_selected), self.kernel_.sd)),
            self.gaussian_.predict_mean(x_selected, a),
            aipw_estimate(self.raw_features_, a, x_selected, self.question_sd_, w),
        ]
        model_mean = np.mean([m for m, _ in parts], axis=0)
        model_sd = np.max([sd for _, sd in parts], axis=0)
        dr_mean, dr_sd = aipw_estimate(self.features_, a, x_selected, self.question_sd_, w)
        dr_sd = self._design_sd(dr_mean, dr_sd)
        # The learned parts regress toward the sources: a model whose consistent
        # estimate lies outside the sources' range would be pulled back into it.
        outside = (dr_mean < self.range_[0]) | (dr_mean > self.range_[1])
        # design_based_: rows whose estimate and error bar are the design's
        # (coreset.Calibrated calibrates them apart from the model-based ones).
        self.outside_ = self.design_based_ = outside
        return np.where(outside, dr_mean, model_mean), np.where(outside, dr_sd, model_sd)


METHODS = {
    cls.name: cls
    for cls in (
        RandomSampling, StratifiedSampling, RandomSamplingLearn, AIPW, GaussianGreedy,
        GaussianDR, GuardedEnsemble,
        *learned.METHODS, *anchor.METHODS, *irt.METHODS, *mrmr.METHODS,
    )
}
DEFAULT_METHOD = names.DEFAULT_CORESET_METHOD
REFIT_KINDS = ("++", "+")  # suffixes: any method's questions, (kernel) ridge predictor
PAPER_REFITS = names.PAPER_REFITS


def method_names(which: str = "all") -> list[str]:
    """``all``: every registered method and the papers' refits; ``default``: the default."""
    if which == "all":
        return [*METHODS, *PAPER_REFITS]
    if which == "default":
        return [DEFAULT_METHOD]
    raise ValueError(f"expected 'all' or 'default'; got {which!r}")


def make_method(name: str):
    """A fresh method by registry name.

    ``default`` is :data:`DEFAULT_METHOD`; a name ending in ``+`` or ``++``
    is that method's questions with a ridge or degree-2 polynomial kernel
    ridge predictor (Bowyer et al.'s refits), e.g. ``anchor-points-weighted++``.
    """
    if name == "default":
        name = DEFAULT_METHOD
    if name in METHODS:
        return METHODS[name]()
    for kind in REFIT_KINDS:
        base = name[: -len(kind)]
        if name.endswith(kind) and base in METHODS:
            return make_refit(METHODS[base](), kind)
    raise ValueError(
        f"unknown coreset method {name!r}; methods: default, {', '.join(METHODS)} "
        "(append + or ++ to any for a ridge or kernel ridge refit)"
    )
