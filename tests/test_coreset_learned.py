"""Learned question-level methods: fast paths against slow, obviously correct references."""

from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import Lasso, Ridge, RidgeCV

from benchsel.coreset._base import ALPHAS, kfold_ids
from benchsel.coreset.double_optimize import (
    DoubleOptimize,
    _double_optimize_runs,
    double_optimize,
    top_mask,
)
from benchsel.coreset.lasso import LassoCoreset
from benchsel.coreset.pca_impute import PCAImpute, pca_impute
from benchsel.coreset.random_search import (
    RandomSearchLearn,
    batched_ridge,
    coreset_cv_predictions,
    draw_coresets,
)

METHODS = (RandomSearchLearn, LassoCoreset, DoubleOptimize, PCAImpute)
QUESTIONS = Path(str(resources.files("benchsel.datasets").joinpath("data", "questions")))


def irt_scores(m=60, n=120, seed=0):
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=(m, 1))
    difficulty = rng.normal(size=(1, n))
    return (rng.random((m, n)) < 1 / (1 + np.exp(-1.5 * (ability - difficulty)))).astype(float)


def fast(cls, **params):
    """The method with settings small enough for unit tests, and ``params``."""
    small = {RandomSearchLearn: dict(n_search=200, n_pilot=20), DoubleOptimize: dict(steps=200)}
    return cls(**small.get(cls, {}), **params)


# ---------------------------------------------------------------- the method contract


@pytest.mark.parametrize("cls", METHODS, ids=lambda c: c.name)
def test_every_method_honours_the_contract(cls):
    x = irt_scores()
    method = fast(cls, n_questions=20, random_state=0).fit(x[:45])
    sel = method.selected_
    assert sel.shape == (20,) and len(set(sel.tolist())) == 20
    assert sel.min() >= 0 and sel.max() < 120 and np.issubdtype(sel.dtype, np.integer)
    mean, sd = method.predict(x[45:][:, sel])
    assert mean.shape == sd.shape == (15,)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(sd)) and np.all(sd > 0)
    # Learned methods should beat a constant guess on these 1-factor scores.
    truth = x[45:].mean(axis=1)
    assert np.abs(mean - truth).mean() < np.abs(x[:45].mean() - truth).mean()
    again = fast(cls, n_questions=20, random_state=0).fit(x[:45])
    np.testing.assert_array_equal(again.selected_, sel)
    np.testing.assert_allclose(again.predict(x[45:][:, sel])[0], mean)


@pytest.mark.parametrize("cls", METHODS, ids=lambda c: c.name)
def test_every_method_rejects_bad_input(cls):
    x = irt_scores(m=20, n=40)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="n_questions must be in"):
        fast(cls, n_questions=40, random_state=rng).fit(x)
    with pytest.raises(ValueError, match="2-D"):
        fast(cls, n_questions=5, random_state=rng).fit(x[0])
    bad = x.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="complete"):
        fast(cls, n_questions=5, random_state=rng).fit(bad)
    method = fast(cls, n_questions=5, random_state=rng).fit(x)
    with pytest.raises(ValueError, match=r"\(models, 5\)"):
        method.predict(x[:, :6])


@pytest.mark.parametrize(
    ("method", "message"),
    [
        (RandomSearchLearn(n_search=0), "n_search must be a positive integer"),
        (RandomSearchLearn(n_pilot=2.5), "n_pilot must be a positive integer"),
        (LassoCoreset(eps=2.0), r"eps must be in \(0, 1\); got 2.0"),
        (LassoCoreset(n_alphas=1), "n_alphas must be an integer >= 2; got 1"),
        (LassoCoreset(probes=-1), "probes must be >= 0; got -1"),
        (DoubleOptimize(steps=0), "steps must be a positive integer"),
        (DoubleOptimize(lr=-1.0), "lr must be > 0; got -1.0"),
        (PCAImpute(ranks=()), "ranks must be positive integers"),
        (PCAImpute(ranks=(0, 2)), "ranks must be positive integers"),
    ],
)
def test_bad_parameters_are_named(method, message):
    with pytest.raises(ValueError, match=message):
        method.set_params(n_questions=5, random_state=0).fit(irt_scores(m=20, n=40))


# ---------------------------------------------------------------- random search


@pytest.mark.parametrize(("m", "n"), [(30, 6), (7, 12)], ids=["primal", "dual"])
def test_batched_ridge_matches_sklearn_for_each_problem(m, n):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, m, n))
    for y in (rng.normal(size=m), rng.normal(size=(5, m))):
        coef, intercept = batched_ridge(x, y, 0.7)
        for b in range(5):
            ref = Ridge(alpha=0.7).fit(x[b], y if y.ndim == 1 else y[b])
            np.testing.assert_allclose(coef[b], ref.coef_, rtol=1e-8, atol=1e-10)
            assert intercept[b] == pytest.approx(ref.intercept_, rel=1e-8, abs=1e-10)


def test_batched_ridge_rejects_bad_input():
    with pytest.raises(ValueError, match="alpha must be > 0; got 0"):
        batched_ridge(np.ones((2, 3, 4)), np.ones(3), 0)
    with pytest.raises(ValueError, match=r"\(batch, models, features\)"):
        batched_ridge(np.ones((3, 4)), np.ones(3), 1.0)


def brute_cv_predictions(x, y, coreset, folds, alpha):
    pred = np.empty(len(x))
    for f in np.unique(folds):
        test = folds == f
        ridge = Ridge(alpha=alpha).fit(x[~test][:, coreset], y[~test])
        pred[test] = ridge.predict(x[test][:, coreset])
    return pred


def test_cv_predictions_match_sklearn_fold_by_fold():
    x = irt_scores(m=22, n=30, seed=3)
    y = x.mean(axis=1)
    rng = np.random.default_rng(0)
    folds = kfold_ids(22, rng)
    assert sorted(np.bincount(folds)) == [5, 5, 6, 6]
    coresets = draw_coresets(rng, 30, 8, 7)
    fast_pred = coreset_cv_predictions(x, y, coresets, folds, 0.3, chunk=3)  # several chunks
    for c, coreset in enumerate(coresets):
        np.testing.assert_allclose(fast_pred[c], brute_cv_predictions(x, y, coreset, folds, 0.3))


def test_draw_coresets_are_sorted_distinct_and_random():
    c = draw_coresets(np.random.default_rng(0), 10, 4, 50)
    assert c.shape == (50, 4)
    assert np.all(np.diff(c, axis=1) > 0) and c.min() >= 0 and c.max() < 10
    assert len({tuple(row) for row in c}) > 30


def test_random_search_keeps_the_best_candidate_by_brute_force():
    x = irt_scores(m=24, n=12, seed=4)
    y = x.mean(axis=1)
    method = RandomSearchLearn(n_search=40, n_pilot=5, n_questions=3, random_state=7).fit(x)
    folds = method.folds_
    # The search's penalty is the best mean CV error over the pilot candidates.
    pilot = [
        np.mean([np.abs(brute_cv_predictions(x, y, c, folds, a) - y).mean()
                 for c in method.candidates_[:5]])
        for a in ALPHAS
    ]
    assert method.alpha_search_ == ALPHAS[int(np.argmin(pilot))]
    brute = np.array([
        np.abs(brute_cv_predictions(x, y, c, folds, method.alpha_search_) - y).mean()
        for c in method.candidates_
    ])
    np.testing.assert_allclose(method.cv_mae_, brute)
    np.testing.assert_array_equal(method.selected_, method.candidates_[np.argmin(brute)])
    # ... and the final predictor is ridge with leave-one-out penalty on all sources.
    ref = RidgeCV(alphas=ALPHAS).fit(x[:, method.selected_], y)
    np.testing.assert_allclose(method.predict(x[:5, method.selected_])[0],
                               ref.predict(x[:5, method.selected_]))


# ---------------------------------------------------------------- lasso


def assert_lasso_optimal(x, y, coef, intercept, alpha, rtol):
    """The lasso's optimality (KKT) conditions for ``1/(2M) ||y - x w - b||^2 + alpha ||w||_1``,
    to ``rtol`` of ``alpha`` (coordinate descent stops at a tolerance): ``x_j^T r / M = alpha
    sign(w_j)`` where ``w_j != 0`` and ``|x_j^T r| / M <= alpha`` elsewhere, with the residuals
    summing to zero (the intercept)."""
    resid = y - x @ coef - intercept
    assert abs(resid.mean()) < 1e-8
    grad = x.T @ resid / len(x)
    on = coef != 0
    np.testing.assert_allclose(grad[on], alpha * np.sign(coef[on]), rtol=0, atol=rtol * alpha)
    assert np.all(np.abs(grad[~on]) <= alpha * (1 + rtol))


def test_lasso_coreset_is_the_support_of_a_lasso_with_n_weights():
    x = irt_scores(m=50, n=200, seed=5)
    method = LassoCoreset(n_questions=12, random_state=0).fit(x[:40])
    support = np.flatnonzero(method.coef_)
    assert len(support) == 12 and method.n_filled_ == 0
    np.testing.assert_array_equal(method.selected_, support)
    assert_lasso_optimal(x[:40], x[:40].mean(axis=1), method.coef_, method.intercept_,
                         method.alpha_, rtol=0.02)
    # The weights are those of an independent lasso at the chosen penalty ...
    ref = Lasso(alpha=method.alpha_, tol=1e-8, max_iter=100_000).fit(x[:40], x[:40].mean(axis=1))
    np.testing.assert_array_equal(np.flatnonzero(ref.coef_), support)
    np.testing.assert_allclose(method.coef_, ref.coef_, atol=1e-3)
    # ... and the prediction is that linear model, which needs only the coreset.
    mean, _ = method.predict(x[40:][:, method.selected_])
    np.testing.assert_allclose(mean, ref.predict(x[40:]), atol=1e-3)
    np.testing.assert_allclose(mean, x[40:][:, support] @ method.coef_[support] + method.intercept_)


@pytest.mark.parametrize("name, trial", [("glue_mrpc", 1), ("helm_gsm8k", 5),
                                         ("helm_openbookqa", 0)])
def test_lasso_reaches_exactly_n_on_real_binary_scores(name, trial):
    """0/1 answers with many near-identical questions: bisection with warm starts stopped
    at 44 and 34 non-zero weights on the first two splits, closing in on a jump past 50;
    on the third, a cold fit has more than 50 where the warm walk had fewer."""
    from benchsel.evaluation.questions import model_split

    values = np.load(QUESTIONS / f"{name}.npz")["scores"]
    src, _ = model_split(values, "interpolation", np.random.default_rng([0, trial]))
    x = values[src]
    method = LassoCoreset(n_questions=50, random_state=0).fit(x)
    assert np.count_nonzero(method.coef_) == 50 and method.n_filled_ == 0
    assert_lasso_optimal(x, x.mean(axis=1), method.coef_, method.intercept_, method.alpha_,
                         rtol=0.05)


def test_lasso_fills_a_short_support_with_the_next_to_enter():
    # A penalty grid stopping at alpha_max / 20 cannot reach 30 non-zero weights on 10
    # models (with eps=1e-3 some scikit-learn versions' coordinate descent does).
    x = irt_scores(m=10, n=80, seed=6)
    method = LassoCoreset(eps=0.05, n_questions=30, random_state=0).fit(x)
    support = np.flatnonzero(method.coef_)
    assert len(support) < 30 and method.n_filled_ == 30 - len(support)
    assert len(set(method.selected_.tolist())) == 30
    np.testing.assert_array_equal(method.selected_[: len(support)], support)
    filled = method.selected_[len(support):]
    assert np.all(method.weights_[len(support):] == 0)
    resid = x.mean(axis=1) - x @ method.coef_ - method.intercept_
    score = np.abs((x - x.mean(axis=0)).T @ resid)
    inactive = np.setdiff1d(np.arange(80), support)
    want = inactive[np.argsort(-score[inactive], kind="stable")[: len(filled)]]
    np.testing.assert_array_equal(filled, np.sort(want))


# ---------------------------------------------------------------- double optimize


def test_top_mask_has_exactly_n_ones_at_the_largest_entries():
    pi = np.random.default_rng(0).normal(size=(3, 50))
    mask = top_mask(pi, 7)
    assert np.all(mask.sum(axis=1) == 7) and set(np.unique(mask)) == {0.0, 1.0}
    for row, m in zip(pi, mask):
        assert row[m == 1].min() > row[m == 0].max()
    assert top_mask(np.zeros(10), 4).sum() == 4  # ties still give exactly n
    for bad in (0, 11):
        with pytest.raises(ValueError, match="1 <= n <= 10"):
            top_mask(np.zeros(10), bad)


def test_double_optimize_finds_a_planted_sparse_predictor():
    """Weights of one sign, like the mean's: the straight-through gradient then pulls
    the planted questions into the mask (a question whose weight has the other sign
    than theta's start is pushed out, by the same gradient)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(80, 40))
    y = x[:, [3, 11, 17, 25]] @ np.array([0.5, 0.3, 0.4, 0.2])
    selected, theta = double_optimize(x, y, 4, np.random.default_rng(1), steps=2000, lr=0.01)
    np.testing.assert_array_equal(selected, [3, 11, 17, 25])
    np.testing.assert_allclose(theta, [0.5, 0.3, 0.4, 0.2], atol=0.02)


def test_batched_double_optimize_runs_are_independent_runs():
    x = irt_scores(m=30, n=60, seed=8)
    y = x.mean(axis=1)
    train = np.ones((2, 30), bool)
    train[1, :8] = False
    sel, theta = _double_optimize_runs(x, y, 6, np.random.default_rng(3), train, steps=60,
                                       lr=0.001)
    rng = np.random.default_rng(3)
    s0, t0 = double_optimize(x, y, 6, rng, steps=60, lr=0.001, holdout=0)
    np.testing.assert_array_equal(sel[0], s0)
    np.testing.assert_allclose(theta[0], t0, rtol=1e-4)
    # The second run drew its start after the first's: replay that on the 22 rows.
    s1, t1 = double_optimize(x[8:], y[8:], 6, rng, steps=60, lr=0.001, holdout=0)
    np.testing.assert_array_equal(sel[1], s1)
    np.testing.assert_allclose(theta[1], t1, rtol=1e-4)


def eq19_by_hand(x, y, n, rng, steps, lr, held=None):
    """Paper 002, eqs. 18-19 written out: the loss ``mean_f ((x_f * mask)^T theta - y_f)^2``
    over the fitted rows, its gradients from one forward pass (straight-through for the
    mask), and Adam with PyTorch's defaults on ``pi`` and ``theta``. With ``held`` rows,
    the step whose mask and weights have the lowest squared error on them is returned."""
    fit = np.ones(len(x), bool) if held is None else ~held
    xf, yf, m = x[fit], y[fit], fit.sum()
    total = x.shape[1]
    pi, theta = rng.normal(scale=lr, size=total), np.full(total, 1.0 / n)
    moments = {"pi": [np.zeros(total), np.zeros(total)],
               "theta": [np.zeros(total), np.zeros(total)]}

    def adam(name, param, grad, t):
        first, second = moments[name]
        first[:] = 0.9 * first + 0.1 * grad
        second[:] = 0.999 * second + 0.001 * grad**2
        return param - lr * (first / (1 - 0.9**t)) / (np.sqrt(second / (1 - 0.999**t)) + 1e-8)

    history = []
    for t in range(1, steps + 1):
        mask = top_mask(pi, n)
        if held is not None:
            error = np.mean(((x[held] * mask) @ theta - y[held]) ** 2)
            history.append((error, np.flatnonzero(mask), theta[mask == 1]))
        residual = (xf * mask) @ theta - yf  # no intercept (eq. 18)
        d_theta = 2.0 / m * (xf * mask).T @ residual
        d_mask = 2.0 / m * (xf.T @ residual) * theta
        theta, pi = adam("theta", theta, d_theta, t), adam("pi", pi, d_mask, t)
    if held is not None:
        _, selected, weights = min(history, key=lambda h: h[0])
        return selected, weights
    selected = np.sort(np.flatnonzero(top_mask(pi, n)))
    return selected, theta[selected]


def test_double_optimize_is_eq_19_with_no_intercept():
    x = irt_scores(m=40, n=30, seed=2)
    y = x.mean(axis=1)
    # Ten steps, over which the mask changes several times; longer runs part ways at
    # near-ties of pi, as the backward product is taken in single precision.
    selected, theta = double_optimize(x, y, 5, np.random.default_rng(4), steps=10, lr=0.01,
                                      holdout=0)
    want_selected, want_theta = eq19_by_hand(x, y, 5, np.random.default_rng(4), 10, 0.01)
    np.testing.assert_array_equal(selected, want_selected)
    np.testing.assert_allclose(theta, want_theta, rtol=1e-4, atol=1e-6)
    method = DoubleOptimize(steps=40, lr=0.01, n_questions=5, random_state=0).fit(x)
    mean, _ = method.predict(np.zeros((1, 5)))
    assert mean[0] == 0.0  # no intercept: a model that answers nothing right scores 0


def test_double_optimize_stops_at_the_step_best_on_held_out_rows():
    x = irt_scores(m=40, n=30, seed=3)
    y = x.mean(axis=1)
    held = np.zeros(40, bool)
    held[::5] = True
    selected, theta = _double_optimize_runs(x, y, 5, np.random.default_rng(6), ~held[None],
                                            steps=12, lr=0.01, validation=held[None])
    want_selected, want_theta = eq19_by_hand(x, y, 5, np.random.default_rng(6), 12, 0.01,
                                             held=held)
    np.testing.assert_array_equal(selected[0], want_selected)
    np.testing.assert_allclose(theta[0], want_theta, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------- PCA imputation


def naive_pca_impute(source, target_observed, observed, rank, iterations):
    """Paper 002's Algorithm 1 on the full stacked matrix, by SVD."""
    z = np.vstack([source, np.full((len(target_observed), source.shape[1]), np.nan)])
    z[len(source):, observed] = target_observed
    missing = np.isnan(z)
    z[missing] = np.take(np.nanmean(z, axis=0), np.nonzero(missing)[1])
    for _ in range(iterations):
        mean = z.mean(axis=0)
        u, s, vt = np.linalg.svd(z - mean, full_matrices=False)
        recon = mean + (u[:, :rank] * s[:rank]) @ vt[:rank]
        z[missing] = recon[missing]
    return z[len(source):]


def test_pca_impute_matches_algorithm_1_on_the_full_matrix():
    x = irt_scores(m=36, n=70, seed=9)
    observed = np.sort(np.random.default_rng(0).choice(70, 15, replace=False))
    for rank, iterations in ((2, 1), (3, 7), (5, 25)):
        got = pca_impute(x[:30], x[30:, observed], observed, rank, max_iter=iterations, tol=0)
        want = naive_pca_impute(x[:30], x[30:, observed], observed, rank, iterations)
        np.testing.assert_allclose(got, want, atol=1e-9)


def test_pca_impute_recovers_an_exactly_low_rank_matrix():
    rng = np.random.default_rng(2)
    z = rng.normal(size=(1, 80)) + rng.normal(size=(40, 3)) @ rng.normal(size=(3, 80))
    observed = np.sort(rng.choice(80, 12, replace=False))
    got = pca_impute(z[:34], z[34:, observed], observed, 3, max_iter=5000, tol=1e-13)
    np.testing.assert_allclose(got, z[34:], atol=1e-6)
    with pytest.raises(ValueError, match=r"rank must be in \[1, 39\]; got 40"):
        pca_impute(z[:34], z[34:, observed], observed, 40)
    with pytest.raises(ValueError, match=r"observed must be distinct question indices"):
        pca_impute(z[:34], z[34:, :2], np.array([3, 3]), 2)
    with pytest.raises(ValueError, match=r"target_observed must be \(models x 12\)"):
        pca_impute(z[:34], z[34:, :5], observed, 2)


def test_pca_method_predicts_the_mean_of_observed_and_imputed_scores():
    x = irt_scores(m=50, n=90, seed=10)
    method = PCAImpute(n_questions=15, random_state=0).fit(x[:40])
    assert method.rank_ in (2, 5, 10, 20) and set(method.cv_mae_) == {2, 5, 10, 20}
    assert method.cv_mae_[method.rank_] == min(method.cv_mae_.values())
    sel = method.selected_
    mean, _ = method.predict(x[40:, sel])
    full = pca_impute(x[:40], x[40:, sel], sel, method.rank_, max_iter=method.max_iter,
                      tol=method.tol)
    np.testing.assert_allclose(mean, full.mean(axis=1))
