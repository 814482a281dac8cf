"""The factor model for wide boards: its Woodbury algebra against the dense matrix, its
EM against the textbook, its greedy selection against the dense objectives."""

import warnings

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from benchsel import GaussianModel, ScoreMatrix
from benchsel._lowrank import FactorCovariance
from benchsel._memory import BUDGET_ENV, MemoryBudgetError
from benchsel.gaussian.factor import (
    _e_step,
    _fit,
    choose_rank,
    factor_covariance,
    held_out_log_density,
)
from benchsel.selection.greedy import entropy_certificate, mi_oracle_gap, run_greedy


def _factors(n=40, r=3, seed=0) -> FactorCovariance:
    rng = np.random.default_rng(seed)
    return FactorCovariance(rng.standard_normal((n, r)), rng.uniform(0.1, 1.0, n))


def _board(m, n, r, missing, seed=0, noise=0.2):
    """Scores of ``m`` models on ``n`` items from ``r`` factors holding 1 - noise of each
    item's variance, a share ``missing`` of cells hidden; and the true covariance."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((n, r))
    w *= np.sqrt((1 - noise) / (w**2).sum(axis=1))[:, None]
    x = rng.standard_normal((m, r)) @ w.T + np.sqrt(noise) * rng.standard_normal((m, n))
    x[rng.random((m, n)) < missing] = np.nan
    return x, w @ w.T + noise * np.eye(n)


def test_the_factor_algebra_is_the_dense_matrixs():
    fc = _factors()
    dense = fc.dense()
    np.testing.assert_allclose(dense, dense.T)
    np.testing.assert_allclose(fc.diagonal(), np.diag(dense))
    np.testing.assert_allclose(fc.inverse_diagonal(), np.diag(np.linalg.inv(dense)))
    some = [3, 9, 11, 30]
    np.testing.assert_allclose(fc.inverse_diagonal(some),
                               np.diag(np.linalg.inv(dense[np.ix_(some, some)])))
    # Conditioning through the factors is the textbook conditional of the dense matrix.
    from benchsel.gaussian.conditional import conditional_moments

    given, rest = [0, 5, 8], np.setdiff1d(np.arange(40), [0, 5, 8])
    x = np.random.default_rng(1).standard_normal((2, 3))
    rows = np.full((2, 40), np.nan)
    rows[:, given] = x
    mean, var = conditional_moments(rows, np.zeros(40), fc)
    gain = dense[np.ix_(rest, given)] @ np.linalg.inv(dense[np.ix_(given, given)])
    np.testing.assert_allclose(mean[:, rest], x @ gain.T)
    np.testing.assert_array_equal(mean[:, given], x)
    np.testing.assert_allclose(var[:, rest], np.tile(np.diag(
        dense[np.ix_(rest, rest)] - gain @ dense[np.ix_(given, rest)]), (2, 1)))
    assert np.all(var[:, given] == 0)


@pytest.mark.parametrize("objective", ["mi", "entropy"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_from_the_factors_picks_what_the_dense_objectives_pick(objective, seed):
    fc = _factors(seed=seed)
    dense = fc.dense()
    options = dict(objective=objective, include=[4], exclude=[0, 1])
    a, b = run_greedy(dense, 8, **options), run_greedy(fc, 8, **options)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_allclose(a.gains, b.gains, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.residual_variance, b.residual_variance, rtol=1e-9)
    costs = np.random.default_rng(seed).uniform(1, 3, 40)
    budgeted = dict(objective=objective, costs=costs, budget=7.0)
    a, b = run_greedy(dense, **budgeted), run_greedy(fc, **budgeted)
    np.testing.assert_array_equal(a.indices, b.indices)
    assert a.strategy == b.strategy


def test_certificates_work_from_the_factors():
    fc = _factors(n=12)
    dense = fc.dense()
    assert entropy_certificate(fc, [2, 5]) == pytest.approx(entropy_certificate(dense, [2, 5]))
    got, want = mi_oracle_gap(fc, [2, 5]), mi_oracle_gap(dense, [2, 5])
    assert got["oracle_best"] == want["oracle_best"]
    assert got["oracle_value"] == pytest.approx(want["oracle_value"])
    with pytest.raises(ValueError, match="positive noise"):
        run_greedy(FactorCovariance(fc.loadings, -fc.noise), 2)


@pytest.mark.parametrize("ridge", [0.0, 0.01])
def test_conditioning_through_the_factors_is_the_dense_conditional(ridge):
    from benchsel.gaussian.conditional import conditional_moments

    fc = _factors(n=30, seed=4)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 30))
    x[rng.random(x.shape) < 0.6] = np.nan
    x[0] = np.nan  # a row with nothing observed: the prior
    mean = rng.standard_normal(30)
    got = conditional_moments(x, mean, fc, ridge=ridge)
    want = conditional_moments(x, mean, fc.dense(), ridge=ridge)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    noise = np.where(np.isnan(x), 0.0, 0.05)  # noisy cells go through the dense matrix
    got = conditional_moments(x, mean, fc, noise=noise)
    want = conditional_moments(x, mean, fc.dense(), noise=noise)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_the_e_step_is_the_textbook_posterior_and_likelihood():
    """Per model, with the dense covariance of its observed items: E[f | x_O] =
    W_O^T inv(Sigma_O) (x_O - mu_O), Cov = I - W_O^T inv(Sigma_O) W_O, and the
    log-likelihood is the sum of each row's normal log density."""
    x, _ = _board(15, 10, 2, 0.4, seed=3)
    obs = ~np.isnan(x)
    rng = np.random.default_rng(4)
    mu, w, psi = rng.standard_normal(10), rng.standard_normal((10, 2)), rng.uniform(.2, 1, 10)
    f, ff, loglik = _e_step(x, obs, mu, w, psi)
    want = 0.0
    for i in range(15):
        o = obs[i]
        sigma = w[o] @ w[o].T + np.diag(psi[o])
        gain = np.linalg.solve(sigma, w[o]).T
        np.testing.assert_allclose(f[i], gain @ (x[i, o] - mu[o]), atol=1e-12)
        cov = np.eye(2) - gain @ w[o]
        np.testing.assert_allclose(ff[i], cov + np.outer(f[i], f[i]), atol=1e-12)
        want += multivariate_normal(mu[o], sigma).logpdf(x[i, o])
    assert loglik == pytest.approx(want, rel=1e-10)


def test_the_covariance_change_is_the_dense_matrices_relative_difference():
    from benchsel.gaussian.factor import _covariance_change

    a, b = _factors(seed=1), _factors(seed=2)
    old, new = (a.loadings, a.noise), (a.loadings + 0.01 * b.loadings, 1.01 * a.noise)
    dense = np.linalg.norm(FactorCovariance(*new).dense() - a.dense()) / np.linalg.norm(a.dense())
    assert _covariance_change(old, new) == pytest.approx(dense, rel=1e-8)
    assert _covariance_change(old, old) == 0.0


def test_em_never_lowers_the_likelihood_and_recovers_a_planted_model():
    x, truth = _board(300, 120, 3, 0.5, seed=5)
    obs = ~np.isnan(x)
    *_, trace, converged, _ = _fit(x, obs, 3, 500, 1e-7, 1e-3, 0)
    assert converged and np.all(np.diff(trace) >= -1e-8 * np.abs(trace[1:]))
    est = factor_covariance(x)
    assert est.rank == 3 and max(est.rank_scores, key=est.rank_scores.get)[0] == 3
    error = np.linalg.norm(est.covariance - truth) / np.linalg.norm(truth)
    from benchsel.gaussian.covariance import pairwise_covariance

    pairwise = pairwise_covariance(x, shrinkage=0.0).covariance
    # 3 x 120 loadings and 120 noises against 7,260 free entries, 150 models on each:
    # relative errors 0.17 and 0.25 (seed 5).
    assert error < 0.8 * np.linalg.norm(pairwise - truth) / np.linalg.norm(truth)


def test_the_rank_is_the_one_that_predicts_hidden_cells_best():
    x, _ = _board(200, 60, 2, 0.3, seed=6)
    rank, prior, scores = choose_rank(x, ranks=(1, 2, 3, 4, 5, 6), priors=(1.0, 5.0))
    assert rank == 2 and scores[2, prior] == max(scores.values())
    # Ranks scanned with the first prior, the second tried at the best rank only.
    assert {(1, 1.0), (2, 1.0), (3, 1.0), (2, 5.0)} <= set(scores)
    assert {r for r, p in scores if p == 5.0} == {2}
    # The score is the mean log density of the hidden cells, by hand for one fit.
    hidden = ~np.isnan(x) & (np.random.default_rng(0).random(x.shape) < 0.1)
    train = np.where(hidden, np.nan, x)
    mu, w, psi, *_ = _fit(train, ~np.isnan(train), 2, 200, 1e-6, 1e-3, 0)
    sigma = w @ w.T + np.diag(psi)
    dens = []
    for i, j in zip(*np.nonzero(hidden)):
        o = ~np.isnan(train[i])
        gain = np.linalg.solve(sigma[np.ix_(o, o)], sigma[o, j])
        m = mu[j] + gain @ (train[i, o] - mu[o])
        v = sigma[j, j] - gain @ sigma[o, j]
        dens.append(-0.5 * (np.log(2 * np.pi * v) + (x[i, j] - m) ** 2 / v))
    assert held_out_log_density(x, hidden, mu, w, psi) == pytest.approx(np.mean(dens))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 3])
def test_the_prior_keeps_an_item_few_models_have_from_claiming_no_noise(seed):
    """By maximum likelihood, columns that 6 of 200 models have are explained by the
    factors almost entirely (a Heywood case: noise at the floor); the prior, chosen on
    held-out cells, keeps their noise at least ten times that."""
    x, _ = _board(200, 40, 2, 0.2, seed=seed)
    x[6:, :3] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain, shrunk = factor_covariance(x, prior=0.0), factor_covariance(x)
    assert plain.factors.noise[:3].min() < 0.01
    assert shrunk.prior > 0 and shrunk.rank == 2
    assert shrunk.factors.noise[:3].min() > 10 * plain.factors.noise[:3].min()
    with pytest.raises(ValueError, match="prior must be a non-negative number"):
        factor_covariance(x, prior=-1.0)


@pytest.mark.slow
def test_a_model_on_the_factors_selects_without_forming_the_dense_matrix(monkeypatch):
    """4 models x 25,000 benchmarks, complete: the sample covariance is singular (and
    its dense matrix, 4.7 GiB, over a 200 MiB budget), so the default model is the
    factor model, which fits and selects; asking for the dense matrix is refused by
    name, and the default predictor leaves out the methods that would need N x N
    arrays, saying so. (It was refused before, and after the pairwise covariance was
    replaced, ridge's correlations took 24 GB.)"""
    x, _ = _board(4, 25_000, 2, 0.0, seed=7)
    scores = ScoreMatrix(x, [f"m{i}" for i in range(4)], [f"b{j}" for j in range(25_000)])
    monkeypatch.setenv(BUDGET_ENV, "200M")
    model = GaussianModel().fit(scores)
    assert model.estimate_.method == "factor"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        selection = model.select(k=3)  # (each benchmark has only 4 models: a warning)
    assert len(selection.items) == 3 and selection.covariance == "factor"
    assert np.all(np.diff(selection.residual_variance) < 0)
    assert "covariance" not in vars(model.estimate_)  # never formed
    with pytest.raises(MemoryBudgetError, match=r"factor model's covariance \(25000 x 25000\)"):
        _ = model.estimate_.covariance
    # The Gaussian conditional predicts from the factors too (calibrated on its splits).
    given = {name: float(x[0, j]) + 0.1 for j, name in enumerate(selection.items)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pred = model.predict(given, method="gaussian")
    assert np.isfinite(pred.mean).all() and np.isfinite(pred.std).all()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        default = model.predict(given)
    assert np.isfinite(default.mean).all() and np.isfinite(default.std).all()
    left_out = [str(w.message) for w in caught if "auto leaves" in str(w.message)]
    assert any(m.startswith("auto leaves ridge out: ridge's correlations of 25000") for m in
               left_out), left_out
    assert default.choices[0]["method"] not in ("ridge", "svd+ridge")
    assert "covariance" not in vars(model.estimate_)


def test_a_complete_board_over_the_budget_for_pairwise_warns_and_fits_the_factor_model(
        monkeypatch):
    # More models than items (the pairwise rule), but its N x N arrays over the budget.
    from benchsel import DataWarning

    x, _ = _board(60, 50, 2, 0.0, seed=9)
    scores = ScoreMatrix(x, [f"m{i}" for i in range(60)], [f"b{j}" for j in range(50)])
    monkeypatch.setenv(BUDGET_ENV, "60K")  # 40 N^2 = 98 KiB
    with pytest.warns(DataWarning, match="pairwise covariance of these 50 items"):
        model = GaussianModel().fit(scores)
    assert model.estimate_.method == "factor"


def test_the_factor_model_predicts_as_the_dense_gaussian_of_its_covariance():
    x, _ = _board(150, 40, 2, 0.3, seed=8)
    scores = ScoreMatrix(50 + 10 * x, [f"m{i}" for i in range(150)],
                         [f"b{j}" for j in range(40)])
    model = GaussianModel(covariance="factor", calibration="none").fit(scores)
    est = model.estimate_
    assert est.method == "factor" and est.rank == 2
    pred = model.predict({"b0": 60.0, "b3": 45.0}, method="gaussian")
    z = np.full(40, np.nan)
    z[[0, 3]] = (np.array([60.0, 45.0]) - model.standardizer_.mean[[0, 3]]) \
        / model.standardizer_.scale[[0, 3]]
    # By hand, with the dense covariance the factors make.
    sigma, o, m = est.covariance, [0, 3], [1, 2]
    gain = sigma[np.ix_(m, o)] @ np.linalg.inv(sigma[np.ix_(o, o)])
    mean = est.mean[m] + gain @ (z[o] - est.mean[o])
    var = np.diag(sigma[np.ix_(m, m)] - gain @ sigma[np.ix_(o, m)])
    scale, centre = model.standardizer_.scale[m], model.standardizer_.mean[m]
    np.testing.assert_allclose(pred.mean[0][m], mean * scale + centre, rtol=1e-8)
    np.testing.assert_allclose(pred.std[0][m], np.sqrt(var) * scale, rtol=1e-6)


def test_a_fit_store_keeps_a_factor_fit_as_its_factors_and_checks_them():
    from benchsel.prediction.fits import FitStore

    x, _ = _board(120, 30, 2, 0.4, seed=9)
    source = 50 + 10 * x
    store = FitStore()
    fit = store.get(source, "factor")
    assert isinstance(fit.covariance, FactorCovariance)
    assert set(fit.arrays()) >= {"loadings", "noise"} and "covariance" not in fit.arrays()
    rows = np.where(np.random.default_rng(1).random((3, 30)) < 0.5, source[:3], np.nan)
    read = FitStore.loads(store.dumps(), "fits.npz", n_items=30)
    again = read.get(source, "factor")
    assert again is not fit
    got, want = again.conditional(rows), fit.conditional(rows)
    np.testing.assert_array_equal(got.mean, want.mean)
    np.testing.assert_array_equal(got.std, want.std)
    data = store.dumps()
    import io

    with np.load(io.BytesIO(data)) as f:
        arrays = dict(f)
    arrays["0.noise"] = -arrays["0.noise"]
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    with pytest.raises(ValueError, match=r"fits.npz: fit 0.noise: expected a positive"):
        FitStore.loads(buffer.getvalue(), "fits.npz", n_items=30)
