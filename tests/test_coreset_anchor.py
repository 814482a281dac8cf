"""Anchor points: k-medoids against brute force, and the two predictors against their formulas."""

import itertools

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from sklearn.linear_model import Ridge, RidgeCV

from benchsel.coreset import anchor
from benchsel.coreset.anchor import (
    AnchorPointsPredictor,
    AnchorPointsWeighted,
    anchor_points,
    dissimilarity,
    kmedoids,
)


def irt_scores(m=40, n=150, seed=0):
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=(m, 1))
    difficulty = rng.normal(size=(1, n))
    return (rng.random((m, n)) < 1 / (1 + np.exp(-1.5 * (ability - difficulty)))).astype(float)


def objective(points, medoids, metric):
    return dissimilarity(points, points[medoids], metric).min(axis=1).sum()


def brute_force_optimum(points, k, metric):
    d = dissimilarity(points, points, metric)
    np.fill_diagonal(d, 0.0)
    return min(d[:, list(c)].min(axis=1).sum()
               for c in itertools.combinations(range(len(points)), k))


def test_dissimilarity_is_one_minus_correlation_or_euclidean():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 7)), rng.normal(size=(4, 7))
    np.testing.assert_allclose(dissimilarity(a, b, "correlation"),
                               cdist(a, b, "correlation"), atol=1e-12)
    np.testing.assert_allclose(dissimilarity(a, b, "euclidean"), cdist(a, b), atol=1e-10)
    # A constant row correlates with nothing: dissimilarity 1, as in the reference code.
    np.testing.assert_allclose(dissimilarity(np.ones((1, 7)), b, "correlation"), 1.0)
    with pytest.raises(ValueError, match="metric must be one of correlation, euclidean"):
        dissimilarity(a, b, "cosine")


@pytest.mark.parametrize("metric", ["euclidean", "correlation"])
def test_kmedoids_finds_the_brute_force_optimum_of_separated_clusters(metric):
    rng = np.random.default_rng(1)
    centres = rng.normal(scale=6.0, size=(3, 6))
    points = np.repeat(centres, 5, axis=0) + rng.normal(size=(15, 6))
    result = kmedoids(points, 3, metric=metric, rng=rng)
    assert result.objective == pytest.approx(brute_force_optimum(points, 3, metric))
    assert result.objective == pytest.approx(objective(points, result.medoids, metric))


@pytest.mark.parametrize("metric", ["euclidean", "correlation"])
def test_kmedoids_is_never_better_than_brute_force_and_is_swap_optimal(metric):
    rng = np.random.default_rng(2)
    points = rng.normal(size=(12, 4))
    result = kmedoids(points, 3, metric=metric, rng=rng, n_init=1)
    assert result.objective >= brute_force_optimum(points, 3, metric) - 1e-9
    # PAM's local optimum: no single medoid/non-medoid swap lowers the objective.
    for i, c in itertools.product(range(3), range(12)):
        if c not in result.medoids:
            swapped = result.medoids.copy()
            swapped[i] = c
            assert objective(points, swapped, metric) >= result.objective - 1e-9


@pytest.mark.parametrize("sample_size", [2000, 30])  # dense PAM, and CLARA + refinement
def test_each_medoid_minimizes_its_clusters_dissimilarity_and_labels_are_nearest(sample_size):
    rng = np.random.default_rng(3)
    points = rng.normal(size=(120, 5))
    result = kmedoids(points, 6, metric="euclidean", rng=rng, sample_size=sample_size)
    d = dissimilarity(points, points, "euclidean")
    np.testing.assert_array_equal(result.labels, d[:, result.medoids].argmin(axis=1))
    assert result.objective == pytest.approx(d[:, result.medoids].min(axis=1).sum())
    for c, medoid in enumerate(result.medoids):
        members = np.flatnonzero(result.labels == c)
        within = d[np.ix_(members, members)].sum(axis=1)
        assert within[members == medoid][0] == pytest.approx(within.min())


def test_restricted_medoid_candidates_still_never_raise_the_objective():
    rng = np.random.default_rng(4)
    points = rng.normal(size=(300, 4))
    exact = kmedoids(points, 4, metric="euclidean", rng=np.random.default_rng(0),
                     sample_size=40, max_candidates=1000)
    capped = kmedoids(points, 4, metric="euclidean", rng=np.random.default_rng(0),
                      sample_size=40, max_candidates=5)
    # Same CLARA start; the capped refinement explores less but stays consistent.
    assert capped.objective >= exact.objective - 1e-9
    assert capped.objective == pytest.approx(objective(points, capped.medoids, "euclidean"))


def test_duplicate_rows_are_merged_with_their_weight():
    rng = np.random.default_rng(5)
    base = rng.normal(size=(10, 3))
    counts = rng.integers(1, 4, size=10)
    repeated = np.repeat(base, counts, axis=0)
    merged = kmedoids(base, 3, metric="euclidean", weights=counts, rng=np.random.default_rng(0))
    full = kmedoids(repeated, 3, metric="euclidean", rng=np.random.default_rng(0))
    assert full.objective == pytest.approx(merged.objective)
    np.testing.assert_array_equal(repeated[full.medoids], base[merged.medoids])
    with pytest.raises(ValueError, match=r"n_clusters must be in \[1, 10\].*got 11"):
        kmedoids(repeated, 11, metric="euclidean")
    # Every constant question is the same point under the correlation metric.
    constant = np.vstack([np.zeros((3, 4)), np.ones((2, 4)), rng.normal(size=(2, 4))])
    with pytest.raises(ValueError, match=r"\[1, 3\].*correlation metric\); got 4"):
        kmedoids(constant, 4, metric="correlation")


def test_kmedoids_validates_its_arguments():
    points = np.random.default_rng(0).normal(size=(8, 2))
    with pytest.raises(ValueError, match="weights must be positive"):
        kmedoids(points, 2, weights=np.zeros(8))
    with pytest.raises(ValueError, match="n_init must be an integer >= 1; got 0"):
        kmedoids(points, 2, n_init=0)
    with pytest.raises(ValueError, match="finite 2-D array"):
        kmedoids(np.full((3, 2), np.nan), 1)


def test_anchor_points_weights_are_cluster_shares_of_the_questions():
    x = irt_scores()
    selected, weights, result = anchor_points(x, 10, rng=np.random.default_rng(0))
    assert np.all(np.diff(selected) > 0) and len(selected) == 10
    assert weights.sum() == pytest.approx(1.0)
    order = np.argsort(result.medoids)
    np.testing.assert_array_equal(selected, result.medoids[order])
    sizes = np.bincount(result.labels, minlength=10)[order]
    np.testing.assert_allclose(weights, sizes / x.shape[1])


def test_weighted_prediction_is_the_cluster_weighted_coreset_mean():
    x = irt_scores(seed=1)
    method = AnchorPointsWeighted(n_questions=12, random_state=0).fit(x[:30])
    sub = x[30:][:, method.selected_]
    mean, sd = method.predict(sub)
    np.testing.assert_allclose(mean, sub @ method.weights_)
    src_err = x[:30][:, method.selected_] @ method.weights_ - x[:30].mean(axis=1)
    np.testing.assert_allclose(sd, np.sqrt(np.mean(src_err**2)))


def test_predictor_is_ridge_on_the_rest_mean_combined_as_in_eq_12():
    x = irt_scores(seed=2)
    src, tgt = x[:30], x[30:]
    method = AnchorPointsPredictor(n_questions=12, random_state=0).fit(src)
    a = method.selected_
    rest = np.setdiff1d(np.arange(x.shape[1]), a)
    ridge = RidgeCV(alphas=np.logspace(-3, 3, 13)).fit(src[:, a], src[:, rest].mean(axis=1))
    want = (len(rest) * ridge.predict(tgt[:, a]) + 12 * tgt[:, a].mean(axis=1)) / x.shape[1]
    mean, sd = method.predict(tgt[:, a])
    np.testing.assert_allclose(mean, want)
    assert np.all(sd > 0)
    # Eq. 11's multi-output regression onto every other question, averaged, is the same.
    multi = Ridge(alpha=ridge.alpha_).fit(src[:, a], src[:, rest])
    np.testing.assert_allclose(multi.predict(tgt[:, a]).mean(axis=1), ridge.predict(tgt[:, a]))


@pytest.mark.parametrize("cls", anchor.METHODS)
def test_methods_honour_the_contract_and_validate(cls):
    x = irt_scores(seed=3)
    method = cls(n_questions=15, random_state=0).fit(x[:30])
    assert len(np.unique(method.selected_)) == 15
    mean, sd = method.predict(x[30:][:, method.selected_])
    assert mean.shape == sd.shape == (10,) and np.all(np.isfinite(mean))
    with pytest.raises(ValueError, match=r"x_selected must have shape \(models, 15\)"):
        method.predict(x[30:, :14])
    with pytest.raises(ValueError, match=r"n_questions must be in \[1, 149\]; got 150"):
        cls(n_questions=150, random_state=0).fit(x[:30])
    with pytest.raises(ValueError, match="complete and finite"):
        cls(n_questions=5, random_state=0).fit(np.where(x[:30] > 0, np.nan, 0.0))
    with pytest.raises(ValueError, match="metric must be one of"):
        cls(metric="manhattan", n_questions=5, random_state=0).fit(x[:30])


@pytest.mark.parametrize("sample_size", [2000, 30])  # dense PAM, and CLARA + refinement
def test_a_constant_question_is_one_from_itself_and_never_a_free_medoid(sample_size):
    """It correlates with nothing, itself included (dissimilarity 1, as in the reference
    code): as a medoid it does not even cover itself, and PAM does not spend a medoid on
    it. (It can still be a medoid of anti-correlated questions, whose dissimilarity to
    every other medoid exceeds 1: CLARA's refinement of a small sample keeps it then.)"""
    x = irt_scores(m=30, n=60, seed=9).T  # one row per question
    x[7] = 0.0  # every source model misses question 7
    for seed in range(5):
        result = kmedoids(x, 8, metric="correlation", rng=np.random.default_rng(seed),
                          sample_size=sample_size)
        if sample_size > 60:
            assert 7 not in result.medoids
        # The objective counts the constant medoid's own dissimilarity, 1.
        assert result.objective == pytest.approx(objective(x, result.medoids, "correlation"))
    result = kmedoids(x, 8, metric="correlation", rng=np.random.default_rng(0), n_init=1)
    for i, c in itertools.product(range(8), range(60)):  # swap-optimal under that objective
        if c not in result.medoids:
            swapped = result.medoids.copy()
            swapped[i] = c
            assert objective(x, swapped, "correlation") >= result.objective - 1e-9
