"""Covariance estimators: EM recovery, complete-data identities, pairwise, auto rule."""

import warnings

import numpy as np
import pytest

from benchsel import ConvergenceWarning, em_covariance, estimate_covariance, pairwise_covariance
from benchsel.gaussian._estep import EStepPlan, e_step


def true_cov(n, rng):
    a = rng.normal(size=(n, n))
    s = a @ a.T / n + 0.5 * np.eye(n)
    d = np.sqrt(np.diag(s))
    return s / np.outer(d, d)


def test_em_recovers_known_covariance_with_30_percent_missing():
    """Synthetic Gaussian, 30% missing completely at random: EM is within sampling error."""
    rng = np.random.default_rng(0)
    n, m = 8, 4000
    sigma = true_cov(n, rng)
    mu = rng.normal(size=n)
    x = rng.multivariate_normal(mu, sigma, size=m)
    missing = rng.random(x.shape) < 0.3
    x[missing] = np.nan
    est = em_covariance(x, floor=1e-6, tol=1e-8, max_iter=2000)
    assert est.converged
    # Entry standard error ~ sqrt(2/m_eff) with m_eff ~ 0.49 m for a pair: ~0.03.
    assert np.max(np.abs(est.covariance - sigma)) < 0.08
    assert np.max(np.abs(est.mean - mu)) < 0.06
    # Far better than the naive fill-with-mean covariance, which shrinks covariances by ~0.49.
    filled = np.where(np.isnan(x), np.nanmean(x, axis=0), x)
    naive = np.cov(filled, rowvar=False)
    off = ~np.eye(n, dtype=bool)
    assert np.abs(est.covariance - sigma)[off].mean() < 0.3 * np.abs(naive - sigma)[off].mean()


def test_em_log_likelihood_never_decreases():
    rng = np.random.default_rng(1)
    sigma = true_cov(6, rng)
    x = rng.multivariate_normal(np.zeros(6), sigma, size=300)
    x[rng.random(x.shape) < 0.4] = np.nan
    est = em_covariance(x, floor=1e-6, tol=1e-10, max_iter=500, accelerate=False)
    assert np.all(np.diff(est.log_likelihood) >= -1e-8 * np.abs(est.log_likelihood[1:]))
    assert est.n_iter == len(est.log_likelihood)


@pytest.mark.parametrize("shrink", [0.0, 0.02])
def test_accelerated_em_reaches_the_plain_em_fixed_point_in_fewer_steps(shrink):
    """SQUAREM changes the path, not the answer."""
    rng = np.random.default_rng(10)
    sigma = true_cov(12, rng)
    x = rng.multivariate_normal(np.zeros(12), sigma, size=300)
    # 30% missing: the likelihood has an interior maximum (at ~50% with 12
    # columns the MLE drifts to a singular covariance and neither converges).
    x[rng.random(x.shape) < 0.3] = np.nan
    opts = dict(floor=1e-6, tol=1e-10, max_iter=5000, correlation_shrinkage=shrink)
    plain = em_covariance(x, accelerate=False, **opts)
    fast = em_covariance(x, accelerate=True, **opts)
    assert plain.converged and fast.converged
    assert fast.n_iter < 0.6 * plain.n_iter
    np.testing.assert_allclose(fast.covariance, plain.covariance, atol=1e-7)
    np.testing.assert_allclose(fast.mean, plain.mean, atol=1e-7)
    if shrink == 0:  # the safeguard keeps the likelihood from falling
        assert np.all(np.diff(fast.log_likelihood) >= -1e-8 * np.abs(fast.log_likelihood[1:]))


def test_em_on_complete_data_is_the_sample_covariance():
    """No missing cells: EM's fixed point is the ML covariance (ddof=0) after one step."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(200, 7)) @ rng.normal(size=(7, 7))
    est = em_covariance(x, floor=1e-9, tol=1e-12, shrinkage=0.0, accelerate=False)
    np.testing.assert_allclose(est.covariance, np.cov(x, rowvar=False, ddof=0), rtol=1e-10)
    np.testing.assert_allclose(est.mean, x.mean(axis=0), rtol=1e-12, atol=1e-12)
    assert est.n_iter <= 3


def test_pairwise_on_complete_data_is_the_sample_covariance():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(100, 5)) @ rng.normal(size=(5, 5))
    est = pairwise_covariance(x, floor=1e-9, shrinkage=0.0)
    np.testing.assert_allclose(est.covariance, np.cov(x, rowvar=False), rtol=1e-10)


def test_pairwise_is_eq16_then_psd_projection():
    """Eq. 16 computed cell by cell from co-observed rows, then eigenvalues clamped."""
    rng = np.random.default_rng(9)
    x = rng.normal(size=(7, 4))
    x[rng.random(x.shape) < 0.35] = np.nan
    x[0] = rng.normal(size=4)  # every column observed at least once
    mu = np.nanmean(x, axis=0)
    raw = np.zeros((4, 4))
    for a in range(4):
        for b in range(4):
            both = ~np.isnan(x[:, a]) & ~np.isnan(x[:, b])
            prod = ((x[both, a] - mu[a]) * (x[both, b] - mu[b])).sum()
            raw[a, b] = prod / max(both.sum() - 1, 1)
    w, v = np.linalg.eigh(raw)
    want = (v * np.maximum(w, 1e-3)) @ v.T
    est = pairwise_covariance(x, floor=1e-3, shrinkage=0.0)
    np.testing.assert_allclose(est.covariance, want, rtol=1e-9, atol=1e-12)
    assert np.linalg.eigvalsh(est.covariance).min() >= 1e-3 * (1 - 1e-9)


def test_em_e_step_matches_per_row_regression_formulas():
    """The vectorized E-step (both the observed-side and the precision-side paths) equals
    a per-row loop over eqs. 17-18 and the summed correction of eq. 20."""
    rng = np.random.default_rng(4)
    n, m = 9, 40
    sigma = true_cov(n, rng)
    mu = rng.normal(size=n)
    x = rng.multivariate_normal(mu, sigma, size=m)
    obs = rng.random(x.shape) < 0.6
    obs[0] = True  # one complete row
    obs[1, :7] = True  # a mostly observed row: solved through the precision
    obs[2] = False
    obs[2, 0] = True  # a nearly empty row
    x[~obs] = np.nan
    plan = EStepPlan.build(obs)
    sides = {b.side for b in plan.buckets}
    assert sides == {"o", "m"} and plan.complete_rows.size == 1
    completed, correction, loglik = e_step(plan, np.where(obs, x, 0.0), mu, sigma, 0.0)
    want = np.where(obs, x, 0.0)
    want_corr = np.zeros((n, n))
    want_ll = 0.0
    for i in range(m):
        o, mm = np.flatnonzero(obs[i]), np.flatnonzero(~obs[i])
        s_oo = sigma[np.ix_(o, o)]
        r = x[i, o] - mu[o]
        want_ll += -0.5 * (
            o.size * np.log(2 * np.pi) + np.linalg.slogdet(s_oo)[1] + r @ np.linalg.solve(s_oo, r)
        )
        if mm.size:
            reg = np.linalg.solve(s_oo, sigma[np.ix_(o, mm)])
            want[i, mm] = mu[mm] + r @ reg
            want_corr[np.ix_(mm, mm)] += sigma[np.ix_(mm, mm)] - sigma[np.ix_(mm, o)] @ reg
    np.testing.assert_allclose(completed, want, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(correction, want_corr, rtol=1e-9, atol=1e-9)
    assert loglik == pytest.approx(want_ll, rel=1e-10)


def test_shrinkage_rule_when_fewer_models_than_items():
    """alpha = (N - M)/N when M < N: trace kept, off-diagonals scaled by 1 - alpha."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(6, 10))
    est = pairwise_covariance(x, floor=1e-12)
    assert est.shrinkage == pytest.approx(0.4)
    raw = np.cov(x, rowvar=False)
    np.testing.assert_allclose(np.trace(est.covariance), np.trace(raw), rtol=1e-10)
    off = ~np.eye(10, dtype=bool)
    np.testing.assert_allclose(est.covariance[off], 0.6 * raw[off], rtol=1e-10, atol=1e-12)
    assert pairwise_covariance(rng.normal(size=(20, 10))).shrinkage == 0.0


def test_psd_floor_after_each_step():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(12, 20))
    x[rng.random(x.shape) < 0.5] = np.nan
    x[:, :] = np.where(np.isnan(x).all(axis=0), 0.0, x)  # keep every column observed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = em_covariance(x, floor=1e-3, max_iter=50)
    # Final shrinkage can only raise the smallest eigenvalue above the floor.
    assert np.linalg.eigvalsh(est.covariance).min() >= 1e-3 * (1 - 1e-9)


def test_em_warns_when_not_converged():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(30, 5))
    x[rng.random(x.shape) < 0.5] = np.nan
    with pytest.warns(ConvergenceWarning, match="did not converge in 2 iterations"):
        est = em_covariance(x, max_iter=2, tol=1e-12)
    assert not est.converged and est.n_iter == 2


def test_auto_rule():
    rng = np.random.default_rng(8)
    x = rng.normal(size=(30, 4))
    assert estimate_covariance(x, "auto").method == "pairwise"
    x[0, 0] = np.nan
    assert estimate_covariance(x, "auto").method == "em-shrink"
    assert estimate_covariance(x, "em").method == "em"


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: estimate_covariance(np.ones((5, 2)), "lw"), "covariance must be one of"),
        (lambda: em_covariance(np.ones(5)), "2-D"),
        (lambda: em_covariance(np.array([[1.0, np.inf], [0.0, 1.0]])), "infinite"),
        (lambda: em_covariance(np.array([[1.0, np.nan], [0.0, np.nan]])), "column 1"),
        (lambda: em_covariance(np.ones((4, 2)), max_iter=0), "max_iter"),
        (lambda: pairwise_covariance(np.ones((4, 2)), shrinkage=2.0), r"in \[0, 1\]"),
    ],
)
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()
