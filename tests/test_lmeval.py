"""benchsel on files the real lm-evaluation-harness (0.4.13, installed) wrote.

The runs come from the ``lm_eval_runs`` fixture (tests/conftest.py): lm-eval's
own CLI evaluating the weightless ``benchsel-fake`` model of
tests/lmeval/fake_lm.py on local JSONL tasks. Older versions' layouts are in
tests/test_lmeval_versions.py.
"""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from benchsel.cli import main
from benchsel.lmeval import read_lm_eval, read_sample_scores
from benchsel.matrix import DataWarning

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def run_new(lm_eval_runs, out, name, skill, tasks, **kwargs):
    from lmeval.run import run_lm_eval

    run_lm_eval(lm_eval_runs.tasks, out, {"pretrained": name, "skill": skill}, tasks, **kwargs)
    return out


def cli_json(capsys, *argv):
    assert main([str(a) for a in argv]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


# ------------------------------------------------------------------- reading
def test_leaderboard_of_leaf_tasks_primary_metrics(lm_eval_runs):
    runs = read_lm_eval(lm_eval_runs.runs)
    assert sorted(runs.models) == sorted(lm_eval_runs.skills)
    assert runs.tasks == sorted(lm_eval_runs.leaf_tasks)
    assert runs.groups == {"bs_group": ["bs_mc_a", "bs_mc_b"]}
    board = runs.leaderboard()
    assert board.items == ("bs_gen/exact_match,strict", "bs_mc_a/acc,none", "bs_mc_b/acc,none")
    # Each full-task score is the mean of the per-question scores lm-eval logged.
    for model in runs.models:
        for task, column in (("bs_mc_a", "bs_mc_a/acc,none"),
                             ("bs_gen", "bs_gen/exact_match,strict")):
            docs = read_sample_scores(runs.run(model, task))
            value = board.values[board.models.index(model), board.items.index(column)]
            assert value == pytest.approx(np.mean(list(docs.values())))
    flex = runs.leaderboard(filter={"bs_gen": "flex"})
    assert "bs_gen/exact_match,flex" in flex.items


def test_questions_default_to_the_primary_filter(lm_eval_runs):
    runs = read_lm_eval(lm_eval_runs.runs)
    strict = runs.questions("bs_gen")
    flex = runs.questions("bs_gen", filter="flex")
    assert strict.shape == flex.shape == (12, 30)
    assert strict.items[0] == "bs_gen/0"
    assert (strict.values <= flex.values).all() and (strict.values < flex.values).any()
    with pytest.raises(ValueError, match="--lm-eval-filter"):
        runs.questions("bs_gen", filter="exact")
    with pytest.raises(ValueError, match="is a group of tasks"):
        runs.questions("bs_group")
    with pytest.raises(ValueError, match="no run of task 'arc'"):
        runs.questions("arc")


def test_output_path_variants(lm_eval_runs, tmp_path):
    # --output_path OUT/<model> nests the model folder twice; a .json path has none.
    run_new(lm_eval_runs, tmp_path / "nested" / "m-nested", "m-nested", 0.0, ["bs_mc_a"])
    run_new(lm_eval_runs, tmp_path / "flat" / "out.json", "m-json", 0.5, ["bs_mc_a"])
    assert list((tmp_path / "nested").glob("m-nested/m-nested/results_*.json"))
    assert list((tmp_path / "flat").glob("out_*.json"))
    runs = read_lm_eval([tmp_path / "nested", tmp_path / "flat"])
    assert sorted(runs.models) == ["m-json", "m-nested"]
    assert all(runs.run(m, "bs_mc_a").samples_file is not None for m in runs.models)


def test_a_second_run_into_the_same_folder_adds_its_tasks(lm_eval_runs, tmp_path):
    out = tmp_path / "out"
    run_new(lm_eval_runs, out, "m", 0.3, ["bs_mc_a"])
    run_new(lm_eval_runs, out, "m", 0.3, ["bs_mc_b"])
    assert len(list((out / "m").glob("results_*.json"))) == 2
    board = read_lm_eval(out).leaderboard()
    assert board.items == ("bs_mc_a/acc,none", "bs_mc_b/acc,none")
    assert not np.isnan(board.values).any()
    # The same task again: the latest run counts, and the replaced one is named.
    run_new(lm_eval_runs, out, "m", 2.0, ["bs_mc_a"])
    with pytest.warns(DataWarning, match="replaced by a later run"):
        runs = read_lm_eval(out)
    assert len(runs.superseded) == 1
    assert runs.run("m", "bs_mc_a").date > runs.superseded[0].date


def test_models_come_sorted_by_name_whatever_order_their_runs_finished_in(lm_eval_runs,
                                                                          tmp_path):
    """A plan's source rows decide its calibration folds: the matrix of a folder
    must not depend on which run finished first."""
    out = tmp_path / "out"
    run_new(lm_eval_runs, out, "zz-first", 0.3, ["bs_mc_a"])
    run_new(lm_eval_runs, out, "aa-second", 0.8, ["bs_mc_a"])
    runs = read_lm_eval(out)
    assert runs.run("zz-first", "bs_mc_a").date < runs.run("aa-second", "bs_mc_a").date
    assert runs.models == ["aa-second", "zz-first"]
    assert runs.leaderboard().models == ("aa-second", "zz-first")
    assert runs.questions("bs_mc_a").models == ("aa-second", "zz-first")
    # and the source matrix of a question-level plan
    from benchsel.sources import complete_task_runs

    assert complete_task_runs(runs, "bs_mc_a").models == ("aa-second", "zz-first")


def test_partial_runs_are_never_full_task_scores(lm_eval_runs, tmp_path):
    runs_dir = tmp_path / "runs"
    shutil.copytree(lm_eval_runs.runs, runs_dir)
    run_new(lm_eval_runs, runs_dir, "partial", 1.0, ["bs_mc_a"], samples={"bs_mc_a": [0, 3, 5]})
    runs = read_lm_eval(runs_dir)
    run = runs.run("partial", "bs_mc_a")
    assert run.partial and (run.n_effective, run.n_original) == (3, 40)
    with pytest.warns(DataWarning, match="partial run.*'partial: bs_mc_a \\(3/40\\)'"):
        board = runs.leaderboard()
    assert "partial" not in board.models
    with pytest.raises(ValueError, match="ran 3 of 40 documents"):
        runs.leaderboard(partial="error")
    assert sorted(read_sample_scores(run)) == [0, 3, 5]
    assert "partial" not in runs.complete_models("bs_mc_a")


def test_cli_commands_take_a_folder_of_runs(lm_eval_runs, tmp_path, capsys):
    runs_dir = tmp_path / "runs"
    shutil.copytree(lm_eval_runs.runs, runs_dir)
    run_new(lm_eval_runs, runs_dir, "partial", 1.0, ["bs_gen"], samples={"bs_gen": [1, 2]})
    out = cli_json(capsys, "select", runs_dir, "-k", 1, "--json")
    assert out["selected"][0] in ("bs_gen/exact_match,strict", "bs_mc_a/acc,none",
                                  "bs_mc_b/acc,none")
    # The partial run is named and left out of the question-level source, not an error.
    assert main(["coreset", str(runs_dir), "--lm-eval-task", "bs_gen", "-n", "5",
                 "--json"]) == 0
    captured = capsys.readouterr()
    assert "left out 1 partial run(s) of 'bs_gen'" in captured.err and "partial" in captured.err
    assert len(json.loads(captured.out)["selected"]) == 5
    assert main(["coreset", str(runs_dir), "--lm-eval-task", "bs_gen", "--lm-eval-metric",
                 "f1", "-n", "5"]) == 1
    assert "no metric 'f1' (--lm-eval-metric)" in capsys.readouterr().err


def test_emit_samples_checks_the_task_name(lm_eval_runs, tmp_path, capsys):
    samples = tmp_path / "s.json"
    assert main(["coreset", str(lm_eval_runs.runs), "--lm-eval-task", "bs_mc_a", "-n", "5",
                 "--emit-lm-eval-samples", "bs_mc_b", str(samples)]) == 1
    assert "questions are of task 'bs_mc_a', not 'bs_mc_b'" in capsys.readouterr().err
    assert not samples.exists()


# ------------------------------------------------------------ the whole loop
def test_question_level_loop(lm_eval_runs, tmp_path, capsys):
    """runs -> plan -> lm-eval --samples on a new model -> predict --plan."""
    plan, samples = tmp_path / "plan.json", tmp_path / "samples.json"
    summary = cli_json(capsys, "plan", lm_eval_runs.runs, "--kind", "questions",
                       "--lm-eval-task", "bs_mc_a,bs_gen", "-n", 12, "-o", plan,
                       "--emit-lm-eval-samples", samples, "--json")
    wanted = json.loads(samples.read_text())
    assert set(wanted) == {"bs_mc_a", "bs_gen"}
    for task, docs in wanted.items():
        assert docs == sorted(set(docs)) and len(docs) == 12
        assert summary["tasks"][task]["doc_ids"] == docs
    assert summary["tasks"]["bs_gen"]["filter"] == "strict"

    new = run_new(lm_eval_runs, tmp_path / "new", "new-model", 0.8, ["bs_mc_a", "bs_gen"],
                  samples=samples)
    runs = read_lm_eval(new)
    for task, docs in wanted.items():
        assert sorted(read_sample_scores(runs.run("new-model", task))) == docs
    full = run_new(lm_eval_runs, tmp_path / "full", "new-model", 0.8, ["bs_mc_a", "bs_gen"])
    truth = read_lm_eval(full).leaderboard()

    out = cli_json(capsys, "predict", "--plan", plan, "--observed", new, "--json")
    assert out["model"] == "new-model"
    got = {p["benchmark"]: p for p in out["predictions"]}
    assert set(got) == {"bs_mc_a", "bs_gen"} and not any(p["observed"] for p in got.values())
    for task, column in (("bs_mc_a", "bs_mc_a/acc,none"), ("bs_gen", "bs_gen/exact_match,strict")):
        true = truth.values[0, truth.items.index(column)]
        assert 0 <= got[task]["low"] <= true <= got[task]["high"] <= 1

    # The sample logs themselves as --observed: the same predictions.
    logs = sorted((new / "new-model").glob("samples_*.jsonl"))
    again = cli_json(capsys, "predict", "--plan", plan,
                     *[a for log in logs for a in ("--observed", log)], "--json")
    assert again["predictions"] == out["predictions"]

    # The full run given as observed: every planned question is there, the score is known.
    out = cli_json(capsys, "predict", "--plan", plan, "--observed", full, "--json")
    got = {p["benchmark"]: p for p in out["predictions"]}
    assert all(p["observed"] and p["std"] == 0 for p in got.values())
    assert got["bs_mc_a"]["mean"] == pytest.approx(
        truth.values[0, truth.items.index("bs_mc_a/acc,none")])
    csv = tmp_path / "filled.csv"
    assert main(["predict", "--plan", str(plan), "--observed", str(new), "--format", "csv",
                 "-o", str(csv)]) == 0
    import csv as csv_module

    header = next(csv_module.reader(csv.open(newline="")))
    assert header[:3] == ["model", "bs_mc_a", "bs_mc_a std"]


def test_question_level_loop_refuses_a_run_that_misses_planned_questions(
        lm_eval_runs, tmp_path, capsys):
    plan, samples = tmp_path / "plan.json", tmp_path / "samples.json"
    cli_json(capsys, "plan", lm_eval_runs.runs, "--kind", "questions", "--lm-eval-task",
             "bs_mc_a", "-n", 8, "-o", plan, "--emit-lm-eval-samples", samples, "--json")
    docs = json.loads(samples.read_text())["bs_mc_a"]
    new = run_new(lm_eval_runs, tmp_path / "new", "m", 0.0, ["bs_mc_a"],
                  samples={"bs_mc_a": docs[1:] + [d for d in range(40) if d not in docs][:2]})
    assert main(["predict", "--plan", str(plan), "--observed", str(new)]) == 1
    err = capsys.readouterr().err
    assert f"lacks 1 of the 8 planned questions (doc ids {docs[0]!r})" in err


def test_benchmark_level_loop_with_results_json(lm_eval_runs, tmp_path, capsys):
    plan = tmp_path / "plan.json"
    summary = cli_json(capsys, "plan", lm_eval_runs.runs, "-k", 1, "-o", plan, "--json")
    chosen = summary["run_in_full"]
    assert len(chosen) == 1
    task = chosen[0].split("/")[0]
    new = run_new(lm_eval_runs, tmp_path / "new", "new-model", 0.5, [task])
    results = next((new / "new-model").glob("results_*.json"))
    out = cli_json(capsys, "predict", "--plan", plan, "--observed", results, "--json")
    assert {p["benchmark"] for p in out["predictions"]} | set(chosen) == set(
        summary["selection"]["selected"]) | {p["benchmark"] for p in out["predictions"]}
    assert len(out["predictions"]) == 2
    for p in out["predictions"]:
        assert 0 <= p["low"] <= p["mean"] <= p["high"] <= 1


def test_mixed_loop(lm_eval_runs, tmp_path, capsys):
    """bs_mc_b in full, questions of bs_gen; bs_mc_a and bs_gen predicted from both."""
    plan, samples = tmp_path / "plan.json", tmp_path / "samples.json"
    summary = cli_json(capsys, "plan", lm_eval_runs.runs, "--kind", "mixed", "-k", 1,
                       "--exclude", "bs_mc_a/acc,none", "--lm-eval-task", "bs_gen", "-n", 10,
                       "-o", plan, "--emit-lm-eval-samples", samples, "--json")
    assert summary["run_in_full"] == ["bs_mc_b/acc,none"]
    new = run_new(lm_eval_runs, tmp_path / "new", "new-model", 1.2, ["bs_mc_b", "bs_gen"],
                  samples=samples)
    out = cli_json(capsys, "predict", "--plan", plan, "--observed", new, "--json")
    got = {p["benchmark"]: p for p in out["predictions"]}
    assert set(got) == {"bs_mc_a/acc,none", "bs_gen/exact_match,strict"}
    for p in got.values():
        assert 0 <= p["low"] <= p["mean"] <= p["high"] <= 1 and p["std"] > 0


def test_observed_results_file_errors_name_the_file_not_the_dict(lm_eval_runs, tmp_path,
                                                                 capsys):
    plan = tmp_path / "plan.json"
    cli_json(capsys, "plan", "helm_lite", "-k", 2, "-o", plan, "--json")
    results = next((lm_eval_runs.runs / "fake-00").glob("results_*.json"))
    assert main(["predict", "--plan", str(plan), "--observed", str(results)]) == 1
    err = capsys.readouterr().err
    assert f"--observed {results}: none of its scores" in err and "GSM8K" in err
    assert "'results'" not in err and len(err) < 3000


def test_answers_are_matched_by_doc_id_not_by_log_order(lm_eval_runs, tmp_path, capsys):
    """gaussian-greedy takes its questions' scores in greedy order; lm-eval logs them by
    doc id. The prediction must be the method's own on the answers put in its order."""
    from benchsel.plan import Plan

    plan, samples = tmp_path / "plan.json", tmp_path / "samples.json"
    cli_json(capsys, "plan", lm_eval_runs.runs, "--kind", "questions", "--lm-eval-task",
             "bs_mc_a", "-n", 10, "--method", "gaussian-greedy", "-o", plan,
             "--emit-lm-eval-samples", samples, "--json")
    part = Plan.load(plan).tasks["bs_mc_a"]
    assert part.selected != sorted(part.selected)  # the orders differ: the test can fail
    new = run_new(lm_eval_runs, tmp_path / "new", "m", 0.4, ["bs_mc_a"], samples=samples)
    logged = read_sample_scores(read_lm_eval(new).run("m", "bs_mc_a"))
    assert list(logged) == sorted(logged)
    own_order = np.array([[logged[d] for d in part.selected]])
    expected = part.fitted().predict(own_order)[0][0]
    by_position = part.fitted().predict(np.array([list(logged.values())]))[0][0]
    got = cli_json(capsys, "predict", "--plan", plan, "--observed", new, "--json")
    assert got["predictions"][0]["mean"] == pytest.approx(expected, rel=1e-12)
    if by_position != pytest.approx(expected):
        assert got["predictions"][0]["mean"] != pytest.approx(by_position)


def test_cli_metric_and_filter_per_task(lm_eval_runs, capsys):
    out = cli_json(capsys, "select", lm_eval_runs.runs, "-k", 3, "--lm-eval-filter",
                   "bs_gen=flex", "--json")
    assert "bs_gen/exact_match,flex" in out["selected"]
    assert main(["select", str(lm_eval_runs.runs), "-k", "1", "--lm-eval-metric",
                 "bs_gen=f1"]) == 1
    err = capsys.readouterr().err
    assert "task 'bs_gen' has no score 'f1'" in err and "--lm-eval-metric" in err


# ----------------------------------------------------------- review findings
def test_the_plans_metric_and_filter_are_read_at_predict_time(lm_eval_runs, tmp_path, capsys):
    plan = tmp_path / "plan.json"
    summary = cli_json(capsys, "plan", lm_eval_runs.runs, "-k", 1, "--include", "bs_gen",
                       "--lm-eval-filter", "bs_gen=flex", "-o", plan, "--json")
    assert summary["run_in_full"] == ["bs_gen/exact_match,flex"]
    new = run_new(lm_eval_runs, tmp_path / "new", "m", 0.9, ["bs_gen", "bs_mc_b"])
    flex = read_lm_eval(new).leaderboard(filter={"bs_gen": "flex"})
    assert main(["predict", "--plan", str(plan), "--observed", str(new), "--format",
                 "csv"]) == 0
    import csv

    header, row = csv.reader(capsys.readouterr().out.splitlines())
    cells = dict(zip(header, row))
    assert float(cells["bs_gen/exact_match,flex"]) == pytest.approx(flex.values[0, 0])
    assert float(cells["bs_gen/exact_match,flex std"]) == 0.0
    # A bare task name stands for the plan's column of that task.
    out = cli_json(capsys, "predict", "--plan", plan, "--observed", "bs_gen=0.5", "--json")
    assert "bs_gen/exact_match,flex" not in {p["benchmark"] for p in out["predictions"]}


def test_mixed_plan_uses_full_runs_and_refuses_models_without_the_sampled_tasks(
        lm_eval_runs, tmp_path, capsys):
    plan, samples = tmp_path / "plan.json", tmp_path / "s.json"
    cli_json(capsys, "plan", lm_eval_runs.runs, "--kind", "mixed", "-k", 1, "--include",
             "bs_gen", "--lm-eval-filter", "bs_gen=flex", "--lm-eval-task", "bs_mc_a", "-n", 10,
             "-o", plan, "--emit-lm-eval-samples", samples, "--json")
    capsys.readouterr()
    new = run_new(lm_eval_runs, tmp_path / "new", "m", 0.9, ["bs_gen", "bs_mc_a"],
                  samples=samples)
    out = cli_json(capsys, "predict", "--plan", plan, "--observed", new, "--json")
    assert "bs_gen/exact_match,flex" not in {p["benchmark"] for p in out["predictions"]}
    other = run_new(lm_eval_runs, tmp_path / "other", "o", 0.1, ["bs_gen"])
    assert main(["predict", "--plan", str(plan), "--observed", str(new), "--observed",
                 str(other)]) == 1
    assert "'o': no run of the plan's sampled task(s) 'bs_mc_a'" in capsys.readouterr().err
    assert main(["plan", str(lm_eval_runs.runs), "--kind", "mixed", "-k", "1",
                 "--lm-eval-task", "bs_mc_a", "--transform", "logit", "-o",
                 str(tmp_path / "x.json")]) == 1
    assert "use no --transform" in capsys.readouterr().err


def test_a_later_limit_run_does_not_hide_a_full_source_run(lm_eval_runs, tmp_path):
    runs_dir = tmp_path / "runs"
    shutil.copytree(lm_eval_runs.runs, runs_dir)
    run_new(lm_eval_runs, runs_dir, "fake-00", lm_eval_runs.skills["fake-00"], ["bs_mc_a"],
            limit=5)
    runs = read_lm_eval(runs_dir)
    assert runs.run("fake-00", "bs_mc_a").partial and not runs.superseded
    assert "fake-00" in runs.complete_models("bs_mc_a")
    assert "fake-00" in runs.leaderboard().models


def test_outputs_never_replace_inputs(lm_eval_runs, tmp_path, capsys):
    runs_dir = tmp_path / "runs"
    shutil.copytree(lm_eval_runs.runs, runs_dir)
    inside = next((runs_dir / "fake-00").glob("results_*.json"))
    before = inside.read_text()
    assert main(["plan", str(runs_dir), "-k", "1", "-o", str(inside)]) == 1
    assert "refusing to write inside the input folder" in capsys.readouterr().err
    assert inside.read_text() == before
    with pytest.raises(SystemExit):
        main(["plan", str(runs_dir), "--kind", "questions", "--lm-eval-task", "bs_mc_a",
              "-o", str(tmp_path / "same.json"), "--emit-lm-eval-samples",
              str(tmp_path / "same.json")])
    assert "name the same file" in capsys.readouterr().err
    assert main(["plan", str(runs_dir), "-k", "1", "-o", "/dev/null"]) == 0
    assert Path("/dev/null").is_char_device()


def test_costs_may_name_lm_eval_tasks(lm_eval_runs, tmp_path, capsys):
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"bs_gen": 10.0, "bs_mc_a": 1.0, "bs_mc_b": 1.0}))
    out = cli_json(capsys, "select", lm_eval_runs.runs, "--costs", costs, "--budget", 2,
                   "--json")
    assert out["cost"] <= 2 and "bs_gen/exact_match,strict" not in out["selected"]


def test_questions_read_in_parallel_and_on_dask_match_the_serial_read(lm_eval_runs):
    runs = read_lm_eval(lm_eval_runs.runs)
    task = lm_eval_runs.leaf_tasks[0]
    serial = runs.questions(task)
    parallel = runs.questions(task, n_jobs=2)
    np.testing.assert_array_equal(parallel.values, serial.values)
    assert parallel.models == serial.models and parallel.items == serial.items
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        on_dask = runs.questions(task, n_jobs=-1, backend="dask")
    np.testing.assert_array_equal(on_dask.values, serial.values)
    # Every score is the one the log holds for that model and question.
    run = runs.full_runs[(serial.models[0], task)]
    for doc, value in read_sample_scores(run).items():
        assert serial.values[0, serial.items.index(f"{task}/{doc}")] == value


def test_sample_lines_are_read_without_their_prompts(tmp_path):
    from benchsel.lmeval_samples import _read_jsonl

    log = tmp_path / "samples_t_2024-01-01T00-00-00.jsonl"
    log.write_text(json.dumps({"doc_id": 3, "doc": {"question": "x" * 10_000},
                               "arguments": [["a" * 5000]], "resps": [["b"]],
                               "filter": "none", "metrics": ["acc"], "acc": 1.0,
                               "target": "long answer " * 10, "note": "N/A"}) + "\n")
    [(line, obj)] = _read_jsonl(log)
    assert line == 1
    assert obj == {"doc_id": 3, "filter": "none", "metrics": ["acc"], "acc": 1.0, "note": "N/A"}


def test_coreset_and_plan_read_logs_in_parallel_with_the_same_result(lm_eval_runs, capsys,
                                                                      tmp_path):
    runs, task = lm_eval_runs.runs, lm_eval_runs.leaf_tasks[0]
    serial = cli_json(capsys, "coreset", runs, "--lm-eval-task", task, "-n", 5, "--json")
    parallel = cli_json(capsys, "coreset", runs, "--lm-eval-task", task, "-n", 5, "--jobs", 2,
                        "--json")
    assert parallel["selected"] == serial["selected"]
    plans = []
    for extra in ([], ["--jobs", "2"]):
        out = tmp_path / f"plan{len(extra)}.json"
        assert main(["plan", str(runs), "--kind", "questions", "--lm-eval-task", task,
                     "-n", "5", "-o", str(out), *extra]) == 0
        plans.append(json.loads(out.read_text()))
    assert plans[0]["tasks"] == plans[1]["tasks"]
    with pytest.raises(SystemExit) as stop:
        main(["plan", str(runs), "-k", "1", "-o", str(tmp_path / "b.json"), "--jobs", "2"])
    assert stop.value.code == 2
    assert "--jobs belongs to --kind questions" in capsys.readouterr().err
