"""Gaussian conditioning (eqs. 6-7), batched over rows and missingness patterns."""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_solve

from .._linalg import cholesky
from .._lowrank import FactorCovariance
from .._patterns import unique_rows

__all__ = ["conditional_moments"]

_PAD = 8  # observed-block sizes are rounded up to a multiple of this
_CHUNK = 4_000_000  # at most this many floats of per-pattern weights at once


def conditional_moments(
    x: np.ndarray, mean: np.ndarray, sigma: np.ndarray, *, ridge: float = 0.0,
    noise: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Conditional mean and variance of every cell given the observed cells of its row.

    Parameters
    ----------
    x : ndarray of shape (R, N)
        Rows with NaN where a value is unobserved.
    mean : ndarray of shape (N,)
    sigma : ndarray of shape (N, N) or FactorCovariance
        A factor covariance is conditioned on through its factors
        (:func:`_factor_moments`, ``O(R N r^2)``), except with noisy cells,
        which need the dense matrix (formed if it fits the memory budget).
    ridge : float, default 0
        Added to the diagonal of each observed block before solving (the
        cross-validation protocol of Smola 2026, Sec. 5.1, uses 1e-2).
    noise : ndarray of shape (R, N), optional
        Variance of the measurement error of each observed cell (0 for an
        exact score): a cell estimated from a sample of questions is a noisy
        measurement of the item's score. Noisy cells are predicted too: their
        conditional moments given every observed cell combine the
        measurement with what the other cells say.

    Returns
    -------
    mu : ndarray of shape (R, N)
        ``mu_m + S_mo (S_oo + ridge I)^{-1} (x_o - mu_o)`` on unobserved cells;
        the observed value on observed cells.
    var : ndarray of shape (R, N)
        Diagonal of ``S_mm - S_mo (S_oo + ridge I)^{-1} S_om`` on unobserved
        cells (clamped at 0 against rounding); 0 on observed cells.
    """
    x = np.asarray(x, dtype=np.float64)
    obs = ~np.isnan(x)
    noisy = noise is not None and np.any(np.asarray(noise)[obs] > 0)
    if isinstance(sigma, FactorCovariance):
        if not noisy:
            return _factor_moments(x, obs, mean, sigma, ridge)
        sigma = sigma.dense("the covariance to condition noisy scores on")
    if noisy:
        return _noisy_moments(x, mean, sigma, ridge, np.where(obs, noise, 0.0))
    patterns, inverse = unique_rows(obs)
    return _batched_moments(x, obs, patterns, inverse, mean, sigma, ridge)


def _factor_moments(x, obs, mean, sigma: FactorCovariance, ridge):
    """:func:`conditional_moments` through the factors: per row, the factors' posterior
    given its observed cells (an ``r x r`` system; the ridge adds to their noise), then
    every other cell's mean and variance from it."""
    w, psi = sigma.loadings, sigma.noise
    r = w.shape[1]
    inv_noise = obs / (psi + ridge)  # 0 where unobserved
    centred = np.where(obs, x - mean, 0.0)
    outer = (w[:, :, None] * w[:, None, :]).reshape(-1, r * r)
    precision = (inv_noise @ outer).reshape(-1, r, r) + np.eye(r)
    cov_f = np.linalg.inv(precision)
    f = np.einsum("ijk,ik->ij", cov_f, (centred * inv_noise) @ w)
    mu = np.where(obs, x, mean + f @ w.T)
    var = np.einsum("jk,ikl,jl->ij", w, cov_f, w) + psi
    return mu, np.where(obs, 0.0, np.maximum(var, 0.0))


def _batched_moments(x, obs, patterns, inverse, mean, sigma, ridge):
    """The patterns' solves batched, by observed-block size (fast path).

    Held-out rows often each have their own pattern (hundreds of patterns of
    a few observed cells), where a Python loop with one small solve per
    pattern is dominated by overhead. Here patterns are grouped by their
    number of observed cells, rounded up to a multiple of ``_PAD``, and each
    group's blocks are padded with identity to that size: padding is exact,
    as an identity block with a zero right-hand side adds nothing to a
    solve. A group whose blocks do not all factorize goes through the
    per-pattern loop, which adds jitter where needed.
    """
    n = sigma.shape[0]
    mu = np.where(obs, x, 0.0)
    var = np.zeros_like(mu)
    # An extra dummy column n stands for padding: zero covariance with
    # everything, zero mean, zero residual.
    sigma_x = np.zeros((n + 1, n + 1))
    sigma_x[:n, :n] = sigma
    resid_x = np.zeros((x.shape[0], n + 1))
    resid_x[:, :n] = np.where(obs, x - mean, 0.0)
    diag = np.diag(sigma)
    sizes = patterns.sum(axis=1)
    padded = -(-sizes // _PAD) * _PAD
    for size in np.unique(padded):
        members = np.flatnonzero(padded == size)
        if size == 0:  # nothing observed: the prior
            rows = np.isin(inverse, members)
            mu[rows], var[rows] = mean, diag
            continue
        step = max(1, _CHUNK // (size * (n + 1)))
        for start in range(0, members.size, step):
            chunk = members[start:start + step]
            done = _solve_group(chunk, patterns, inverse, int(size), sigma_x, resid_x,
                                mean, diag, ridge, mu, var)
            if not done:
                rows = np.flatnonzero(np.isin(inverse, chunk))
                mu[rows], var[rows] = _moments_loop(x[rows], mean, sigma, ridge)
    return mu, var


def _solve_group(chunk, patterns, inverse, size, sigma_x, resid_x, mean, diag, ridge, mu, var):
    """Conditional moments of the rows of the patterns ``chunk``, in place.

    Returns False, touching nothing, when some block does not factorize.
    """
    n = diag.size
    idx = np.full((chunk.size, size), n, dtype=np.intp)
    for g, p in enumerate(chunk):
        o = np.flatnonzero(patterns[p])
        idx[g, :o.size] = o
    pad = idx == n
    blocks = sigma_x[idx[:, :, None], idx[:, None, :]]
    blocks[:, np.arange(size), np.arange(size)] += np.where(pad, 1.0, ridge)
    try:
        np.linalg.cholesky(blocks)  # positive definite, as the loop's first try requires
    except np.linalg.LinAlgError:
        return False
    cross = sigma_x[idx][:, :, :n]  # (G, size, N) = S_o: (zero rows for padding)
    weights = np.linalg.solve(blocks, cross)  # S_oo^{-1} S_o:
    cond_var = np.maximum(diag - np.einsum("gon,gon->gn", cross, weights), 0.0)
    local = np.full(patterns.shape[0], -1)
    local[chunk] = np.arange(chunk.size)
    rows = np.flatnonzero(local[inverse] >= 0)
    group = local[inverse[rows]]
    step = max(1, _CHUNK // (size * n))
    for start in range(0, rows.size, step):
        r, g = rows[start:start + step], group[start:start + step]
        resid = np.take_along_axis(resid_x[r], idx[g], axis=1)
        pred = mean + np.einsum("ro,ron->rn", resid, weights[g])
        seen = patterns[inverse[r]]
        mu[r] = np.where(seen, mu[r], pred)
        var[r] = np.where(seen, 0.0, cond_var[g])
    return True


def _moments_loop(x, mean, sigma, ridge):
    """One Cholesky solve per pattern (the reference the batched path is tested against)."""
    obs = ~np.isnan(x)
    mu = np.where(obs, x, 0.0)
    var = np.zeros_like(mu)
    _, inverse = unique_rows(obs)
    for g in range(inverse.max(initial=-1) + 1):
        rows = np.flatnonzero(inverse == g)
        o = np.flatnonzero(obs[rows[0]])
        m = np.flatnonzero(~obs[rows[0]])
        if m.size == 0:
            continue
        if o.size == 0:
            mu[np.ix_(rows, m)] = mean[m]
            var[np.ix_(rows, m)] = np.diag(sigma)[m]
            continue
        s_oo = sigma[np.ix_(o, o)] + ridge * np.eye(o.size)
        factor, _ = cholesky(s_oo)
        weights = cho_solve((factor, True), sigma[np.ix_(o, m)])  # S_oo^{-1} S_om
        resid = x[np.ix_(rows, o)] - mean[o]
        mu[np.ix_(rows, m)] = mean[m] + resid @ weights
        cond_var = np.diag(sigma)[m] - np.einsum("om,om->m", sigma[np.ix_(o, m)], weights)
        var[np.ix_(rows, m)] = np.maximum(cond_var, 0.0)
    return mu, var


def _noisy_moments(x, mean, sigma, ridge, noise):
    """Row by row: ``mu = mean + S_:o (S_oo + ridge I + N_o)^{-1} (x_o - mean_o)``.

    Exactly observed cells keep their value and zero variance.
    """
    mu = np.empty_like(x)
    var = np.empty_like(x)
    for r in range(x.shape[0]):
        o = np.flatnonzero(~np.isnan(x[r]))
        s_oo = sigma[np.ix_(o, o)] + np.diag(ridge + noise[r, o])
        factor, _ = cholesky(s_oo)
        weights = cho_solve((factor, True), sigma[o])  # (S_oo + N)^{-1} S_o:
        mu[r] = mean + (x[r, o] - mean[o]) @ weights
        var[r] = np.maximum(np.diag(sigma) - np.einsum("on,on->n", sigma[o], weights), 0.0)
        exact = o[noise[r, o] == 0]
        mu[r, exact], var[r, exact] = x[r, exact], 0.0
    return mu, var
