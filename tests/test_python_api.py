"""The workflow API: the library gives the command line's numbers, from any data form.

docs/python-api.md is run here as a doctest; the lm-eval cases use files the
real harness wrote (the ``lm_eval_runs`` fixture of tests/conftest.py).
"""

import doctest
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _cache import kept as kept_entry
from _compare import assert_json_close

import benchsel
from benchsel.cli import main
from benchsel.names import DEFAULT_PREDICTOR

DOCS = Path(__file__).resolve().parents[1] / "docs"


def cli_json(capsys, *argv):
    assert main([str(a) for a in argv]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def assert_same_predictions(got: dict, want: dict, tol: float = 1e-9):
    assert got["method"] == want["method"]
    rows = {r["benchmark"]: r for r in got["predictions"]}
    assert set(rows) == {r["benchmark"] for r in want["predictions"]}
    for row in want["predictions"]:
        for key in ("mean", "std", "low", "high"):
            assert rows[row["benchmark"]][key] == pytest.approx(row[key], abs=tol), key


def test_the_python_api_page_runs_as_written():
    result = doctest.testfile(str(DOCS / "python-api.md"), module_relative=False,
                              optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 10 and result.failed == 0


def test_benchmark_plan_predicts_in_python_what_the_cli_prints(tmp_path, capsys):
    path = tmp_path / "plan.json"
    cli_json(capsys, "plan", "helm_lite", "-k", 3, "-o", path, "--json")
    observed = {"MedQA": 0.61, "GSM8K": 0.72, "OpenbookQA": 0.9}
    spec = ",".join(f"{k}={v}" for k, v in observed.items())
    printed = cli_json(capsys, "predict", "--plan", path, "--observed", spec, "--json")
    with pytest.warns(benchsel.DataWarning, match="'Mean win rate' .*R² 0.977"):
        plan = benchsel.plan_benchmarks("helm_lite", k=3)
    assert plan.run_in_full == benchsel.load_plan(path).run_in_full
    pred = plan.predict(observed)
    assert pred.method == printed["method"] == DEFAULT_PREDICTOR
    assert_same_predictions(pred.to_dict(), printed)
    # predict DATA --observed (no plan) fits the same model with the same default.
    direct = cli_json(capsys, "predict", "helm_lite", "--observed", spec, "--json")
    assert_same_predictions(direct, printed)
    frame = pred.to_frame()
    assert list(frame.columns) == ["mean", "std", "low", "high", "observed"]
    assert frame.index.name == "benchmark" and frame.loc["MedQA", "observed"]
    assert frame.loc["MMLU", "mean"] == pytest.approx(
        next(r["mean"] for r in printed["predictions"] if r["benchmark"] == "MMLU"), abs=1e-12)


def test_every_data_form_gives_the_same_plan(tmp_path):
    board = benchsel.load_dataset("wildbench")
    frame = board.to_frame()
    csv = tmp_path / "board.csv"
    frame.to_csv(csv)
    plans = [benchsel.plan_benchmarks(data, k=3) for data in
             ("wildbench", board, frame, frame.reset_index(), csv)]
    assert all(p.run_in_full == plans[0].run_in_full for p in plans)
    checks = [p.benchmarks.check for p in plans]
    for check in checks[1:]:
        np.testing.assert_allclose(check, checks[0], rtol=1e-12)


def test_every_data_form_gives_the_same_evaluation(tmp_path):
    # The protocols take what the planners take: a bundled name, a DataFrame, a
    # file, a ScoreMatrix (they read '.cleaned()' of a string before).
    from benchsel.evaluation import dated, evaluate_completion, frontier
    from benchsel.evaluation.questions import evaluate_coresets

    board = benchsel.load_dataset("wildbench")
    frame = board.to_frame()
    csv = tmp_path / "board.csv"
    frame.to_csv(csv)
    forms = ("wildbench", board, frame, csv)
    options = dict(objectives=("mi",), k_max=2, predictor="gaussian")
    r2 = [[r.r2_mean for r in frontier(data, **options).rows] for data in forms]
    assert all(r == pytest.approx(r2[0], abs=1e-12) for r in r2)
    days = np.arange(board.n_models)
    r2 = [[r.r2_mean for r in dated(data, days, 50, **options).rows] for data in forms]
    assert all(r == pytest.approx(r2[0], abs=1e-12) for r in r2)
    medape = [evaluate_completion(data, methods=("mean",)).rows[0].medape for data in forms]
    assert medape == pytest.approx([medape[0]] * len(forms), abs=1e-12)
    questions = benchsel.load_dataset("helm_openbookqa")
    npz = tmp_path / "q.npz"
    np.savez(npz, scores=questions.values, models=np.array(questions.models))
    gaps = [evaluate_coresets(data, methods=("stratified-sampling",), trials=1).rows[0].gap
            for data in (questions, "helm_openbookqa", npz)]
    assert gaps == pytest.approx([gaps[0]] * 3, abs=1e-12)


def test_the_model_the_analyses_and_the_report_take_any_data_form(tmp_path):
    import warnings

    from benchsel.analyses import audit, discover, normality, paired_difference
    from benchsel.report import build_report

    board = benchsel.load_dataset("helm_lite")
    frame = board.to_frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", benchsel.DataWarning)
        for data in ("helm_lite", frame):
            model = benchsel.GaussianModel().fit(data)
            np.testing.assert_allclose(model.estimate_.covariance,
                                       benchsel.GaussianModel().fit(board).estimate_.covariance,
                                       rtol=1e-12)
            assert audit(data).to_dict()["benchmarks"] == audit(board).to_dict()["benchmarks"]
            assert discover(data).to_dict()["benchmarks"] == \
                discover(board).to_dict()["benchmarks"]
            assert normality(data).to_dict() == normality(board).to_dict()

        def untimed(payload):  # the figures, not how long they took
            if isinstance(payload, dict):
                return {k: untimed(v) for k, v in payload.items() if k != "seconds"}
            return [untimed(v) for v in payload] if isinstance(payload, list) else payload

        assert untimed(build_report("helm_lite", folds=3, k_max=2).payload) == \
            untimed(build_report(board, folds=3, k_max=2).payload)
    questions = benchsel.load_dataset("helm_openbookqa")
    a, b = questions.models[:2]
    assert paired_difference("helm_openbookqa", a, b).to_dict() == \
        paired_difference(questions, a, b).to_dict()
    with pytest.raises(TypeError, match="data must be a ScoreMatrix, a pandas DataFrame"):
        benchsel.GaussianModel().fit([[1.0, 2.0]])


def _cli_json(capsys, *argv):
    assert main([*argv, "--json", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)


def test_every_command_result_has_a_frame_of_what_the_command_prints(tmp_path, capsys):
    """Notebook users get each CLI table as a DataFrame: ``to_frame()`` of the object the
    command renders, row for row and figure for figure with its JSON."""
    import warnings

    from benchsel.analyses import audit, discover, normality, paired_difference, question_budget
    from benchsel.evaluation import evaluate_completion, frontier, oracle_subsets
    from benchsel.evaluation.questions import evaluate_coresets

    def same(values, expected):
        assert [None if v is None or v != v else v for v in values] == pytest.approx(
            [None if v is None else v for v in expected], abs=1e-12, nan_ok=True)

    warnings.simplefilter("ignore", benchsel.DataWarning)
    model = benchsel.GaussianModel().fit("helm_lite")
    frame = model.select(3).to_frame()
    out = _cli_json(capsys, "select", "helm_lite", "-k", "3")
    assert list(frame["item"]) == out["selected"] and list(frame.index) == [1, 2, 3]
    same(frame["gain"], out["gains"])

    frame = frontier("helm_lite", objectives=("mi",), k_max=2).to_frame()
    out = _cli_json(capsys, "evaluate", "helm_lite", "--protocol", "frontier", "--k-max", "2",
                    "--objectives", "mi")
    assert list(frame.index) == [("mi", 1), ("mi", 2)]
    same(frame["r2_mean"], [r["r2_mean"] for r in out["results"]])
    same(frame["interval_coverage"], [r["interval_coverage"] for r in out["results"]])

    frame = evaluate_completion("wildbench", methods=("mean", "ridge")).to_frame()
    out = _cli_json(capsys, "evaluate", "wildbench", "--protocol", "complete", "--methods",
                    "mean,ridge")
    assert list(frame.index) == [r["method"] for r in out["methods"]]
    same(frame["medape"], [r["medape"] for r in out["methods"]])

    frame = oracle_subsets("helm_lite", k_max=2, folds=3, objectives=("mi",)).to_frame()
    out = _cli_json(capsys, "evaluate", "helm_lite", "--protocol", "oracle", "--k-max", "2",
                    "--folds", "3", "--objectives", "mi")
    same(frame["r2_oracle"], [r["r2_oracle"] for r in out["results"]])
    same(frame["r2_mi"], [r["r2_mi"] for r in out["results"]])

    frame = discover("helm_lite").to_frame()
    out = _cli_json(capsys, "discover", "helm_lite")
    assert list(frame.index) == [r["benchmark"] for r in out["benchmarks"]]
    same(frame["novelty"], [r["novelty"] for r in out["benchmarks"]])

    result = audit("merged")
    out = _cli_json(capsys, "audit", "merged")
    assert list(result.to_frame().index) == [b["benchmark"] for b in out["benchmarks"]]
    same(result.cells_frame()["z"], [c["z"] for c in out["cells"]])

    frame = normality("helm_lite").to_frame()
    assert list(frame.index) == normality("helm_lite").items and frame["reject"].dtype == bool

    spec = benchsel.spectrum(model.estimate_.covariance, model.items_).to_frame()
    out = _cli_json(capsys, "spectrum", "helm_lite")
    same(spec["eigenvalue"], out["eigenvalues"])
    same(spec["residual_bound"], out["residual_fraction"])

    frame = question_budget(model, ["GSM8K", "MMLU"], fraction=0.2).to_frame()
    assert list(frame.index) == ["GSM8K", "MMLU"] and (frame["questions_needed"] > 0).all()

    from benchsel.models.compare import compare_models

    comparison = compare_models(model, {"GSM8K": 0.5, "MMLU": 0.6}, {"GSM8K": 0.7, "MMLU": 0.6})
    frame = comparison.to_frame()
    listed = comparison.to_dict()["differences"]
    assert list(frame.index) == [d["benchmark"] for d in listed]
    same(frame["difference"], [d["difference"] for d in listed])
    same(frame["p_b_better"], [d["p_b_better"] for d in listed])

    plan = benchsel.plan_benchmarks("helm_lite", k=3)
    frame = plan.to_frame()
    assert list(frame.index) == plan.run_in_full and set(frame["what"]) == {"in full"}
    out = _cli_json(capsys, "plan", "helm_lite", "-k", "3", "-o", str(tmp_path / "p.json"))
    same(frame["gain"], out["selection"]["gains"])
    frame = benchsel.plan_questions("helm_openbookqa", n=20).to_frame()
    assert frame.loc["helm_openbookqa", ["questions", "of"]].tolist() == [20, 500]

    questions = benchsel.load_dataset("helm_openbookqa")
    a, b = questions.models[:2]
    frame = paired_difference(questions, a, b).to_frame()
    out = _cli_json(capsys, "compare", "helm_openbookqa", "--paired", "--models", f"{a},{b}")
    assert list(frame.index) == [(a, b)]
    same(frame.iloc[0][["difference", "std", "low", "high", "p_b_better"]],
         [out["paired"][key] for key in ("difference", "std", "low", "high", "p_b_better")])

    frame = evaluate_coresets("helm_openbookqa", methods=("stratified-sampling",),
                              trials=1).to_frame()
    out = _cli_json(capsys, "coreset-eval", "helm_openbookqa", "--methods",
                    "stratified-sampling", "--trials", "1")
    assert list(frame.index) == [r["method"] for r in out["methods"]]
    same(frame["gap"], [r["gap"] for r in out["methods"]])


def test_a_dataframe_with_a_word_in_it_is_refused_by_column_and_row():
    frame = benchsel.load_dataset("helm_lite").to_frame()
    frame = frame.astype(object)
    frame.loc["Cohere Command", "MATH"] = "n/a"
    with pytest.raises(ValueError, match="column 'MATH', row 'Cohere Command': 'n/a' is not a"):
        benchsel.plan_benchmarks(frame, k=2)
    with pytest.raises(TypeError, match="a ScoreMatrix, a pandas DataFrame, a path"):
        benchsel.plan_benchmarks(np.zeros((4, 4)), k=2)


def test_question_plan_from_a_bundled_set_and_its_answers(tmp_path):
    data = benchsel.load_dataset("glue_rte")
    plan = benchsel.plan_questions(data.subset(models=range(80)), n=30, seed=1)
    docs = plan.questions["glue_rte"]
    assert len(docs) == 30 and docs == sorted(docs)
    assert benchsel.plan_questions("glue_rte", n=30, seed=1).tasks["glue_rte"].n == 30
    frame = data.to_frame()
    answers = {m: {"glue_rte": {d: frame.loc[m, f"glue_rte/{d}"] for d in docs}}
               for m in data.models[80:]}
    pred = plan.predict(answers)
    assert pred.item_kind == "task" and pred.models == list(data.models[80:])
    table = pred.to_frame()
    assert table.index.names == ["model", "task"] and len(table) == 7
    # One model's answers as {task: {doc_id: score}} is that model's row.
    one = plan.predict(answers[data.models[80]])
    assert one.mean[0, 0] == pytest.approx(pred.mean[0, 0], abs=1e-12)
    bad = {"glue_rte": {**answers[data.models[80]]["glue_rte"], docs[0]: True}}
    with pytest.raises(ValueError, match=f"glue_rte: the score of doc {docs[0]} is True"):
        plan.predict(bad)
    with pytest.raises(ValueError, match="method applies to benchmark-level prediction"):
        plan.predict(answers, method="gaussian")


def test_lm_eval_plans_in_python_equal_the_cli(lm_eval_runs, tmp_path, capsys):
    from lmeval.run import run_lm_eval

    runs = lm_eval_runs.runs
    path = tmp_path / "q.json"
    cli_json(capsys, "plan", runs, "--kind", "questions", "--lm-eval-task", "bs_mc_a,bs_gen",
             "-n", 12, "-o", path, "--json")
    plan = benchsel.plan_questions(runs, tasks=["bs_mc_a", "bs_gen"], n=12)
    assert plan.questions == benchsel.load_plan(path).questions
    samples = tmp_path / "samples.json"
    benchsel.write_samples(samples, plan.questions)
    new = tmp_path / "new"
    run_lm_eval(lm_eval_runs.tasks, new, {"pretrained": "new-model", "skill": 0.7},
                ["bs_mc_a", "bs_gen"], samples=samples)
    printed = cli_json(capsys, "predict", "--plan", path, "--observed", new, "--json")
    observations = benchsel.observe(plan, new)
    assert observations.models == ["new-model"]
    got = plan.predict(observations).to_dict()
    assert_same_predictions(got, printed)

    mixed = tmp_path / "m.json"
    cli_json(capsys, "plan", runs, "--kind", "mixed", "-k", 1, "--lm-eval-task", "bs_mc_a",
             "--lm-eval-filter", "bs_gen=flex", "-n", 10, "-o", mixed, "--json")
    plan = benchsel.plan_mixed(runs, ["bs_mc_a"], k=1, n=10, filter={"bs_gen": "flex"})
    assert plan.run_in_full == benchsel.load_plan(mixed).run_in_full
    assert plan.questions == benchsel.load_plan(mixed).questions
    benchsel.write_samples(samples, plan.questions)
    both = tmp_path / "both"
    run_lm_eval(lm_eval_runs.tasks, both, {"pretrained": "m", "skill": 0.9},
                ["bs_gen", "bs_mc_a"], samples=samples)
    printed = cli_json(capsys, "predict", "--plan", mixed, "--observed", both, "--json")
    assert_same_predictions(plan.predict(both).to_dict(), printed)


def test_observe_matches_bare_task_names_and_refuses_what_is_not_a_score():
    plan = benchsel.plan_benchmarks("helm_lite", k=2)
    obs = benchsel.observe(plan, {"MMLU": 0.7, "GSM8K": 0.6})
    assert obs.benchmarks.models == ("new model",) and obs.benchmarks.items == ("MMLU", "GSM8K")
    with pytest.raises(ValueError, match="value 'high' for 'MMLU' is not a finite number"):
        benchsel.observe(plan, {"MMLU": "high"})
    with pytest.raises(ValueError, match="a mapping of mappings is per-question scores"):
        benchsel.observe(plan, {"MMLU": {1: 1.0}})
    frame = pd.DataFrame({"MMLU": [0.7, 0.5]}, index=["a", "b"])
    assert benchsel.observe(plan, frame).benchmarks.models == ("a", "b")


# ------------------------------------------------------------ auto, decided once
def test_a_plan_keeps_autos_decisions_and_predicts_as_a_fresh_fit(tmp_path):
    """The stored choices and calibration give the numbers of deciding anew, and predicting
    from a loaded plan decides nothing again, inside the sources' range or beyond it."""
    board = benchsel.load_dataset("bigcodebench")
    plan = benchsel.plan_benchmarks(board, k=3)
    path = tmp_path / "plan.json"
    plan.save(path)
    loaded = benchsel.load_plan(path)
    model = loaded.benchmarks.model()
    decided = len(model.auto_memo)
    assert decided >= 3  # a choice per regime and the winners' residuals
    values = board.to_frame()[plan.run_in_full]
    typical = values.median().to_dict()
    beyond = (values.max() + 0.02).to_dict()
    far = (values.max() + 30).to_dict()
    fresh = benchsel.GaussianModel(**loaded.benchmarks.options).fit(loaded.benchmarks.source)
    for observed in (typical, beyond, far):
        got = loaded.predict(observed)
        want = fresh.predict(observed)
        assert got.choices == want.choices
        for part in ("mean", "std", "low", "high"):
            np.testing.assert_allclose(getattr(got, part), getattr(want, part), rtol=1e-12)
    assert [loaded.predict(x).choices[0]["split"] for x in (typical, beyond, far)] == [
        "random", "near", "near"]
    assert len(model.auto_memo) == decided
    # The rebuild check and the Gaussian's calibration came from the plan too: no
    # calibration split was refitted (155 sources are too few for a frontier shift).
    assert model._calibrator is None


@pytest.mark.slow
def test_a_plan_keeps_the_gaussians_calibration_for_its_check_rows(tmp_path):
    # MERGED is 31% observed: the rebuild check predicts source rows that miss some
    # selected scores, each pattern with its own calibration, all kept in the plan.
    plan = benchsel.plan_benchmarks("merged", k=2)
    kept = {tuple(r["given"]) for r in plan.to_json()["benchmarks"]["auto"]["residuals"]
            if r["method"] == "gaussian-conditional"}
    assert tuple(sorted(plan.run_in_full)) in {tuple(sorted(g)) for g in kept}
    assert len(kept) >= 2
    path = tmp_path / "plan.json"
    plan.save(path)
    loaded = benchsel.load_plan(path)
    model = loaded.benchmarks.model()  # the rebuild check passes from the kept residuals
    assert model._calibrator is None


def test_a_damaged_auto_entry_is_named_by_its_json_path(tmp_path):
    plan = benchsel.plan_benchmarks("helm_lite", k=2)
    obj = plan.to_json()
    obj["benchmarks"]["auto"]["choices"][0]["method"] = "magic"
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(ValueError, match=r"plan\.json: benchmarks\.auto\.choices\[0\]\.method: "
                                         "'magic' is not a completion method"):
        benchsel.load_plan(path)


def test_a_plan_written_with_the_former_far_choice_still_reads(tmp_path):
    """Plans written before RULES 8 hold a choice on the 30% tails ("strength") that
    nothing chooses on now: it is skipped, and the plan predicts as a fresh one."""
    plan = benchsel.plan_benchmarks("helm_lite", k=2)
    obj = plan.to_json()
    choices = obj["benchmarks"]["auto"]["choices"]
    former = dict(choices[-1], split="strength", method="mean")
    choices.append(former)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(obj))
    loaded = benchsel.load_plan(path)
    far = {name: 1.0 for name in plan.run_in_full}
    got = loaded.predict(far)
    assert got.choices[0]["split"] == "near" and got.choices[0] == plan.predict(far).choices[0]
    former["split"] = "farther"
    path.write_text(json.dumps(obj))
    with pytest.raises(ValueError, match=r"split"):
        benchsel.load_plan(path)


def test_predict_keeps_autos_decisions_between_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BENCHSEL_CACHE_DIR", str(tmp_path / "cache"))
    spec = "MMLU=0.7,GSM8K=0.6"
    first = cli_json(capsys, "predict", "helm_lite", "--observed", spec, "--json")
    kept = list((tmp_path / "cache" / "auto").glob("*.json"))
    assert len(kept) == 1
    assert cli_json(capsys, "predict", "helm_lite", "--observed", spec, "--json") == first
    kept[0].write_text("{not json")  # a damaged cache is as good as none
    assert cli_json(capsys, "predict", "helm_lite", "--observed", spec, "--json") == first
    assert json.loads(kept_entry(kept[0]))["choices"]  # and is written anew
    monkeypatch.setenv("BENCHSEL_CACHE_DIR", "off")
    other = tmp_path / "cache" / "auto"
    before = sorted(other.iterdir())
    cli_json(capsys, "predict", "helm_lite", "--observed", "MMLU=0.5", "--json")
    assert sorted(other.iterdir()) == before


def test_decisions_kept_under_other_rules_are_not_read(tmp_path, monkeypatch, capsys):
    """A cache file is keyed by auto's rules (``memo.RULES``) as well as the matrix and
    options: decisions made by rules since changed are made again, not reused."""
    from benchsel.prediction import memo

    monkeypatch.setenv("BENCHSEL_CACHE_DIR", str(tmp_path / "cache"))
    spec = "MMLU=0.7,GSM8K=0.6"
    first = cli_json(capsys, "predict", "helm_lite", "--observed", spec, "--json")
    kept = list((tmp_path / "cache" / "auto").glob("*.json"))
    monkeypatch.setattr(memo, "RULES", memo.RULES + 1)
    # Under other rules the shipped fits are not read either: every fit is made again,
    # and agrees with the shipped one to rounding, not to the bit.
    assert_json_close(cli_json(capsys, "predict", "helm_lite", "--observed", spec, "--json"),
                      first)
    now = list((tmp_path / "cache" / "auto").glob("*.json"))
    assert len(now) == 2 and set(kept) < set(now)


def test_library_defaults_give_what_the_cli_prints(capsys):
    """A random selection, and a question plan without n: the library's defaults were
    seed None (a new draw each call) and no n at all, the CLI's 0 and 50."""
    helm = benchsel.load_dataset("helm_lite")
    picked = benchsel.GaussianModel().fit(helm).select(3, objective="random").items
    assert picked == benchsel.GaussianModel().fit(helm).select(3, objective="random").items
    cli = _cli_json(capsys, "select", "helm_lite", "-k", "3", "--objective", "random")
    assert cli["selected"] == picked
    plan = benchsel.plan_questions({"glue_rte": benchsel.load_dataset("glue_rte")})
    assert len(plan.questions["glue_rte"]) == 50


def test_the_oracle_protocol_runs_with_the_cli_defaults(capsys):
    """--k-max defaulted to 15 for every protocol, and the oracle's subsets of 15 of
    helm_lite's 11 benchmarks left nothing to predict: its own default, 3, as the
    library's."""
    from benchsel.evaluation import oracle_subsets

    helm = benchsel.load_dataset("helm_lite")
    cli = _cli_json(capsys, "evaluate", "helm_lite", "--protocol", "oracle", "--folds", "2")
    lib = oracle_subsets(helm, folds=2).to_dict()
    assert [r["k"] for r in cli["results"]] == [1, 2, 3]
    assert [r["r2_oracle"] for r in cli["results"]] == \
        pytest.approx([r["r2_oracle"] for r in lib["results"]], rel=1e-12)


def test_a_prediction_explains_itself_as_predict_prints_it(capsys):
    """The text ``predict`` prints is ``Prediction.explain()``: a notebook gets it too."""
    observed = {"MedQA": 0.61, "GSM8K": 0.72, "OpenbookQA": 0.9}
    spec = ",".join(f"{k}={v}" for k, v in observed.items())
    assert main(["predict", "helm_lite", "--observed", spec, "--quiet"]) == 0
    printed = capsys.readouterr().out
    model = benchsel.GaussianModel().fit(benchsel.load_dataset("helm_lite"))
    text = model.predict(observed).explain()
    assert printed == text + "\n"
    head = text.splitlines()
    assert head[0] == "new model: 8 predicted from 3 observed"
    assert head[1].startswith("  method: ") and head[2].startswith("  intervals: calibrated")
    assert "MMLU" in text and "low (90%)" in text
