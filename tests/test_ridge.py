"""benchsel._ridge, the one ridge-with-leave-one-out implementation, against slow references.

The references refit the model ``m`` times, each time without one row, from
the normal equations (or least squares) solved directly: nothing shared with
the closed forms under test.
"""

import numpy as np
import pytest

from benchsel._ridge import kernel_ridge_loo, polynomial_kernel, ridge_loo


def ridge_reference(x, y, alpha):
    """Coefficients and intercept of ``min ||y - w0 - x w||^2 + alpha ||w||^2``, directly.

    The intercept is unpenalized: with centred data it is ``ybar - xbar w``
    and ``w`` solves ``(Xc^T Xc + alpha I) w = Xc^T yc``; at ``alpha = 0``
    the minimum-norm least-squares solution.
    """
    xbar, ybar = x.mean(axis=0), y.mean()
    xc, yc = x - xbar, y - ybar
    if alpha == 0:
        w = np.linalg.lstsq(xc, yc, rcond=None)[0]
    else:
        w = np.linalg.solve(xc.T @ xc + alpha * np.eye(x.shape[1]), xc.T @ yc)
    return w, ybar - xbar @ w


def loo_by_refits(x, y, fit_predict):
    """``y_i`` minus the prediction of a fit on every other row, for each row ``i``."""
    resid = np.empty(len(y))
    for i in range(len(y)):
        rest = np.arange(len(y)) != i
        resid[i] = y[i] - fit_predict(x[rest], y[rest], x[i:i + 1])[0]
    return resid


def data(m, p, seed=0, binary=False):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(m, p))
    if binary:
        x = (x > 0).astype(float)
    y = x @ rng.normal(size=p) + 0.3 * rng.normal(size=m)
    return x, y


ALPHAS = np.array([0.0, 1e-3, 0.1, 1.0, 10.0, 1e3])


@pytest.mark.parametrize(("m", "p", "binary"),
                         [(30, 5, False), (12, 40, False), (40, 15, True)],
                         ids=["tall", "wide", "binary"])
def test_ridge_loo_equals_refitting_without_each_row(m, p, binary):
    x, y = data(m, p, seed=m + p, binary=binary)
    # Least squares of a wide matrix interpolates: leave-one-out needs a penalty.
    alphas = ALPHAS[1:] if p >= m - 1 else ALPHAS
    fit = ridge_loo(x, y, alphas)
    for j, alpha in enumerate(alphas):

        def fit_predict(xt, yt, xn, a=alpha):
            w, w0 = ridge_reference(xt, yt, a)
            return xn @ w + w0

        want = loo_by_refits(x, y, fit_predict)
        assert fit.loo_mse[j] == pytest.approx(np.mean(want**2), rel=1e-7)
    best = int(np.argmin(fit.loo_mse))
    assert fit.alpha == alphas[best]
    w, w0 = ridge_reference(x, y, fit.alpha)
    np.testing.assert_allclose(fit.coef, w, rtol=1e-8, atol=1e-10)
    assert fit.intercept == pytest.approx(w0, rel=1e-8, abs=1e-10)
    np.testing.assert_allclose(fit.predict(x[:3]), x[:3] @ w + w0, rtol=1e-8, atol=1e-10)
    assert fit.sd == pytest.approx(np.sqrt(fit.loo_mse[best]))


def test_least_squares_on_collinear_columns_is_the_pseudo_inverse_fit():
    """alpha = 0 with a repeated column: the fit and its leave-one-out residuals are the
    minimum-norm least-squares ones, not blown up by the direction the data lack."""
    x, y = data(25, 4, seed=3)
    x = np.column_stack([x, x[:, 0], 2 * x[:, 1]])
    fit = ridge_loo(x, y, [0.0])

    def fit_predict(xt, yt, xn):
        w, w0 = ridge_reference(xt, yt, 0.0)
        return xn @ w + w0

    np.testing.assert_allclose(fit.loo_residuals, loo_by_refits(x, y, fit_predict),
                               rtol=1e-8, atol=1e-10)
    w, w0 = ridge_reference(x, y, 0.0)
    np.testing.assert_allclose(fit.coef, w, rtol=1e-8, atol=1e-10)


def test_a_row_alone_in_a_direction_keeps_every_residual_finite():
    """Least squares through a point no other row explains: leverage 1, capped, so the
    closed form's 0/0 stays finite (and small: the fit passes through the row)."""
    x = np.zeros((6, 2))
    x[:, 0] = np.arange(6.0)
    x[5, 1] = 1.0  # only the last row moves along the second column
    y = np.arange(6.0) + np.array([0, 0.1, -0.1, 0.05, 0.0, 3.0])
    fit = ridge_loo(x, y, [0.0])
    assert np.all(np.isfinite(fit.loo_residuals))
    assert abs(fit.loo_residuals[5]) < 1e-3


@pytest.mark.parametrize("gamma", [None, 0.3])
def test_kernel_ridge_loo_equals_refitting_without_each_row(gamma):
    x, y = data(20, 6, seed=7, binary=True)
    alphas = ALPHAS[1:]
    fit = kernel_ridge_loo(x, y, alphas, gamma=gamma)
    scale = 1 / x.shape[1] if gamma is None else gamma
    for j, alpha in enumerate(alphas):

        def fit_predict(xt, yt, xn, a=alpha):
            kernel = (scale * xt @ xt.T + 1) ** 2
            dual = np.linalg.solve(kernel + a * np.eye(len(xt)), yt)
            return (scale * xn @ xt.T + 1) ** 2 @ dual

        want = loo_by_refits(x, y, fit_predict)
        assert fit.loo_mse[j] == pytest.approx(np.mean(want**2), rel=1e-7)
    assert fit.alpha == alphas[np.argmin(fit.loo_mse)]
    kernel = polynomial_kernel(x, x, gamma=scale)
    np.testing.assert_allclose(fit.dual_coef,
                               np.linalg.solve(kernel + fit.alpha * np.eye(len(x)), y),
                               rtol=1e-7, atol=1e-9)


def test_ties_go_to_the_first_penalty():
    x, y = data(15, 3, seed=1)
    fit = ridge_loo(x, np.full(15, 2.0), [0.5, 5.0])  # a constant target: every penalty fits
    assert fit.alpha == 0.5 and np.all(fit.loo_residuals == 0)
    assert ridge_loo(x, y, [1.0, 1.0]).alpha == 1.0


def test_bad_input_is_named():
    x, y = data(10, 3)
    with pytest.raises(ValueError, match="alphas must be non-negative and finite"):
        ridge_loo(x, y, [-1.0])
    with pytest.raises(ValueError, match="alphas must be non-negative and finite"):
        ridge_loo(x, y, [])
    with pytest.raises(ValueError, match="kernel ridge needs positive alphas"):
        kernel_ridge_loo(x, y, [0.0, 1.0])
    with pytest.raises(ValueError, match=r"y must have shape \(10,\)"):
        ridge_loo(x, y[:-1], [1.0])
    with pytest.raises(ValueError, match="at least 2 models"):
        ridge_loo(x[:1], y[:1], [1.0])
    with pytest.raises(ValueError, match="degree must be >= 1"):
        kernel_ridge_loo(x, y, [1.0], degree=0)
