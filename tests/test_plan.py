"""The plan file: round trip, rebuild checks, damaged and foreign files, allocation."""

import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from benchsel import load_dataset, read_scores
from benchsel._arrays import decode_array, encode_array
from benchsel.plan import (
    Plan,
    allocate_questions,
    error_curve,
    plan_benchmarks,
    plan_mixed,
    plan_questions,
)
from benchsel.plan.prediction import task_estimates

QUESTIONS = Path(str(resources.files("benchsel.datasets").joinpath("data", "questions")))


def _task(name: str, file: str, rows=slice(0, 60)):
    scores = read_scores(QUESTIONS / file)
    scores = scores.subset(models=np.arange(scores.n_models)[rows])
    return scores._replace(items=[f"{name}/{j}" for j in range(scores.n_items)])


@pytest.mark.parametrize("values", [
    np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]]),
    np.array([[0.25, np.nan], [1e300, -3.5]]),
    np.zeros((0, 4)),
])
def test_arrays_round_trip_exactly(values):
    obj = json.loads(json.dumps(encode_array(values)))
    back = decode_array(obj, "x")
    assert back.shape == values.shape
    np.testing.assert_array_equal(back, values)


def test_binary_arrays_are_packed_to_bits():
    values = (np.random.default_rng(0).random((80, 1000)) < 0.5).astype(float)
    obj = encode_array(values)
    assert obj["encoding"] == "bits" and len(obj["data"]) < 80 * 1000 / 8 * 1.4


def test_benchmark_plan_round_trip_predicts_as_the_fitted_model(tmp_path):
    scores = load_dataset("mteb")
    # auto's stored decisions are tested in test_python_api.py, on a smaller board.
    plan = plan_benchmarks(scores, 4, seed=3, prepare_auto=False)
    path = tmp_path / "plan.json"
    plan.save(path)
    loaded = Plan.load(path)
    assert loaded.level == "benchmarks" and loaded.benchmarks.selected == plan.benchmarks.selected
    row = scores.subset(models=[7]).subset(items=scores.item_indices(loaded.benchmarks.selected))
    a = plan.predict_benchmarks(row, method="gaussian")
    b = loaded.predict_benchmarks(row, method="gaussian")
    np.testing.assert_allclose(b.mean, a.mean, rtol=1e-12)
    np.testing.assert_allclose(b.high, a.high, rtol=1e-12)


def test_question_plan_round_trip_matches_by_doc_id(tmp_path):
    source = _task("gsm", "helm_gsm8k.npz")
    # Columns out of doc order: the plan must sort them and still match by doc id.
    shuffled = source.subset(items=np.random.default_rng(1).permutation(source.n_items))
    plan = plan_questions({"gsm": shuffled}, n=30, seed=5)
    path = tmp_path / "plan.json"
    plan.save(path)
    loaded = Plan.load(path)
    part = loaded.tasks["gsm"]
    assert list(part.doc_ids) == sorted(part.doc_ids)
    assert sorted(loaded.lm_eval_samples()["gsm"]) == loaded.lm_eval_samples()["gsm"]
    assert len(set(part.selected)) == 30
    target = read_scores(QUESTIONS / "helm_gsm8k.npz").values[70]
    answers = {int(d): float(target[d]) for d in part.selected}
    # Given in a shuffled dict order the prediction is the same.
    shuffled_answers = dict(sorted(answers.items(), key=lambda kv: -kv[0]))
    a = loaded.predict_questions({"m": {"gsm": answers}})
    b = loaded.predict_questions({"m": {"gsm": shuffled_answers}})
    assert a.mean[0, 0] == b.mean[0, 0]
    direct = plan.tasks["gsm"].fitted().predict(
        np.array([[answers[d] for d in plan.tasks["gsm"].selected]]))[0][0]
    assert a.mean[0, 0] == pytest.approx(direct)
    assert 0 <= a.low[0, 0] <= a.mean[0, 0] <= a.high[0, 0] <= 1


def test_question_plan_reports_missing_extra_and_full_runs(tmp_path):
    plan = plan_questions({"gsm": _task("gsm", "helm_gsm8k.npz")}, n=20)
    target = read_scores(QUESTIONS / "helm_gsm8k.npz").values[75]
    planned = plan.tasks["gsm"].selected
    with pytest.raises(ValueError, match="lacks 1 of the 20 planned questions"):
        plan.predict_questions({"m": {"gsm": {d: target[d] for d in planned[1:]}}})
    extra = {d: target[d] for d in planned} | {d: target[d] for d in range(3) if d not in planned}
    with pytest.warns(UserWarning, match="did not ask for"):
        plan.predict_questions({"m": {"gsm": extra}})
    full = plan.predict_questions({"m": {"gsm": {d: target[d] for d in range(len(target))}}})
    assert full.observed[0, 0] and full.mean[0, 0] == pytest.approx(target.mean())
    with pytest.raises(ValueError, match="no run of the plan's task"):
        plan.predict_questions({"m": {}})


def test_damaged_and_foreign_plans_say_what_is_wrong(tmp_path):
    plan = plan_questions({"gsm": _task("gsm", "helm_gsm8k.npz")}, n=20)
    path = tmp_path / "plan.json"
    plan.save(path)
    obj = json.loads(path.read_text())

    def write(o, text=None):
        bad = tmp_path / "bad.json"
        bad.write_text(text if text is not None else json.dumps(o))
        return bad

    with pytest.raises(ValueError, match="not valid JSON"):
        Plan.load(write(None, path.read_text()[:-40]))
    with pytest.raises(ValueError, match="not a benchsel plan"):
        Plan.load(write({"results": {}}))
    with pytest.raises(ValueError, match="format version 99"):
        Plan.load(write(obj | {"format_version": 99}))
    edited = json.loads(json.dumps(obj))
    edited["tasks"]["gsm"]["source"]["models"][0] = "someone else"
    with pytest.raises(ValueError, match="fingerprint"):
        Plan.load(write(edited))
    edited = json.loads(json.dumps(obj))
    edited["tasks"]["gsm"]["selected"][0] = (edited["tasks"]["gsm"]["selected"][0] + 1) % 1000
    loaded = Plan.load(write(edited))
    with pytest.raises(ValueError, match="chose other questions"):
        loaded.tasks["gsm"].fitted()
    edited = json.loads(json.dumps(obj))
    del edited["tasks"]["gsm"]["method"]
    with pytest.raises(ValueError, match=r"bad.json: tasks.gsm: missing 'method'"):
        Plan.load(write(edited))
    with pytest.raises(FileNotFoundError):
        Plan.load(tmp_path / "none.json")


def test_allocation_spends_the_budget_where_the_error_falls_most():
    curves = {"flat": (0.01, 0.0), "steep": (0.0, 1.0), "mild": (0.0, 0.25)}
    sizes = {"flat": 300, "steep": 300, "mild": 300}
    alloc = allocate_questions(curves, sizes, 120)
    assert sum(alloc.values()) == 120 and alloc["flat"] == 10
    # b/n: the optimum spends in proportion to sqrt(b) (steep twice mild).
    assert alloc["steep"] == pytest.approx(2 * alloc["mild"], abs=2)
    with pytest.raises(ValueError, match="between 30"):
        allocate_questions(curves, sizes, 5)
    capped = allocate_questions(curves, {"flat": 300, "steep": 40, "mild": 300}, 120)
    assert capped["steep"] == 39  # a task keeps one question unrun


def test_error_curve_recovers_sampling_error():
    """The sample mean of n random questions has error ~ p(1-p)/n: a ~ 0, b ~ E p(1-p)."""
    rng = np.random.default_rng(0)
    source = (rng.random((200, 2000)) < rng.uniform(0.2, 0.8, (200, 1))).astype(float)

    def sample_mean(train, test, n, rng):
        return test[:, rng.choice(test.shape[1], n, replace=False)].mean(axis=1)

    a, b = error_curve(source, sample_mean)
    expected = np.mean(source.mean(1) * (1 - source.mean(1)))
    assert a < 0.2 * expected / 10 and b == pytest.approx(expected, rel=0.35)


def test_plan_questions_with_a_total_budget():
    tasks = {"gsm": _task("gsm", "helm_gsm8k.npz"), "math": _task("math", "helm_math.npz")}
    plan = plan_questions(tasks, total=60, seed=2)
    assert sum(p.n for p in plan.tasks.values()) == 60
    assert plan.allocation == "total"
    assert set(plan.lm_eval_samples()) == {"gsm", "math"}
    with pytest.raises(ValueError, match="and total .spread over tasks., not both"):
        plan_questions(tasks, n=10, total=60)


def test_plan_records_model_options_as_strict_json(tmp_path):
    plan = plan_benchmarks(load_dataset("helm_lite"), 2, bounds=(0, 1), covariance="pairwise")
    plan.save(tmp_path / "p.json")
    loaded = Plan.load(tmp_path / "p.json")
    assert loaded.benchmarks.options["covariance"] == "pairwise"
    np.testing.assert_array_equal(loaded.benchmarks.model().bounds_,
                                  plan.benchmarks.model().bounds_)
    with pytest.raises(ValueError, match="bounds=.* is not a plain JSON value"):
        plan_benchmarks(load_dataset("helm_lite"), 2, bounds=(0, np.inf))


def test_noisy_measurements_condition_as_an_augmented_gaussian():
    """Conditioning on x_j = y_j + e (e ~ N(0, s^2)) equals adding x as a new variable."""
    from benchsel.gaussian.conditional import conditional_moments

    rng = np.random.default_rng(3)
    a = rng.normal(size=(6, 6))
    sigma, mean = a @ a.T + np.eye(6), rng.normal(size=6)
    x = np.array([[0.4, np.nan, -1.0, np.nan, np.nan, 2.0]])
    noise = np.array([[0.0, 0.0, 0.5, 0.0, 0.0, 0.0]])  # cell 2 is measured with noise
    mu, var = conditional_moments(x, mean, sigma, noise=noise)
    # Reference: y (6 latent cells) plus a 7th variable x2 = y2 + e; observe y0, y5, x2.
    big = np.zeros((7, 7))
    big[:6, :6] = sigma
    big[6, :6] = big[:6, 6] = sigma[2]
    big[6, 6] = sigma[2, 2] + 0.5
    obs = [0, 5, 6]
    s_oo = big[np.ix_(obs, obs)]
    value = np.array([0.4, 2.0, -1.0])
    ref_mu = np.r_[mean, mean[2]] + big[:, obs] @ np.linalg.solve(s_oo, value - np.r_[
        mean, mean[2]][obs])
    ref_var = np.diag(big) - np.einsum("io,oi->i", big[:, obs], np.linalg.solve(s_oo,
                                                                            big[obs, :]))
    np.testing.assert_allclose(mu[0], ref_mu[:6], atol=1e-12)
    np.testing.assert_allclose(var[0], np.maximum(ref_var[:6], 0), atol=1e-12)
    assert var[0, 2] > 0 and mu[0, 2] != -1.0  # the noisy cell is predicted, not copied


def test_mixed_plan_feeds_task_estimates_into_the_leaderboard_model(tmp_path):
    """A board whose two columns are the mean scores of two real question-level tasks."""
    gsm, math = _task("gsm", "helm_gsm8k.npz", slice(None)), _task(
        "math", "helm_math.npz", slice(None))
    rng = np.random.default_rng(4)
    other = gsm.values.mean(1) * 0.5 + math.values.mean(1) * 0.5 + rng.normal(0, 0.02, 83)
    from benchsel import ScoreMatrix

    board = ScoreMatrix(np.column_stack([gsm.values.mean(1), math.values.mean(1), other]),
                        gsm.models, ["gsm/acc", "math/acc", "other"])
    source = {"gsm": gsm.subset(models=np.arange(60)), "math": math.subset(models=np.arange(60))}
    plan = plan_mixed(board.subset(models=np.arange(60)), source,
                      {"gsm": "gsm/acc", "math": "math/acc"}, 0, n=40)
    plan.save(tmp_path / "m.json")
    plan = Plan.load(tmp_path / "m.json")
    assert plan.level == "mixed" and plan.run_in_full == []
    answers = {board.models[i]: {t: {d: source_full.values[i, d]
                                     for d in plan.tasks[t].selected}
                                 for t, source_full in (("gsm", gsm), ("math", math))}
               for i in range(60, 83)}
    pred = plan.predict_mixed(None, answers)
    alone = task_estimates(plan, answers, 0.9)
    j = pred.items.index("other")
    err = np.abs(pred.mean[:, j] - other[60:])
    assert np.all(pred.std[:, j] > 0) and np.median(err) < 0.05
    # Combining with the leaderboard can only shrink the sampled tasks' variance.
    assert np.all(pred.std[:, 0] <= alone.std[:, 0] + 1e-12)


def test_cli_plan_and_predict_usage_errors(tmp_path, capsys):
    from benchsel.cli import main

    plan = tmp_path / "p.json"
    assert main(["plan", "helm_lite", "-k", "2", "-o", str(plan)]) == 0
    capsys.readouterr()
    for argv, message in (
        (["predict", "--observed", "GSM8K=0.5"], "exactly one of them"),
        (["predict", "helm_lite", "--plan", str(plan), "--observed", "GSM8K=0.5"],
         "exactly one of them"),
        (["predict", "--plan", str(plan), "--bounds", "0,1", "--observed", "GSM8K=0.5"],
         "a plan carries its bounds"),
        (["plan", "helm_lite", "-k", "2", "-n", "5", "-o", str(tmp_path / "q.json")],
         "-n belongs to --kind questions"),
        (["plan", "helm_lite", "--kind", "questions", "-k", "2", "-o",
          str(tmp_path / "q.json")], "-k belongs to --kind benchmarks or mixed"),
        (["plan", "helm_lite", "--kind", "mixed", "-k", "2", "-o", str(tmp_path / "q.json")],
         "needs DATA to be a folder of lm-eval runs"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "q.json").exists()
    # The plan is never written over an input.
    costs = tmp_path / "costs.csv"
    text = "".join(f"{name},1\n" for name in load_dataset("helm_lite").items)
    costs.write_text(text)
    assert main(["plan", "helm_lite", "-k", "2", "--costs", str(costs), "-o", str(costs)]) == 1
    assert "refusing to overwrite an input file" in capsys.readouterr().err
    assert costs.read_text() == text


def test_cli_predict_csv_is_the_filled_in_leaderboard(tmp_path, capsys):
    from benchsel.cli import main

    plan = tmp_path / "p.json"
    assert main(["plan", "helm_lite", "-k", "2", "-o", str(plan)]) == 0
    assert Plan.load(plan).command == f"benchsel plan helm_lite -k 2 -o {plan}"
    chosen = Plan.load(plan).run_in_full
    out = tmp_path / "filled.csv"
    observed = ",".join(f"{name}=0.5" for name in chosen)
    assert main(["predict", "--plan", str(plan), "--observed", observed, "--format", "csv",
                 "-o", str(out)]) == 0
    import csv

    rows = list(csv.reader(out.open()))
    items = load_dataset("helm_lite").items
    assert rows[0] == ["model", *[c for item in items for c in (item, f"{item} std")]]
    cells = dict(zip(rows[0], rows[1]))
    for name in chosen:
        assert float(cells[name]) == 0.5 and float(cells[f"{name} std"]) == 0.0
    assert all(0 <= float(cells[i]) <= 1 for i in items)


def test_negative_zero_scores_still_load(tmp_path):
    source = _task("gsm", "helm_gsm8k.npz")
    values = source.values.copy()
    values[values == 0] = -0.0
    plan = plan_questions({"gsm": source._replace(values=values)}, n=10)
    plan.save(tmp_path / "p.json")
    assert Plan.load(tmp_path / "p.json").tasks["gsm"].selected == plan.tasks["gsm"].selected


def test_hand_edited_plans_name_the_file(tmp_path):
    plan = plan_questions({"gsm": _task("gsm", "helm_gsm8k.npz")}, n=10)
    path = tmp_path / "p.json"
    plan.save(path)
    obj = json.loads(path.read_text())
    for edit, message in (
        (lambda o: o.update(seed="abc"), "seed: expected a whole number; got a string 'abc'"),
        (lambda o: o.update(columns=[1, 2]), "columns: expected an object; got a list"),
        (lambda o: o["tasks"]["gsm"].update(n=10.7),
         r"tasks.gsm.n: expected a whole number; got a number 10.7"),
        (lambda o: o["tasks"]["gsm"].update(doc_ids=["a"] * 1000),
         r"tasks.gsm.doc_ids\[0\]: expected a whole number; got a string 'a'"),
        (lambda o: o.update(level="benchmarks"), "needs its benchmark part"),
        (lambda o: o.update(level="all"), "level: 'all'; expected one of benchmarks, questions"),
    ):
        edited = json.loads(json.dumps(obj))
        edit(edited)
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(edited))
        with pytest.raises(ValueError, match=message) as info:
            Plan.load(bad)
        assert str(info.value).startswith(str(bad))


def test_total_budget_needs_enough_source_models(tmp_path, capsys):
    from benchsel.cli import main

    few = _task("gsm", "helm_gsm8k.npz", slice(0, 4))
    # The library names its parameter; the command line tells it as the flag.
    with pytest.raises(ValueError, match="^total .* needs at least 5; task\\(s\\) 'gsm'"):
        plan_questions({"gsm": few}, total=20)
    assert plan_questions({"gsm": few}, n=20).tasks["gsm"].n == 20
    path = tmp_path / "gsm.npz"
    np.savez(path, scores=few.values, models=np.array(few.models))
    assert main(["plan", str(path), "--kind", "questions", "--total", "20", "-o",
                 str(tmp_path / "p.json")]) == 1
    assert "error: --total measures each task's error" in capsys.readouterr().err


def test_cli_csv_question_columns_are_doc_ids(tmp_path, capsys):
    from benchsel.cli import main

    source = _task("gsm", "helm_gsm8k.npz")
    path = tmp_path / "gsm.csv"
    frame = source.subset(items=np.arange(40)).to_frame()
    frame.columns = [str(100 + 2 * j) for j in range(40)]  # doc ids 100, 102, ...
    frame.to_csv(path)
    samples = tmp_path / "s.json"
    assert main(["plan", str(path), "--kind", "questions", "-n", "5", "-o",
                 str(tmp_path / "p.json"), "--emit-lm-eval-samples", str(samples)]) == 0
    docs = json.loads(samples.read_text())["gsm"]
    assert len(docs) == 5 and all(d >= 100 and d % 2 == 0 for d in docs)


@pytest.mark.parametrize("answer", [0.0, 1.0])
def test_question_plan_all_alike_answers_get_an_interval_of_positive_width(answer):
    """Every planned question right (or wrong): the interval holds the estimate, never [1, 1]."""
    plan = plan_questions({"gsm": _task("gsm", "helm_gsm8k.npz")}, n=30, seed=5)
    answers = {int(d): answer for d in plan.tasks["gsm"].selected}
    pred = plan.predict_questions({"m": {"gsm": answers}})
    low, mean, high = pred.low[0, 0], pred.mean[0, 0], pred.high[0, 0]
    assert low <= mean <= high and high - low > 0.02
    assert low <= answer <= high
