"""benchsel on what lm-eval 0.4.5 and 0.4.8 themselves wrote (tests/data/lm_eval).

The files were written by those versions of the real harness for the
weightless model of tests/lmeval/fake_lm.py (regenerate them with
tests/lmeval/make_fixtures.py); 0.4.13 is run live in tests/test_lmeval.py.
Differences that matter to a reader: stand-alone tasks listed in
``group_subtasks`` with an empty list, sample lines without ``filter`` and
``metrics`` keys in 0.4.5 (one line per document and filter, in
``filter_list`` order), ``config.model_args`` as a string, and
``--output_path x.json`` taken as a folder name.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from benchsel.cli import main
from benchsel.lmeval import read_lm_eval, read_sample_scores
from benchsel.matrix import DataWarning

HERE = Path(__file__).resolve().parent / "data" / "lm_eval"
VERSIONS = ["0.4.5", "0.4.8"]


@pytest.fixture(params=VERSIONS)
def version_dir(request) -> Path:
    return HERE / request.param


def test_the_fixtures_are_what_each_version_wrote(version_dir):
    results = json.loads(next((version_dir / "runs" / "fake-00").glob("results_*.json"))
                         .read_text())
    assert results["group_subtasks"] == {"bs_gen": [], "bs_group": ["bs_mc_a", "bs_mc_b"]}
    line = json.loads(next((version_dir / "runs" / "fake-00").glob("samples_bs_gen_*.jsonl"))
                      .read_text().splitlines()[0])
    assert ("filter" in line) == (version_dir.name != "0.4.5")


def test_leaf_tasks_with_empty_group_lists_are_read(version_dir):
    runs = read_lm_eval(version_dir / "runs")
    assert sorted(runs.models) == [f"fake-0{i}" for i in range(8)]
    assert runs.tasks == ["bs_gen", "bs_mc_a", "bs_mc_b"]
    assert runs.groups == {"bs_group": ["bs_mc_a", "bs_mc_b"]}
    board = runs.leaderboard()
    assert board.items == ("bs_gen/exact_match,strict", "bs_mc_a/acc,none", "bs_mc_b/acc,none")
    assert not np.isnan(board.values).any()


@pytest.mark.parametrize("filter_name", ["strict", "flex"])
def test_sample_lines_with_or_without_filter_keys_match_the_results(version_dir, filter_name):
    runs = read_lm_eval(version_dir / "runs")
    board = runs.leaderboard(filter={"bs_gen": filter_name})
    column = board.items.index(f"bs_gen/exact_match,{filter_name}")
    for model in runs.models:
        docs = read_sample_scores(runs.run(model, "bs_gen"), filter=filter_name)
        assert sorted(docs) == list(range(6))
        assert np.mean(list(docs.values())) == pytest.approx(
            board.values[board.models.index(model), column])
    strict = runs.questions("bs_gen").values
    flex = runs.questions("bs_gen", filter="flex").values
    assert (strict <= flex).all() and (strict < flex).any()


def test_nested_and_json_output_paths_and_model_names(version_dir):
    runs = read_lm_eval([version_dir / "nested", version_dir / "jsonpath"])
    # The model name comes from the run's own config, not the folder it sits in.
    assert sorted(runs.models) == ["fake-08", "fake-09"]
    assert runs.leaderboard().shape == (2, 3)


def test_two_runs_into_one_folder_are_merged_by_task(version_dir):
    runs = read_lm_eval(version_dir / "tworuns")
    assert runs.models == ["fake-10"] and not runs.superseded
    board = runs.leaderboard()
    assert board.items == ("bs_mc_a/acc,none", "bs_mc_b/acc,none")
    assert not np.isnan(board.values).any()


def test_limit_runs_are_partial_not_full_scores(version_dir):
    runs = read_lm_eval([version_dir / "runs", version_dir / "partial"])
    assert runs.run("fake-11", "bs_mc_a").partial
    with pytest.warns(DataWarning, match="3 partial run"):
        board = runs.leaderboard()
    assert "fake-11" not in board.models
    assert sorted(read_sample_scores(runs.run("fake-11", "bs_mc_a"))) == list(range(5))


def test_cli_reads_old_layouts(version_dir, capsys, tmp_path):
    assert main(["select", str(version_dir / "runs"), "-k", "2", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["selected"]) == 2
    samples = tmp_path / "s.json"
    assert main(["coreset", str(version_dir / "runs"), "--lm-eval-task", "bs_gen",
                 "--lm-eval-filter", "flex", "-n", "3", "--method", "random-sampling",
                 "--emit-lm-eval-samples", "bs_gen", str(samples)]) == 0
    docs = json.loads(samples.read_text())["bs_gen"]
    assert len(docs) == 3 and set(docs) <= set(range(6))


def test_plan_and_predict_on_old_layouts(version_dir, capsys, tmp_path):
    plan = tmp_path / "plan.json"
    assert main(["plan", str(version_dir / "runs"), "-k", "1", "--exclude", "bs_gen",
                 "--covariance", "pairwise", "-o", str(plan)]) == 0
    capsys.readouterr()
    # fake-10 ran bs_mc_a and bs_mc_b in two runs; bs_gen is predicted.
    assert main(["predict", "--plan", str(plan), "--observed", str(version_dir / "tworuns"),
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["model"] == "fake-10"
    assert [p["benchmark"] for p in out["predictions"]] == ["bs_gen/exact_match,strict"]
    # Question level: a full run of the planned task is read by doc id (0.4.5 logs carry
    # no filter key: the filter comes from the line's position).
    assert main(["plan", str(version_dir / "runs"), "--kind", "questions", "--lm-eval-task",
                 "bs_gen", "--lm-eval-filter", "flex", "-n", "3", "--method",
                 "random-sampling", "-o", str(plan)]) == 0
    capsys.readouterr()
    assert main(["predict", "--plan", str(plan), "--observed", str(version_dir / "nested"),
                 "--format", "csv"]) == 0
    import csv
    import io

    header, row = csv.reader(io.StringIO(capsys.readouterr().out, newline=""))
    flex = read_sample_scores(read_lm_eval(version_dir / "nested").run("fake-08", "bs_gen"),
                              filter="flex")
    assert header == ["model", "bs_gen", "bs_gen std"]
    assert row[1:] == [repr(float(np.mean(list(flex.values())))), "0.0"]
