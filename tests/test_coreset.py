"""Question-level methods, the coreset-eval protocol and the two coreset commands."""

import json

import numpy as np
import pytest
from sklearn.linear_model import RidgeCV

from benchsel import ScoreMatrix
from benchsel.cli import main
from benchsel.coreset.registry import DEFAULT_METHOD, METHODS, PAPER_REFITS, make_method
from benchsel.evaluation.questions import evaluate_coresets, model_split


def irt_scores(m=60, n=120, seed=0):
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=(m, 1))
    difficulty = rng.normal(size=(1, n))
    return (rng.random((m, n)) < 1 / (1 + np.exp(-1.5 * (ability - difficulty)))).astype(float)


def test_every_method_selects_n_distinct_questions_and_predicts_each_target():
    x = irt_scores()
    for name in METHODS:
        method = make_method(name, n_questions=20, random_state=0).fit(x[:45])
        assert len(set(method.selected_.tolist())) == 20
        mean, sd = method.predict(x[45:][:, method.selected_])
        assert mean.shape == (15,) and np.all(np.isfinite(mean)) and np.all(sd >= 0)
    assert make_method("default").name == DEFAULT_METHOD
    with pytest.raises(ValueError, match="unknown coreset method 'irt'"):
        make_method("irt")


def test_random_sampling_is_the_sample_mean():
    x = irt_scores(seed=1)
    method = make_method("random-sampling", n_questions=30, random_state=3).fit(x[:40])
    sub = x[40:][:, method.selected_]
    mean, sd = method.predict(sub)
    np.testing.assert_allclose(mean, sub.mean(axis=1))
    fpc = np.sqrt((120 - 30) / 119)
    np.testing.assert_allclose(sd, sub.std(axis=1, ddof=1) / np.sqrt(30) * fpc)


def test_aipw_matches_its_formula():
    x = irt_scores(seed=2)
    method = make_method("aipw", n_questions=25, random_state=4).fit(x[:40])
    a = method.selected_
    row = x[41, a]
    ridge = RidgeCV(alphas=np.logspace(-3, 3, 13)).fit(x[:40].T[a], row)
    pred = ridge.predict(x[:40].T)
    rest = np.setdiff1d(np.arange(120), a)
    want = row.mean() + (pred[rest].mean() - pred[a].mean()) / (1 + 25 / 95)
    mean, _ = method.predict(x[41:42, a])
    assert mean[0] == pytest.approx(want)


def test_gaussian_dr_is_consistent_even_when_the_model_is_wrong():
    """Fitted on weak models only, the debiased estimate of a strong model's mean is far
    closer than the plain conditional mean, and close to the truth."""
    x = irt_scores(m=200, n=400, seed=5)
    order = np.argsort(x.mean(axis=1))
    weak, strong = order[:100], order[-30:]
    errs = {}
    for name in ("gaussian-greedy", "gaussian-dr", "random-sampling"):
        gaps = []
        for trial in range(5):
            m = make_method(name, n_questions=60, random_state=trial).fit(x[weak])
            mean, _ = m.predict(x[strong][:, m.selected_])
            gaps.append(np.abs(mean - x[strong].mean(axis=1)).mean())
        errs[name] = np.mean(gaps)
    assert errs["gaussian-dr"] < 0.5 * errs["gaussian-greedy"]
    assert errs["gaussian-dr"] < 1.5 * errs["random-sampling"]


def test_splits_are_disjoint_and_sized():
    x = irt_scores(m=40)
    src, tgt = model_split(x, "interpolation", np.random.default_rng(0))
    assert len(src) == 30 and len(tgt) == 10 and not set(src) & set(tgt)
    src, tgt = model_split(x, "extrapolation", np.random.default_rng(0))
    assert len(src) == 20 and len(tgt) == 12
    assert x[src].mean(axis=1).max() <= x[tgt].mean(axis=1).min()
    with pytest.raises(ValueError, match="split must be one of"):
        model_split(x, "random", np.random.default_rng(0))


def test_protocol_metrics_by_hand_for_random_sampling():
    x = irt_scores(seed=6)
    scores = ScoreMatrix(x, [f"m{i}" for i in range(60)], [f"q{j}" for j in range(120)])
    res = evaluate_coresets(scores, split="interpolation", n=20, trials=3,
                            methods=("random-sampling",))
    gaps = []
    for trial in range(3):
        src, tgt = model_split(x, "interpolation", np.random.default_rng([0, trial]))
        m = make_method("random-sampling", n_questions=20,
                        random_state=np.random.default_rng([0, trial, 1])).fit(x[src])
        gaps.append(100 * np.abs(x[tgt][:, m.selected_].mean(1) - x[tgt].mean(1)).mean())
    row = res.row("random-sampling")
    assert row.gap == pytest.approx(np.mean(gaps)) and row.egr == 0.0
    assert row.gap_std == pytest.approx(np.std(gaps))
    assert row.mae == pytest.approx(np.mean(gaps))  # equal target counts per trial
    assert abs(row.stability) < 0.2  # random questions: no stability


def test_greedy_coresets_are_more_stable_than_random_ones():
    x = irt_scores(seed=9)
    scores = ScoreMatrix(x, [f"m{i}" for i in range(60)], [f"q{j}" for j in range(120)])
    res = evaluate_coresets(scores, n=20, trials=4, methods=("gaussian-greedy",))
    assert res.row("gaussian-greedy").stability > res.row("random-sampling").stability + 0.2


@pytest.mark.slow
def test_cli_coreset_eval_and_coreset_on_npz(tmp_path, capsys):
    path = tmp_path / "q.npz"
    np.savez(path, scores=irt_scores(seed=7), models=np.array([f"m{i}" for i in range(60)]))
    assert main(["coreset-eval", str(path), "--split", "extrapolation", "--trials", "2",
                 "-n", "20", "--json", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["split"] == "extrapolation" and out["default"] == DEFAULT_METHOD
    keys = {"method", "gap", "gap_std", "egr", "kendall", "interval_coverage", "fit_seconds"}
    assert all(keys <= set(m) for m in out["methods"])
    assert {m["method"] for m in out["methods"]} == set(METHODS) | set(PAPER_REFITS)
    samples = tmp_path / "samples.json"
    assert main(["coreset", str(path), "-n", "10", "--emit-lm-eval-samples", "arc",
                 str(samples), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert json.loads(samples.read_text()) == {"arc": sorted(out["indices"])}


def test_hamming_stability_by_hand():
    from benchsel.evaluation.metrics import hamming_stability

    sets = [[0, 1, 2], [0, 1, 3], [4, 5, 6]]
    # pairs differ in 2, 6 and 6 questions
    assert hamming_stability(sets, 10) == pytest.approx((2 + 6 + 6) / 3)
    assert hamming_stability([[1, 2], [2, 1]], 5) == 0.0


def test_model_similarity_matches_a_loop_over_pairs():
    from benchsel.evaluation.metrics import model_similarity

    x = irt_scores(m=12, n=80, seed=11)
    got = model_similarity(x[:3], x[3:])
    for i in range(3):
        kappas = []
        for j in range(3, 12):
            c_obs = np.mean(x[i] == x[j])
            pi, pj = x[i].mean(), x[j].mean()
            c_exp = pi * pj + (1 - pi) * (1 - pj)
            kappas.append((c_obs - c_exp) / (1 - c_exp))
        assert got[i] == pytest.approx(np.mean(kappas))
    with pytest.raises(ValueError, match="binary"):
        model_similarity(x[:3] * 0.5, x[3:])


def test_stratified_split_spans_the_score_range():
    x = irt_scores(m=80, seed=12)
    src, tgt = model_split(x, "stratified", np.random.default_rng(0), sources=15)
    assert len(src) == 15 and len(tgt) == 65 and not set(src) & set(tgt)
    score = x.mean(axis=1)
    edges = np.linspace(score.min(), score.max(), 11)
    bins = np.clip(np.searchsorted(edges, score, side="right") - 1, 0, 9)
    counts = np.bincount(bins[src], minlength=10)
    available = np.bincount(bins, minlength=10)
    # every bin that has models gets one before any bin gets a second
    assert np.all(counts[available > 0] >= np.minimum(1, available[available > 0]))
    assert counts.max() - counts[available >= counts.max()].min() <= 1
    with pytest.raises(ValueError, match="sources"):
        model_split(x, "stratified", np.random.default_rng(0))


def test_n_as_a_percentage_and_parallel_trials_change_nothing():
    from benchsel.coreset._base import resolve_n

    assert resolve_n("5%", 277) == 14 and resolve_n(50, 277) == 50 and resolve_n("20", 30) == 20
    for bad in ("0%", "150%", "abc", 400):
        with pytest.raises(ValueError):
            resolve_n(bad, 277)
    x = irt_scores(seed=13)
    scores = ScoreMatrix(x, [f"m{i}" for i in range(60)], [f"q{j}" for j in range(120)])
    one = evaluate_coresets(scores, n="10%", trials=3, methods=("aipw",))
    two = evaluate_coresets(scores, n="10%", trials=3, methods=("aipw",), n_jobs=2)
    assert one.n == 12
    for a, b in zip(one.rows, two.rows):
        assert (a.gap, a.egr, a.interval_coverage, a.similarity_corr, a.hamming) == (
            b.gap, b.egr, b.interval_coverage, b.similarity_corr, b.hamming)
    # random questions: two size-12 coresets of 120 share about 1.2 questions
    assert one.row("random-sampling").hamming > 18


def test_guarded_ensemble_is_the_design_estimate_unless_its_answers_lie_among_the_sources():
    from scipy.special import ndtri
    from sklearn.kernel_ridge import KernelRidge

    from benchsel.coreset.gaussian import LowRankGaussian
    from benchsel.coreset.methods import aipw_estimate

    x = irt_scores(m=120, n=300, seed=14)
    order = np.argsort(x.mean(axis=1))
    weak, middle, strong = order[:60], order[60:70], order[-10:]
    method = make_method("guarded-ensemble", n_questions=40, random_state=0).fit(x[weak])
    base = make_method("stratified-sampling", n_questions=40, random_state=0).fit(x[weak])
    a = method.selected_
    mean, sd = method.predict(x[strong][:, a])
    assert method.design_based(x[strong][:, a]).all()  # beyond the weak sources
    design_mean, design_sd = base.predict(x[strong][:, a])
    np.testing.assert_array_equal(mean, design_mean)
    np.testing.assert_array_equal(sd, design_sd)
    # Among the sources: the mean of the three model-based parts, exactly where
    # the design estimate's 90% interval lies inside the sources' range, or at
    # the bottom the estimate plus one of its SDs lies above the weakest 10% of them.
    src = np.concatenate([order[:50], order[70:]])
    method = make_method("guarded-ensemble", n_questions=40, random_state=1).fit(x[src])
    base = make_method("stratified-sampling", n_questions=40, random_state=1).fit(x[src])
    a = method.selected_
    rows = x[np.concatenate([middle, order[-5:]])][:, a]  # and the top sources'
    mean, sd = method.predict(rows)
    design_mean, design_sd = base.predict(rows)
    means = x[src].mean(axis=1)
    half = ndtri(0.95) * design_sd
    bottom = ((design_mean - half >= means.min())
              | (design_mean + design_sd >= np.quantile(means, 0.1)))
    inside = bottom & (design_mean + half <= means.max())
    assert inside.any() and not inside.all()
    np.testing.assert_array_equal(method.design_based(rows), ~inside)
    parts = [
        KernelRidge(alpha=method.kernel_.alpha, kernel="poly", degree=2, gamma=1 / 40,
                    coef0=1).fit(x[src][:, a], x[src].mean(1)).predict(rows),
        LowRankGaussian().fit(x[src]).predict_mean(rows, a)[0],
        aipw_estimate(x[src].T, a, rows, method.question_sd_, method.weights_)[0],
    ]
    np.testing.assert_allclose(mean[inside], np.mean(parts, axis=0)[inside])
    np.testing.assert_array_equal(mean[~inside], design_mean[~inside])
    with pytest.raises(ValueError, match="guard_level"):
        METHODS["guarded-ensemble"](n_questions=40, guard_level=1.0).fit(x[src])
    with pytest.raises(ValueError, match="floor_share"):
        METHODS["guarded-ensemble"](n_questions=40, floor_share=1.0).fit(x[src])
    with pytest.raises(ValueError, match="floor_margin"):
        METHODS["guarded-ensemble"](n_questions=40, floor_margin=-1.0).fit(x[src])


def test_guarded_ensemble_learns_at_the_bottom_of_the_sources_but_not_below_them():
    """On GLUE RTE (weak models crowd near chance) a target among the weakest
    sources keeps the model-based estimate even where its design interval
    reaches below the weakest source; one whose estimate lies more than one of
    its SDs below the weakest tenth of the sources gets its own answers' mean."""
    from scipy.special import ndtri

    from benchsel.datasets import load_dataset

    x = np.asarray(load_dataset("glue_rte").values, dtype=float)
    target = np.random.default_rng(3).choice(len(x), len(x) // 4, replace=False)
    src = np.setdiff1d(np.arange(len(x)), target)
    method = make_method("guarded-ensemble", n_questions=50, random_state=3).fit(x[src])
    base = make_method("stratified-sampling", n_questions=50, random_state=3).fit(x[src])
    rows = x[target][:, method.selected_]
    design_mean, design_sd = base.predict(rows)
    means = x[src].mean(axis=1)
    half = ndtri(0.95) * design_sd
    learned = ~method.design_based(rows)
    interval_inside = design_mean - half >= means.min()
    floor = design_mean + design_sd >= np.quantile(means, 0.1)
    np.testing.assert_array_equal(
        learned, (interval_inside | floor) & (design_mean + half <= means.max()))
    # Targets whose interval reaches below the weakest source learn (the interval
    # rule alone gave them their own answers' mean), and some below the weakest
    # tenth do not.
    assert (learned & ~interval_inside).any()
    assert (~floor & ~interval_inside).any()
    mean = method.predict(rows)[0]
    np.testing.assert_array_equal(mean[~learned], method.beyond_estimate(rows)[0][~learned])
    # With beyond="design" those rows get their own answers' design-weighted mean.
    design = make_method("guarded-ensemble", n_questions=50, random_state=3,
                         beyond="design").fit(x[src])
    np.testing.assert_array_equal(design.predict(rows)[0][~learned], design_mean[~learned])


def _frontier(name):
    """A bundled per-question matrix split as the frontier split splits it."""
    from benchsel.datasets import load_dataset
    from benchsel.splits import frontier_split

    x = np.asarray(load_dataset(name).values, dtype=float)
    fold = frontier_split(x, strength=x.mean(axis=1))
    return x[fold.train], x[fold.validation]


def test_guarded_ensemble_beyond_the_sources_takes_aipw_where_it_did_better_on_the_strongest():
    """The estimate beyond the sources is aipw's difference estimator where, on the
    strongest tenth of the sources predicted from the others, aipw's absolute
    errors were smaller by a paired t statistic below -2 (MuSR), else the
    design-weighted mean (OpenbookQA); the model-based rows are unchanged."""
    from benchsel._ridge import ridge_loo
    from benchsel.coreset._base import ALPHAS
    from benchsel.coreset.methods import BEYOND_EVIDENCE, aipw_estimate
    from benchsel.splits import frontier_split

    src, tgt = _frontier("openllm_musr")
    method = make_method("guarded-ensemble", n_questions=50, random_state=1).fit(src)
    # The evidence, computed plainly from its definition.
    fold = frontier_split(src, strength=src.mean(axis=1))
    held = src[fold.validation]
    a, w = method.selected_, method.weights_
    truth = held.mean(axis=1)
    design_err = np.abs(method.design_estimate(held[:, a])[0] - truth)
    aipw_err = np.abs(aipw_estimate(src[fold.train].T, a, held[:, a], method.question_sd_,
                                    w)[0] - truth)
    diff = aipw_err - design_err
    t = diff.mean() / (diff.std(ddof=1) / np.sqrt(len(diff)))
    assert method.beyond_evidence_ == pytest.approx(t, rel=1e-12)
    assert t < -BEYOND_EVIDENCE and method.beyond_ == "aipw"
    rows = tgt[:, a]
    beyond = ~method._inside(rows)[0]
    assert beyond.any() and (~beyond).any()
    mean, sd = method.predict(rows)
    expected, _ = aipw_estimate(src.T, a, rows, method.question_sd_, w)
    np.testing.assert_allclose(mean[beyond], expected[beyond], rtol=0, atol=1e-12)
    # Its error bar is the stratified design's: successive differences of the
    # ridge's leave-one-out residuals, the questions in stratum order.
    r = np.flatnonzero(beyond)[0]
    ridge = ridge_loo(src.T[a], rows[r], ALPHAS)
    order = np.argsort(method.strata_)
    resid = ridge.loo_residuals[order]
    expected_sd = np.sqrt(np.sum(np.diff(resid) ** 2) / (2 * (len(a) - 1))
                          * np.sum(w[order] ** 2))
    assert sd[r] == pytest.approx(expected_sd, rel=1e-10)
    assert (sd[beyond] > 0).all()
    fixed = make_method("guarded-ensemble", n_questions=50, random_state=1,
                        beyond="design").fit(src)
    assert fixed.beyond_ == "design"
    np.testing.assert_array_equal(fixed.selected_, a)
    fixed_mean = fixed.predict(rows)[0]
    np.testing.assert_array_equal(fixed_mean[~beyond], mean[~beyond])
    np.testing.assert_array_equal(fixed_mean[beyond],
                                  fixed.design_estimate(rows)[0][beyond])
    # On OpenbookQA's frontier aipw was not better on the strongest sources.
    src, _ = _frontier("helm_openbookqa")
    method = make_method("guarded-ensemble", n_questions=50, random_state=1).fit(src)
    assert method.beyond_evidence_ >= -BEYOND_EVIDENCE and method.beyond_ == "design"


def test_guarded_ensemble_with_few_sources_keeps_the_design_weighted_mean_beyond_them():
    rng = np.random.default_rng(5)
    x = (rng.random((15, 80)) < rng.random(80)).astype(float)
    method = make_method("guarded-ensemble", n_questions=10, random_state=0).fit(x)
    assert np.isnan(method.beyond_evidence_) and method.beyond_ == "design"
    with pytest.raises(ValueError, match="beyond"):
        make_method("guarded-ensemble", n_questions=10, beyond="aipw").fit(x)


def test_one_sampled_question_has_a_finite_error_bar():
    """With n = 1 no method divides by n - 1: the spread comes from the source models."""
    rng = np.random.default_rng(4)
    x = (rng.random((40, 60)) < rng.random(60)).astype(float)
    for name in ("random-sampling", "aipw", "guarded-ensemble"):
        method = make_method(name, n_questions=1, random_state=0).fit(x[:30])
        mean, sd = method.predict(x[30:][:, method.selected_])
        assert np.isfinite(mean).all() and np.isfinite(sd).all() and (sd > 0).all(), name
    expected = np.median(x[:30].std(axis=1, ddof=1))
    method = make_method("random-sampling", n_questions=1, random_state=rng).fit(x[:30])
    assert method.question_sd_ == pytest.approx(expected)


def test_coreset_eval_on_dask_gives_the_serial_result():
    distributed = pytest.importorskip("dask.distributed")
    from benchsel import ScoreMatrix
    from benchsel.evaluation.questions import evaluate_coresets

    rng = np.random.default_rng(5)
    x = (rng.random((40, 80)) < rng.random(80)).astype(float)
    scores = ScoreMatrix(x, [f"m{i}" for i in range(40)], [str(j) for j in range(80)])
    opts = dict(n=10, trials=3, methods=("random-sampling", "aipw"), calibrate=False)
    serial = evaluate_coresets(scores, **opts)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        on_dask = evaluate_coresets(scores, n_jobs=-1, backend="dask", **opts)
    assert [r.gap for r in on_dask.rows] == [r.gap for r in serial.rows]


def test_difficulty_strata_are_consecutive_near_equal_groups_by_source_difficulty():
    from benchsel.coreset._base import difficulty_strata

    x = irt_scores(m=40, n=103, seed=3)
    strata = difficulty_strata(x, 10)
    sizes = np.bincount(strata, minlength=10)
    assert sizes.sum() == 103 and sizes.max() - sizes.min() <= 1
    # Every question of a stratum is at least as hard as every question of the
    # next one (ties broken by question index): hardness is the mean over all
    # sources blended with the mean over the strongest quarter of them.
    strongest = np.argsort(x.mean(axis=1), kind="stable")[-10:]
    p = 0.5 * (x.mean(axis=0) + x[strongest].mean(axis=0))
    for h in range(9):
        assert p[strata == h].max() <= p[strata == h + 1].min()
    np.testing.assert_array_equal(strata, difficulty_strata(x, 10))


def test_stratified_draw_is_design_unbiased():
    """One question per stratum, each equally likely within it, weighted by stratum share."""
    from benchsel.coreset._base import RandomQuestions, difficulty_strata

    x = irt_scores(m=40, n=53, seed=5)
    n = 8
    strata = difficulty_strata(x, n)
    sizes = np.bincount(strata, minlength=n)
    rng = np.random.default_rng(0)
    draws = 20_000
    hits = np.zeros(x.shape[1])
    class Stratified(RandomQuestions):
        draw = "stratified"

    assert make_method("guarded-ensemble").draw == "stratified"
    for _ in range(draws):
        method = Stratified(n_questions=n, random_state=rng).fit(x)
        assert np.array_equal(np.sort(strata[method.selected_]), np.arange(n))
        np.testing.assert_allclose(method.weights_, sizes[strata[method.selected_]] / x.shape[1])
        hits[method.selected_] += 1
    # Inclusion probability 1 / (stratum size) for every question, so
    # E[weights @ y] = sum_h (N_h / N) mean_h(y) = mean(y) for any scores y.
    expected = draws / sizes[strata]
    assert np.all(np.abs(hits - expected) < 5 * np.sqrt(expected))


def test_aipw_with_uniform_weights_is_eq_3():
    """The difference-estimator form equals Zhang et al.'s eq. 3 as written."""
    from sklearn.linear_model import RidgeCV

    from benchsel.coreset._base import ALPHAS
    from benchsel.coreset.methods import aipw_estimate

    x = irt_scores(m=50, n=200, seed=8)
    a = np.sort(np.random.default_rng(2).choice(200, 30, replace=False))
    rows = x[40:][:, a]
    mean, _ = aipw_estimate(x[:40].T, a, rows, 0.5)
    rest = np.setdiff1d(np.arange(200), a)
    for row, got in zip(rows, mean):
        pred = RidgeCV(alphas=ALPHAS).fit(x[:40].T[a], row).predict(x[:40].T)
        eq3 = row.mean() + (pred[rest].mean() - pred[a].mean()) / (1 + 30 / (200 - 30))
        assert got == pytest.approx(eq3, abs=1e-12)


def test_frontier_split_holds_out_the_strongest_tenth_and_keeps_every_other_model():
    x = irt_scores(m=83, seed=11)
    src, tgt = model_split(x, "frontier", np.random.default_rng(0))
    assert len(tgt) == 8 and len(src) == 75 and not set(src) & set(tgt)
    assert x[src].mean(axis=1).max() <= x[tgt].mean(axis=1).min()
    # Fixed: the same split whatever the trial's generator.
    src2, tgt2 = model_split(x, "frontier", np.random.default_rng(5))
    assert np.array_equal(tgt, tgt2)
    # At least five targets on a small board.
    src, tgt = model_split(irt_scores(m=20, seed=1), "frontier", np.random.default_rng(0))
    assert len(tgt) == 5 and len(src) == 15


def test_stratified_sampling_is_the_design_weighted_mean_of_the_defaults_draw():
    x = irt_scores(m=50, n=103, seed=12)
    base = make_method("stratified-sampling", n_questions=10, random_state=7).fit(x[:40])
    default = make_method("default", n_questions=10, random_state=7).fit(x[:40])
    assert np.array_equal(base.selected_, default.selected_)
    sub = x[40:][:, base.selected_]
    mean, sd = base.predict(sub)
    np.testing.assert_allclose(mean, sub @ base.weights_)
    # Successive differences over the strata in difficulty order, by a loop.
    order = np.argsort(base.strata_)
    for row, got in zip(sub, sd):
        y, w = row[order], base.weights_[order]
        s2 = sum((y[h + 1] - y[h]) ** 2 for h in range(9)) / 18
        want = np.sqrt(s2 * np.sum(w**2))
        if want == 0:  # every answer alike: the binomial floor instead
            assert got > 0
        else:
            assert got == pytest.approx(want)


def test_stratified_sampling_error_bar_covers_over_repeated_draws():
    """The successive-difference SD is (slightly conservatively) the draw's own spread."""
    x = irt_scores(m=60, n=400, seed=13)
    truth = x[50:].mean(axis=1)
    errs, sds = [], []
    for seed in range(300):
        m = make_method("stratified-sampling", n_questions=40, random_state=seed).fit(x[:50])
        mean, sd = m.predict(x[50:][:, m.selected_])
        errs.append(mean - truth)
        sds.append(sd)
    errs, sds = np.array(errs), np.array(sds)
    assert np.abs(errs.mean(axis=0)).max() < 0.01  # design-unbiased
    ratio = np.sqrt((sds**2).mean(axis=0)) / errs.std(axis=0)
    assert np.all((ratio > 0.9) & (ratio < 1.5)), ratio


@pytest.mark.parametrize("name", ["random-sampling", "stratified-sampling", "aipw",
                                  "guarded-ensemble"])
@pytest.mark.parametrize("answer", [0.0, 1.0])
def test_a_run_of_all_alike_answers_never_gets_a_zero_width_interval(name, answer):
    """Every planned question right (or wrong): an Agresti-Coull-style error bar, not 0."""
    x = irt_scores(m=60, n=300, seed=14)
    method = make_method(name, n_questions=50, random_state=0).fit(x[:50])
    mean, sd = method.predict(np.full((1, 50), answer))
    assert sd[0] > 0.01
    # 50 of 50 right: the interval reaches about as far as a Wilson interval's (0.95).
    if name != "guarded-ensemble":
        assert mean[0] == answer
        assert 1.645 * sd[0] == pytest.approx(0.035, abs=0.01)


def test_dated_split_trains_on_the_earlier_models_library_and_cli(tmp_path, capsys):
    x = irt_scores(m=40, seed=15)
    models = [f"m{i}" for i in range(40)]
    days = np.random.default_rng(0).permutation(40)  # release day of each model
    src, tgt = model_split(x, "dated", np.random.default_rng(0), dated=(days, 30))
    np.testing.assert_array_equal(src, np.flatnonzero(days < 30))
    np.testing.assert_array_equal(tgt, np.flatnonzero(days >= 30))
    scores = ScoreMatrix(x, models, [f"q{j}" for j in range(120)])
    lib = evaluate_coresets(scores, split="dated", n=15, trials=2, order=days, before=30,
                            methods=("stratified-sampling",), calibrate=False)
    start = np.datetime64("2024-01-01")
    by_date = evaluate_coresets(scores, split="dated", n=15, trials=2,
                                order={m: str(start + int(d)) for m, d in zip(models, days)},
                                before="2024-01-31", methods=("stratified-sampling",),
                                calibrate=False)  # dates as a user has them: the same split
    assert by_date.row("stratified-sampling").gap == lib.row("stratified-sampling").gap
    with pytest.raises(ValueError, match="needs order"):
        evaluate_coresets(scores, split="dated", n=15, trials=1)
    with pytest.raises(ValueError, match="only used by the dated split"):
        evaluate_coresets(scores, split="frontier", n=15, trials=1, order=days, before=30)
    # The same split from a dates file on the command line.
    path = tmp_path / "q.npz"
    np.savez(path, scores=x, models=np.array(models))
    dates = tmp_path / "dates.csv"
    start = np.datetime64("2024-01-01")
    dates.write_text("model,order\n" + "".join(
        f"{m},{start + int(d)}\n" for m, d in zip(models, days)))
    assert main(["coreset-eval", str(path), "--split", "dated", "--order", str(dates),
                 "--before", str(start + 30), "--trials", "2", "-n", "15", "--methods",
                 "stratified-sampling", "--json", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["split"] == "dated"
    assert out["methods"][1]["method"] == "stratified-sampling"
    assert out["methods"][1]["gap"] == pytest.approx(lib.row("stratified-sampling").gap)
    dates.write_text("model,order\nm0,2024-01-01\n")
    assert main(["coreset-eval", str(path), "--split", "dated", "--order", str(dates),
                 "--before", "2024-02-01", "--quiet"]) == 1
    assert "no date for 39 model(s)" in capsys.readouterr().err


def test_coreset_eval_reports_the_plain_mean_of_the_defaults_answers_beside_it():
    x = irt_scores(m=40, seed=16)
    scores = ScoreMatrix(x, [f"m{i}" for i in range(40)], [f"q{j}" for j in range(120)])
    res = evaluate_coresets(scores, split="frontier", n=15, trials=2, methods=("default",),
                            calibrate=False)
    assert [r.method for r in res.rows] == ["random-sampling", "stratified-sampling",
                                            DEFAULT_METHOD]
    res = evaluate_coresets(scores, split="frontier", n=15, trials=2, methods=("aipw",),
                            calibrate=False)
    assert [r.method for r in res.rows] == ["random-sampling", "aipw"]
