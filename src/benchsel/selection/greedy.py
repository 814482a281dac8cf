"""Greedy selection of items under a Gaussian model (Smola 2026, Sec. 4, App. B-C).

The objectives (what a pick is worth) are kept apart from the optimizer (how
picks are made), as in apricot:

* :class:`EntropyObjective` -- ``H(X_A)``; greedy on it is pivoted Cholesky.
  Gain of ``v``: ``0.5 log(2 pi e sigma^2(v|A))``.
* :class:`MutualInformationObjective` -- ``I(X_A; X_rest)``. Gain of ``v``:
  ``0.5 [log sigma^2(v|A) - log sigma^2(v|V \\ A \\ v)]`` (eq. 9).

:func:`run_greedy` adds ``include`` items first, never picks ``exclude``
items, and stops at ``k`` picks, at a cost ``budget`` (Krause-Guestrin
cost-effective greedy against the best singleton), or once the residual
variance fraction reaches ``target_residual``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.linalg import blas

from .. import names
from .._linalg import EPS, inverse_diagonal, spd_inverse
from .._lowrank import FactorCovariance
from ._forward import LOG_2PIE, ForwardVariances
from .lowrank import FactorEntropyObjective, FactorMutualInformationObjective

__all__ = [
    "describe_certificate",
    "entropy_certificate",
    "mi_oracle_gap",
    "mutual_information_of",
    "GreedyResult",
    "EntropyObjective",
    "MutualInformationObjective",
    "run_greedy",
    "greedy_entropy",
    "greedy_mi",
    "random_selection",
    "OBJECTIVES",
]

OBJECTIVES = names.OBJECTIVES


@dataclass(frozen=True)
class GreedyResult:
    """A selection, in the order it was made.

    Attributes
    ----------
    indices : ndarray of int
        Selected columns, in selection order (``include`` items first).
    gains : ndarray of float
        Marginal gain of each pick under ``objective`` when it was made
        (nats). For ``random`` these are entropy gains.
    residual_variance : ndarray of float
        ``tr(Sigma_{rest|A}) / tr(Sigma)`` after each pick: the fraction of
        total variance the selected items leave unexplained.
    objective : str
        ``"mi"``, ``"entropy"`` or ``"random"``.
    strategy : str
        ``"greedy"``, ``"cost-effective greedy"`` or ``"best singleton"``
        (the last two only with a budget; the better of the two is returned).
    cost : float or None
        Total cost of the selection when costs were given.
    value : float
        Objective value of the selected set, the sum of ``gains`` (entropy
        gains shifted to be non-negative when a budget is used).
    n_refactorizations : int
        Fresh complement factorizations made by the MI objective (0 otherwise).
    stopped_by : str
        Why selection stopped: ``"k"``, ``"budget"``, ``"target_residual"``,
        ``"no positive gain"`` (budgeted MI) or ``"exhausted"`` (no item left).
    """

    indices: np.ndarray
    gains: np.ndarray
    residual_variance: np.ndarray
    objective: str
    strategy: str = "greedy"
    cost: float | None = None
    value: float = 0.0
    n_refactorizations: int = 0
    stopped_by: str = "k"


def _check_sigma(sigma) -> np.ndarray | FactorCovariance:
    if isinstance(sigma, FactorCovariance):
        # Positive noise makes W W^T + diag(psi) symmetric positive definite.
        if not (np.all(np.isfinite(sigma.loadings)) and np.all(np.isfinite(sigma.noise))
                and np.all(sigma.noise > 0)):
            raise ValueError("the factor covariance needs finite loadings and positive noise")
        return sigma
    sigma = np.asarray(sigma, dtype=np.float64)
    if sigma.ndim != 2 or sigma.shape[0] != sigma.shape[1]:
        raise ValueError(f"Sigma must be a square matrix; got shape {sigma.shape}")
    if not np.all(np.isfinite(sigma)):
        raise ValueError("Sigma contains NaN or infinite entries")
    if not np.allclose(sigma, sigma.T, rtol=1e-8, atol=1e-12 * np.abs(sigma).max(initial=0)):
        raise ValueError("Sigma must be symmetric")
    if np.any(np.diag(sigma) < 0):
        raise ValueError("Sigma has a negative variance on its diagonal")
    if sigma.size and not np.any(np.diag(sigma) > 0):
        raise ValueError("Sigma has no positive variance: nothing carries information")
    return sigma


class EntropyObjective(ForwardVariances):
    """Forward conditional variances ``d_j = sigma^2(j | A)`` by incremental Cholesky.

    Each :meth:`add` costs ``O(N t)`` at step ``t``; ``k`` picks cost
    ``O(k^2 N)`` (Algorithm 1).
    """

    def __init__(self, sigma: np.ndarray):
        super().__init__(np.diag(sigma))
        self.sigma = sigma
        self.L = np.zeros((self.n, 0))  # Cholesky columns, one per pick
        self.t = 0

    def add(self, j: int) -> None:
        pivot = self.d[j]
        t = self.t
        col = self.sigma[:, j] - self.L[:, :t] @ self.L[j, :t]
        ell = col / np.sqrt(pivot) if pivot > self.floor else np.zeros(self.n)
        ell[self.selected] = 0.0
        ell[j] = np.sqrt(max(pivot, 0.0))
        if t == self.L.shape[1]:  # grow geometrically: O(k^2 N) in total
            self.L = np.hstack([self.L, np.zeros((self.n, max(4, t)))])
        self.L[:, t] = ell
        self.t = t + 1
        self.d = self.d - ell**2
        self.selected[j] = True
        self.d[self.selected] = 0.0
        np.maximum(self.d, 0.0, out=self.d)

    def shift(self) -> float:
        """A constant making every entropy gain non-negative (App. B.3).

        ``d_j >= sigma^2(j | V \\ j)`` for every subset, so shifting by
        ``-0.5 log(2 pi e min_j sigma^2(j | V \\ j))`` is the smallest
        constant that keeps all marginals non-negative.
        """
        diag_inv, _ = inverse_diagonal(self.sigma, self.floor)
        smallest = max(1.0 / float(diag_inv.max()), self.floor)
        return -0.5 * (LOG_2PIE + np.log(smallest))


class MutualInformationObjective(EntropyObjective):
    """Adds the complement side of eq. 9: ``s_v = sigma^2(v | V \\ A \\ v)``.

    ``1 / s_v`` is the diagonal of the complement precision
    ``inv(Sigma[rest, rest])``. ``method="fresh"`` refactorizes the
    complement at every step, as the paper does (``O(N^3)`` per step).
    ``method="downdate"`` keeps ``inv(Sigma[rest, rest])`` and removes a
    picked item by the rank-one Schur update (eq. 13) in ``O(N^2)``; that
    update loses accuracy when it cancels, so it tracks a bound on the
    relative error of the diagonal -- ``eps * cond * max_v Q0_vv / Q_vv``,
    the condition number at the last factorization times how far each
    diagonal entry has shrunk since -- and refactorizes whenever the bound
    exceeds ``tol``.
    """

    name = "mi"

    def __init__(self, sigma: np.ndarray, method: str = "downdate", tol: float = 1e-10):
        super().__init__(sigma)
        if method not in ("downdate", "fresh"):
            raise ValueError(f"method must be 'downdate' or 'fresh'; got {method!r}")
        self.method = method
        self.tol = tol
        self.rest = np.arange(self.n)  # current complement, in column order
        self._refresh()

    def _refresh(self) -> None:
        rest = self.rest
        sub = self.sigma[np.ix_(rest, rest)]
        self.q = None
        if self.method == "downdate":
            inv, cond = spd_inverse(sub)
            if inv is not None and EPS * cond < self.tol:
                # Full-size, Fortran-ordered so BLAS can downdate it in place;
                # rows/columns of picked items are exactly zero after their
                # downdate and never read again.
                self.q = np.zeros((self.n, self.n), order="F")
                self.q[np.ix_(rest, rest)] = inv
                self.q_diag0 = np.diag(self.q).copy()
                self.cond = cond
        if self.q is None:
            diag, _ = inverse_diagonal(sub, self.floor)
            self.q_diag = np.zeros(self.n)
            self.q_diag[rest] = diag
        self.n_refactorizations += 1

    def _precision_diagonal(self) -> np.ndarray:
        diag = np.diag(self.q) if self.q is not None else self.q_diag
        return diag[self.rest]

    def complement_variance(self) -> np.ndarray:
        """``sigma^2(v | V \\ A \\ v)`` for every unselected ``v`` (in ``self.rest`` order)."""
        return np.maximum(1.0 / self._precision_diagonal(), self.floor)

    def gains(self) -> np.ndarray:
        g = np.full(self.n, -np.inf)
        s = self.complement_variance()
        g[self.rest] = 0.5 * (np.log(self.forward_variance()[self.rest]) - np.log(s))
        return g

    def add(self, j: int) -> None:
        super().add(j)
        self.rest = self.rest[self.rest != j]
        if self.rest.size == 0:
            return
        if self.q is None:
            self._refresh()
            return
        q_col = self.q[:, j].copy()
        q_jj = q_col[j]
        # Q <- Q - q q^T / q_jj (eq. 13), in place; it zeroes row and column j.
        blas.dger(-1.0 / q_jj, q_col, q_col, a=self.q, overwrite_a=True)
        diag = np.diag(self.q)[self.rest]
        shrink = self.q_diag0[self.rest] / np.maximum(diag, np.finfo(float).tiny)
        if np.any(diag <= 0) or EPS * self.cond * float(shrink.max()) > self.tol:
            self._refresh()


def _make_objective(sigma, objective: str, mi_method: str) -> EntropyObjective:
    if isinstance(sigma, FactorCovariance):  # O(N r^2) a pick, nothing N x N
        if objective == "mi":
            return FactorMutualInformationObjective(sigma)
        return FactorEntropyObjective(sigma)
    if objective == "mi":
        return MutualInformationObjective(sigma, method=mi_method)
    return EntropyObjective(sigma)


def _index_array(values, n: int, what: str) -> list[int]:
    if isinstance(values, str | bytes) or np.isscalar(values):
        values = [values]
    out = []
    for v in values:
        if isinstance(v, bool | np.bool_) or not isinstance(v, int | np.integer):
            raise ValueError(f"{what} must hold integer column indices; got {v!r}")
        if not 0 <= int(v) < n:
            raise ValueError(f"{what} index {v} is out of range for {n} items")
        out.append(int(v))
    if len(set(out)) != len(out):
        raise ValueError(f"{what} lists an item twice: {out}")
    return out


def run_greedy(
    sigma,
    k: int | None = None,
    *,
    objective: str = "mi",
    include=(),
    exclude=(),
    costs=None,
    budget: float | None = None,
    target_residual: float | None = None,
    seed=None,
    mi_method: str = "downdate",
    stop_at_nonpositive: bool = False,
) -> GreedyResult:
    """Select items of covariance ``sigma`` greedily.

    Parameters
    ----------
    sigma : array-like of shape (N, N) or FactorCovariance
        Symmetric positive semidefinite covariance (standardized units), or
        a factor covariance (:class:`~benchsel._lowrank.FactorCovariance`),
        whose objectives work from its factors (:mod:`.lowrank`).
    k : int, optional
        Number of items to select, ``include`` items counted. Required unless
        ``budget`` or ``target_residual`` is given.
    objective : {"mi", "entropy", "random"}, default "mi"
    include : sequence of int
        Items that must be selected; they come first, in the given order.
    exclude : sequence of int
        Items that must never be selected (they are still predicted).
    costs : array-like of shape (N,), optional
        Positive cost of each item; needed with ``budget``.
    budget : float, optional
        Upper bound on the total cost of the selection.
    target_residual : float in (0, 1), optional
        Stop once ``tr(Sigma_{rest|A}) / tr(Sigma)`` is at or below this.
    seed : int or numpy Generator, optional
        Randomness for ``objective="random"``.
    mi_method : {"downdate", "fresh"}, default "downdate"
        How the MI objective keeps the complement precision (see
        :class:`MutualInformationObjective`).
    stop_at_nonpositive : bool, default False
        Stop before the first pick whose gain is not positive
        (``stopped_by="no positive gain"``): for MI, which is not monotone,
        the point past which more items lower the objective.

    Returns
    -------
    GreedyResult
    """
    sigma = _check_sigma(sigma)
    n = sigma.shape[0]
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}; got {objective!r}")
    include = _index_array(include, n, "include")
    exclude = _index_array(exclude, n, "exclude")
    clash = sorted(set(include) & set(exclude))
    if clash:
        raise ValueError(f"items {clash} are both included and excluded")
    if k is None and budget is None and target_residual is None and not stop_at_nonpositive:
        raise ValueError("give k, a budget, or a target residual variance to know when to stop")
    n_free = n - len(exclude)
    if k is not None:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ValueError(f"k must be a positive integer; got {k!r}")
        if k > n_free:
            raise ValueError(
                f"k={k} exceeds the {n_free} items that may be selected "
                f"({n} items, {len(exclude)} excluded)"
            )
        if k < len(include):
            raise ValueError(f"k={k} is smaller than the {len(include)} included items")
    if target_residual is not None and not 0 < target_residual < 1:
        raise ValueError(f"target_residual must be in (0, 1); got {target_residual!r}")
    if budget is not None:
        if costs is None:
            raise ValueError("a budget needs per-item costs")
        if not (np.isfinite(budget) and budget > 0):
            raise ValueError(f"budget must be a positive number; got {budget!r}")
    if costs is not None:
        costs = np.asarray(costs, dtype=np.float64).reshape(-1)
        if costs.shape != (n,):
            raise ValueError(f"costs has {costs.size} entries for {n} items")
        if not np.all(np.isfinite(costs) & (costs > 0)):
            raise ValueError("costs must be positive finite numbers")
        if budget is not None and costs[include].sum() > budget * (1 + 1e-12):
            raise ValueError(
                f"the included items cost {costs[include].sum():g}, more than the "
                f"budget {budget:g}"
            )

    allowed = np.ones(n, dtype=bool)
    allowed[exclude] = False
    rng = np.random.default_rng(seed)
    order = rng.permutation(n) if objective == "random" else None

    def run(first_free: int | None, ratio: bool) -> GreedyResult:
        state = _make_objective(sigma, objective, mi_method)
        shift = state.shift() if (budget is not None and objective == "entropy") else 0.0
        picks, gains, resid = [], [], []
        spent = 0.0
        stopped = "k"

        def take(j: int, gain: float) -> None:
            nonlocal spent
            state.add(j)
            picks.append(j)
            gains.append(gain)
            resid.append(state.residual_fraction())
            if costs is not None:
                spent += costs[j]

        for j in include:
            take(j, float(state.gains()[j]))
        while True:
            if k is not None and len(picks) >= k:
                stopped = "k"
                break
            if target_residual is not None and picks and resid[-1] <= target_residual:
                stopped = "target_residual"
                break
            if first_free is not None and len(picks) > len(include):
                stopped = "budget"
                break
            free = allowed & ~state.selected
            if budget is not None:
                free &= costs <= budget - spent + 1e-12 * budget
            if not free.any():
                left = allowed & ~state.selected
                stopped = "budget" if (budget is not None and left.any()) else "exhausted"
                break
            g = state.gains()
            if objective == "random":
                j = int(next(i for i in order if free[i]))
            elif first_free is not None:
                j = first_free
            else:
                score = g + shift
                if ratio:
                    if not np.any(free & (score > 0)):
                        stopped = "no positive gain"
                        break
                    score = score / costs
                score = np.where(free, score, -np.inf)
                j = int(np.argmax(score))  # ties: lowest index
                if stop_at_nonpositive and not g[j] > 0:
                    stopped = "no positive gain"
                    break
            take(j, float(g[j]))
        return GreedyResult(
            indices=np.array(picks, dtype=np.intp),
            gains=np.array(gains),
            residual_variance=np.array(resid),
            objective=objective,
            cost=float(spent) if costs is not None else None,
            value=float(np.sum(gains) + shift * len(gains)),
            n_refactorizations=state.n_refactorizations,
            stopped_by=stopped,
        )

    if budget is None or objective == "random":
        return run(None, ratio=False)
    greedy = run(None, ratio=True)
    # Best singleton: the include items plus the single affordable item of
    # largest gain (Krause & Guestrin 2005).
    probe = _make_objective(sigma, objective, mi_method)
    for j in include:
        probe.add(j)
    afford = allowed & ~probe.selected & (costs <= budget - costs[include].sum() + 1e-12 * budget)
    if not afford.any():
        return replace(greedy, strategy="cost-effective greedy")
    gains = np.where(afford, probe.gains(), -np.inf)
    # Among equally good singletons take the cheapest.
    tied = np.flatnonzero(gains >= gains.max() - 1e-12 * abs(gains.max()))
    best = int(tied[np.argmin(costs[tied])])
    single = run(best, ratio=False)
    # Prefer the greedy set unless the singleton is better beyond rounding.
    if single.value > greedy.value + 1e-9 * max(abs(greedy.value), 1.0):
        return replace(single, strategy="best singleton")
    return replace(greedy, strategy="cost-effective greedy")


def entropy_certificate(sigma, selected) -> dict:
    """How close an entropy selection provably is to the best of its size.

    For the shifted entropy ``H_c(S) = H(X_S) + c |S|`` with the smallest
    ``c`` that makes every marginal non-negative (:meth:`EntropyObjective.shift`),
    ``H_c`` is monotone submodular with ``H_c({}) = 0``, so for any ``k``
    items ``OPT``: ``H_c(OPT) <= H_c(A) + sum of the k largest marginals
    Delta_c(v | A)`` (Nemhauser et al. 1978; Minoux's online bound). The
    returned ``fraction`` is ``H_c(A)`` over that bound: the share of the
    optimum the selection is proved to reach on this covariance: the larger
    of that data-dependent ratio (``data_fraction``) and the a-priori
    ``1 - 1/e`` of greedy (``greedy_guarantee``, which holds for an
    unconstrained greedy run).

    Parameters
    ----------
    sigma : ndarray of shape (N, N)
    selected : sequence of int
        The selection ``A`` (``k = len(A)`` items).

    Returns
    -------
    dict
        ``objective``, ``shift``, ``value`` (``H_c(A)``), ``upper_bound``,
        ``data_fraction``, ``greedy_guarantee``, ``fraction``.
    """
    sigma = _check_sigma(sigma)
    state = _make_objective(sigma, "entropy", "downdate")
    shift = state.shift()
    value = 0.0
    for j in selected:
        value += float(state.gains()[j]) + shift
        state.add(int(j))
    rest = np.sort((state.gains() + shift)[~state.selected])[::-1]
    top = float(np.maximum(rest[: len(selected)], 0.0).sum())
    bound = value + top
    data = float(value / bound) if bound > 0 else 1.0
    guarantee = float(1 - 1 / np.e)
    return {"objective": "shifted entropy", "shift": float(shift), "value": float(value),
            "upper_bound": float(bound), "data_fraction": data,
            "greedy_guarantee": guarantee, "fraction": max(data, guarantee)}


def mutual_information_of(sigma, subset) -> float:
    """``I(X_A; X_rest)`` in nats, by log-determinants (for checks and small oracles)."""
    sigma = np.asarray(sigma, dtype=float)
    a = np.asarray(subset, dtype=int)
    rest = np.setdiff1d(np.arange(sigma.shape[0]), a)
    if a.size == 0 or rest.size == 0:
        return 0.0
    logdet = [np.linalg.slogdet(sigma[np.ix_(s, s)])[1] for s in (a, rest)]
    return 0.5 * (logdet[0] + logdet[1] - np.linalg.slogdet(sigma)[1])


def mi_oracle_gap(sigma, selected, max_subsets: int = 20000, *, include=(),
                  exclude=()) -> dict:
    """The greedy MI value beside the exhaustive optimum of its size, where affordable.

    MI is not monotone, so no data-dependent bound like
    :func:`entropy_certificate` holds; the exhaustive search over all
    ``C(N, k)`` subsets is the only certificate, run when there are at most
    ``max_subsets`` of them. The search keeps the selection's constraints:
    every subset holds ``include`` and nothing of ``exclude``.

    Returns
    -------
    dict
        ``objective``, ``fraction`` (None), ``reason``, and when searched,
        ``oracle_value``, ``value``, ``oracle_fraction`` and ``oracle_best``
        (indices).
    """
    from itertools import combinations
    from math import comb

    sigma = _check_sigma(sigma)
    fixed = [int(j) for j in include]
    pool = [j for j in range(sigma.shape[0]) if j not in set(fixed) | {int(e) for e in exclude}]
    n, k = len(pool), len(selected) - len(fixed)
    out = {"objective": "mi", "fraction": None,
           "reason": "mutual information is not monotone: no data-dependent bound on the "
                     "optimum holds (Smola 2026, Theorem 2b)"}
    if k < 0 or comb(n, k) > max_subsets:
        out["oracle_fraction"] = None
        out["oracle_reason"] = f"C({n}, {k}) = {comb(n, k)} subsets: too many to search"
        return out
    if isinstance(sigma, FactorCovariance):  # few enough items to search: few to form
        sigma = sigma.dense()
    value = mutual_information_of(sigma, selected)
    best, best_set = -np.inf, None
    for rest in combinations(pool, k):
        subset = (*fixed, *rest)
        v = mutual_information_of(sigma, subset)
        if v > best:
            best, best_set = v, subset
    out.update(value=float(value), oracle_value=float(best), oracle_best=list(best_set),
               oracle_fraction=float(min(value / best, 1.0)) if best > 0 else 1.0)
    return out


def greedy_entropy(sigma, k: int | None = None, **options) -> GreedyResult:
    """Greedy entropy maximization = pivoted Cholesky (Algorithm 1).

    See :func:`run_greedy` for the options. ``result.residual_variance[-1]``
    equals ``tr(Sigma - L_k L_k^T) / tr(Sigma)`` (Lemma 1b).
    """
    return run_greedy(sigma, k, objective="entropy", **options)


def greedy_mi(sigma, k: int | None = None, **options) -> GreedyResult:
    """Greedy mutual-information maximization (Algorithm 2).

    See :func:`run_greedy` for the options, including ``mi_method``.
    """
    return run_greedy(sigma, k, objective="mi", **options)


def random_selection(sigma, k: int | None = None, *, seed=None, **options) -> GreedyResult:
    """A uniformly random order (after ``include``), scored with entropy gains."""
    return run_greedy(sigma, k, objective="random", seed=seed, **options)


def describe_certificate(cert: dict | None) -> str:
    """One sentence on what is proved about a selection's quality."""
    if not cert:
        return "no quality certificate"
    if cert.get("fraction") is not None:
        return (f"certificate: reaches at least {100 * cert['fraction']:.1f}% of the best "
                f"{cert['objective']} of its size (data-dependent bound on this covariance "
                f"{100 * cert['data_fraction']:.1f}%, a-priori greedy guarantee "
                f"{100 * cert['greedy_guarantee']:.1f}%)")
    line = f"certificate: none -- {cert['reason']}"
    if cert.get("oracle_fraction") is not None:
        line += (f"; exhaustive search: {100 * cert['oracle_fraction']:.1f}% of the best MI "
                 "of its size")
    elif cert.get("oracle_reason"):
        line += f"; no exhaustive search ({cert['oracle_reason']})"
    return line
