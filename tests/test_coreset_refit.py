"""The "+" / "++" refits: closed-form leave-one-out against explicit refits and scikit-learn."""

import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Ridge

from benchsel.coreset.mrmr import MRMR
from benchsel.coreset.refit import (
    BINARY_ALPHAS,
    CONTINUOUS_ALPHAS,
    Refit,
    kernel_ridge_loo,
    make_refit,
    paper_alphas,
    polynomial_kernel,
    ridge_loo,
)
from benchsel.coreset.registry import METHODS


def irt_scores(m=60, n=120, seed=0):
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=(m, 1))
    difficulty = rng.normal(size=(1, n))
    return (rng.random((m, n)) < 1 / (1 + np.exp(-1.5 * (ability - difficulty)))).astype(float)


def regression_data(seed=0, m=30, n=12):
    x = irt_scores(m=m, n=n, seed=seed)
    y = x.mean(axis=1) + 0.3 * x[:, 0] * x[:, 1] + 0.05 * np.random.default_rng(seed).normal(size=m)
    return x, y


ALPHAS = np.array([0.01, 0.3, 1.0, 10.0])


def explicit_loo(make_model, x, y):
    """Residuals of refitting without each model in turn."""
    resid = np.empty(len(y))
    for i in range(len(y)):
        rest = np.arange(len(y)) != i
        model = make_model().fit(x[rest], y[rest])
        resid[i] = y[i] - model.predict(x[i:i + 1])[0]
    return resid


def test_ridge_closed_form_loo_equals_explicit_refits():
    x, y = regression_data()
    fit = ridge_loo(x, y, ALPHAS)
    for j, alpha in enumerate(ALPHAS):
        resid = explicit_loo(lambda a=alpha: Ridge(alpha=a), x, y)
        assert fit.loo_mse[j] == pytest.approx(np.mean(resid**2), rel=1e-9)
    best = ALPHAS[np.argmin(fit.loo_mse)]
    assert fit.alpha == best
    np.testing.assert_allclose(fit.loo_residuals, explicit_loo(lambda: Ridge(alpha=best), x, y),
                               atol=1e-10)
    assert fit.sd == pytest.approx(np.sqrt(np.min(fit.loo_mse)))


def test_ridge_coefficients_equal_scikit_learn():
    x, y = regression_data(seed=1)
    fit = ridge_loo(x, y, [0.7])
    ref = Ridge(alpha=0.7).fit(x, y)
    np.testing.assert_allclose(fit.coef, ref.coef_, atol=1e-10)
    assert fit.intercept == pytest.approx(ref.intercept_)
    new = irt_scores(m=5, n=12, seed=9)
    np.testing.assert_allclose(fit.predict(new), ref.predict(new), atol=1e-10)


@pytest.mark.parametrize("gamma", [None, 1.0])
def test_kernel_ridge_equals_scikit_learn(gamma):
    x, y = regression_data(seed=2)
    fit = kernel_ridge_loo(x, y, [0.5], gamma=gamma)
    ref = KernelRidge(alpha=0.5, kernel="poly", degree=2, coef0=1,
                      gamma=1 / x.shape[1] if gamma is None else gamma).fit(x, y)
    new = irt_scores(m=6, n=12, seed=8)
    np.testing.assert_allclose(fit.predict(new), ref.predict(new), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(fit.dual_coef, ref.dual_coef_, rtol=1e-7, atol=1e-9)


def test_kernel_ridge_closed_form_loo_equals_explicit_refits():
    x, y = regression_data(seed=3)
    fit = kernel_ridge_loo(x, y, ALPHAS)
    gamma = 1 / x.shape[1]
    for j, alpha in enumerate(ALPHAS):
        resid = explicit_loo(
            lambda a=alpha: KernelRidge(alpha=a, kernel="poly", degree=2, coef0=1, gamma=gamma),
            x, y)
        assert fit.loo_mse[j] == pytest.approx(np.mean(resid**2), rel=1e-8)
    assert fit.alpha == ALPHAS[np.argmin(fit.loo_mse)]
    assert fit.sd == pytest.approx(np.sqrt(np.min(fit.loo_mse)))


def test_polynomial_kernel_is_the_papers_formula():
    a = np.array([[1.0, 0.0, 1.0]])
    b = np.array([[1.0, 1.0, 1.0], [0.0, 1.0, 0.0]])
    np.testing.assert_allclose(polynomial_kernel(a, b), [[(2 + 1) ** 2, (0 + 1) ** 2]])
    np.testing.assert_allclose(polynomial_kernel(a, b, gamma=0.5), [[4.0, 1.0]])


def test_paper_grid_by_score_type():
    assert paper_alphas(np.array([[0.0, 1.0]])) is BINARY_ALPHAS
    assert paper_alphas(np.array([[0.0, 0.5]])) is CONTINUOUS_ALPHAS
    np.testing.assert_allclose(BINARY_ALPHAS, [0.1, 10**-0.5, 1, 10**0.5, 10])
    assert CONTINUOUS_ALPHAS[0] == pytest.approx(0.01) and CONTINUOUS_ALPHAS[-1] == 100


@pytest.mark.parametrize("kind", ["+", "++"])
def test_refit_keeps_base_questions_and_replaces_predictor(kind):
    x = irt_scores(m=70, n=100, seed=4)
    source, target = x[:50], x[50:]
    base = METHODS["random-sampling"]()
    method = make_refit(base, kind, n_questions=15, random_state=0).fit(source)
    assert method.name == "random-sampling" + kind
    ref = METHODS["random-sampling"](n_questions=15, random_state=0).fit(source)
    np.testing.assert_array_equal(method.selected_, ref.selected_)
    mean, sd = method.predict(target[:, method.selected_])
    sub, y = source[:, method.selected_], source.mean(axis=1)
    if kind == "+":
        want = ridge_loo(sub, y, BINARY_ALPHAS)
    else:
        want = kernel_ridge_loo(sub, y, BINARY_ALPHAS)
    np.testing.assert_allclose(mean, want.predict(target[:, method.selected_]))
    np.testing.assert_allclose(sd, want.sd)
    assert not np.allclose(mean, target[:, method.selected_].mean(axis=1))


def test_refit_names_follow_the_base():
    assert make_refit(MRMR(), "++").name == "mrmr++"
    assert make_refit(MRMR(), "+").name == "mrmr+"
    assert make_refit(MRMR, "+").estimator.name == "mrmr"  # a class is instantiated

    class Anchor:
        name = "anchor-points-weighted"

    assert make_refit(Anchor(), "+").name == "anchor-points-weighted+"


def test_refit_improves_on_plain_random_sampling():
    x = irt_scores(m=120, n=300, seed=5)
    source, target = x[:90], x[90:]
    gaps = {"plain": [], "+": [], "++": []}
    for trial in range(5):
        for kind in ("+", "++"):
            m = make_refit(METHODS["random-sampling"](), kind, n_questions=30,
                           random_state=trial).fit(source)
            gaps[kind].append(np.abs(m.predict(target[:, m.selected_])[0]
                                     - target.mean(axis=1)).mean())
        gaps["plain"].append(np.abs(target[:, m.selected_].mean(axis=1)
                                    - target.mean(axis=1)).mean())
    assert np.mean(gaps["+"]) < np.mean(gaps["plain"])
    assert np.mean(gaps["++"]) < np.mean(gaps["plain"])


def test_bad_input_raises():
    x, y = regression_data()
    with pytest.raises(ValueError, match="kind must be one of '\\+', '\\+\\+'; got '\\+\\+\\+'"):
        make_refit(MRMR(), "+++", n_questions=3).fit(x)
    with pytest.raises(ValueError, match="alphas must be non-negative"):
        ridge_loo(x, y, [-1.0, 1.0])
    with pytest.raises(ValueError, match=r"y must have shape \(30,\)"):
        kernel_ridge_loo(x, y[:-1], BINARY_ALPHAS)
    with pytest.raises(ValueError, match="at least 2 models"):
        ridge_loo(x[:1], y[:1], BINARY_ALPHAS)
    bad = x.copy()
    bad[3, 3] = np.inf
    with pytest.raises(ValueError, match="finite"):
        kernel_ridge_loo(bad, y, BINARY_ALPHAS)
    with pytest.raises(ValueError, match="finite"):
        make_refit(MRMR(), "+", n_questions=3, random_state=0).fit(bad)
    with pytest.raises(ValueError, match=r"n_questions must be in \[1, 11\]; got 12"):
        make_refit(MRMR(), "++", n_questions=12, random_state=0).fit(x)
    fit = ridge_loo(x, y, BINARY_ALPHAS)
    with pytest.raises(ValueError, match=r"expected scores of shape \(models, 12\)"):
        fit.predict(x[:, :5])
    assert isinstance(make_refit(MRMR(), "+"), Refit)
