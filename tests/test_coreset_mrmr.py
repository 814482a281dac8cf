"""mRMR question selection: MI estimators against slow references, greedy against brute force."""

import numpy as np
import pytest
from scipy.special import digamma
from sklearn.feature_selection import mutual_info_regression

from benchsel.coreset.mrmr import (
    METHODS,
    MRMR,
    MRMRMID,
    binary_mi,
    ksg_mi,
    mrmr_greedy,
    mrmr_select,
    ross_mi,
)


def irt_scores(m=60, n=120, seed=0):
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=(m, 1))
    difficulty = rng.normal(size=(1, n))
    return (rng.random((m, n)) < 1 / (1 + np.exp(-1.5 * (ability - difficulty)))).astype(float)


def ross_loop(labels, y, k):
    """Ross (2014), one column, one sample at a time (singletons left out, k capped)."""
    m = len(y)
    keep = np.array([np.sum(labels == labels[i]) > 1 for i in range(m)])
    if not keep.any():
        return 0.0
    psi_nx, psi_k, psi_m = [], [], []
    for i in np.flatnonzero(keep):
        same = np.flatnonzero((labels == labels[i]) & keep)
        same = same[same != i]
        k_i = min(k, len(same))
        d = np.sort(np.abs(y[same] - y[i]))[k_i - 1]
        others = np.flatnonzero(keep)
        others = others[others != i]
        psi_nx.append(digamma(len(same) + 1))
        psi_k.append(digamma(k_i))
        psi_m.append(digamma(np.sum(np.abs(y[others] - y[i]) <= d)))
    mi = digamma(keep.sum()) - np.mean(psi_nx) + np.mean(psi_k) - np.mean(psi_m)
    return max(0.0, mi)


def ross_data(seed=0, m=70, n=40):
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=(m, 1))
    y = ability[:, 0] + 0.3 * rng.normal(size=m)
    logit = 2 * (ability - rng.normal(size=(1, n)))
    x = (rng.random((m, n)) < 1 / (1 + np.exp(-logit))).astype(float)
    x[:, 0] = 0.0
    x[5, 0] = 1.0  # a lone correct answer
    x[:, 1] = 0.0
    x[[2, 9, 30], 1] = 1.0  # a class smaller than k
    x[:, 2] = 1.0  # constant
    x[:, 3] = 1.0
    x[11, 3] = 0.0  # a lone wrong answer
    return x, y


@pytest.mark.parametrize("k", [1, 3, 5])
def test_ross_vectorized_equals_per_column_loop(k):
    x, y = ross_data(seed=k)
    want = np.array([ross_loop(x[:, j], y, k) for j in range(x.shape[1])])
    np.testing.assert_allclose(ross_mi(x, y, k), want, atol=1e-12)
    assert np.count_nonzero(want > 0.05) > 10  # the data carry signal, not just zeros


def test_ross_handles_tied_targets():
    x, y = ross_data(seed=3)
    y = np.round(4 * y) / 4  # many models share a mean; quarters keep distances exact
    want = np.array([ross_loop(x[:, j], y, 5) for j in range(x.shape[1])])
    got = ross_mi(x, y, 5)
    np.testing.assert_allclose(got, want, atol=1e-12)
    assert np.all(np.isfinite(got))


def test_ross_matches_scikit_learn():
    x, y = ross_data(seed=7)
    got = ross_mi(x, y, 5)
    ref = mutual_info_regression(x, y, discrete_features=True, n_neighbors=5, random_state=0)
    # scikit-learn rescales y, adds 1e-10 noise and takes the k-th distance from one
    # neighbour search but counts with another (sqrt of squares), so a count at the
    # boundary can move by one: close, not equal.
    np.testing.assert_allclose(got, ref, atol=1e-2)
    assert np.mean(np.abs(got - ref)) < 2e-3
    assert np.corrcoef(got, ref)[0, 1] > 0.99


def test_binary_mi_equals_entropy_formula_on_counted_table():
    rng = np.random.default_rng(1)
    x = (rng.random((37, 25)) < rng.random(25)).astype(float)
    x[:, 4] = 1.0
    x[:, 5] = x[:, 0]  # identical to v: MI = H(v)
    v = x[:, 0]
    want = []
    for j in range(x.shape[1]):
        table = np.zeros((2, 2))
        for a, b in zip(v.astype(int), x[:, j].astype(int)):
            table[a, b] += 1
        p = table / table.sum()
        pa, pb = p.sum(axis=1), p.sum(axis=0)

        def h(q):
            q = q[q > 0]
            return -np.sum(q * np.log(q))

        want.append(h(pa) + h(pb) - h(p.ravel()))
    got = binary_mi(x, v)
    np.testing.assert_allclose(got, want, atol=1e-12)
    assert got[4] == pytest.approx(0.0, abs=1e-12)
    p1 = v.mean()
    assert got[5] == pytest.approx(-p1 * np.log(p1) - (1 - p1) * np.log(1 - p1))


def ksg_loop(x, y, k, correction, alpha=0.25):
    """KSG estimator 1 (+ Gao et al.'s correction), one sample at a time."""
    m = len(y)
    pts = np.column_stack([x, y])
    total, corr = 0.0, 0.0
    for i in range(m):
        d = np.max(np.abs(pts - pts[i]), axis=1)
        d[i] = np.inf
        near = np.argsort(d)[:k]
        eps = d[near].max()
        n_x = np.sum(np.abs(x - x[i]) < eps) - 1
        n_y = np.sum(np.abs(y - y[i]) < eps) - 1
        total += digamma(n_x + 1) + digamma(n_y + 1)
        rel = pts[near] - pts[i]
        _, vecs = np.linalg.eigh(rel.T @ rel / k)
        log_pca = np.sum(np.log(np.abs(rel @ vecs).max(axis=0)))
        log_box = np.sum(np.log(np.abs(rel).max(axis=0)))
        if log_pca - log_box < np.log(alpha):
            corr += log_box - log_pca
    mi = digamma(k) + digamma(m) - total / m
    if correction:
        mi += corr / m
    return max(0.0, mi)


@pytest.mark.parametrize("correction", [False, True])
def test_ksg_vectorized_equals_per_sample_loop(correction):
    rng = np.random.default_rng(2)
    m = 60
    y = rng.normal(size=m)
    x = np.column_stack([y + s * rng.normal(size=m) for s in (0.05, 0.3, 1.0, 5.0)]
                        + [y**2 + 0.01 * rng.normal(size=m)])
    want = [ksg_loop(x[:, j], y, 4, correction) for j in range(x.shape[1])]
    np.testing.assert_allclose(ksg_mi(x, y, 4, correction=correction), want, atol=1e-10)


def test_lnc_correction_raises_estimates_for_strong_dependence():
    rng = np.random.default_rng(3)
    y = rng.normal(size=80)
    x = (y + 0.01 * rng.normal(size=80))[:, None]
    plain = ksg_mi(x, y, 8, correction=False)[0]
    corrected = ksg_mi(x, y, 8)[0]
    truth = -0.5 * np.log(1 - 1 / (1 + 0.01**2))
    assert plain < corrected < truth + 0.5


@pytest.mark.parametrize("rho", [0.0, 0.6, 0.9])
def test_ksg_recovers_gaussian_mutual_information(rho):
    rng = np.random.default_rng(4)
    z = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=1500)
    truth = -0.5 * np.log(1 - rho**2)
    for correction in (False, True):
        assert ksg_mi(z[:, :1], z[:, 1], 8, correction=correction)[0] == pytest.approx(
            truth, abs=0.04)


def brute_force_mrmr(x, relevance, n, scheme):
    """Greedy mRMR recomputing every pairwise MI from counted 2 x 2 tables."""

    def mi(a, b):
        total = 0.0
        for u in (0, 1):
            for v in (0, 1):
                p_ab = np.mean((a == u) & (b == v))
                if p_ab > 0:
                    total += p_ab * np.log(p_ab / (np.mean(a == u) * np.mean(b == v)))
        return total

    chosen = [int(np.argmax(relevance))]
    while len(chosen) < n:
        best, best_score = None, -np.inf
        for j in range(x.shape[1]):
            if j in chosen:
                continue
            red = np.mean([mi(x[:, j], x[:, c]) for c in chosen])
            score = relevance[j] / (red + 1e-10) if scheme == "miq" else relevance[j] - red
            if score > best_score:
                best, best_score = j, score
        chosen.append(best)
    return chosen


@pytest.mark.parametrize("scheme", ["miq", "mid"])
def test_greedy_equals_brute_force(scheme):
    x = irt_scores(m=45, n=30, seed=5)
    relevance = ross_mi(x, x.mean(axis=1), 3)
    want = brute_force_mrmr(x, relevance, 10, scheme)
    got = mrmr_greedy(relevance, lambda c: binary_mi(x, x[:, c]), 10, scheme)
    assert got.selected.tolist() == want
    assert got.gains[0] == relevance[want[0]]
    assert got.redundancy[0] == 0.0 and np.all(got.redundancy[1:] >= 0)


def test_redundancy_steers_away_from_duplicates():
    x = irt_scores(m=60, n=80, seed=7)
    x[:, 40:60] = x[:, 0:20]  # duplicates: as relevant as their twins, fully redundant
    y = x.mean(axis=1)

    def twin_pairs(picks):
        return sum(1 for j in picks if j < 20 and j + 40 in picks)

    top = np.argsort(-ross_mi(x, y, 5), kind="stable")[:10].tolist()
    assert twin_pairs(top) >= 3  # relevance alone would take several pairs
    for scheme in ("miq", "mid"):
        picks = mrmr_select(x, y, 10, scheme=scheme).selected.tolist()
        first_twin = picks[0] + 40 if picks[0] < 20 else picks[0] - 40
        assert picks[1] != first_twin
        assert twin_pairs(picks) < twin_pairs(top)


def test_mrmr_select_zeroes_relevance_of_rare_answer_questions():
    x = irt_scores(m=50, n=40, seed=8)
    y = x.mean(axis=1) + 1e-3 * np.random.default_rng(0).normal(size=50)
    x[:, 0] = (y >= np.sort(y)[-5]).astype(float)  # only the 5 best right: too few for k = 5
    sel = mrmr_select(x, y, 5)
    assert ross_mi(x[:, :1], y, 5)[0] > 0 and sel.relevance[0] == 0.0
    ones = x.sum(axis=0)
    usable = np.minimum(ones, 50 - ones) >= 6
    np.testing.assert_array_equal(sel.relevance[usable], ross_mi(x, y, 5)[usable])
    assert np.all(sel.relevance[~usable] == 0.0)


def test_methods_fit_predict_and_registry_names():
    x = irt_scores(m=70, n=150, seed=9)
    assert [cls.name for cls in METHODS] == ["mrmr", "mrmr-mid"]
    for cls in METHODS:
        method = cls(n_questions=20, random_state=0).fit(x[:50])
        assert len(set(method.selected_.tolist())) == 20
        mean, sd = method.predict(x[50:, method.selected_])
        assert mean.shape == (20,) and np.all(np.isfinite(mean))
        assert np.all(sd == method.sd_) and method.sd_ > 0
        # The ridge is fitted to the source models' full-benchmark means.
        loo = method.model_.loo_residuals
        assert np.sqrt(np.mean(loo**2)) == pytest.approx(method.sd_)
    assert MRMR().scheme == "miq" and MRMRMID().scheme == "mid"


def test_continuous_scores_use_ksg_and_work():
    rng = np.random.default_rng(10)
    ability = rng.normal(size=(40, 1))
    x = 1 / (1 + np.exp(-(ability - rng.normal(size=(1, 60))))) + 0.05 * rng.normal(size=(40, 60))
    x[:, :5] = np.round(x[:, :5], 1)  # ties, broken by the method's jitter
    method = MRMR(n_questions=8, random_state=0).fit(x[:30])
    assert len(set(method.selected_.tolist())) == 8
    assert method.selection_.relevance.max() > 0.2
    mean, _ = method.predict(x[30:, method.selected_])
    assert np.all(np.isfinite(mean))


def test_bad_input_raises():
    x = irt_scores(m=20, n=30)
    with pytest.raises(ValueError, match=r"n_questions must be in \[1, 29\]; got 30"):
        MRMR(n_questions=30, random_state=0).fit(x)
    with pytest.raises(ValueError, match=r"n_questions must be in \[1, 29\]; got 0"):
        MRMR(n_questions=0, random_state=0).fit(x)
    bad = x.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        MRMR(n_questions=5, random_state=0).fit(bad)
    with pytest.raises(ValueError, match="at least 3 source models"):
        MRMR(n_questions=5, random_state=0).fit(x[:2])
    with pytest.raises(ValueError, match="scheme must be one of miq, mid; got 'max'"):
        MRMR(scheme="max", n_questions=5, random_state=0).fit(x)
    with pytest.raises(ValueError, match="k must be >= 1; got 0"):
        ross_mi(x, x.mean(axis=1), 0)
    with pytest.raises(ValueError, match=r"k must be in \[1, 19\]"):
        ksg_mi(x, x.mean(axis=1), 20)
    with pytest.raises(ValueError, match=r"x_selected must have shape \(models, 5\)"):
        MRMR(n_questions=5, random_state=0).fit(x).predict(x[:, :4])


def test_tied_models_do_not_zero_the_relevance():
    x = irt_scores(m=60, n=80, seed=11)
    x[:20] = x[0]  # a block of models that answer alike: 20 tied full-benchmark means
    y = x.mean(axis=1)
    raw = ross_mi(x, y, 5)
    sel = mrmr_select(x, y, 5)
    assert np.count_nonzero(sel.relevance) > 2 * np.count_nonzero(raw)
    assert np.mean(sel.relevance) > 2 * np.mean(raw)
