"""p-IRT / gp-IRT: the 2PL fit, ability estimates and predictions against slow references."""

import numpy as np
import pytest
from scipy.optimize import approx_fprime, minimize
from scipy.special import expit

from benchsel.coreset import irt
from benchsel.coreset.irt import (
    GPIRT,
    PIRT,
    estimate_ability,
    fit_irt,
    irt_anchor_points,
    irt_gradient,
    irt_objective,
    pirt_prediction,
)


def simulate(m=300, n=250, dim=1, seed=0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(m, dim))
    a = rng.lognormal(0.0, 0.3, size=(n, dim))
    b = rng.normal(size=n)
    p = expit(theta @ a.T - b)
    return (rng.random((m, n)) < p).astype(float), theta, a, b


def numeric_hessian(f, x, h=1e-4):
    """Central second differences of a scalar function."""
    steps = h * np.eye(len(x))
    return np.array([[(f(x + si + sj) - f(x + si - sj) - f(x - si + sj) + f(x - si - sj))
                      / (4 * h * h) for sj in steps] for si in steps])


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    m, n, d = 6, 8, 2
    y = rng.random((m, n))  # fractional targets are allowed
    theta, a, b = rng.normal(size=(m, d)), rng.normal(size=(n, d)), rng.normal(size=n)
    kw = dict(item_mean=[0.5, -0.2, 0.3], item_sd=[1.5, 0.7, 2.0], ability_sd=1.3)

    def f(flat):
        return irt_objective(y, flat[:m * d].reshape(m, d), flat[m * d:-n].reshape(n, d),
                             flat[-n:], **kw)

    flat = np.r_[theta.ravel(), a.ravel(), b]
    numeric = approx_fprime(flat, f, 1e-6)
    analytic = np.concatenate([g.ravel() for g in irt_gradient(y, theta, a, b, **kw)])
    np.testing.assert_allclose(analytic, numeric, rtol=1e-4, atol=1e-4)


def test_ability_estimate_is_the_map_and_its_covariance_the_inverse_hessian():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(30, 2)), rng.normal(size=30)
    y = (rng.random((3, 30)) < 0.6).astype(float)
    theta, cov = estimate_ability(y, a, b, prior_sd=1.5)

    def neg_log_post(t, row):
        z = a @ t - b
        return np.sum(np.logaddexp(0, z) - row * z) + 0.5 * t @ t / 1.5**2

    for r in range(3):
        ref = minimize(neg_log_post, np.zeros(2), args=(y[r],), method="BFGS", tol=1e-12).x
        np.testing.assert_allclose(theta[r], ref, atol=1e-5)
        hess = numeric_hessian(lambda t, row=y[r]: neg_log_post(t, row), theta[r])
        np.testing.assert_allclose(cov[r], np.linalg.inv(hess), rtol=1e-3, atol=1e-6)


def test_ability_estimate_recovers_abilities_from_many_known_questions():
    rng = np.random.default_rng(2)
    a, b = rng.lognormal(0, 0.3, size=(4000, 1)), rng.normal(size=4000)
    truth = np.linspace(-2, 2, 5)[:, None]
    y = (rng.random((5, 4000)) < expit(truth @ a.T - b)).astype(float)
    theta, cov = estimate_ability(y, a, b)
    np.testing.assert_allclose(theta, truth, atol=0.15)
    assert np.all(np.sqrt(cov[:, 0, 0]) < 0.05)
    # An all-correct answer sheet still has a finite estimate (the weak prior).
    top, _ = estimate_ability(np.ones((1, 50)), a[:50], b[:50])
    assert np.isfinite(top).all() and top[0, 0] > 3


def test_fit_recovers_simulated_2pl_parameters():
    y, theta, a, b = simulate()
    fit = fit_irt(y, dim=1)
    assert fit.converged
    assert np.corrcoef(fit.ability[:, 0], theta[:, 0])[0, 1] > 0.97
    assert np.corrcoef(fit.discrimination[:, 0], a[:, 0])[0, 1] > 0.75
    assert np.corrcoef(fit.difficulty, b)[0, 1] > 0.95
    # Abilities are standardized; the scale matches the simulation's N(0, 1).
    np.testing.assert_allclose(fit.ability.mean(), 0.0, atol=1e-10)
    np.testing.assert_allclose(fit.ability.std(), 1.0, atol=1e-8)
    assert abs(np.median(fit.discrimination / a) - 1.0) < 0.25
    assert np.abs(fit.probabilities() - expit(theta @ a.T - b)).mean() < 0.06


def test_fixed_prior_fit_stops_at_a_stationary_point_of_the_item_block():
    y, *_ = simulate(m=80, n=60, seed=3)
    fit = fit_irt(y, dim=1, hierarchical=False, tol=1e-12, max_iter=500)
    _, g_a, g_b = irt_gradient(y, fit.ability, fit.discrimination, fit.difficulty)
    assert np.abs(g_a).max() < 1e-4 and np.abs(g_b).max() < 1e-4
    np.testing.assert_allclose(fit.prior_mean, 0.0)
    np.testing.assert_allclose(fit.prior_sd, [2.0, 3.0])
    # The objective it reports is irt_objective's.
    assert fit.objective == pytest.approx(irt_objective(
        y, fit.ability, fit.discrimination, fit.difficulty))


def test_fit_handles_fractional_scores_and_refuses_out_of_range_ones():
    rng = np.random.default_rng(4)
    theta = rng.normal(size=(50, 1))
    y = expit(theta @ rng.lognormal(0, 0.3, (1, 80)) - rng.normal(size=80))
    fit = fit_irt(y, dim=1)
    assert np.corrcoef(fit.ability[:, 0], theta[:, 0])[0, 1] > 0.99
    with pytest.raises(ValueError, match=r"scores must lie in \[0, 1\]; got values in \[-0.5"):
        fit_irt(np.c_[y, np.full(50, -0.5)])
    with pytest.raises(ValueError, match="complete and finite"):
        fit_irt(np.where(y > 0.5, np.nan, y))
    with pytest.raises(ValueError, match="dim must be an integer >= 1; got 0"):
        fit_irt(y, dim=0)


def test_anchor_points_pick_distinct_questions_with_cluster_share_weights():
    y, *_ = simulate(m=60, n=120, seed=5)
    y = np.c_[y, y[:, :30]]  # 30 duplicated questions
    fit = fit_irt(y, dim=1)
    selected, weights = irt_anchor_points(fit, y, 20, np.random.default_rng(0))
    assert len(selected) == 20 and np.all(np.diff(selected) > 0)
    assert len(np.unique(y[:, selected].T, axis=0)) == 20
    assert weights.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(weights * y.shape[1], np.round(weights * y.shape[1]))
    distinct = len(np.unique(y.T, axis=0))
    message = f"distinct questions \\({distinct}\\); got {distinct + 1}"
    with pytest.raises(ValueError, match=message):
        irt_anchor_points(fit, y, distinct + 1, np.random.default_rng(0))


def test_empty_clusters_take_the_farthest_point():
    points = np.array([[0.0], [0.1], [5.0], [9.0]])
    labels, centres = irt._fill_empty_clusters(points, np.array([0, 0, 0, 0]),
                                                np.array([[0.0], [100.0]]), 2)
    np.testing.assert_array_equal(labels, [0, 0, 0, 1])
    np.testing.assert_allclose(centres[1], [9.0])


def test_pirt_prediction_is_eq_12_with_a_delta_method_sd():
    y, *_ = simulate(m=70, n=150, seed=6)
    method = PIRT(dim=2, n_questions=20, random_state=0).fit(y[:50])
    sel, x = method.selected_, y[50:][:, method.selected_]
    mean, sd = method.predict(x)
    theta, cov = estimate_ability(x, method.irt_.discrimination[sel],
                                  method.irt_.difficulty[sel], prior_sd=10.0)
    rest = np.setdiff1d(np.arange(150), sel)
    p_rest = method.irt_.probabilities(theta)[:, rest]
    np.testing.assert_allclose(mean, 130 / 150 * p_rest.mean(1) + 20 / 150 * x.mean(1))
    for r in range(3):
        def rest_mean(t):
            return method.irt_.probabilities(t)[0, rest].mean()
        g = approx_fprime(theta[r], rest_mean, 1e-6)
        var = g @ cov[r] @ g + (p_rest[r] * (1 - p_rest[r])).sum() / 130**2
        assert sd[r] == pytest.approx(130 / 150 * np.sqrt(var), rel=1e-4)
    np.testing.assert_allclose(pirt_prediction(method.irt_, sel, x)[0], mean)


def test_gpirt_mixes_eq_13_with_paper_001_lambda():
    y, *_ = simulate(m=70, n=150, seed=7)
    src, tgt = y[:50], y[50:]
    gp = GPIRT(dim=1, n_questions=20, random_state=0).fit(src)
    p = PIRT(dim=1, n_questions=20, random_state=0).fit(src)
    np.testing.assert_array_equal(gp.selected_, p.selected_)  # same coreset
    assert gp.variance_ == pytest.approx(src.var(axis=1).mean() / 80)
    assert gp.lambda_ == pytest.approx(gp.bias_**2 / (gp.bias_**2 + gp.variance_))
    assert 0 < gp.lambda_ < 1
    x = tgt[:, gp.selected_]
    mean, sd = gp.predict(x)
    pirt, pirt_sd = p.predict(x)
    weighted = x @ gp.weights_
    np.testing.assert_allclose(mean, gp.lambda_ * weighted + (1 - gp.lambda_) * pirt)
    var_w = (gp.weights_**2).sum() * weighted * (1 - weighted)
    np.testing.assert_allclose(sd, np.sqrt(gp.lambda_**2 * var_w + (1 - gp.lambda_) ** 2
                                           * (pirt_sd**2 + gp.bias_**2)))


@pytest.mark.parametrize("cls", irt.METHODS)
def test_methods_honour_the_contract_and_validate(cls):
    y, *_ = simulate(m=40, n=100, seed=8)
    method = cls(dim=1, n_questions=15, random_state=0).fit(y[:30])
    assert len(np.unique(method.selected_)) == 15
    mean, sd = method.predict(y[30:][:, method.selected_])
    assert mean.shape == sd.shape == (10,) and np.all((mean >= 0) & (mean <= 1))
    assert np.all(sd > 0)
    with pytest.raises(ValueError, match=r"scores must lie in \[0, 1\]"):
        method.predict(2 * y[30:][:, method.selected_])
    with pytest.raises(ValueError, match=r"x_selected must have shape \(models, 15\)"):
        method.predict(y[30:, :3])
    with pytest.raises(ValueError, match=r"n_questions must be in \[1, 99\]; got 100"):
        cls(dim=1, n_questions=100, random_state=0).fit(y[:30])
    with pytest.raises(ValueError, match=r"scores must lie in \[0, 1\]"):
        cls(dim=1, n_questions=5, random_state=0).fit(y[:30] + 1)


def test_gpirt_needs_four_source_models():
    y, *_ = simulate(m=10, n=40, seed=9)
    with pytest.raises(ValueError, match="at least 4 source models to choose lambda; got 3"):
        GPIRT(dim=1, n_questions=5, random_state=0).fit(y[:3])
