"""Gaussian conditioning (eqs. 6-7), vectorized over rows that share a pattern."""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_solve

from .._linalg import cholesky

__all__ = ["conditional_moments"]


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
    sigma : ndarray of shape (N, N)
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
    if noise is not None and np.any(np.asarray(noise)[obs] > 0):
        return _noisy_moments(x, mean, sigma, ridge, np.where(obs, noise, 0.0))
    mu = np.where(obs, x, 0.0)
    var = np.zeros_like(mu)
    _, inverse = np.unique(obs, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
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
