"""GaussianModel: conditioning formulas, interval coverage, selection and prediction API."""

import warnings

import numpy as np
import pytest
from scipy.stats import norm

from benchsel import (
    ConvergenceWarning,
    DataWarning,
    GaussianModel,
    ScoreMatrix,
    load_dataset,
    spectrum,
)
from benchsel.exceptions import NotFittedError
from benchsel.gaussian import conditional_moments


def synthetic_scores(m, n, rng, missing=0.0, scale=None):
    a = rng.normal(size=(n, 3))
    sigma = a @ a.T + 0.3 * np.eye(n)
    mu = rng.normal(50, 10, size=n)
    x = rng.multivariate_normal(mu, sigma, size=m)
    if scale is not None:
        x = x * scale
    if missing:
        x[rng.random(x.shape) < missing] = np.nan
    return ScoreMatrix(x, [f"m{i}" for i in range(m)], [f"b{j}" for j in range(n)]), mu, sigma


def test_conditional_moments_equal_regression_formulas():
    """Eqs. 6-7 for every row, computed with explicit solves, rows with different patterns."""
    rng = np.random.default_rng(0)
    n = 7
    a = rng.normal(size=(n, n))
    sigma = a @ a.T + np.eye(n)
    mean = rng.normal(size=n)
    x = rng.normal(size=(25, n))
    x[rng.random(x.shape) < 0.5] = np.nan
    x[3] = np.nan  # nothing observed: the prior
    mu, var = conditional_moments(x, mean, sigma, ridge=0.01)
    for i in range(x.shape[0]):
        o = np.flatnonzero(~np.isnan(x[i]))
        m = np.flatnonzero(np.isnan(x[i]))
        s_oo = sigma[np.ix_(o, o)] + 0.01 * np.eye(o.size)
        reg = np.linalg.solve(s_oo, sigma[np.ix_(o, m)]) if o.size else np.zeros((0, m.size))
        want_mu = mean[m] + (x[i, o] - mean[o]) @ reg
        want_cov = sigma[np.ix_(m, m)] - sigma[np.ix_(m, o)] @ reg
        np.testing.assert_allclose(mu[i, m], want_mu, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(var[i, m], np.diag(want_cov), rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(mu[i, o], x[i, o])
        np.testing.assert_array_equal(var[i, o], 0.0)


def test_intervals_cover_at_nominal_rate_on_gaussian_data():
    """90% intervals cover ~90% of held-out truths when the data are Gaussian.

    The test models are drawn from the fitted model itself, so its own
    conditional variance is exact; calibration (measured against the true
    distribution, parameter error included) may only widen it slightly.
    """
    rng = np.random.default_rng(1)
    train, _, sigma = synthetic_scores(3000, 10, rng)
    exact = GaussianModel(calibration="none").fit(train)
    calibrated = GaussianModel().fit(train)
    test = rng.multivariate_normal(exact.mean_, exact.covariance_, size=2000)
    given = test.copy()
    given[:, 3:] = np.nan  # observe 3 benchmarks
    new = ScoreMatrix(given, [f"t{i}" for i in range(2000)], train.items)
    for level in (0.5, 0.9):
        for model, tol in ((exact, 0.02), (calibrated, 0.035)):
            pred = model.predict(new, level=level, method="gaussian")
            inside = (test[:, 3:] >= pred.low[:, 3:]) & (test[:, 3:] <= pred.high[:, 3:])
            assert inside.mean() == pytest.approx(level, abs=tol)
        # The interval is mean +- z * std.
        np.testing.assert_allclose(
            pred.high - pred.mean, norm.ppf(0.5 + level / 2) * pred.std, rtol=1e-12
        )


def test_prediction_is_in_original_units_and_scale_equivariant():
    """Standardization is undone: scaling all scores by 100 scales predictions by 100."""
    rng = np.random.default_rng(2)
    scores, _, _ = synthetic_scores(200, 6, rng, missing=0.2)
    scaled = ScoreMatrix(scores.values * 100, scores.models, scores.items)
    obs = {"b0": 55.0, "b2": 48.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        p1 = GaussianModel().fit(scores).predict(obs, method="gaussian")
        p100 = GaussianModel().fit(scaled).predict({k: 100 * v for k, v in obs.items()},
                                                   method="gaussian")
    np.testing.assert_allclose(p100.mean, 100 * p1.mean, rtol=1e-6)
    np.testing.assert_allclose(p100.std, 100 * p1.std, rtol=1e-6)


def test_observed_cells_are_returned_unchanged_and_not_listed():
    data = load_dataset("helm_lite")
    model = GaussianModel().fit(data)
    first, second = data.items[0], data.items[3]
    pred = model.predict({first: 0.5, second: 0.6}, method="gaussian")
    names = [r["benchmark"] for r in pred.records()]
    assert first not in names and second not in names
    assert len(names) == data.n_items - 2
    j = pred.items.index(first)
    assert pred.mean[0, j] == 0.5 and pred.std[0, j] == 0.0
    for r in pred.records():
        assert r["low"] < r["mean"] < r["high"] and r["std"] > 0


def test_unknown_benchmark_lists_valid_names():
    model = GaussianModel().fit(load_dataset("helm_lite"))
    with pytest.raises(ValueError, match="unknown benchmark name.*'nope'.*valid names are"):
        model.predict({"nope": 1.0})


def test_predict_many_models_matches_one_at_a_time():
    rng = np.random.default_rng(3)
    scores, _, _ = synthetic_scores(150, 8, rng)
    model = GaussianModel().fit(scores)
    new_vals = rng.normal(50, 10, size=(5, 8))
    new_vals[rng.random(new_vals.shape) < 0.6] = np.nan
    new_vals[:, 0] = 50.0
    batch = model.predict(ScoreMatrix(new_vals, [f"n{i}" for i in range(5)], scores.items),
                          method="gaussian")
    for i in range(5):
        one = {scores.items[j]: new_vals[i, j] for j in np.flatnonzero(~np.isnan(new_vals[i]))}
        single = model.predict(one, method="gaussian")
        np.testing.assert_allclose(batch.mean[i], single.mean[0], rtol=1e-12)
        np.testing.assert_allclose(batch.std[i], single.std[0], rtol=1e-12)


def test_predict_pins_blas_to_one_thread_only_while_it_runs():
    # auto's hundreds of small factorizations run on one BLAS thread; a user's
    # own thread settings must come back unchanged afterwards, also after an error.
    import scipy.linalg  # noqa: F401 - every BLAS predict uses is loaded before the limits
    from threadpoolctl import threadpool_info, threadpool_limits

    def threads():
        return sorted((p["internal_api"], p["num_threads"]) for p in threadpool_info()
                      if p["user_api"] == "blas")

    model = GaussianModel().fit(load_dataset("helm_lite"))
    model.predict({"GSM8K": 0.6})  # loads what auto imports
    with threadpool_limits(2, user_api="blas"):
        before = threads()
        model.predict({"GSM8K": 0.6, "MMLU": 0.7})
        assert threads() == before
        with pytest.raises(ValueError):
            model.predict({"not a benchmark": 0.5})
        assert threads() == before
    assert all(n == 2 for _, n in before)


def test_conditional_covariance_diagonal_matches_predicted_std():
    model = GaussianModel().fit(load_dataset("wildbench"))
    given = list(model.items_[:3])
    names, cov = model.conditional_covariance(given)
    pred = model.predict({g: 50.0 for g in given}, method="gaussian")
    idx = [pred.items.index(nm) for nm in names]
    # The predicted std is the conditional one times the calibration multiplier.
    multiplier = pred.calibration[0]["multiplier"]
    assert pred.calibration[0]["method"] == "conformal" and multiplier > 0
    np.testing.assert_allclose(np.sqrt(np.diag(cov)) * multiplier, pred.std[0, idx], rtol=1e-10)
    raw = GaussianModel(calibration="none").fit(load_dataset("wildbench"))
    pred = raw.predict({g: 50.0 for g in given}, method="gaussian")
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), pred.std[0, idx], rtol=1e-10)
    assert np.linalg.eigvalsh(cov).min() > -1e-9


def test_constant_column_is_left_out_with_a_warning():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(20, 4))
    x[:, 2] = 7.0
    scores = ScoreMatrix(x, [f"m{i}" for i in range(20)], ["a", "b", "flat", "c"])
    with pytest.warns(DataWarning, match="constant.*'flat'"):
        model = GaussianModel().fit(scores)
    assert model.items_ == ["a", "b", "c"]
    assert "flat" not in model.select(3).items


def test_select_on_real_data_names_and_bookkeeping():
    data = load_dataset("mteb")
    model = GaussianModel().fit(data)
    sel = model.select(5, objective="mi")
    assert len(sel.items) == 5 and len(set(sel.items)) == 5
    assert set(sel.items) <= set(data.items)
    assert np.all(np.diff(sel.residual_variance) < 0)
    assert sel.covariance == "em-shrink" and model.estimate_.converged
    forced = model.select(4, objective="entropy", include=["SummEval"], exclude=[sel.items[0]])
    assert forced.items[0] == "SummEval" and sel.items[0] not in forced.items
    with pytest.raises(ValueError, match="unknown included benchmark"):
        model.select(3, include=["NotATask"])


def test_select_with_costs_mapping_and_budget():
    model = GaussianModel().fit(load_dataset("wildbench"))
    costs = {name: float(i + 1) for i, name in enumerate(model.items_)}
    sel = model.select(objective="mi", costs=costs, budget=6.0)
    assert sum(costs[n] for n in sel.items) <= 6.0
    assert sel.cost == pytest.approx(sum(costs[n] for n in sel.items))
    with pytest.raises(ValueError, match="no cost given"):
        model.select(objective="mi", costs={model.items_[0]: 1.0}, budget=3.0)


def test_reference_models_by_transposing():
    data = load_dataset("helm_lite")
    model = GaussianModel().fit(data.transpose())
    sel = model.select(3, objective="mi")
    assert set(sel.items) <= set(data.models)
    # 11 "models" of 30 "items", complete: the sample covariance is singular, and
    # auto fits the factor model; pairwise shrinks toward the identity by (N - M) / N.
    assert model.estimate_.method == "factor"
    pairwise = GaussianModel(covariance="pairwise").fit(data.transpose())
    assert pairwise.estimate_.shrinkage == pytest.approx((30 - 11) / 30)


def test_spectrum_on_real_data():
    model = GaussianModel().fit(load_dataset("mteb"))
    spec = spectrum(model.estimate_.covariance, model.items_)
    assert np.all(np.diff(spec.eigenvalues) <= 1e-12)
    assert np.all(spec.greedy_residual >= spec.residual_fraction - 1e-9)  # Lemma 1 bound
    assert spec.k_for[0.90] <= spec.k_for[0.95] <= spec.k_for[0.99]
    k90 = spec.k_for[0.90]
    assert spec.residual_fraction[k90 - 1] <= 0.10 < spec.residual_fraction[k90 - 2]


def test_unfitted_and_bad_parameters():
    with pytest.raises(NotFittedError, match="not fitted"):
        GaussianModel().predict({"a": 1.0})
    data = load_dataset("helm_lite")
    with pytest.raises(ValueError, match="covariance must be one of"):
        GaussianModel(covariance="glasso").fit(data)
    with pytest.raises(ValueError, match=r"level must be in \(0, 1\)"):
        GaussianModel().fit(data).predict({data.items[0]: 0.5}, level=90)
    with pytest.raises(TypeError, match="ScoreMatrix"):
        GaussianModel().fit(np.ones((5, 5)))


def test_parameters_follow_scikit_learns_contract():
    """get_params/set_params, and sklearn's clone copies an unfitted model's options."""
    from sklearn.base import clone

    model = GaussianModel(covariance="em", ridge=0.01, bounds="0,1")
    params = model.get_params()
    assert params["covariance"] == "em" and params["ridge"] == 0.01
    copy = clone(model)
    assert copy is not model and copy.get_params() == params
    assert model.set_params(ridge=0.0) is model and model.ridge == 0.0
    with pytest.raises(ValueError, match="no parameter 'ridgee'; parameters are covariance"):
        model.set_params(ridgee=1.0)
    with pytest.raises(NotFittedError):
        model.predict({"a": 1.0})


def test_warnings_about_unknown_names_point_at_the_callers_line():
    # select's and prepare_auto's work moved into helpers (models/selecting.py,
    # models/auto.py); their warnings still name the line that called them.
    values = np.array([[1, 2, np.nan, 4.0], [2, 3, np.nan, 5], [3, 5, np.nan, 6],
                       [4, 4, np.nan, 8], [5, 7, np.nan, 9]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = GaussianModel().fit(ScoreMatrix(values, [f"m{i}" for i in range(5)],
                                                ["a", "b", "c", "d"]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.select(1, exclude=["c"])
        model.prepare_auto(["a", "c"])
    ignoring = [w for w in caught if "ignoring 'c'" in str(w.message)]
    assert len(ignoring) == 2 and all(w.filename == __file__ for w in ignoring)
