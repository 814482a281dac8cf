"""The low-rank-plus-diagonal question model against dense reference computations."""

import numpy as np
import pytest

from benchsel.coreset.gaussian import LowRankGaussian


def binary_scores(m=40, n=30, seed=0):
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=(m, 1))
    difficulty = rng.normal(size=(1, n))
    return (rng.random((m, n)) < 1 / (1 + np.exp(-(ability - difficulty) * 2))).astype(float)


def dense(model):
    return model.w_ @ model.w_.T + np.diag(model.d_)


def test_fit_keeps_each_questions_variance():
    x = binary_scores()
    model = LowRankGaussian(rank=4).fit(x)
    var = x.var(axis=0, ddof=1)
    np.testing.assert_allclose(np.diag(dense(model)), np.maximum(var, 1e-4), rtol=1e-10)
    np.testing.assert_allclose(model.c_, dense(model).sum(axis=1), rtol=1e-10)


def test_greedy_steps_are_the_brute_force_best_variance_reduction():
    x = binary_scores(seed=1)
    model = LowRankGaussian(rank=3).fit(x)
    sigma = dense(model)
    one = np.ones(sigma.shape[0])

    def post_var(a):
        a = list(a)
        if not a:
            return one @ sigma @ one
        s = sigma[:, a]
        return one @ sigma @ one - (one @ s) @ np.linalg.solve(sigma[np.ix_(a, a)], s.T @ one)

    order = model.select(6)
    chosen = []
    for j in order:
        cands = [v for v in range(sigma.shape[0]) if v not in chosen]
        best = min(cands, key=lambda v: post_var(chosen + [v]))
        assert best == j
        chosen.append(int(j))


def test_predicted_mean_and_std_match_the_dense_conditional():
    x = binary_scores(seed=2)
    model = LowRankGaussian(rank=5).fit(x[:30])
    a = model.select(8)
    new = x[30:]
    mean, std = model.predict_mean(new[:, a], a)
    sigma = dense(model)
    n = sigma.shape[0]
    rest = np.setdiff1d(np.arange(n), a)
    reg = np.linalg.solve(sigma[np.ix_(a, a)], sigma[np.ix_(a, rest)])
    cond_rest = model.mean_[rest] + (new[:, a] - model.mean_[a]) @ reg
    want = (new[:, a].sum(axis=1) + cond_rest.sum(axis=1)) / n
    np.testing.assert_allclose(mean, want, rtol=1e-10)
    cov_rest = sigma[np.ix_(rest, rest)] - sigma[np.ix_(rest, a)] @ reg
    np.testing.assert_allclose(std, np.sqrt(cov_rest.sum()) / n, rtol=1e-8)


def test_bad_inputs():
    with pytest.raises(ValueError, match="complete"):
        LowRankGaussian().fit(np.array([[1.0, np.nan], [0.0, 1.0], [1.0, 1.0]]))
    with pytest.raises(ValueError, match="at least 3 source models"):
        LowRankGaussian().fit(np.ones((2, 5)))
    with pytest.raises(ValueError, match=r"n must be in \[1, 30\]"):
        LowRankGaussian().fit(binary_scores()).select(31)
