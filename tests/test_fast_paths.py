"""Batched fast paths against their one-pattern-at-a-time references."""

import numpy as np
import pytest

from benchsel._patterns import unique_rows
from benchsel.calibration import _range_excess_loop, range_excess
from benchsel.gaussian.conditional import _moments_loop, conditional_moments


@pytest.mark.parametrize("shape", [(650, 100), (300, 64), (300, 65), (7, 3), (1, 1), (0, 4),
                                   (20, 0)])
def test_unique_rows_equal_numpy_unique(shape):
    rng = np.random.default_rng(sum(shape))
    mask = rng.random(shape) < 0.3
    if shape[0] > 6:
        mask[: shape[0] // 3] = mask[shape[0] // 3: 2 * (shape[0] // 3)]  # repeats
    patterns, inverse = unique_rows(mask)
    expected, expected_inverse = np.unique(mask, axis=0, return_inverse=True)
    np.testing.assert_array_equal(patterns, expected)
    np.testing.assert_array_equal(inverse, expected_inverse.reshape(-1))
    np.testing.assert_array_equal(patterns[inverse], mask)


def _spd(rng, n, rank=None):
    a = rng.normal(size=(n, rank or n + 3))
    return a @ a.T / n


@pytest.mark.parametrize("n, observed", [(5, 0.5), (30, 0.3), (100, 0.1)])
@pytest.mark.parametrize("ridge", [0.0, 1e-2])
def test_batched_conditional_moments_equal_the_loop(n, observed, ridge):
    rng = np.random.default_rng(n)
    sigma, mean = _spd(rng, n), rng.normal(size=n)
    x = rng.normal(size=(400, n))
    x[rng.random(x.shape) > observed] = np.nan
    x[:3] = np.nan  # nothing observed: the prior
    x[3:5] = rng.normal(size=(2, n))  # everything observed
    x[5:40] = x[40:75]  # shared patterns
    mu, var = conditional_moments(x, mean, sigma, ridge=ridge)
    mu_ref, var_ref = _moments_loop(x, mean, sigma, ridge)
    np.testing.assert_allclose(mu, mu_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(var, var_ref, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(var[:3], np.broadcast_to(np.diag(sigma), (3, n)))


def test_conditional_moments_fall_back_to_jitter_on_a_singular_block():
    rng = np.random.default_rng(0)
    sigma = _spd(rng, 6, rank=2)  # rank 2: a block of 3 or more is singular
    x = rng.normal(size=(50, 6))
    x[rng.random(x.shape) < 0.3] = np.nan
    mu, var = conditional_moments(x, np.zeros(6), sigma)
    mu_ref, var_ref = _moments_loop(x, np.zeros(6), sigma, 0.0)
    assert np.all(np.isfinite(mu)) and np.all(np.isfinite(var))
    np.testing.assert_allclose(mu, mu_ref, atol=1e-8)
    np.testing.assert_allclose(var, var_ref, atol=1e-8)


@pytest.mark.parametrize("m, n", [(1300, 10), (50, 3), (5, 4), (1, 2)])
def test_range_excess_equals_the_loop(m, n):
    rng = np.random.default_rng(m + n)
    reference = rng.normal(size=(m, n))
    reference[rng.random(reference.shape) < 0.6] = np.nan
    rows = 2 * rng.normal(size=(300, n))
    rows[rng.random(rows.shape) < 0.5] = np.nan
    fast, slow = range_excess(reference, rows), _range_excess_loop(reference, rows)
    np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(fast > 0, slow > 0)
    assert (fast > 0).any()


def _soft_impute_by_full_svd(values, rank=2, max_iter=500, tol=1e-6):
    """complete_svd's loop with a full SVD every iteration."""
    from benchsel.prediction.latent import Latent, finish

    lat = Latent(values)
    observed = ~np.isnan(lat.z)
    filled = np.where(observed, lat.z, 0.0)
    for _ in range(max_iter):
        u, s, vt = np.linalg.svd(filled, full_matrices=False)
        recon = (u[:, :rank] * s[:rank]) @ vt[:rank]
        new = np.where(observed, lat.z, recon)
        change = np.linalg.norm(new - filled) / max(np.linalg.norm(filled), 1e-12)
        filled = new
        if change < tol:
            break
    return finish(values, lat.back(recon), lat.back(recon)).mean


@pytest.mark.parametrize("board", ["merged", "mteb", "open_llm_v2"])
def test_soft_impute_follows_the_full_svd(board):
    from benchsel.datasets import load_dataset
    from benchsel.prediction.completers import complete_svd

    values = load_dataset(board).values
    fast = complete_svd(values).mean
    np.testing.assert_allclose(fast, _soft_impute_by_full_svd(values), rtol=0, atol=1e-7)


@pytest.mark.parametrize("shape", [(118, 114), (30, 80), (80, 30)])
def test_top_subspace_equals_the_truncated_svd(shape):
    from benchsel.prediction.latent import TopSubspace

    rng = np.random.default_rng(shape[0])
    a = rng.normal(size=shape)
    top = TopSubspace(2)
    for shrink in (0.0, 0.5):
        for _ in range(3):  # the first call decomposes; later ones follow a drift
            a = a + 0.01 * rng.normal(size=shape)
            u, s, vt = np.linalg.svd(a, full_matrices=False)
            want = (u[:, :2] * np.maximum(s[:2] - shrink, 0)) @ vt[:2]
            np.testing.assert_allclose(top.part(a, shrink), want, atol=1e-8)
    # Equal singular values at the cut: power steps cannot settle; the SVD answers.
    q, _ = np.linalg.qr(rng.normal(size=(20, 20)))
    tie = q @ np.diag([3.0, 2.0, 2.0] + [0.1] * 17) @ q.T
    top.v = np.eye(20)[:, :2]
    got = top.part(tie)
    assert np.linalg.matrix_rank(got, tol=1e-8) == 2
    np.testing.assert_allclose(np.linalg.svd(got, compute_uv=False)[:2], [3.0, 2.0])
