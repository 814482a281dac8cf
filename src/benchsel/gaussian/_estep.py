"""The E-step of Gaussian EM with missing data, batched over missingness patterns.

For a row with observed columns ``o`` and missing columns ``m`` the E-step
needs the conditional mean and covariance of ``x_m`` given ``x_o`` (eqs.
17-18) and, for the convergence trace, ``log N(x_o; mu_o, S_oo)``. Each
pattern is solved on its smaller side, so no factorization is wider than
``N/2``:

* observed side (``|o| <= |m|``): with ``u = S_oo^{-1} (x_o - mu_o)``
  embedded in ``N`` dimensions the completed row is ``mu + S u`` (it
  reproduces the observed entries), and the conditional covariance embedded
  in ``N x N`` is ``S - S[:, o] S_oo^{-1} S[o, :]``. Summed over such rows this
  is ``n S - S H S`` with ``H = sum_i embed(S_oo^{-1})``.
* missing side, with the precision ``K = S^{-1}``: the conditional
  covariance is ``K_mm^{-1}``, the mean ``mu_m - K_mm^{-1} (K c)_m`` where
  ``c`` is the centred row with zeros in ``m``, ``log det S_oo = log det S +
  log det K_mm`` and ``(x_o - mu_o)^T S_oo^{-1} (x_o - mu_o) = c^T K c -
  t^T K_mm^{-1} t`` with ``t = (K c)_m``.

Each block is factorized with LAPACK on its own; everything else is batched
over blocks of similar size, padded with identity to a common size (a
multiple of 8). Padding is exact because an identity block adds nothing to a
solve or a log-determinant. Padded indices point at an extra dummy column
``N`` whose results are discarded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import lapack

from .._patterns import unique_rows

__all__ = ["EStepPlan", "e_step"]

_LOG_2PI = float(np.log(2 * np.pi))
_PAD = 8  # block sizes are rounded up to a multiple of this
_CHUNK = 4_000_000  # at most this many floats of per-row inverses at once


@dataclass(frozen=True)
class _Bucket:
    side: str  # "o" (factorize S_oo) or "m" (factorize K_mm)
    idx: np.ndarray  # (G, s) block indices per pattern, padded with N
    pad_base: np.ndarray  # (G, s, s) identity on the padded diagonal, zeros elsewhere
    sizes: np.ndarray  # (G,) real block size of each pattern
    block_flat: tuple  # per pattern, flat indices of its unpadded block in (N+1)^2
    counts: np.ndarray  # (G,) rows per pattern
    rows: np.ndarray  # (R,) rows of the bucket, grouped by pattern
    group: np.ndarray  # (R,) local pattern of each row
    flat: np.ndarray  # (G*s*s,) flat indices of the blocks in an (N+1)^2 array
    idx_rows: np.ndarray  # (R, s) block indices of each row (idx[group])


@dataclass(frozen=True)
class EStepPlan:
    """Everything about the missingness that does not change between iterations."""

    n: int
    observed: np.ndarray  # (M, N) bool
    buckets: tuple
    complete_rows: np.ndarray  # rows with nothing missing
    obs_side_rows: np.ndarray
    n_observed_cells: int

    @classmethod
    def build(cls, observed: np.ndarray) -> EStepPlan:
        observed = np.asarray(observed, dtype=bool)
        m_rows, n = observed.shape
        _, inverse = unique_rows(observed)
        groups: dict[tuple[str, int], list[tuple[np.ndarray, np.ndarray]]] = {}
        complete = []
        for g in range(inverse.max(initial=-1) + 1):
            rows = np.flatnonzero(inverse == g)
            mask = observed[rows[0]]
            o, m = np.flatnonzero(mask), np.flatnonzero(~mask)
            if m.size == 0:
                complete.append(rows)
                continue
            side, block = ("o", o) if o.size <= m.size else ("m", m)
            size = -(-block.size // _PAD) * _PAD
            groups.setdefault((side, size), []).append((rows, block))
        buckets = []
        for (side, s), members in sorted(groups.items()):
            g_count = len(members)
            idx = np.full((g_count, s), n, dtype=np.intp)
            for g, (_, block) in enumerate(members):
                idx[g, : block.size] = block
            pad = idx == n
            pad_base = np.zeros((g_count, s, s))
            pad_base.reshape(g_count, s * s)[:, :: s + 1] = pad
            rows = np.concatenate([r for r, _ in members])
            group = np.concatenate([np.full(r.size, g) for g, (r, _) in enumerate(members)])
            flat = (idx[:, :, None] * (n + 1) + idx[:, None, :]).reshape(g_count, s * s)
            buckets.append(
                _Bucket(side, idx, pad_base,
                        np.array([block.size for _, block in members]),
                        tuple((block[:, None] * (n + 1) + block[None, :]).ravel()
                              for _, block in members),
                        np.array([r.size for r, _ in members]), rows, group, flat.ravel(),
                        idx[group])
            )
        obs_side = [b.rows for b in buckets if b.side == "o"]
        return cls(
            n=n,
            observed=observed,
            buckets=tuple(buckets),
            complete_rows=np.concatenate(complete) if complete else np.zeros(0, np.intp),
            obs_side_rows=np.concatenate(obs_side) if obs_side else np.zeros(0, np.intp),
            n_observed_cells=int(observed.sum()),
        )

    @property
    def needs_precision(self) -> bool:
        return self.complete_rows.size > 0 or any(b.side == "m" for b in self.buckets)


def _cholesky(block: np.ndarray, ridge: float) -> np.ndarray:
    """Lower Cholesky factor (upper triangle zeroed) of one SPD block, LAPACK ``potrf``.

    A block that does not factorize gets ``t I``, ``t`` growing tenfold from
    ``ridge`` (App. G: a small ridge for numerically singular blocks).
    """
    c, info = lapack.dpotrf(block, lower=1, clean=1)
    t = ridge
    for _ in range(20):
        if info == 0:
            break
        c, info = lapack.dpotrf(block + t * np.eye(block.shape[0]), lower=1, clean=1)
        t *= 10.0
    if info != 0:
        raise np.linalg.LinAlgError("a block of the covariance is not positive definite")
    return c


def _spd_inverse(block: np.ndarray, ridge: float) -> tuple[np.ndarray, float]:
    """Lower triangle of the inverse of one SPD block and its log-determinant.

    ``potrf`` + ``potri`` (``s^3`` flops), with :func:`_cholesky`'s ridge.
    """
    c = _cholesky(block, ridge)
    inv, _ = lapack.dpotri(c, lower=1)
    return inv, 2.0 * float(np.log(c.diagonal()).sum())


def _bucket_inverses(source: np.ndarray, bucket: _Bucket, ridge: float):
    """Symmetric inverses (padded with identity) and log-determinants of a bucket's blocks.

    numpy's batched ``inv`` runs LU at several times the flops of
    ``potrf``/``potri``, so each block is factorized on its own; everything
    around it is batched.
    """
    g_count, s = bucket.idx.shape
    lower = bucket.pad_base.copy()
    factor_diag = np.ones((g_count, s))  # padding adds log 1 to the log-determinant
    flat_source = source.ravel()
    for g, k in enumerate(bucket.sizes):
        if k == 0:  # a row with nothing observed: its block is all padding
            continue
        c = _cholesky(flat_source.take(bucket.block_flat[g]).reshape(k, k), ridge)
        factor_diag[g, :k] = c.diagonal()
        lower[g, :k, :k] = lapack.dpotri(c, lower=1)[0]
    # potri leaves the upper triangle as the zeros of the cleaned factor.
    inv = lower + np.swapaxes(lower, 1, 2)
    inv.reshape(g_count, s * s)[:, :: s + 1] *= 0.5  # the diagonal, counted twice
    return inv, 2.0 * np.log(factor_diag).sum(axis=1)


def _rowwise_solve(inv: np.ndarray, group: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``inv[group[r]] @ rhs[r]`` for every row ``r``, in memory-bounded chunks."""
    out = np.empty_like(rhs)
    s = rhs.shape[1]
    step = max(1, _CHUNK // max(s * s, 1))
    for start in range(0, rhs.shape[0], step):
        sl = slice(start, start + step)
        out[sl] = np.einsum("rij,rj->ri", inv[group[sl]], rhs[sl])
    return out


def e_step(plan: EStepPlan, z_filled: np.ndarray, mu: np.ndarray, sigma: np.ndarray, ridge: float):
    """Completed data, summed conditional covariances and observed log-likelihood.

    Parameters
    ----------
    plan : EStepPlan
    z_filled : ndarray (M, N)
        Data with missing cells set to 0.
    mu, sigma : current mean and covariance.
    ridge : float
        Starting ridge for blocks that do not factorize.

    Returns
    -------
    completed : ndarray (M, N)
    correction : ndarray (N, N)
        ``sum_i C_i`` of eq. 20.
    loglik : float
    """
    n = plan.n
    m_rows = z_filled.shape[0]
    obs = plan.observed
    centred = np.zeros((m_rows, n + 1))
    centred[:, :n] = np.where(obs, z_filled - mu, 0.0)
    completed = np.zeros((m_rows, n + 1))
    completed[:, :n] = z_filled
    mu_x = np.append(mu, 0.0)
    sigma_x = np.zeros((n + 1, n + 1))
    sigma_x[:n, :n] = sigma
    u = np.zeros((m_rows, n + 1))
    h = np.zeros((n + 1) * (n + 1))
    corr = np.zeros((n + 1) * (n + 1))
    loglik = -0.5 * plan.n_observed_cells * _LOG_2PI
    if plan.needs_precision:
        lower, logdet_sigma = _spd_inverse(sigma, ridge)
        k_x = np.zeros((n + 1, n + 1))
        k_x[:n, :n] = lower + np.tril(lower, -1).T
        kc = centred @ k_x  # (K c) per row; dummy column stays 0
        ckc = np.einsum("ri,ri->r", centred, kc)
        if plan.complete_rows.size:
            loglik -= 0.5 * (plan.complete_rows.size * logdet_sigma + ckc[plan.complete_rows].sum())
    for b in plan.buckets:
        inv, logdet = _bucket_inverses(sigma_x if b.side == "o" else k_x, b, ridge)
        idx_rows = b.idx_rows
        weights = (b.counts[:, None] * inv.reshape(len(b.counts), -1)).ravel()
        if b.side == "o":
            resid = centred[b.rows[:, None], idx_rows]
            w = _rowwise_solve(inv, b.group, resid)
            u[b.rows[:, None], idx_rows] = w
            quad = np.einsum("ri,ri->r", resid, w)
            loglik -= 0.5 * (logdet[b.group].sum() + quad.sum())
            h += np.bincount(b.flat, weights, minlength=h.size)
        else:
            t = kc[b.rows[:, None], idx_rows]
            shift = _rowwise_solve(inv, b.group, t)
            completed[b.rows[:, None], idx_rows] = mu_x[idx_rows] - shift
            quad = ckc[b.rows] - np.einsum("ri,ri->r", t, shift)
            loglik -= 0.5 * ((logdet_sigma + logdet[b.group]).sum() + quad.sum())
            corr += np.bincount(b.flat, weights, minlength=corr.size)
    correction = corr.reshape(n + 1, n + 1)[:n, :n]
    completed = completed[:, :n]
    if plan.obs_side_rows.size:
        rows = plan.obs_side_rows
        completed[rows] = mu + u[rows, :n] @ sigma
        hs = h.reshape(n + 1, n + 1)[:n, :n]
        correction = correction + rows.size * sigma - sigma @ hs @ sigma
    return completed, correction, loglik
