"""Greedy entropy / MI selection against brute-force references."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsel import greedy_entropy, greedy_mi, random_selection
from benchsel.selection.greedy import run_greedy


def random_cov(n, rng, m=None):
    """A full-rank sample covariance."""
    x = rng.normal(size=(m or 3 * n, n)) @ rng.normal(size=(n, n))
    return np.cov(x, rowvar=False)


def ill_conditioned_cov(n, rng, cond):
    """Random eigenvectors, eigenvalues spread geometrically over ``cond``."""
    q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    w = np.logspace(0, -np.log10(cond), n)
    s = (q * w) @ q.T
    return 0.5 * (s + s.T)


def rank_deficient_cov(n, rank, rng):
    f = rng.normal(size=(n, rank))
    return f @ f.T


def cond_var(s, v, cond):
    """sigma^2(v | cond) by a direct solve."""
    cond = list(cond)
    if not cond:
        return s[v, v]
    return s[v, v] - s[v, cond] @ np.linalg.solve(s[np.ix_(cond, cond)], s[cond, v])


# ----------------------------------------------------------------- entropy
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_entropy_picks_equal_brute_force_logdet_argmax(seed):
    """Each greedy entropy pick maximizes log det(Sigma_{A+v}) over v (computed by slogdet)."""
    rng = np.random.default_rng(seed)
    s = random_cov(15, rng)
    res = greedy_entropy(s, 8)
    chosen = []
    for t, j in enumerate(res.indices):
        cands = [v for v in range(15) if v not in chosen]
        logdets = [np.linalg.slogdet(s[np.ix_(chosen + [v], chosen + [v])])[1] for v in cands]
        assert cands[int(np.argmax(logdets))] == j
        # The gain is the entropy increment 0.5 log(2 pi e sigma^2(j | A)).
        expect = 0.5 * np.log(2 * np.pi * np.e * cond_var(s, j, chosen))
        assert res.gains[t] == pytest.approx(expect, rel=1e-10)
        chosen.append(int(j))


def test_entropy_residual_trace_is_pivoted_cholesky_residual():
    """residual_variance * tr(Sigma) == tr(Sigma - L_k L_k^T) with L_k from a fresh Cholesky."""
    rng = np.random.default_rng(3)
    s = random_cov(20, rng)
    res = greedy_entropy(s, 10)
    total = np.trace(s)
    for k in range(1, 11):
        a = list(res.indices[:k])
        # L_k = Sigma[:, A] chol(Sigma_AA)^{-T}
        c = np.linalg.cholesky(s[np.ix_(a, a)])
        lk = np.linalg.solve(c, s[a, :]).T
        assert res.residual_variance[k - 1] * total == pytest.approx(
            np.trace(s - lk @ lk.T), rel=1e-9
        )
        # ...and equals the summed conditional variances of the rest (Lemma 1b).
        rest = [v for v in range(20) if v not in a]
        assert np.trace(s - lk @ lk.T) == pytest.approx(
            sum(cond_var(s, v, a) for v in rest), rel=1e-9
        )


def test_entropy_residual_is_non_increasing_and_above_eigen_tail():
    rng = np.random.default_rng(4)
    s = random_cov(25, rng)
    res = greedy_entropy(s, 25)
    assert np.all(np.diff(res.residual_variance) <= 1e-12)
    eig = np.sort(np.linalg.eigvalsh(s))[::-1]
    tail = 1 - np.cumsum(eig) / eig.sum()
    assert np.all(res.residual_variance >= tail - 1e-9)
    assert res.residual_variance[-1] == pytest.approx(0.0, abs=1e-9)


# ---------------------------------------------------------------------- MI
def brute_mi_gains(s, order):
    """0.5 [log sigma^2(v|A) - log sigma^2(v | V \\ A \\ v)] by direct solves."""
    n = s.shape[0]
    gains, chosen = [], []
    for v in order:
        rest = [u for u in range(n) if u not in chosen and u != v]
        gains.append(0.5 * (np.log(cond_var(s, v, chosen)) - np.log(cond_var(s, v, rest))))
        chosen.append(int(v))
    return np.array(gains)


def brute_mi_argmax(s, chosen):
    n = s.shape[0]
    best, best_gain = None, -np.inf
    for v in range(n):
        if v in chosen:
            continue
        rest = [u for u in range(n) if u not in chosen and u != v]
        g = 0.5 * (np.log(cond_var(s, v, chosen)) - np.log(cond_var(s, v, rest)))
        if g > best_gain:
            best, best_gain = v, g
    return best


@pytest.mark.parametrize(
    "kind", ["random", "ill1e5", "ill1e8"]
)
@pytest.mark.parametrize("method", ["downdate", "fresh"])
def test_mi_gains_equal_brute_force(kind, method):
    """Greedy MI gains match eq. 9 by brute force, and each pick is the brute-force argmax."""
    rng = np.random.default_rng(11)
    n = 24
    s = {
        "random": lambda: random_cov(n, rng),
        "ill1e5": lambda: ill_conditioned_cov(n, rng, 1e5),
        "ill1e8": lambda: ill_conditioned_cov(n, rng, 1e8),
    }[kind]()
    res = greedy_mi(s, 10, mi_method=method)
    np.testing.assert_allclose(res.gains, brute_mi_gains(s, res.indices), rtol=1e-6)
    chosen = []
    for j in res.indices:
        assert brute_mi_argmax(s, chosen) == j
        chosen.append(int(j))


@pytest.mark.parametrize("cond", [1e2, 1e4, 1e5])
def test_mi_downdate_matches_fresh_factorization_to_1e8(cond):
    """The O(N^2)-per-step downdate gives the same picks and gains (1e-8 rel) as refactorizing."""
    rng = np.random.default_rng(int(np.log10(cond)))
    s = ill_conditioned_cov(60, rng, cond)
    fast = greedy_mi(s, 30, mi_method="downdate")
    fresh = greedy_mi(s, 30, mi_method="fresh")
    np.testing.assert_array_equal(fast.indices, fresh.indices)
    np.testing.assert_allclose(fast.gains, fresh.gains, rtol=1e-8, atol=1e-12)
    # The downdate path is really exercised: fewer factorizations than steps.
    assert fast.n_refactorizations < fresh.n_refactorizations


@pytest.mark.parametrize("cond", [1e8, 1e11])
def test_mi_downdate_refactorizes_when_ill_conditioned(cond):
    """When cancellation would cost accuracy the downdate falls back to a fresh factorization."""
    rng = np.random.default_rng(5)
    s = ill_conditioned_cov(40, rng, cond)
    fast = greedy_mi(s, 20, mi_method="downdate")
    fresh = greedy_mi(s, 20, mi_method="fresh")
    np.testing.assert_array_equal(fast.indices, fresh.indices)
    np.testing.assert_allclose(fast.gains, fresh.gains, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("rank", [3, 10])
def test_mi_rank_deficient_matches_fresh_and_is_finite(rank):
    """Singular covariances: finite gains (variances clamped at a floor), same as fresh."""
    rng = np.random.default_rng(rank)
    s = rank_deficient_cov(30, rank, rng)
    fast = greedy_mi(s, 12, mi_method="downdate")
    fresh = greedy_mi(s, 12, mi_method="fresh")
    assert np.all(np.isfinite(fast.gains))
    np.testing.assert_array_equal(fast.indices, fresh.indices)
    np.testing.assert_allclose(fast.gains, fresh.gains, rtol=1e-8, atol=1e-12)
    # Once the rank is covered, nothing is left unexplained.
    assert fast.residual_variance[rank - 1] < 1e-6 or fast.residual_variance[-1] < 1e-6


def test_mi_first_pick_prefers_a_hub_over_an_outlier():
    """A variable correlated with everything beats an independent high-variance one under MI."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=2000)
    hub = z + 0.3 * rng.normal(size=2000)
    followers = [z + rng.normal(size=2000) for _ in range(5)]
    outlier = 3 * rng.normal(size=2000)
    s = np.cov(np.column_stack([outlier, hub, *followers]), rowvar=False)
    assert greedy_mi(s, 1).indices[0] == 1
    assert greedy_entropy(s, 1).indices[0] == 0


# ------------------------------------------------------------- constraints
def test_include_first_and_exclude_never():
    rng = np.random.default_rng(6)
    s = random_cov(12, rng)
    for objective in ("mi", "entropy", "random"):
        res = run_greedy(s, 6, objective=objective, include=[7, 2], exclude=[0, 1, 3], seed=1)
        assert list(res.indices[:2]) == [7, 2]
        assert not {0, 1, 3} & set(res.indices.tolist())
        assert len(set(res.indices.tolist())) == 6


def test_budget_never_exceeded_and_better_strategy_returned():
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = 15
        s = random_cov(n, rng)
        costs = rng.uniform(0.5, 5.0, size=n)
        budget = float(rng.uniform(3, 12))
        for objective in ("mi", "entropy"):
            res = run_greedy(s, objective=objective, costs=costs, budget=budget)
            assert costs[res.indices].sum() <= budget + 1e-9
            assert res.cost == pytest.approx(costs[res.indices].sum())
            assert res.strategy in ("cost-effective greedy", "best singleton")


def test_budget_picks_singleton_when_it_wins():
    """A cheap, weakly informative item has the best gain/cost ratio, but once bought
    the budget no longer fits an expensive, very informative one: best singleton wins."""
    rng = np.random.default_rng(8)
    base = rng.normal(size=(500, 1))
    weak = 0.3 * base + rng.normal(size=(500, 1))
    x = np.column_stack([base + 0.05 * rng.normal(size=(500, 6)), weak])
    s = np.cov(x, rowvar=False)
    costs = np.array([10.0] * 6 + [0.01])
    res = run_greedy(s, objective="mi", costs=costs, budget=10.0)
    assert res.strategy == "best singleton"
    assert len(res.indices) == 1 and res.indices[0] < 6


def test_budget_with_include_counts_included_cost():
    rng = np.random.default_rng(9)
    s = random_cov(10, rng)
    costs = np.arange(1, 11, dtype=float)
    res = run_greedy(s, objective="mi", include=[9], costs=costs, budget=15.0)
    assert res.indices[0] == 9
    assert costs[res.indices].sum() <= 15.0
    with pytest.raises(ValueError, match="more than the budget"):
        run_greedy(s, objective="mi", include=[9, 8], costs=costs, budget=15.0)


def test_target_residual_stops_at_first_k_reaching_it():
    rng = np.random.default_rng(10)
    s = random_cov(20, rng)
    full = greedy_entropy(s, 20)
    res = greedy_entropy(s, target_residual=0.3)
    k = int(np.argmax(full.residual_variance <= 0.3)) + 1
    assert len(res.indices) == k
    assert res.residual_variance[-1] <= 0.3
    assert res.stopped_by == "target_residual"


def test_random_is_seeded():
    rng = np.random.default_rng(12)
    s = random_cov(30, rng)
    a = random_selection(s, 10, seed=3).indices
    b = random_selection(s, 10, seed=3).indices
    c = random_selection(s, 10, seed=4).indices
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"k": 0}, "positive integer"),
        ({"k": 11}, "exceeds"),
        ({}, "give k"),
        ({"k": 2, "include": [1, 2, 3]}, "smaller than"),
        ({"k": 2, "include": [1], "exclude": [1]}, "both included and excluded"),
        ({"k": 2, "include": [10]}, "out of range"),
        ({"k": 2, "objective": "variance"}, "objective must be"),
        ({"budget": 3.0}, "needs per-item costs"),
        ({"k": 2, "target_residual": 1.5}, r"target_residual must be in \(0, 1\)"),
        ({"k": 2, "costs": [1.0] * 9}, "9 entries for 10"),
        ({"k": 2, "costs": [-1.0] * 10}, "positive"),
    ],
)
def test_bad_arguments_are_named(kwargs, match):
    s = np.eye(10)
    with pytest.raises(ValueError, match=match):
        run_greedy(s, **kwargs)


def test_bad_covariance_rejected():
    with pytest.raises(ValueError, match="square"):
        greedy_mi(np.ones((3, 4)), 1)
    with pytest.raises(ValueError, match="symmetric"):
        greedy_mi(np.array([[1.0, 0.5], [0.0, 1.0]]), 1)
    with pytest.raises(ValueError, match="NaN"):
        greedy_mi(np.array([[1.0, np.nan], [np.nan, 1.0]]), 1)


def test_mi_gains_on_rank_deficient_covariance_against_pseudo_inverse():
    """Rank-deficient Sigma: where the brute-force conditional variances (pseudo-inverse) are
    positive the gains match eq. 9 exactly; where an item is an exact linear function of the
    rest (brute-force gain +inf) the gain is finite but dominates every regular one."""
    rng = np.random.default_rng(21)
    f = rng.normal(size=(8, 3))
    full = random_cov(8, rng)
    s = np.zeros((16, 16))
    s[:8, :8] = f @ f.T  # rank 3
    s[8:, 8:] = full

    def pinv_cond_var(v, cond):
        cond = list(cond)
        if not cond:
            return s[v, v]
        sub = s[np.ix_(cond, cond)]
        return s[v, v] - s[v, cond] @ np.linalg.pinv(sub, rcond=1e-12) @ s[cond, v]

    res = greedy_mi(s, 10)
    assert np.all(np.isfinite(res.gains))
    chosen = []
    scale = np.trace(s) / 16
    for j, gain in zip(res.indices, res.gains):
        d = pinv_cond_var(j, chosen)
        rest = [u for u in range(16) if u not in chosen and u != j]
        c = pinv_cond_var(j, rest)
        if d > 1e-6 * scale and c > 1e-6 * scale:
            assert gain == pytest.approx(0.5 * (np.log(d) - np.log(c)), rel=1e-8)
        elif d > 1e-6 * scale:
            assert gain > 5.0  # +inf by brute force
        chosen.append(int(j))
    # The exactly dependent block is exhausted first (infinite gains), up to its rank.
    assert set(res.indices[:3].tolist()) <= set(range(8))


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(min_value=2, max_value=9),
    seed=st.integers(min_value=0, max_value=10**6),
    k=st.integers(min_value=1, max_value=9),
)
def test_property_greedy_matches_brute_force(n, seed, k):
    """For random SPD matrices: MI gains = eq. 9, entropy residual = Schur trace, both
    downdate and fresh MI agree."""
    rng = np.random.default_rng(seed)
    k = min(k, n)
    s = random_cov(n, rng, m=n + 3)
    mi = greedy_mi(s, k)
    np.testing.assert_allclose(mi.gains, brute_mi_gains(s, mi.indices), rtol=1e-7, atol=1e-10)
    np.testing.assert_array_equal(mi.indices, greedy_mi(s, k, mi_method="fresh").indices)
    ent = greedy_entropy(s, k)
    a = list(ent.indices)
    rest = [v for v in range(n) if v not in a]
    schur = sum(cond_var(s, v, a) for v in rest)
    assert ent.residual_variance[-1] * np.trace(s) == pytest.approx(schur, rel=1e-7, abs=1e-10)
