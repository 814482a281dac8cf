"""benchsel compare: the difference of two models with an error bar, checked on hidden truth."""

import json

import numpy as np
import pytest

import benchsel
from benchsel import GaussianModel, ScoreMatrix, load_dataset
from benchsel.cli import main
from benchsel.models.compare import compare_models


def _gaussian_board(m=700, n=10, seed=0):
    rng = np.random.default_rng(seed)
    loadings = rng.normal(size=(3, n))
    values = rng.normal(size=(m, 3)) @ loadings + 0.5 * rng.normal(size=(m, n))
    return ScoreMatrix(values, [f"m{i}" for i in range(m)], [f"b{j}" for j in range(n)])


def test_difference_intervals_cover_hidden_truth_on_gaussian_data():
    board = _gaussian_board()
    model = GaussianModel().fit(board.subset(models=np.arange(300)))
    rng = np.random.default_rng(1)
    inside = []
    for _ in range(150):
        i, j = rng.choice(np.arange(300, 700), 2, replace=False)
        given = [f"b{c}" for c in (0, 4, 7)]
        obs = [{g: board.values[r, int(g[1:])] for g in given} for r in (i, j)]
        cmp = compare_models(model, obs[0], obs[1])
        truth = board.values[j] - board.values[i]
        hidden = ~cmp.observed
        inside.append((cmp.low[hidden] <= truth[hidden]) & (truth[hidden] <= cmp.high[hidden]))
        both = cmp.observed
        np.testing.assert_allclose(cmp.difference[both], truth[both])
        # No measurement noise known: no error bar, no P(B > A), rather than certainty.
        assert np.isnan(cmp.std[both]).all() and np.isnan(cmp.p_b_better[both]).all()
        assert not cmp.noise_known[both].any() and cmp.noise_known[hidden].all()
        p = cmp.p_b_better[hidden]
        assert np.all((p >= 0) & (p <= 1))
    assert 0.85 <= np.mean(inside) <= 0.95


def test_known_measurement_noise_gives_observed_differences_their_error_bar():
    board = _gaussian_board()
    model = GaussianModel().fit(board.subset(models=np.arange(300)))
    given = ["b0", "b4", "b7"]
    obs = [{g: board.values[r, int(g[1:])] for g in given} for r in (300, 301)]
    se_a, se_b = {g: 0.3 for g in given}, {g: 0.4 for g in given}
    cmp = compare_models(model, obs[0], obs[1], stderr_a=se_a, stderr_b=se_b)
    both = cmp.observed
    np.testing.assert_allclose(cmp.std[both], 0.5)  # sqrt(0.3^2 + 0.4^2)
    from scipy.special import ndtr

    np.testing.assert_allclose(cmp.p_b_better[both], ndtr(cmp.difference[both] / 0.5))
    # Noisy scores are conditioned on with their noise: the others' error bars widen.
    exact = compare_models(model, obs[0], obs[1])
    assert np.all(cmp.std[~both] > exact.std[~both])
    # Only one side's noise known: still no error bar where both ran.
    half = compare_models(model, obs[0], obs[1], stderr_a=se_a)
    assert np.isnan(half.std[both]).all()
    with pytest.raises(ValueError, match="stderr of B, 'b4': -1.0; expected a finite"):
        compare_models(model, obs[0], obs[1], stderr_b={"b4": -1})


def test_errors_of_models_beyond_the_fit_are_correlated():
    # Bent board: the fit on weak models misses every strong model the same way.
    rng = np.random.default_rng(2)
    ability = rng.normal(size=(400, 1))
    bend = rng.uniform(-0.4, 0.4, size=(1, 10))
    values = ability * rng.uniform(0.5, 1.5, size=(1, 10)) + bend * ability**2 \
        + 0.3 * rng.normal(size=(400, 10))
    board = ScoreMatrix(values, [f"m{i}" for i in range(400)], [f"b{j}" for j in range(10)])
    model = GaussianModel().fit(board)
    model.predict({"b0": 0.0}, method="gaussian")  # builds the calibrator
    given = np.zeros(10, bool)
    given[[0, 5]] = True
    inside, outside = model._calibrator.error_correlation(given)
    assert 0 <= inside < 0.2
    assert outside > inside + 0.2


def test_the_error_correlation_does_not_depend_on_what_ran_before():
    # A model whose calibration comes from kept residuals (a plan's, the cache's)
    # has not built its calibrator: compare must still use the correlation.
    board = load_dataset("bigcodebench")
    given = list(board.items[:2])
    a, b = ({g: float(board.values[r, board.items.index(g)]) for g in given} for r in (0, 1))
    fresh = compare_models(GaussianModel().fit(board), a, b)
    model = GaussianModel().fit(board)
    model.prepare_auto(given)  # keeps the Gaussian's residuals for this pattern
    kept = GaussianModel().fit(board)
    kept.auto_memo = model.auto_memo
    replayed = compare_models(kept, a, b)
    assert fresh.correlation != 0
    assert replayed.correlation == fresh.correlation
    np.testing.assert_array_equal(replayed.std, fresh.std)


def test_cli_compare_on_a_sparse_board(capsys):
    board = load_dataset("merged").cleaned()
    counts = (~np.isnan(board.values)).sum(axis=1)
    a, b = (board.models[i] for i in np.argsort(-counts)[:2])
    assert main(["compare", "merged", "--models", f"{a},{b}", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["model_a"] == a and payload["model_b"] == b
    diffs = payload["differences"]
    assert any(d["observed"] for d in diffs) and any(not d["observed"] for d in diffs)
    for d in diffs:
        if d["observed"]:  # a leaderboard gives no measurement noise: no error bar
            assert d["std"] is None and d["p_b_better"] is None
            assert not d["measurement_noise_known"]
        else:
            assert d["low"] <= d["difference"] <= d["high"] and d["std"] > 0


def test_cli_compare_bad_models(capsys):
    assert main(["compare", "helm_lite", "--models", "nobody,else"]) == 1
    assert "no model named 'nobody'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["compare", "helm_lite", "--models", "x"])
    assert exc.value.code == 2
    assert "two different model names" in capsys.readouterr().err


def test_cli_compare_two_runs_with_a_plan(capsys, tmp_path):
    board = load_dataset("wildbench").cleaned()
    held = [0, 1]
    rest = board.subset(models=np.arange(2, board.n_models))
    source = tmp_path / "rest.csv"
    rest.to_frame().to_csv(source)
    plan = tmp_path / "plan.json"
    assert main(["plan", str(source), "-k", "3", "-o", str(plan)]) == 0
    selected = json.loads(plan.read_text())["benchmarks"]["selection"]["selected"]
    capsys.readouterr()
    runs = tmp_path / "runs.csv"
    cols = [board.items.index(s) for s in selected]
    lines = ["model," + ",".join(selected)]
    for i in held:
        lines.append(board.models[i] + "," + ",".join(repr(float(board.values[i, c]))
                                                      for c in cols))
    runs.write_text("\n".join(lines) + "\n")
    assert main(["compare", "--plan", str(plan), "--observed", str(runs), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert (payload["model_a"], payload["model_b"]) == (board.models[0], board.models[1])
    by = {d["benchmark"]: d for d in payload["differences"]}
    for s in selected:
        assert by[s]["observed"] and by[s]["std"] is None
        truth = board.values[1, board.items.index(s)] - board.values[0, board.items.index(s)]
        assert by[s]["difference"] == pytest.approx(truth)
    hidden = [d for d in payload["differences"] if not d["observed"]]
    assert hidden and all(d["std"] > 0 for d in hidden)
    # DATA and --plan together are refused.
    with pytest.raises(SystemExit):
        main(["compare", str(source), "--plan", str(plan), "--observed", str(runs)])


def test_cli_compare_says_when_no_noise_is_known_and_uses_what_is_given(capsys, tmp_path):
    """The friction of issue 30: two models run on every helm_lite benchmark used to get
    std 0 and P(B > A) = 1 for a difference of 0.0034."""
    board = load_dataset("helm_lite")
    a, b = board.models[:2]
    assert main(["compare", "helm_lite", "--models", f"{a},{b}"]) == 0
    out = capsys.readouterr().out
    assert "no measurement noise known" in out and " 1  " not in out
    assert main(["compare", "helm_lite", "--models", f"{a},{b}", "--questions", "1000",
                 "--json"]) == 0
    diffs = {d["benchmark"]: d for d in json.loads(capsys.readouterr().out)["differences"]}
    j = board.items.index("GSM8K")
    p = board.values[:2, j]
    expected = np.sqrt((p * (1 - p)).sum() / 1000)
    assert diffs["GSM8K"]["std"] == pytest.approx(expected)
    assert 0 < diffs["GSM8K"]["p_b_better"] < 1
    # Standard errors as '<benchmark>_stderr' columns of DATA, used and not selected.
    frame = board.to_frame()
    frame["GSM8K_stderr"] = 0.01
    path = tmp_path / "board.csv"
    frame.to_csv(path)
    assert main(["compare", str(path), "--models", f"{a},{b}", "--json"]) == 0
    diffs = {d["benchmark"]: d for d in json.loads(capsys.readouterr().out)["differences"]}
    assert "GSM8K_stderr" not in diffs
    assert diffs["GSM8K"]["std"] == pytest.approx(np.sqrt(2) * 0.01)
    assert diffs["MMLU"]["std"] is None


def test_predict_conditions_on_noisy_scores_with_their_noise(capsys, tmp_path):
    """--questions N: an observed accuracy p is a measurement with standard error
    sqrt(p(1-p)/N); the fewer the questions, the more the model pulls it in."""
    observed = "GSM8K=0.95,MMLU=0.4"
    means = {}
    for n in ("20", "100000"):
        assert main(["predict", "helm_lite", "--observed", observed, "--questions", n,
                     "--json", "-q"]) == 0
        records = {r["benchmark"]: r for r in json.loads(capsys.readouterr().out)["predictions"]}
        assert "GSM8K" in records and records["GSM8K"]["std"] > 0  # predicted, not echoed
        means[n] = records["GSM8K"]["mean"]
    assert abs(means["100000"] - 0.95) < 0.01  # nearly exact: kept
    assert means["20"] < means["100000"] - 0.01  # 20 questions: pulled toward the model
    with pytest.raises(SystemExit) as exit_:
        main(["predict", "helm_lite", "--observed", observed, "--questions", "20",
              "--method", "svd"])
    assert exit_.value.code == 2
    assert "only the Gaussian predictor models" in capsys.readouterr().err
    assert main(["predict", "helm_lite", "--observed", observed, "--questions", "20",
                 "-q"]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(
        "with their measurement noise (--questions)")
    for bad in ("5,", "0", "GSM8K=x"):
        with pytest.raises(SystemExit) as exit_:
            main(["predict", "helm_lite", "--observed", observed, "--questions", bad])
        assert exit_.value.code == 2


def test_compare_reads_lm_evals_standard_errors(lm_eval_runs, capsys):
    """Two models of a folder of real lm-eval runs, both run on every task: each
    difference gets sqrt(se_A^2 + se_B^2) from the *_stderr lm-eval wrote beside it."""
    from benchsel.lmeval import read_lm_eval

    runs = read_lm_eval(lm_eval_runs.runs)
    a, b = sorted(lm_eval_runs.skills)[:2]
    assert main(["compare", str(lm_eval_runs.runs), "--models", f"{a},{b}", "--json",
                 "-q"]) == 0
    diffs = json.loads(capsys.readouterr().out)["differences"]
    scores = runs.leaderboard()
    stderr = runs.leaderboard(stderr=True)
    assert stderr.items == scores.items and np.isfinite(stderr.values).any()
    for d in diffs:
        j = scores.items.index(d["benchmark"])
        se = stderr.values[[scores.models.index(a), scores.models.index(b)], j]
        assert d["observed"]
        if np.isfinite(se).all():
            assert d["measurement_noise_known"]
            assert d["std"] == pytest.approx(float(np.hypot(*se)))
        else:
            assert d["std"] is None
    assert any(d["measurement_noise_known"] for d in diffs)


def test_compare_with_a_plan_reads_lm_evals_standard_errors(lm_eval_runs, capsys, tmp_path):
    plan = tmp_path / "plan.json"
    assert main(["plan", str(lm_eval_runs.runs), "-k", "1", "-o", str(plan), "-q"]) == 0
    a, b = sorted(lm_eval_runs.skills)[-2:]
    capsys.readouterr()
    assert main(["compare", "--plan", str(plan), "--observed", str(lm_eval_runs.runs),
                 "--models", f"{a},{b}", "--json", "-q"]) == 0
    diffs = json.loads(capsys.readouterr().out)["differences"]
    both = [d for d in diffs if d["observed"]]
    assert both and all(d["measurement_noise_known"] and d["std"] > 0 for d in both)


def test_measurement_noise_is_a_library_function(tmp_path):
    """benchsel.observations.binomial_stderr: sqrt(p(1-p)/n) per observed score, the
    counts given as one number, per benchmark (mapping or text) or as a file."""
    from benchsel.observations import binomial_stderr, question_counts, split_stderr

    model = benchsel.GaussianModel().fit(benchsel.load_dataset("helm_lite"))
    items = list(model.items_)
    g, m = items.index("GSM8K"), items.index("MMLU")
    x = np.full((1, len(items)), np.nan)
    x[0, g], x[0, m] = 0.9, 0.4
    path = tmp_path / "counts.csv"
    path.write_text("benchmark,questions\nGSM8K,1000\n")
    for counts in ({"GSM8K": 1000}, "GSM8K=1000", path):
        se = binomial_stderr(model, x, counts)
        assert se[0, g] == pytest.approx(np.sqrt(0.9 * 0.1 / 1000), rel=1e-12)
        assert np.isnan(se[0, m]) and se[0, items.index("MedQA")] == 0
    se = binomial_stderr(model, x, 100)
    assert se[0, m] == pytest.approx(np.sqrt(0.4 * 0.6 / 100), rel=1e-12)
    assert question_counts("250", items) == {None: 250}
    with pytest.raises(ValueError, match="no benchmark 'GSM9K'.*GSM8K"):
        question_counts({"GSM9K": 10}, items)
    with pytest.raises(ValueError, match="'x' is not a positive whole number"):
        question_counts("GSM8K=x", items)
    board = benchsel.ScoreMatrix(np.array([[0.5, 0.01], [0.7, np.nan]]), ["a", "b"],
                                 ["GSM8K", "GSM8K_stderr"])
    scores, stderr = split_stderr(board)
    assert list(scores.items) == ["GSM8K"] and stderr == {"a": {"GSM8K": 0.01}, "b": {}}
