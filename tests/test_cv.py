"""Cross-validation bookkeeping: folds, leakage, metrics against hand-computed values."""

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from benchsel import DataWarning, ScoreMatrix, load_dataset
from benchsel.cli import main
from benchsel.evaluation import (
    cross_validate,
    dated,
    extrapolate,
    frontier,
    gaussian_entropy,
    gaussian_mutual_information,
    interval_coverage,
    kfold_with_holdout,
    nogueira_stability,
    r2_against_zero,
)
from benchsel.names import DEFAULT_PREDICTOR
from benchsel.splits import frontier_split, paper_kfold


def low_rank_scores(m, n, rng, missing=0.0, noise=0.3):
    f = rng.normal(size=(m, 2)) @ rng.normal(size=(2, n)) + noise * rng.normal(size=(m, n))
    x = 50 + 10 * f
    if missing:
        x[rng.random(x.shape) < missing] = np.nan
    return ScoreMatrix(x, [f"m{i}" for i in range(m)], [f"b{j}" for j in range(n)], source="syn")


@pytest.mark.parametrize("m, folds", [(100, 10), (103, 10), (27, 4)])
@pytest.mark.parametrize("holdout", [0.1, 0.2, 0.5, 0.9])
def test_folds_are_balanced_disjoint_and_sized(m, folds, holdout):
    splits = kfold_with_holdout(m, folds, holdout, seed=1)
    sizes = [f.validation.size for f in splits]
    assert max(sizes) - min(sizes) <= 1
    allval = np.concatenate([f.validation for f in splits])
    assert sorted(allval.tolist()) == list(range(m))  # each model validated exactly once
    for f in splits:
        assert not set(f.train.tolist()) & set(f.validation.tolist())
        pool = m - f.validation.size
        # floor((1 - p) M) in exact arithmetic (0.1 * 100 is not 10 in floats)
        exact = math.floor((1 - Fraction(str(holdout))) * m)
        assert f.train.size == min(exact, pool)
        assert len(set(f.train.tolist())) == f.train.size


def test_folds_are_reproducible_and_seed_dependent():
    a = kfold_with_holdout(50, 5, 0.5, seed=3)
    b = kfold_with_holdout(50, 5, 0.5, seed=3)
    c = kfold_with_holdout(50, 5, 0.5, seed=4)
    assert all(np.array_equal(x.train, y.train) for x, y in zip(a, b))
    assert not all(np.array_equal(x.validation, y.validation) for x, y in zip(a, c))


def test_fold_argument_errors():
    with pytest.raises(ValueError, match="cannot make 10 folds from 5 models"):
        kfold_with_holdout(5, 10)
    with pytest.raises(ValueError, match=r"holdout must be in \(0, 1\)"):
        kfold_with_holdout(50, 5, 1.0)


def test_r2_against_zero_by_hand():
    y = np.array([1.0, -2.0, 3.0])
    pred = np.array([0.5, -1.0, 2.0])
    # SSE = 0.25 + 1 + 1 = 2.25; sum y^2 = 14
    assert r2_against_zero(y, pred) == pytest.approx(1 - 2.25 / 14)
    assert r2_against_zero(y, np.zeros(3)) == 0.0
    with pytest.raises(ValueError, match="undefined"):
        r2_against_zero(np.zeros(0), np.zeros(0))


def test_interval_coverage_by_hand():
    y = np.array([0.0, 1.0, 2.0, 3.0])
    # 90% half-width of std 1 is 1.645: covers |y - 0| <= 1.645 -> 0, 1
    assert interval_coverage(y, np.zeros(4), np.ones(4), 0.9) == 0.5


def test_nogueira_stability_by_hand():
    assert nogueira_stability([[0, 1], [0, 1], [1, 0]], 5) == pytest.approx(1.0)
    # Two disjoint sets of size 1 out of 2 items: p = (0.5, 0.5), s^2 = 2 * 0.25 = 0.5,
    # kbar/d = 0.5 -> expected 0.25 -> Phi = 1 - 0.5 / 0.25 = -1.
    assert nogueira_stability([[0], [1]], 2) == pytest.approx(-1.0)
    rng = np.random.default_rng(0)
    random_sets = [rng.choice(100, 10, replace=False) for _ in range(200)]
    assert abs(nogueira_stability(random_sets, 100)) < 0.05


def test_gaussian_entropy_and_mi_by_formula():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(6, 6))
    s = a @ a.T + np.eye(6)
    sel = [4, 1]
    sub = s[np.ix_(sel, sel)]
    assert gaussian_entropy(s, sel) == pytest.approx(
        0.5 * np.log(np.linalg.det(2 * np.pi * np.e * sub))
    )
    rest = [0, 2, 3, 5]
    want = 0.5 * np.log(
        np.linalg.det(sub) * np.linalg.det(s[np.ix_(rest, rest)]) / np.linalg.det(s)
    )
    assert gaussian_mutual_information(s, sel) == pytest.approx(want)


def test_no_leakage_selection_depends_only_on_training_models():
    """Changing the validation models' scores of a fold leaves that fold's selection unchanged
    (covariance and standardization come from the training models only), but changes R^2."""
    rng = np.random.default_rng(2)
    scores = low_rank_scores(60, 12, rng, missing=0.2)
    base = cross_validate(scores, objectives=("mi",), k_max=4, folds=5, seed=7,
                          predictor="gaussian")
    fold0 = kfold_with_holdout(60, 5, 0.1, seed=7)[0]
    changed = scores.values.copy()
    changed[fold0.validation] += rng.normal(0, 30, size=changed[fold0.validation].shape)
    other = cross_validate(
        ScoreMatrix(changed, scores.models, scores.items), objectives=("mi",), k_max=4,
        folds=5, seed=7, predictor="gaussian",
    )
    assert base.orders["mi"][0] == other.orders["mi"][0]
    assert base.r2["mi"][0, 3] != pytest.approx(other.r2["mi"][0, 3])


def test_cv_r2_matches_a_hand_computed_fold():
    """Fold 0's R^2 at k=2 recomputed from scratch: training-only standardization,
    EM-free pairwise covariance on complete data, ridge 1e-2 solve, clipping."""
    rng = np.random.default_rng(3)
    scores = low_rank_scores(40, 6, rng)
    res = cross_validate(scores, objectives=("entropy",), k_max=2, folds=4, seed=5,
                         predictor="gaussian")
    fold = kfold_with_holdout(40, 4, 0.1, seed=5)[0]
    x = scores.values
    mu = x[fold.train].mean(axis=0)
    sd = x[fold.train].std(axis=0, ddof=1)
    zt = (x[fold.train] - mu) / sd
    zv = np.clip((x[fold.validation] - mu) / sd, -10, 10)
    sigma = np.cov(zt, rowvar=False)
    w, v = np.linalg.eigh(sigma)
    sigma = (v * np.maximum(w, 1e-3)) @ v.T
    sel = [scores.items.index(name) for name in res.orders["entropy"][0][:2]]
    rest = [j for j in range(6) if j not in sel]
    reg = np.linalg.solve(sigma[np.ix_(sel, sel)] + 1e-2 * np.eye(2), sigma[np.ix_(sel, rest)])
    pred = zv[:, sel] @ reg  # training mean is 0 after standardization
    y = zv[:, rest]
    assert res.r2["entropy"][0, 1] == pytest.approx(1 - np.sum((y - pred) ** 2) / np.sum(y**2))


def test_cv_on_low_rank_data_is_accurate_and_calibrated():
    rng = np.random.default_rng(4)
    scores = low_rank_scores(300, 15, rng, missing=0.1, noise=0.2)
    res = cross_validate(scores, k_max=5, folds=5, covariance="em", predictor="gaussian")
    shrunk = cross_validate(scores, k_max=5, folds=5, covariance="em-shrink", predictor="gaussian")
    for obj in ("mi", "entropy", "random"):
        row = res.row(obj, 5)
        assert row.r2_mean > 0.85
        # The paper's EM is the MLE: its intervals are calibrated on Gaussian data...
        assert 0.85 <= row.interval_coverage <= 0.95
        # ...while shrinking correlations makes them conservative, never too narrow.
        assert row.interval_coverage < shrunk.row(obj, 5).interval_coverage <= 0.99
    assert res.row("mi", 5).stability > res.row("random", 5).stability
    # residual variance falls with k
    rv = [res.row("mi", k).residual_variance for k in range(1, 6)]
    assert all(a > b for a, b in zip(rv, rv[1:]))


def test_parallel_folds_give_identical_results():
    scores = load_dataset("helm_lite")
    serial = cross_validate(scores, k_max=3, folds=5, n_jobs=1, predictor="gaussian")
    parallel = cross_validate(scores, k_max=3, folds=5, n_jobs=2, predictor="gaussian")
    for obj in ("mi", "entropy", "random"):
        np.testing.assert_allclose(serial.r2[obj], parallel.r2[obj], rtol=1e-12)
        assert serial.orders[obj] == parallel.orders[obj]


def test_cli_evaluate_json_schema(capsys):
    code = main(["evaluate", "helm_lite", "--folds", "5", "--k-max", "3", "--predictor",
                 "gaussian", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["protocol"] == "cv" and out["folds"] == 5 and out["holdout"] == 0.1
    assert out["seconds"] > 0
    keys = {"objective", "k", "r2_mean", "r2_std", "residual_variance", "interval_coverage"}
    assert len(out["results"]) == 9
    for row in out["results"]:
        assert keys <= set(row)
        assert np.isfinite(row["r2_mean"])


def test_strength_split_takes_weakest_half_and_strongest_30_percent():
    from benchsel.evaluation import model_strength, strength_split

    rng = np.random.default_rng(6)
    scores = low_rank_scores(40, 5, rng, missing=0.2)
    fold = strength_split(scores.values)
    strength = model_strength(scores.values)
    assert fold.train.size == 20 and fold.validation.size == 12
    assert not set(fold.train.tolist()) & set(fold.validation.tolist())
    assert strength[fold.train].max() <= strength[fold.validation].min()
    # by hand: strength is the mean z-score over the observed cells of a row
    z = (scores.values - np.nanmean(scores.values, 0)) / np.nanstd(scores.values, 0, ddof=1)
    np.testing.assert_allclose(strength, np.nanmean(z, axis=1), rtol=1e-12)
    with pytest.raises(ValueError, match="must not add up to more than 1"):
        strength_split(scores.values, 0.8, 0.3)


def test_extrapolate_evaluates_strong_models_with_weak_ones_fitted():
    from benchsel.evaluation import extrapolate

    scores = load_dataset("mteb")
    res = extrapolate(scores, objectives=("mi", "random"), k_max=3, predictor="gaussian")
    assert res.protocol == "extrapolation" and res.folds == 1
    row = res.row("mi", 3)
    assert np.isnan(row.r2_std) and np.isnan(row.stability)
    assert 0 < row.interval_coverage < 1
    out = res.to_dict()
    json.dumps(out, allow_nan=False)
    assert out["protocol"] == "extrapolation"
    assert out["results"][0]["r2_std"] is None


def test_predict_flags_models_outside_the_fitted_range():
    from benchsel import GaussianModel

    data = load_dataset("mteb")
    model = GaussianModel().fit(data)
    frame = data.to_frame()
    typical = {c: float(frame[c].median()) for c in ("STS15", "MassiveIntentClassification")}
    beyond = {c: float(frame[c].max()) + 0.02 for c in typical}
    flags = model.predict(typical, method="gaussian").extrapolation[0]
    assert not flags["flag"] and 20 < flags["strength_percentile"] < 80
    flags = model.predict(beyond, method="gaussian").extrapolation[0]
    assert flags["flag"] and flags["items_above_training_max"] == 2
    assert flags["strength_percentile"] == 100.0


def test_cli_evaluate_extrapolation(capsys):
    assert main(["evaluate", "helm_lite", "--protocol", "extrapolation", "--k-max", "2",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["protocol"] == "extrapolation" and len(out["results"]) == 6


def test_extrapolation_never_fits_on_the_strong_models():
    """On the extrapolation split, changing the strong (test) models' scores leaves the
    selection (fitted on the weak models only) unchanged; only the errors move."""
    from benchsel.evaluation import strength_split
    from benchsel.evaluation.cv import _evaluate

    rng = np.random.default_rng(8)
    scores = low_rank_scores(50, 8, rng, missing=0.1)
    split = strength_split(scores.values)
    assert split.train.size == 25 and split.validation.size == 15
    boosted = scores.values.copy()
    boosted[split.validation] += rng.normal(0, 5, size=boosted[split.validation].shape)
    runs = [
        _evaluate(s, [split], "extrapolation", 0.5, ("mi",), 3, "auto", 1e-2, 10.0, 0.9, 0, 1)
        for s in (scores, ScoreMatrix(boosted, scores.models, scores.items))
    ]
    assert runs[0].orders == runs[1].orders
    assert runs[0].row("mi", 3).r2_mean != pytest.approx(runs[1].row("mi", 3).r2_mean)


def test_oracle_on_small_synthetic_data():
    from itertools import combinations

    from benchsel.evaluation import oracle_subsets
    from benchsel.evaluation.oracle import _FoldScorer

    rng = np.random.default_rng(9)
    scores = low_rank_scores(40, 6, rng, missing=0.15)
    res = oracle_subsets(scores, k_max=2, folds=4)
    folds = kfold_with_holdout(40, 4, 0.1, 0)
    scorers = [_FoldScorer(scores.values, f, "auto", 1e-2, 10.0) for f in folds]
    means = {s: np.mean([sc.r2(s) for sc in scorers]) for s in combinations(range(6), 2)}
    best = max(means, key=means.get)
    assert res.rows[1].best == [scores.items[j] for j in best]
    assert res.rows[1].r2_oracle >= max(res.rows[1].r2_greedy.values()) - 1e-12


def _two_fold_data(extra_cols=0, seed=10):
    """20 models, two correlated items, 2 folds whose training set is the other fold."""
    rng = np.random.default_rng(seed)
    f = rng.normal(size=20)
    x = np.column_stack([50 + 10 * f + rng.normal(size=20), 60 + 8 * f + rng.normal(size=20)])
    x = np.column_stack([x, np.full((20, extra_cols), np.nan)])
    folds = kfold_with_holdout(20, 2, 0.1, 0)
    for fold in folds:
        other = np.setdiff1d(np.arange(20), fold.validation)
        assert np.array_equal(fold.train, other)  # the pool is the training set
    return x, folds


def _z(x, train, rows, col):
    t = x[train, col]
    t = t[~np.isnan(t)]
    return np.clip((x[rows, col] - t.mean()) / t.std(ddof=1), -10, 10)


def test_paper_scoring_drops_validation_models_with_no_selected_item():
    x, folds = _two_fold_data()
    # Two orphans per fold: one has only b0, one only b1; so whichever item a fold
    # selects, one orphan has none of it observed but has the other item.
    for fold in folds:
        a, b = fold.validation[:2]
        x[a, 1] = np.nan
        x[b, 0] = np.nan
    scores = ScoreMatrix(x, [f"m{i}" for i in range(20)], ["b0", "b1"])
    # "paper" predicts a model with nothing observed by the observed training mean, 0
    # (EM's fitted mean would not be exactly 0).
    kw = dict(objectives=("mi",), k_max=1, folds=2, seed=0, covariance="paper",
              predictor="gaussian")
    default = cross_validate(scores, **kw).r2["mi"][:, 0]
    paper = cross_validate(scores, scoring="paper", **kw).r2["mi"][:, 0]
    assert cross_validate(scores, scoring="paper", **kw).orders == cross_validate(
        scores, **kw).orders
    orders = cross_validate(scores, **kw).orders["mi"]
    for i, fold in enumerate(folds):
        sel = 0 if orders[i][0] == "b0" else 1
        other = 1 - sel
        rows = fold.validation
        has_sel = ~np.isnan(x[rows, sel])
        has_other = ~np.isnan(x[rows, other])
        orphans = rows[~has_sel & has_other]
        complete = rows[has_sel & has_other]
        assert orphans.size == 1
        s_tot = float(np.sum(_z(x, fold.train, complete, other) ** 2))
        e = float(np.sum(_z(x, fold.train, orphans, other) ** 2))
        # Paper pools only the complete models; default adds the orphan's cell,
        # predicted as the training mean (error = target).
        s_res = (1 - paper[i]) * s_tot
        assert default[i] == pytest.approx(1 - (s_res + e) / (s_tot + e), rel=1e-10)
        assert default[i] != pytest.approx(paper[i], rel=1e-6)


def test_paper_scoring_scores_columns_too_sparse_to_model():
    x, folds = _two_fold_data(extra_cols=1)
    val, train = folds[0].validation, folds[0].train
    # b2: one training score in fold 0 (too few to standardize), two validation scores.
    x[train[0], 2] = 50.0
    x[val[0], 2] = 50.2
    x[val[1], 2] = 49.9
    scores = ScoreMatrix(x, [f"m{i}" for i in range(20)], ["b0", "b1", "b2"])
    kw = dict(objectives=("mi",), k_max=1, folds=2, seed=0, covariance="em",
              predictor="gaussian")
    default = cross_validate(scores, **kw)
    paper = cross_validate(scores, scoring="paper", **kw)
    assert default.orders == paper.orders
    sel = 0 if default.orders["mi"][0][0] == "b0" else 1
    other = 1 - sel
    s_tot = float(np.sum(_z(x, train, val, other) ** 2))
    s_res = (1 - default.r2["mi"][0, 0]) * s_tot
    # The published scale floor 0.01 (|mean| + 1) with the one training score as mean.
    y = (np.array([50.2, 49.9]) - 50.0) / (0.01 * 51.0)
    e = float(np.sum(y**2))
    assert paper.r2["mi"][0, 0] == pytest.approx(1 - (s_res + e) / (s_tot + e), rel=1e-10)
    assert paper.r2["mi"][0, 0] != pytest.approx(default.r2["mi"][0, 0], rel=1e-6)


def test_scoring_argument_errors(capsys):
    scores = load_dataset("helm_lite")
    with pytest.raises(ValueError, match="scoring must be one of default, paper; got 'pap'"):
        cross_validate(scores, scoring="pap")
    assert main(["evaluate", "helm_lite", "--protocol", "oracle", "--scoring", "paper"]) != 0
    assert "--scoring is not supported by the oracle protocol" in capsys.readouterr().err
    assert main(["evaluate", "helm_lite", "--protocol", "oracle", "--keep-aggregates"]) != 0
    assert "--keep-aggregates is not supported by the oracle protocol (its subsets are drawn " \
        "from every column)" in capsys.readouterr().err
    assert main(["evaluate", "helm_lite", "--folds", "3", "--k-max", "2", "--scoring",
                 "paper", "--predictor", "gaussian", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scoring"] == "paper" and len(out["results"]) == 6


# --- the published splitter, and Table 4 reproduced fold by fold ----------------------------

PUBLISHED = Path(__file__).resolve().parents[1] / "benchmarks" / "published" / "table4_seed42.json"


@pytest.mark.parametrize("m, holdout", [(118, 0.1), (263, 0.1), (25, 0.5), (15, 0.9), (40, 0.2)])
def test_paper_folds_match_the_published_rule(m, holdout):
    seed = 42
    ours = paper_kfold(m, 10, holdout, seed)
    default = kfold_with_holdout(m, 10, holdout, seed)
    # The published rule written out: one permutation, round((1 - p) M) training
    # models, drawn per fold from the pool in fold order by its own seed.
    parts = np.array_split(np.random.default_rng(seed).permutation(m), 10)
    n_train = round((1 - holdout) * m)
    for f, fold in enumerate(ours):
        pool = np.concatenate(parts[:f] + parts[f + 1:])
        train = pool
        if n_train < pool.size:
            train = np.random.default_rng((seed, f, int(holdout * 10000))).permutation(pool)
            train = train[:n_train]
        assert np.array_equal(fold.train, np.sort(train))
        assert np.array_equal(fold.validation, default[f].validation)


def test_paper_folds_round_where_the_default_floors():
    # MTEB: round(0.9 * 263) = 237, so the folds of 26 train on their whole
    # pool of 237 (as the published run does); the default floors to 236.
    assert sorted({f.train.size for f in paper_kfold(263, 10, 0.1, 0)}) == [236, 237]
    assert {f.train.size for f in kfold_with_holdout(263, 10, 0.1, 0)} == {236}
    with pytest.raises(ValueError, match="seed must be a non-negative integer; got -1"):
        paper_kfold(50, 10, 0.1, -1)


def test_paper_splitter_draws_random_orders_as_the_published_code():
    rng = np.random.default_rng(5)
    scores = low_rank_scores(40, 8, rng)
    res = cross_validate(scores, objectives=("random",), k_max=8, seed=3, splitter="paper",
                         calibrate=False, predictor="gaussian")
    for f, order in enumerate(res.orders["random"]):
        perm = np.random.default_rng((3 + 7, f, 1000)).permutation(8)
        assert order == [scores.items[j] for j in perm[:7]]  # k stops one short of all
    assert res.to_dict()["splitter"] == "paper"
    with pytest.raises(ValueError, match="splitter must be one of default, paper; got 'x'"):
        cross_validate(scores, splitter="x")


@pytest.mark.parametrize("name", [pytest.param("merged", marks=pytest.mark.slow), "mteb"])
def test_table4_mi_reproduces_the_published_code_fold_by_fold(name):
    """Smola (2026), Table 4, MI: the published run's R^2 in every fold (seed 42)."""
    published = np.array(json.loads(PUBLISHED.read_text())["r2"][name]["mi"])[:, :6]
    res = cross_validate(load_dataset(name), objectives=("mi",), k_max=6, covariance="paper",
                         scoring="paper", splitter="paper", seed=42, calibrate=False,
                         predictor="gaussian")
    np.testing.assert_allclose(res.r2["mi"], published, atol=1e-9)
    at5 = {"merged": 0.515, "mteb": 0.762}[name]
    assert res.row("mi", 5).r2_mean == pytest.approx(at5, abs=5e-4)


def test_cli_splitter_paper_and_its_protocol_check(capsys):
    code = main(["evaluate", "helm_lite", "--folds", "5", "--k-max", "2", "--objectives", "mi",
                 "--splitter", "paper", "--predictor", "gaussian", "--json", "--quiet"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["splitter"] == "paper" and len(out["fold_r2"]["mi"]) == 5
    with pytest.raises(SystemExit) as exit_:
        main(["evaluate", "helm_lite", "--protocol", "extrapolation", "--splitter", "paper"])
    assert exit_.value.code == 2
    assert "--splitter is not supported by the extrapolation protocol" in capsys.readouterr().err


# --- the frontier: every model but the strongest as sources ------------------------------


def test_frontier_split_holds_out_the_strongest_tenth_and_keeps_everyone_else():
    from benchsel.matrix import model_strength
    from benchsel.splits import frontier_split

    data = load_dataset("merged")
    split = frontier_split(data.values)
    strength = model_strength(data.values)
    assert split.validation.size == 11 and split.train.size == 107  # floor(0.1 * 118)
    assert strength[split.validation].min() >= strength[split.train].max()
    small = frontier_split(load_dataset("helm_lite").values)  # 30 models: at least 5
    assert small.validation.size == 5 and small.train.size == 25
    with pytest.raises(ValueError, match="7 models are too few for a frontier split"):
        frontier_split(np.arange(14.0).reshape(7, 2))


def test_dated_split_and_given_strengths():
    from benchsel.splits import dated_split, frontier_split

    split = dated_split([3.0, 1.0, 2.0, 5.0, 0.0, 4.0], before=3.0)
    assert split.train.tolist() == [1, 2, 4] and split.validation.tolist() == [0, 3, 5]
    with pytest.raises(ValueError, match="leaves 2 model"):
        dated_split([1.0, 2.0, 3.0], before=3.0)
    with pytest.raises(ValueError, match="one finite key per model"):
        dated_split([1.0, np.nan, 3.0, 4.0], before=2.0)
    # A given strength replaces the standardized one (the question level's plain mean).
    values = np.arange(40.0).reshape(20, 2)
    strength = -np.arange(20.0)  # the first rows strongest
    assert frontier_split(values, strength=strength).validation.tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="one value per model"):
        frontier_split(values, strength=strength[:5])


def test_frontier_gives_models_without_the_selected_scores_the_unknown_width():
    # MERGED's strongest models lack most columns: with a random pick, most
    # have none of it. They are predicted as the mean and covered 16% with
    # the selected pattern's multiplier; the width of a model beyond every
    # source (unknown_calibration) is what `predict` gives them.

    res = frontier(load_dataset("merged"), objectives=("random",), k_max=1, predictor="gaussian")
    row = res.row("random", 1)
    assert 0.85 <= row.interval_coverage and row.interval_coverage > row.uncalibrated_coverage
    assert res.to_dict()["protocol"] == "frontier"


def test_cli_evaluate_frontier(capsys):
    code = main(["evaluate", "helm_lite", "--protocol", "frontier", "--k-max", "2",
                 "--objectives", "mi", "--json", "--quiet"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    # What `predict` uses is what is scored, and the JSON says so.
    assert out["predictor"] == DEFAULT_PREDICTOR == "auto"
    assert out["protocol"] == "frontier" and out["folds"] == 1
    assert out["holdout"] is None and out["splitter"] is None
    assert [r["k"] for r in out["results"]] == [1, 2]
    assert main(["evaluate", "helm_lite", "--protocol", "frontier", "--k-max", "1",
                 "--objectives", "mi", "--quiet"]) == 0
    assert "fit on every model but the strongest 10% (at least 5)" in capsys.readouterr().out


def _release_dates(board, days):
    """ISO dates, 2024-01-01 plus ``days[i]`` for model ``i``."""
    start = np.datetime64("2024-01-01")
    return {m: str(start + int(d)) for m, d in zip(board.models, days)}


def test_dated_protocol_is_the_frontier_when_the_strongest_came_out_last(tmp_path, capsys):
    # Models released in order of strength, cut where the strongest 10% (at least
    # 5) begin: the dated split is then the frontier split, and every figure agrees.
    from benchsel.matrix import model_strength

    board = load_dataset("helm_lite")
    rank = np.argsort(np.argsort(model_strength(board.values), kind="stable"))
    dates = _release_dates(board, rank)
    cut = str(np.datetime64("2024-01-01") + board.n_models - 5)
    options = dict(objectives=("mi", "random"), k_max=2)
    by_date = dated(board, dates, cut, **options)
    at_frontier = frontier(board, **options)
    assert by_date.protocol == "dated" and by_date.predictor == DEFAULT_PREDICTOR
    assert by_date.orders == at_frontier.orders
    for mine, theirs in zip(by_date.rows, at_frontier.rows, strict=True):
        assert (mine.objective, mine.k) == (theirs.objective, theirs.k)
        assert mine.r2_mean == pytest.approx(theirs.r2_mean, abs=1e-12)
        assert mine.interval_coverage == pytest.approx(theirs.interval_coverage, abs=1e-12)
    # The same from a dates file on the command line, as the library gives it.
    order = tmp_path / "released.csv"
    order.write_text("model,order\n" + "".join(f"{m},{d}\n" for m, d in dates.items()))
    assert main(["evaluate", "helm_lite", "--protocol", "dated", "--order", str(order),
                 "--before", cut, "--objectives", "mi,random", "--k-max", "2", "--json",
                 "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["protocol"] == "dated" and out["folds"] == 1
    assert [r["r2_mean"] for r in out["results"]] == pytest.approx(
        [r.r2_mean for r in by_date.rows], abs=1e-12)
    assert main(["evaluate", "helm_lite", "--protocol", "dated", "--order", str(order),
                 "--before", cut, "--objectives", "mi", "--k-max", "1", "--predictor",
                 "gaussian", "--quiet"]) == 0
    assert f"fit on the 25 models before {cut}, predict the 5 from it on" in \
        capsys.readouterr().out


def test_dated_protocol_says_what_is_wrong_with_its_dates(tmp_path, capsys):
    board = load_dataset("helm_lite")
    days = np.arange(board.n_models)
    with pytest.raises(ValueError, match="expected one key per model \\(30\\); got 29"):
        dated(board, days[:-1], 20)
    with pytest.raises(ValueError, match="no date for 1 model"):
        dated(board, dict(list(_release_dates(board, days).items())[1:]), "2024-01-20")
    with pytest.raises(ValueError, match="'soon' is not a number or a date"):
        dated(board, {**_release_dates(board, days), board.models[3]: "soon"}, 20)
    with pytest.raises(ValueError, match="before 'June': expected a date"):
        dated(board, days, "June")
    with pytest.raises(ValueError, match="leaves 30 model"):
        dated(board, days, 100)
    # An array follows the models as given, also when a row without scores is dropped.
    values = board.values.copy()
    values[4] = np.nan
    holey = ScoreMatrix(values, board.models, board.items)
    with pytest.warns(DataWarning, match="dropping 1 model"):
        res = dated(holey, days, 25, objectives=("mi",), k_max=1, predictor="gaussian")
    assert res.rows[0].r2_mean == pytest.approx(dated(
        holey.subset(models=np.flatnonzero(days != 4)), np.delete(days, 4), 25,
        objectives=("mi",), k_max=1, predictor="gaussian").rows[0].r2_mean, abs=1e-12)
    # An array of numbers in the models' order works as well as a mapping of dates.
    assert dated(board, days, 25, objectives=("mi",), k_max=1, predictor="gaussian"
                 ).rows[0].r2_mean == pytest.approx(
        dated(board, _release_dates(board, days), "2024-01-26", objectives=("mi",), k_max=1,
              predictor="gaussian").rows[0].r2_mean, abs=1e-12)
    order = tmp_path / "released.csv"
    order.write_text("model,order\n" + "".join(
        f"{m},{d}\n" for m, d in list(_release_dates(board, days).items())[:28]))
    base = ["evaluate", "helm_lite", "--k-max", "1", "--objectives", "mi", "--quiet"]
    assert main([*base, "--protocol", "dated", "--order", str(order),
                 "--before", "2024-01-20"]) == 1
    err = capsys.readouterr().err
    assert f"{order} (helm_lite): no date for 2 model(s)" in err
    with pytest.raises(SystemExit) as exit_:
        main([*base, "--protocol", "dated", "--order", str(order)])
    assert exit_.value.code == 2
    assert "--protocol dated needs --order FILE" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base, "--protocol", "frontier", "--order", str(order), "--before", "2024-01-20"])
    assert "--order and --before are for --protocol dated" in capsys.readouterr().err
    assert main([*base, "--protocol", "dated", "--order", str(order), "--before", "June"]) == 1
    assert "--before 'June': expected a date" in capsys.readouterr().err


@pytest.mark.parametrize("predictor", ["auto", "svd"])
def test_a_split_scores_exactly_what_predict_returns(predictor):
    """The frontier protocol with a shipped predictor is GaussianModel().fit(sources)
    .predict(targets' selected scores) -- the object `predict` uses, with its defaults --
    scored: R^2 and coverage recomputed here from that prediction agree to 1e-12."""
    from benchsel import GaussianModel
    from benchsel.gaussian.covariance import fit_standardizer

    board = load_dataset("bigcodebench").cleaned()
    res = frontier(board, objectives=("mi",), k_max=3, predictor=predictor)
    split = frontier_split(board.values, 0.1, 5)
    sources, targets = board.subset(models=split.train), board.subset(models=split.validation)
    model = GaussianModel().fit(sources)
    std = fit_standardizer(sources.values, "auto")
    cols = np.flatnonzero(~std.constant)
    for k in (1, 2, 3):
        chosen = res.orders["mi"][0][:k]
        pred = model.predict(targets.subset(items=[board.items.index(c) for c in chosen]),
                             method=predictor)
        assert [board.items.index(i) for i in pred.items] == list(range(board.n_items))
        z = lambda a: std.transform(a[:, cols], cols)  # noqa: E731
        truth = np.clip(z(targets.values), -10, 10)
        scored = ~np.isnan(truth)
        scored[:, [list(cols).index(board.items.index(c)) for c in chosen]] = False
        y = truth[scored]
        r2 = r2_against_zero(y, np.clip(z(pred.mean), -10, 10)[scored])
        inside = (z(pred.low)[scored] <= y) & (y <= z(pred.high)[scored])
        row = res.row("mi", k)
        assert row.r2_mean == pytest.approx(r2, abs=1e-12)
        assert row.interval_coverage == pytest.approx(inside.mean(), abs=1e-12)


@pytest.mark.parametrize("keep", [False, True])
def test_the_protocols_choose_as_select_ships(keep):
    """helm_lite's 'Mean win rate' aggregates the other columns: `select` and `plan`
    leave it out of the choice. Every fold of cv and the frontier split chooses as
    GaussianModel().fit(its training models).select does -- the aggregate left out,
    or, with keep_aggregates, allowed -- and the paper's scoring chooses from every
    column, as the published code does."""
    import warnings

    from benchsel import DataWarning, GaussianModel

    board = load_dataset("helm_lite").cleaned()

    def shipped(rows, k, keep_aggregates):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            model = GaussianModel().fit(board.subset(models=rows))
            return list(model.select(k, objective="mi", keep_aggregates=keep_aggregates).items)

    split = frontier_split(board.values, 0.1, 5)
    res = frontier(board, objectives=("mi",), k_max=4, predictor="gaussian",
                   keep_aggregates=keep)
    assert res.orders["mi"][0] == shipped(split.train, 4, keep)
    cv = cross_validate(board, objectives=("mi",), k_max=3, folds=3, seed=2,
                        predictor="gaussian", keep_aggregates=keep)
    folds = kfold_with_holdout(board.n_models, 3, 0.1, 2)
    assert [o for o in cv.orders["mi"]] == [shipped(f.train, 3, keep) for f in folds]
    chosen = {name for o in cv.orders["mi"] + res.orders["mi"] for name in o}
    # Kept, the aggregate is what MI picks first here; left out, it is never chosen.
    assert ("Mean win rate" in chosen) == keep
    paper = cross_validate(board, objectives=("mi",), k_max=3, folds=3, seed=2,
                           predictor="gaussian", scoring="paper")
    assert paper.orders["mi"] == [shipped(f.train, 3, True) for f in folds]


def test_an_interval_is_scored_on_the_score_itself_not_on_its_clipped_value():
    """AlpacaEval's strongest 30% lie more than 10 SD above its weakest half:
    the protocol clips them at 10 SD for R², but the coverage it reports is
    that of the interval `predict` prints around the real score (before, 40%
    of these cells were counted as missed by intervals that held them)."""
    from benchsel import GaussianModel
    from benchsel.splits import strength_split

    data = load_dataset("alpaca_eval")
    res = extrapolate(data, objectives=("mi",), k_max=1)
    split = strength_split(data.values, 0.5, 0.3)
    model = GaussianModel().fit(data.subset(models=split.train))
    targets = data.subset(models=split.validation)
    given = res.orders["mi"][0][:1]
    cols = [targets.items.index(g) for g in given]
    p = model.predict(ScoreMatrix(targets.values[:, cols], list(targets.models), given))
    truth = targets.values[:, [targets.items.index(i) for i in p.items]]
    scored = ~np.isnan(truth) & ~p.observed
    assert np.sum(np.abs(model.standardizer_.transform(truth)[scored]) > 10) > 10
    covered = (truth >= p.low) & (truth <= p.high)
    assert res.rows[0].interval_coverage == pytest.approx(np.mean(covered[scored]))


def test_paper_sets_the_papers_whole_protocol(capsys):
    """``paper=True`` / ``--paper`` alone is Table 4's run: MTEB, MI, k = 5, 0.762."""
    mteb = load_dataset("mteb")
    alone = cross_validate(mteb, objectives=("mi",), k_max=5, paper=True, calibrate=False)
    spelled = cross_validate(mteb, objectives=("mi",), k_max=5, covariance="paper",
                             scoring="paper", splitter="paper", predictor="gaussian", seed=42,
                             calibrate=False)
    np.testing.assert_array_equal(alone.r2["mi"], spelled.r2["mi"])
    assert alone.row("mi", 5).r2_mean == pytest.approx(0.762, abs=5e-4)
    with pytest.raises(ValueError, match="seed=3 asks for another"):
        cross_validate(mteb, paper=True, seed=3)
    code = main(["evaluate", "mteb", "--paper", "--objectives", "mi", "--k-max", "5",
                 "--calibration", "none", "--json", "--quiet"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["splitter"] == "paper"
    assert out["fold_r2"]["mi"] == alone.to_dict()["fold_r2"]["mi"]
    for flags in (["--protocol", "frontier"], ["--covariance", "em"], ["--predictor", "auto"]):
        with pytest.raises(SystemExit) as exit_:
            main(["evaluate", "mteb", "--paper", *flags, "--quiet"])
        assert exit_.value.code == 2


def test_every_protocol_is_cross_validate_with_a_splitter():
    """cross_validate(scores, cv=splitter): the named protocols are that, to the digit."""
    from benchsel.evaluation import Dated, Extrapolation, Frontier, KFold, PaperKFold

    board = load_dataset("helm_lite")
    common = dict(objectives=("mi", "random"), k_max=3, predictor="gaussian", calibrate=False)

    def same(a, b):
        assert (a.protocol, a.folds, a.holdout, a.splitter) == \
            (b.protocol, b.folds, b.holdout, b.splitter)
        for obj in common["objectives"]:
            np.testing.assert_array_equal(a.r2[obj], b.r2[obj])
            assert a.orders[obj] == b.orders[obj]

    same(cross_validate(board, cv=KFold(folds=5, seed=3), seed=3, **common),
         cross_validate(board, folds=5, seed=3, **common))
    same(cross_validate(board, cv=PaperKFold(folds=5, seed=3), seed=3, **common),
         cross_validate(board, folds=5, seed=3, splitter="paper", **common))
    same(cross_validate(board, cv=Extrapolation(0.6, 0.3), **common),
         extrapolate(board, train_fraction=0.6, test_fraction=0.3, **common))
    same(cross_validate(board, cv=Frontier(min_targets=6), **common),
         frontier(board, min_targets=6, **common))
    order = {m: i for i, m in enumerate(board.models)}
    same(cross_validate(board, cv=Dated(order, 20), **common), dated(board, order, 20, **common))
    with pytest.raises(ValueError, match="with cv= give them to it"):
        cross_validate(board, cv=Frontier(), folds=5)
    with pytest.raises(ValueError, match="cv must be a splitter"):
        cross_validate(board, cv=5)
    sklearn_kfold = pytest.importorskip("sklearn.model_selection").KFold(5)
    with pytest.raises(ValueError, match="cv must be a splitter"):
        cross_validate(board, cv=sklearn_kfold)
    with pytest.raises(ValueError, match="give paper or cv, not both"):
        cross_validate(board, cv=KFold(), paper=True)
