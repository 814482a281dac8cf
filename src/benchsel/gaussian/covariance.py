"""Covariance estimation from an incomplete score matrix (Smola 2026, Sec. 3, App. G).

All estimators take standardized scores ``Z`` (models x items, NaN = missing)
and return a :class:`CovarianceEstimate`: the mean and covariance in those
standardized units, plus how they were obtained.

* ``pairwise`` -- pairwise-complete covariance (eq. 16) projected onto the
  PSD cone.
* ``em`` -- EM for Gaussian data missing at random (eqs. 17-20): E-step
  conditional moments, M-step with the conditional-covariance correction,
  PSD floor after each M-step, Ledoit-Wolf-form shrinkage with
  ``alpha = (N - M) / N`` when there are fewer models than items. Rows that
  share a missingness pattern are handled together, and patterns of similar
  size in one batched factorization (see ``_estep``).
* ``em-shrink`` -- the same EM, with the off-diagonal entries of every
  M-step's covariance multiplied by ``1 - correlation_shrinkage`` (0.02): a
  pull toward the diagonal that keeps sparsely co-observed pairs from
  drifting to spurious near-perfect correlations. In 10-fold CV it matches
  ``em`` on MTEB and lifts MI's R^2 at k = 5 on MERGED from 0.26 to 0.57
  (seed 0; 0.33 to 0.60 averaged over 3 seeds; docs/experiments/reproduction.md).
* ``factor`` -- a few factors plus a diagonal, fitted by EM in
  ``O(M N r^2)`` per iteration with the rank chosen on held-out cells
  (:mod:`.factor`): for boards of thousands of benchmarks.
* ``auto`` -- pairwise for a fully observed matrix with more models than
  items (the paper's rule), ``factor`` for a whole board with no more
  models than items (:func:`sample_singular`; not for the rows of a fold
  of ``auto``'s choice or a calibration split, :func:`resolve_auto`), else
  ``em-shrink``, unless one EM iteration would cost more than
  :data:`EM_MAX_FLOPS` (a board of thousands of benchmarks with a few
  hundred models) or either would need more memory than the budget: then
  ``factor``, with a :class:`~benchsel.matrix.DataWarning`. (The pairwise covariance was the
  fallback before; on a generated 300-model board with five factors and
  half its cells missing, its ten MI picks left 0.33 / 0.31 / 0.31 of the
  true variance at 1,000 / 2,000 / 3,000 benchmarks, while claiming
  0.89-0.98; the factor model's left 0.29 and claimed 0.28-0.29:
  ``benchmarks/factor_model.py``.) The sample covariance of a complete
  board with no more models than items is singular, and conditioning on it
  selects and predicts poorly: in 10-fold cv of MI with the Gaussian's own
  predictions, the factor model's R^2 at k = 5 was higher on every such
  bundled question set tried (0.60 against 0.49 on GLUE RTE, 0.13 against
  0.08 on HELM MMLU, 0.21 against 0.13 on HELM OpenBookQA, 0.26 against
  0.24 on IFEval, 0.14 against 0.09 on ARC; docs/scaling.md), while on
  complete boards with more models than items (WildBench, HELM Lite) the
  two were alike.
* ``paper`` -- the choices of the paper's published code
  (``smolix/benchmark-selection``, ``code/eval_entropy_vs_mi.py`` and
  ``code/em_cov.py``), which differ from the text in places: pairwise when at
  least 90% of the cells are observed and ``M >= N``, else plain (not
  accelerated) EM stopped when the relative Frobenius change of the
  covariance falls below 5e-4 (no likelihood test), started from the
  pairwise covariance projected onto the PSD cone and *then* shrunk, with
  at most 500 iterations and PSD floor 1e-6 -- 1000 iterations and floor
  1e-3 when ``M < N`` or under half the cells are observed, and shrinkage
  ``(N - M) / N`` when ``M < N``; the result is rescaled to a correlation
  matrix with a unit diagonal, and the mean is the observed column mean,
  not EM's. The published code also floors the standard
  deviation used to standardize at ``0.01 (|mean| + 1)`` on the EM branch;
  :func:`fit_standardizer` does that, and callers standardize with it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from .. import names
from .._linalg import psd_project, shrink_to_identity, symmetrize
from .._memory import BUDGET_ENV, check_memory, memory_budget
from .._parallel import one_blas_thread
from .._patterns import unique_rows
from ..exceptions import ConvergenceWarning
from ..matrix import DataWarning, Standardizer
from ._estep import EStepPlan, e_step
from .factor import factor_covariance

__all__ = [
    "CovarianceEstimate",
    "ConvergenceWarning",
    "pairwise_covariance",
    "em_covariance",
    "estimate_covariance",
    "paper_covariance",
    "paper_uses_pairwise",
    "fit_standardizer",
    "COVARIANCE_METHODS",
    "EM_MAX_FLOPS",
    "em_iteration_flops",
    "sample_singular",
    "working_covariance",
]

COVARIANCE_METHODS = names.COVARIANCE_METHODS
#: ``paper``: pairwise only when at least this fraction of cells is observed (and M >= N).
PAPER_PAIRWISE_MIN_OBSERVED = 0.9
#: ``paper``: below this fraction of observed cells its EM is regularized (floor, iterations).
PAPER_REGULARIZE_BELOW_OBSERVED = 0.5
#: ``paper``: standardization floor, as a multiple of ``|mean| + 1``, on the EM branch.
PAPER_SCALE_FLOOR = 0.01
#: ``auto`` leaves EM for pairwise above this many flops per EM iteration
#: (:func:`em_iteration_flops`; about a second on one core, so a protocol's
#: dozens of fits of tens of iterations each would take hours).
EM_MAX_FLOPS = 1e10
#: How :func:`em_covariance` makes its pairwise start positive definite.
START_ORDERS = ("shrink-first", "project-first")
#: Off-diagonal shrinkage per M-step used by ``em-shrink``.
DEFAULT_CORRELATION_SHRINKAGE = 0.02
_LOG_2PI = float(np.log(2 * np.pi))
#: Options of the factor model alone: the rank and prior, when a fit on a superset of
#: the rows already chose them (refits of the calibration's splits).
FACTOR_OPTIONS = ("rank", "prior")


@dataclass(frozen=True)
class CovarianceEstimate:
    """Mean and covariance of standardized scores.

    Attributes
    ----------
    mean : ndarray of shape (N,)
    covariance : ndarray of shape (N, N)
        Symmetric positive definite.
    method : str
        ``"pairwise"``, ``"em"`` or ``"em-shrink"`` (what ``auto`` resolved
        to), or ``"paper-pairwise"`` / ``"paper-em"`` (the branch ``paper`` took).
    shrinkage : float
        Shrinkage intensity applied toward ``tr/N * I`` (0 when none).
    n_iter : int
        EM iterations, i.e. E-steps (0 for pairwise).
    converged : bool
    log_likelihood : ndarray
        Observed-data log-likelihood at the start of each EM iteration
        (without the E-steps of rejected SQUAREM extrapolations).
    """

    mean: np.ndarray
    covariance: np.ndarray
    method: str
    shrinkage: float = 0.0
    n_iter: int = 0
    converged: bool = True
    log_likelihood: np.ndarray = field(default_factory=lambda: np.zeros(0))


def _check_z(z) -> np.ndarray:
    z = np.asarray(z, dtype=np.float64)
    if z.ndim != 2:
        raise ValueError(f"scores must be a 2-D array; got shape {z.shape}")
    if np.isinf(z).any():
        raise ValueError("scores contain infinite values; use NaN for missing cells")
    obs = ~np.isnan(z)
    if not obs.any(axis=0).all():
        j = int(np.argmin(obs.any(axis=0)))
        raise ValueError(f"column {j} has no observed score; drop it first")
    return z


def _column_means(z: np.ndarray, obs: np.ndarray) -> np.ndarray:
    """Eq. 15: mean of the observed entries of each column."""
    return np.where(obs, z, 0.0).sum(axis=0) / np.maximum(obs.sum(axis=0), 1)


def _pairwise_raw(z: np.ndarray, obs: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Eq. 16, before the PSD projection."""
    centred = np.where(obs, z - mu, 0.0)
    o = obs.astype(np.float64)
    counts = o.T @ o
    return symmetrize((centred.T @ centred) / np.maximum(counts - 1.0, 1.0))


def _pairwise_start(z, obs, floor: float, alpha: float, order: str):
    """EM's default start: column means and the pairwise covariance, made PD in ``order``.

    ``order`` is ``"shrink-first"`` (shrink, and the caller's projection
    clamps what is left) or ``"project-first"`` (clamp at ``floor``, then shrink).
    """
    mu = _column_means(z, obs)
    sigma = _pairwise_raw(z, obs, mu)
    if order == "project-first":
        sigma, _ = psd_project(sigma, floor)
    return mu, shrink_to_identity(sigma, alpha)


def _default_alpha(m: int, n: int) -> float:
    return (n - m) / n if m < n else 0.0


def pairwise_covariance(
    z, *, floor: float = 1e-3, shrinkage: float | str = "auto"
) -> CovarianceEstimate:
    """Pairwise-complete covariance (eq. 16), shrunk and projected to be PSD.

    Parameters
    ----------
    z : array-like of shape (M, N)
        Standardized scores; NaN marks a missing cell.
    floor : float, default 1e-3
        Smallest eigenvalue kept by the PSD projection (standardized units).
    shrinkage : float in [0, 1] or "auto", default "auto"
        Intensity of shrinkage toward ``tr/N * I``; ``"auto"`` uses
        ``(N - M) / N`` when ``M < N`` and none otherwise.

    Returns
    -------
    CovarianceEstimate
        On complete data this is the sample covariance (``ddof=1``) up to the
        projection and shrinkage.
    """
    z = _check_z(z)
    floor = _check_floor(floor)
    m, n = z.shape
    # At most about five N x N arrays at once (products, counts, their ratio, the
    # eigendecomposition's; four measured at N = 500 and 1,500): 4 x 25,000 scores
    # took 19.6 GB before this was planned.
    check_memory(pairwise_memory_bytes(n), f"the covariance of {n} items",
                 "use the covariance 'factor' (or 'auto', which switches to it), or model "
                 "fewer benchmarks at once")
    obs = ~np.isnan(z)
    mu = _column_means(z, obs)
    alpha = _resolve_shrinkage(shrinkage, m, n)
    sigma = shrink_to_identity(_pairwise_raw(z, obs, mu), alpha)
    sigma, _ = psd_project(sigma, floor)
    return CovarianceEstimate(mean=mu, covariance=sigma, method="pairwise", shrinkage=alpha)


def _check_floor(floor) -> float:
    if not (np.isfinite(floor) and floor > 0):
        raise ValueError(f"floor must be a positive number; got {floor!r}")
    return float(floor)


def _resolve_shrinkage(shrinkage, m: int, n: int) -> float:
    if isinstance(shrinkage, str):
        if shrinkage != "auto":
            raise ValueError(f"shrinkage must be a number in [0, 1] or 'auto'; got {shrinkage!r}")
        return _default_alpha(m, n)
    alpha = float(shrinkage)
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"shrinkage must be in [0, 1]; got {shrinkage!r}")
    return alpha


def em_covariance(
    z,
    *,
    max_iter: int = 300,
    tol: float = 1e-5,
    floor: float = 1e-3,
    shrinkage: float | str = "auto",
    correlation_shrinkage: float = 0.0,
    pair_shrinkage: float = 0.0,
    accelerate: bool = True,
    check_likelihood: bool = True,
    start: tuple[np.ndarray, np.ndarray] | None = None,
    start_order: str = "shrink-first",
) -> CovarianceEstimate:
    """EM estimate of mean and covariance for Gaussian data missing at random.

    Parameters
    ----------
    z : array-like of shape (M, N)
        Standardized scores; NaN marks a missing cell.
    max_iter : int, default 300
        Iteration cap (the paper reports about 300 iterations on MTEB and
        274 on MERGED); reaching it without converging warns with
        :class:`ConvergenceWarning`.
    tol : float, default 1e-5
        Converged when the relative Frobenius change of the covariance,
        ``||S_new - S||_F / ||S||_F``, and the relative change of the
        observed-data log-likelihood both fall below ``tol``.
    floor : float, default 1e-3
        Eigenvalue floor of the PSD projection after every M-step.
    shrinkage : float in [0, 1] or "auto", default "auto"
        Shrinkage toward ``tr/N * I`` applied to the initial and the final
        covariance; ``"auto"`` is ``(N - M) / N`` when ``M < N``, else none.
    correlation_shrinkage : float in [0, 1), default 0
        After every M-step, off-diagonal entries are multiplied by
        ``1 - correlation_shrinkage`` (0 is the paper's EM).
    pair_shrinkage : float >= 0, default 0
        After every M-step, off-diagonal entry ``(j, k)`` is also multiplied
        by ``n_jk / (n_jk + pair_shrinkage)``, where ``n_jk`` is the number
        of models with both items observed: a pull toward the diagonal that
        is strong for pairs few models share and negligible for the rest.
    accelerate : bool, default True
        Extrapolate with SQUAREM between EM steps (same fixed point, far
        fewer iterations on sparse matrices); ``False`` runs plain EM.
    check_likelihood : bool, default True
        Also require the log-likelihood's relative change to fall below
        ``tol``; ``False`` stops on the covariance change alone (after at
        least two iterations), as the paper's published code does.
    start : (mean, covariance), optional
        Where EM starts instead of the pairwise estimate, e.g. the fit of a
        superset of the rows. The fixed point is the same; the number of
        iterations and where EM stops are not. On a generated 3,000 x 100
        board, 30% observed, fits of the calibration splits took 10-13
        iterations instead of 16-19 and stopped within 1e-3 (standardized
        units) of the cold fits; on denser data the pairwise start can be
        as close, and a warm start need not save any.
    start_order : {"shrink-first", "project-first"}, default "shrink-first"
        How the pairwise start is made positive definite when ``start`` is
        not given: shrink toward ``tr/N * I`` and then clamp the eigenvalues
        at ``floor``, or clamp first and then shrink (the paper's published
        ``em_cov.py``). They differ when the pairwise matrix is indefinite:
        shrinking first scales the negative eigenvalues by ``1 - alpha``
        before they are clamped, clamping first lifts them to ``floor`` and
        then the shrinkage adds ``alpha tr/N`` to every eigenvalue. On
        MERGED's first fold (106 models, 114 items, alpha 0.07) the smallest
        eigenvalue of the start is 0.001 and 0.09 respectively.

    Returns
    -------
    CovarianceEstimate
        With ``n_iter``, ``converged`` and the log-likelihood trace.
    """
    z = _check_z(z)
    if not (isinstance(max_iter, int | np.integer) and max_iter >= 1):
        raise ValueError(f"max_iter must be a positive integer; got {max_iter!r}")
    if not tol > 0:
        raise ValueError(f"tol must be positive; got {tol!r}")
    floor = _check_floor(floor)
    if not 0.0 <= correlation_shrinkage < 1.0:
        raise ValueError(
            f"correlation_shrinkage must be in [0, 1); got {correlation_shrinkage!r}"
        )
    if not (np.isfinite(pair_shrinkage) and pair_shrinkage >= 0):
        raise ValueError(f"pair_shrinkage must be a non-negative number; got {pair_shrinkage!r}")
    keep = 1.0 - correlation_shrinkage
    m_rows, n = z.shape
    obs = ~np.isnan(z)
    # Planned before the start and the E-step's blocks are allocated (2000 x 3000
    # half missing asked for 5.6 GB at once and raised MemoryError halfway through).
    check_memory(em_memory_bytes(obs), f"EM on {m_rows} x {n} scores",
                 "use the covariance 'factor' (or 'auto', which switches to it)")
    damp = None  # per-entry multipliers of the off-diagonal, when they vary by pair
    if pair_shrinkage > 0:
        counts = obs.T.astype(np.float64) @ obs
        damp = keep * counts / (counts + pair_shrinkage)
        np.fill_diagonal(damp, 1.0)
    shrunk = keep < 1.0 or damp is not None
    alpha = _resolve_shrinkage(shrinkage, m_rows, n)
    if start_order not in START_ORDERS:
        raise ValueError(
            f"start_order must be one of {', '.join(START_ORDERS)}; got {start_order!r}"
        )
    if start is None:
        mu, sigma = _pairwise_start(z, obs, floor, alpha, start_order)
    else:
        mu, sigma = (np.array(a, dtype=np.float64) for a in start)
        if mu.shape != (n,) or sigma.shape != (n, n):
            raise ValueError(f"start must be a mean of shape ({n},) and a covariance of shape "
                             f"({n}, {n}); got {mu.shape} and {sigma.shape}")
        if not (np.all(np.isfinite(mu)) and np.all(np.isfinite(sigma))):
            raise ValueError("start must be finite")
        sigma = symmetrize(sigma)
    sigma, _ = psd_project(sigma, floor)
    plan = EStepPlan.build(obs)
    z_filled = np.where(obs, z, 0.0)
    ridge = 1e-8 * float(np.mean(np.diag(sigma)))
    trace: list[float] = []
    e_steps = 0  # E-steps done, rejected extrapolations included

    def step(mu, sigma):
        """One EM iteration from (mu, sigma); also the log-likelihood at (mu, sigma)."""
        nonlocal e_steps
        e_steps += 1
        completed, correction, loglik = e_step(plan, z_filled, mu, sigma, ridge)
        mu_new = completed.mean(axis=0)
        centred = completed - mu_new
        new = symmetrize((centred.T @ centred + correction) / m_rows)
        if damp is not None:
            new = new * damp
        elif keep < 1.0:
            new = keep * new + (1.0 - keep) * np.diag(np.diag(new))
        new, _ = psd_project(new, floor)
        trace.append(loglik)
        return mu_new, new

    def rel_change(new, old):
        with np.errstate(over="ignore", invalid="ignore"):
            change = float(np.linalg.norm(new - old) / np.linalg.norm(old))
        return change if np.isfinite(change) else np.inf

    def ll_change():
        if len(trace) < 2:
            return np.inf
        return abs(trace[-1] - trace[-2]) / max(abs(trace[-2]), 1.0)

    converged = False
    change = np.inf
    with one_blas_thread():
        # The blocks are small: threading costs more than it saves, and
        # numpy's and scipy's BLAS pools would fight over two cores.
        while e_steps < max_iter and not converged:
            mu1, s1 = step(mu, sigma)
            change = rel_change(s1, sigma)
            converged = bool(
                change < tol
                and e_steps > 1
                and (not check_likelihood or ll_change() < tol)
            )
            if converged or not accelerate or e_steps >= max_iter:
                mu, sigma = mu1, s1
                continue
            # SQUAREM (Varadhan & Roland 2008): from two EM steps extrapolate
            # along the step direction, then take one EM step from there.
            mu2, s2 = step(mu1, s1)
            r_mu, r_s = mu1 - mu, s1 - sigma
            v_mu, v_s = mu2 - 2 * mu1 + mu, s2 - 2 * s1 + sigma
            norm_v = np.sqrt(np.sum(v_mu**2) + np.sum(v_s**2))
            a = -np.sqrt(np.sum(r_mu**2) + np.sum(r_s**2)) / norm_v if norm_v > 0 else -1.0
            a = min(a, -1.0)  # a = -1 is exactly the second EM step
            mu_x = mu - 2 * a * r_mu + a * a * v_mu
            s_x, _ = psd_project(symmetrize(sigma - 2 * a * r_s + a * a * v_s), floor)
            ll_at_1 = trace[-1]
            if e_steps >= max_iter:
                change = rel_change(s2, sigma)
                mu, sigma = mu2, s2
                break
            mu3, s3 = step(mu_x, s_x)
            # Plain EM never lowers the likelihood; reject an extrapolation
            # that did (the shrunk variant optimizes a penalized fit, so its
            # likelihood may fall and is not checked). The rejected E-step
            # still counts toward max_iter but leaves the trace.
            if not shrunk and trace[-1] < ll_at_1 - 1e-10 * abs(ll_at_1):
                trace.pop()
                if e_steps >= max_iter:
                    change = rel_change(s2, sigma)
                    mu, sigma = mu2, s2
                    break
                mu3, s3 = step(mu2, s2)
            change = rel_change(s3, sigma)
            if not np.isfinite(change):
                # An unidentified direction (two items no model has together)
                # can send the extrapolation towards overflow: keep the plain
                # EM steps instead.
                change = rel_change(s2, sigma)
                mu3, s3 = mu2, s2
            mu, sigma = mu3, s3
    n_iter = e_steps
    ll_final = ll_change()
    if not converged:
        warnings.warn(
            f"EM did not converge in {max_iter} iterations (last relative change of the "
            f"covariance {change:.2e}, of the log-likelihood {ll_final:.2e}; tol {tol:g}); "
            "the estimate may be imprecise. Its last iterate is used; benchmarks that few "
            "models share are the usual cause (--covariance pairwise does without EM)",
            ConvergenceWarning,
            stacklevel=2,
        )
    sigma = shrink_to_identity(sigma, alpha)
    return CovarianceEstimate(
        mean=mu,
        covariance=sigma,
        method="em-shrink" if shrunk else "em",
        shrinkage=alpha,
        n_iter=n_iter,
        converged=converged,
        log_likelihood=np.array(trace),
    )


def paper_uses_pairwise(observed) -> bool:
    """Whether ``paper`` takes its pairwise branch on this observed mask.

    Parameters
    ----------
    observed : array-like of bool, shape (M, N)

    Returns
    -------
    bool
        True when at least 90% of the cells are observed and ``M >= N``.
    """
    observed = np.asarray(observed, dtype=bool)
    m, n = observed.shape
    return bool(m >= n and observed.mean() >= PAPER_PAIRWISE_MIN_OBSERVED)


def fit_standardizer(values, method: str = "auto") -> Standardizer:
    """The standardizer that goes with covariance ``method``.

    Only ``paper`` differs from :meth:`Standardizer.fit`: on its EM branch the
    scale is floored at ``0.01 (|mean| + 1)``, as in the published code.

    Parameters
    ----------
    values : ndarray of shape (M, N)
        Scores, NaN where missing.
    method : str, default "auto"
        One of :data:`COVARIANCE_METHODS`.
    """
    values = np.asarray(values, dtype=np.float64)
    if method == "paper" and not paper_uses_pairwise(~np.isnan(values)):
        return Standardizer.fit(values, scale_floor=PAPER_SCALE_FLOOR)
    return Standardizer.fit(values)


def _to_correlation(sigma: np.ndarray) -> np.ndarray:
    d = 1.0 / np.sqrt(np.maximum(np.diag(sigma), 1e-12))
    corr = symmetrize(sigma * np.outer(d, d))
    # Rescaling leaves the diagonal at 1 +- 4e-16; greedy entropy's first
    # pick is the largest diagonal entry, so that rounding noise would decide
    # it. An exact 1 makes the tie explicit, and argmax breaks it by column order.
    np.fill_diagonal(corr, 1.0)
    return corr


def paper_covariance(z) -> CovarianceEstimate:
    """Correlation estimate as the paper's published code computes it.

    Parameters
    ----------
    z : array-like of shape (M, N)
        Scores standardized by :func:`fit_standardizer` with ``"paper"``;
        NaN marks a missing cell.

    Returns
    -------
    CovarianceEstimate
        ``covariance`` has a unit diagonal; ``mean`` is the observed column
        mean (the published code predicts with it, not with EM's mean);
        ``method`` is ``"paper-pairwise"`` or ``"paper-em"``.
    """
    z = _check_z(z)
    obs = ~np.isnan(z)
    m, n = z.shape
    mean = _column_means(z, obs)
    if paper_uses_pairwise(obs):
        est = pairwise_covariance(z, floor=1e-6, shrinkage=0.0)
        method = "paper-pairwise"
    else:
        # The published script regularizes when there are fewer models than
        # items or under half the cells are observed; it shrinks only in the
        # first case.
        regularized = m < n or obs.mean() < PAPER_REGULARIZE_BELOW_OBSERVED
        est = em_covariance(
            z,
            max_iter=1000 if regularized else 500,
            tol=5e-4,
            floor=1e-3 if regularized else 1e-6,
            shrinkage="auto" if m < n else 0.0,
            accelerate=False,
            check_likelihood=False,
            start_order="project-first",
        )
        method = "paper-em"
    return CovarianceEstimate(
        mean=mean,
        covariance=_to_correlation(est.covariance),
        method=method,
        shrinkage=est.shrinkage,
        n_iter=est.n_iter,
        converged=est.converged,
        log_likelihood=est.log_likelihood,
    )


def em_affordable(observed) -> bool:
    """Whether EM on this missingness fits both its time (:data:`EM_MAX_FLOPS` per
    iteration) and the memory budget (:func:`benchsel._memory.memory_budget`)."""
    return (em_iteration_flops(observed) <= EM_MAX_FLOPS
            and em_memory_bytes(observed) <= memory_budget())


def em_memory_bytes(observed) -> float:
    """Peak bytes EM's E-step holds on this missingness, roughly (an upper estimate).

    Per bucket of patterns (:mod:`._estep`), ``G`` blocks of padded size
    ``s``: the plan keeps two ``G x s x s`` arrays (identity padding, flat
    indices) and each step makes four more (factors, inverses, their sum,
    weights); then a few ``(N + 1)^2`` and ``M x (N + 1)`` arrays.
    """
    observed = np.asarray(observed, dtype=bool)
    m_rows, n = observed.shape
    patterns, _ = unique_rows(observed)
    given = patterns.sum(axis=1)
    side = np.minimum(given, n - given)
    padded = -(-side // 8) * 8.0
    blocks = float(np.sum(padded[(given > 0) & (given < n)] ** 2))
    return 8.0 * (7.0 * blocks + 10.0 * (n + 1) ** 2 + 6.0 * m_rows * (n + 1))


def pairwise_memory_bytes(n: int) -> float:
    """Peak bytes of the pairwise covariance of ``n`` items: five ``n x n`` arrays
    (the sums, counts, covariance and the eigendecomposition's), 1.2x the peak
    measured at 500 and 1,500 items (``benchmarks/memory_plans.py``)."""
    return 40.0 * float(n) * float(n)


def em_iteration_flops(observed) -> float:
    """Floating-point operations of one EM iteration on this missingness, roughly.

    The E-step factorizes, per distinct pattern, its observed or its missing
    block, whichever is smaller (``s^3``: Cholesky and inverse), solves one
    ``s``-sized system per row, and multiplies ``N x N`` matrices a few
    times (``3 N^3``).
    """
    observed = np.asarray(observed, dtype=bool)
    n = observed.shape[1]
    patterns, inverse = unique_rows(observed)
    side = np.minimum(patterns.sum(axis=1), n - patterns.sum(axis=1)).astype(float)
    return float(np.sum(side**3) + np.sum(side[inverse] ** 2) + 3.0 * float(n) ** 3)


def working_covariance(est):
    """What to condition and select on: a factor estimate's factors (nothing ``N x N``;
    :class:`~benchsel._lowrank.FactorCovariance`), else the dense covariance."""
    return getattr(est, "factors", None) or est.covariance


def sample_singular(observed) -> bool:
    """Whether ``observed`` is complete with no more models (rows) than items: its
    sample covariance is then singular, and ``auto`` uses the factor model."""
    observed = np.asarray(observed, dtype=bool)
    return bool(observed.all()) and observed.shape[0] <= observed.shape[1]


def resolve_auto(observed: np.ndarray, *, whole_board: bool = True) -> str:
    """The estimator ``auto`` runs on this missingness (see the module docstring).

    ``whole_board=False`` is for the rows of a part of a board (a fold of
    ``auto``'s choice, a calibration split, the sources of ``auto``'s
    completion fits): there a singular sample covariance does not switch to
    the factor model. A protocol's training fold stands in for the board a
    user fits, and is a whole board. The
    rule is measured on whole boards; on the small calibration splits of
    complete held-out boards (30 models of 30 benchmarks) the factor model
    cost 0.075 in interval score under extrapolation
    (``benchmarks/held_out_rules.py no-singular-factor``). A model whose
    whole board is singular keeps the factor model on its splits by asking
    for it by name.

    It warns, once per call, when the time or the memory budget rules EM or
    the pairwise estimate out and it uses the factor model, naming why (a
    singular sample covariance is the rule, not a fallback: no warning).
    Fits that are asked for by ``auto`` and by the name it resolves to are
    the same fit (:meth:`~benchsel.prediction.fits.FitStore.get` keys them
    once).
    """
    n = observed.shape[1]
    if whole_board and sample_singular(observed):
        return "factor"
    if observed.all() and pairwise_memory_bytes(n) <= memory_budget():
        return "pairwise"
    insist = "em-shrink"
    if observed.all():
        why = (f"the pairwise covariance of these {n} items would need more memory than the "
               f"budget ({BUDGET_ENV} or --memory-budget)")
        insist = "pairwise"
    elif em_iteration_flops(observed) > EM_MAX_FLOPS:
        why = (f"EM on these {n} items would cost over {EM_MAX_FLOPS:.0e} flops per "
               "iteration, hours for a protocol's fits")
    elif em_memory_bytes(observed) > memory_budget():
        why = (f"EM on these {n} items would need more memory than the budget ({BUDGET_ENV} "
               "or --memory-budget)")
    else:
        return "em-shrink"
    # No per-fit figures in the text: a protocol's fits then warn once.
    warnings.warn(f"{why}; using the factor model instead (a few factors plus each "
                  "benchmark's own noise, its rank chosen on held-out cells; ask for "
                  f"covariance '{insist}' to insist)", DataWarning, stacklevel=3)
    return "factor"


def estimate_covariance(z, method: str = "auto", *, whole_board: bool = True,
                        **options) -> CovarianceEstimate:
    """Dispatch to an estimator by name (see the module docstring).

    ``paper`` runs with the published settings and ignores ``options``;
    :data:`FACTOR_OPTIONS` (a rank and prior fixed by an earlier fit) reach
    the factor model only. ``whole_board``: as :func:`resolve_auto`'s.
    """
    if method not in COVARIANCE_METHODS:
        raise ValueError(
            f"covariance must be one of {', '.join(COVARIANCE_METHODS)}; got {method!r}"
        )
    z = _check_z(z)
    if z.shape[1] == 0:
        # Nothing to estimate (every column of these rows was constant): the empty
        # Gaussian, not EM's averages over no entries (numpy's "Mean of empty slice").
        return CovarianceEstimate(mean=np.zeros(0), covariance=np.zeros((0, 0)),
                                  method="pairwise" if method == "auto" else method)
    if method == "auto":
        method = resolve_auto(~np.isnan(z), whole_board=whole_board)
    if method == "paper":
        return paper_covariance(z)
    if method == "factor":
        # Its own iteration cap: an E-step costs O(M N r^2), not EM's O(N^3), and a
        # sparse board takes about a thousand (MERGED, rank 4: 1,060 in 0.5 s).
        options = {k: v for k, v in options.items() if k in ("floor", "tol", *FACTOR_OPTIONS)}
        return factor_covariance(z, **options)
    options = {k: v for k, v in options.items() if k not in FACTOR_OPTIONS}
    if method == "pairwise":
        options = {k: v for k, v in options.items() if k in ("floor", "shrinkage")}
        return pairwise_covariance(z, **options)
    if method == "em-shrink":
        options.setdefault("correlation_shrinkage", DEFAULT_CORRELATION_SHRINKAGE)
    return em_covariance(z, **options)
