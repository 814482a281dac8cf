"""What a newcomer meets first: names to find, files as people write them, clear misses."""

import json

import numpy as np
import pytest

import benchsel
from benchsel.cli import main


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_datasets_name_shows_a_board_its_benchmarks_and_models(capsys):
    code, out, _ = run(capsys, "datasets", "helm_lite")
    assert code == 0
    assert "30 models x 11 benchmarks, 100.0% of the cells observed" in out
    assert "MedQA" in out and "Yi (34B)" in out
    code, out, _ = run(capsys, "datasets", "merged", "--json")
    payload = json.loads(out)
    assert payload["models"] == 118 and len(payload["model_names"]) == 118
    # How many models have each benchmark: MERGED is 31% observed, so not all.
    assert max(payload["item_models"].values()) <= 118
    assert min(payload["item_models"].values()) < 118
    code, out, _ = run(capsys, "datasets", "helm_mmlu")
    assert code == 0 and "83 models x 567 questions" in out


def test_every_kind_of_name_error_suggests_the_closest_names(capsys):
    code, _, err = run(capsys, "datasets", "helm_mmlx")
    assert code == 1 and "did you mean 'helm_mmlu'" in err and "'benchsel datasets'" in err
    code, _, err = run(capsys, "select", "mtab", "-k", "2")
    assert code == 1 and "no such file" in err and "did you mean 'mteb'" in err
    code, _, err = run(capsys, "predict", "helm_lite", "--observed", "math=0.5")
    assert code == 1 and "did you mean 'MATH' for 'math'" in err


def test_a_leaderboard_written_by_pandas_reads_as_written(tmp_path):
    board = benchsel.load_dataset("helm_lite")
    frame = board.to_frame()
    frame.index.name = None  # to_csv then writes an empty first header cell
    named = tmp_path / "index.csv"
    frame.to_csv(named)
    numbered = tmp_path / "numbered.csv"  # a default 0, 1, ... index and a name column
    frame.rename_axis("name").reset_index().to_csv(numbered)
    for path in (named, numbered):
        scores = benchsel.read_scores(path)
        assert scores.models == board.models and scores.items == board.items
    plan = benchsel.plan_benchmarks(named, k=2, prepare_auto=False)
    assert plan.run_in_full == benchsel.plan_benchmarks(board, k=2,
                                                       prepare_auto=False).run_in_full


def test_a_semicolon_file_says_which_separator_to_give(tmp_path, capsys):
    path = tmp_path / "board.csv"
    benchsel.load_dataset("helm_lite").to_frame().to_csv(path, sep=";")
    code, _, err = run(capsys, "select", path, "-k", "2")
    assert code == 1 and "looks ';'-separated" in err and "--sep ';'" in err
    assert run(capsys, "select", path, "-k", "2", "--sep", ";")[0] == 0


def test_missing_files_are_called_missing(capsys, tmp_path):
    code, _, err = run(capsys, "predict", "helm_lite", "--observed", "new_model.csv")
    assert code == 1 and "--observed new_model.csv: no such file" in err
    code, _, err = run(capsys, "plan", tmp_path / "runs", "--kind", "questions",
                       "--lm-eval-task", "a,b", "-o", tmp_path / "p.json")
    assert code == 1 and "runs: no such file" in err and "holds one task" not in err


def test_a_bundled_per_question_set_is_a_data_argument(capsys):
    code, out, _ = run(capsys, "coreset", "glue_rte", "-n", "10")
    assert code == 0 and "10 of 277 questions" in out and "glue_rte/" in out
    assert {d.kind for d in benchsel.list_datasets()} == {"leaderboard", "questions"}
    with pytest.raises(ValueError, match="kind must be one of leaderboard, questions"):
        benchsel.list_datasets("boards")


def test_an_aggregate_column_is_not_chosen_unless_asked_for(capsys):
    """HELM Lite's "Mean win rate" summarises the others: MI would pick it first."""
    code, out, err = run(capsys, "select", "helm_lite", "-k", "3", "--json")
    payload = json.loads(out)
    assert "Mean win rate" not in payload["selected"]
    assert "Mean win rate" in payload["aggregates_left_out"] and "--keep-aggregates" in err
    code, out, _ = run(capsys, "select", "helm_lite", "-k", "3", "--keep-aggregates", "--json")
    assert json.loads(out)["selected"][0] == "Mean win rate"
    # The exhaustive MI oracle searches only what the selection may choose.
    assert payload["certificate"]["oracle_fraction"] <= 1
    assert "Mean win rate" not in payload["certificate"]["oracle_best"]
    # A real benchmark named for its metric is not an aggregate.
    from benchsel.aggregates import aggregate_columns

    alpaca = benchsel.load_dataset("alpaca_eval")
    assert aggregate_columns(alpaca.values, alpaca.items) == {}
    merged = benchsel.load_dataset("merged")
    assert list(aggregate_columns(merged.values, merged.items)) == ["helm/Mean win rate"]


def test_percents_for_a_fraction_board_stop_with_what_to_give(capsys):
    code, out, err = run(capsys, "predict", "helm_lite", "--observed", "GSM8K=62,MMLU=0.66")
    assert code == 1 and out == ""
    assert "GSM8K = 62 looks like a percent; the column holds fractions: give 0.62" in err
    assert "MMLU" not in err  # given on the right scale
    code, out, err = run(capsys, "predict", "helm_lite", "--observed", "GSM8K=62,MMLU=0.66",
                         "--rescale", "--method", "gaussian", "--json")
    right = run(capsys, "predict", "helm_lite", "--observed", "GSM8K=0.62,MMLU=0.66",
                "--method", "gaussian", "--json")[1]
    assert code == 0 and json.loads(out) == json.loads(right)
    assert "--rescale: new model: GSM8K = 62 read as 0.62" in err
    # Fractions for a board in percent, the other way round.
    code, _, err = run(capsys, "predict", "bigcodebench", "--observed",
                       "Computation_complete=0.3")
    assert code == 1 and "looks like a fraction; the column is in percent: give 30" in err


def test_every_command_takes_quiet_and_it_leaves_only_errors(capsys):
    from benchsel.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    lacking = [name for name, p in sub.choices.items()
               if not any("--quiet" in a.option_strings for a in p._actions)]
    assert not lacking
    # helm_lite's aggregate column is warned about; -q keeps stderr empty, stdout the same.
    code, out, err = run(capsys, "select", "helm_lite", "-k", 2)
    assert code == 0 and "benchsel: warning:" in err
    code, quiet_out, quiet_err = run(capsys, "select", "helm_lite", "-k", 2, "-q")
    assert code == 0 and quiet_err == "" and quiet_out == out
    code, _, err = run(capsys, "select", "helm_lite", "-k", 2, "-q", "--exclude", "nothing")
    assert code == 1 and err.startswith("benchsel: error:")


def test_format_names_the_output_and_the_old_input_spelling_warns(capsys, tmp_path):
    path = tmp_path / "board.csv"
    benchsel.load_dataset("helm_lite").to_frame().to_csv(path)
    code, out, err = run(capsys, "select", path, "-k", 2, "--format", "wide", "--json")
    assert code == 0 and "--format is now --input-format" in err
    code, again, err = run(capsys, "select", path, "-k", 2, "--input-format", "wide", "--json")
    assert code == 0 and again == out and "--format" not in err


@pytest.mark.parametrize("board", ["helm_lite", "mteb"])
def test_one_answer_to_how_many(capsys, board):
    """spectrum, select --target-residual and the report name the same count (issue 30:
    the report said 'Run 13' beside a list of 5 and MI needed 14)."""
    from benchsel.report.build import Section, _Builder, _selection, _spectrum

    code, out, _ = run(capsys, "select", board, "--target-residual", 0.1, "--json", "-q")
    assert code == 0
    picked = len(json.loads(out)["selected"])
    model = benchsel.GaussianModel().fit(benchsel.load_dataset(board))
    code, out, _ = run(capsys, "spectrum", board, "--json", "-q")
    assert json.loads(out)["benchmarks_needed"] == {
        "objective": "mi", "90%": picked, "95%": model.benchmarks_needed(0.95),
        "99%": model.benchmarks_needed(0.99)}
    builder, section = _Builder(total=2), Section("spectrum", "How many")
    _spectrum(builder, section, model)
    assert section.text[0].startswith(f"Run {picked} of the ")
    listed = Section("selection", "Selection")
    _selection(builder, listed, model, 3)
    assert f"{picked} leave at most 10%" in " ".join(listed.text) or picked <= 3


def test_auto_reports_its_long_steps_and_a_terminal_sees_the_time_left():
    import io
    import time

    from benchsel.progress import Stages, reporting_to

    board = benchsel.load_dataset("helm_lite")
    model = benchsel.GaussianModel().fit(board)
    calls = []
    with reporting_to(lambda *call: calls.append(call)):
        model.predict({"GSM8K": 0.6, "MMLU": 0.7}, method="auto")
    stages = list(dict.fromkeys(stage for stage, _, _ in calls))
    assert stages[0] == "choosing the predictor"
    assert any(stage.startswith("calibrating") for stage in stages)
    for stage in stages:
        steps = [(done, total) for s, done, total in calls if s == stage]
        assert steps[0][0] == 0 and steps[-1][0] == steps[-1][1] > 0
    # The Gaussian's own calibration refits the covariance on five splits of the
    # sources (seconds on MERGED): a stage of its own, one step a refit.
    calls.clear()
    with reporting_to(lambda *call: calls.append(call)):
        benchsel.GaussianModel().fit(board).predict({"GSM8K": 0.6}, method="gaussian")
    assert calls == [("calibrating the Gaussian's intervals", done, 5) for done in range(6)]

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    screen = Terminal()
    show = Stages(delay=0.0, stream=screen)
    for done in range(4):
        show("choosing the predictor", done, 3)
        time.sleep(0.12)  # past the terminal's redraw interval
    assert "choosing the predictor: 1/3 (33%)" in screen.getvalue()
    assert "left" in screen.getvalue() and screen.getvalue().endswith("\n")
    quiet = Terminal()
    brief = Stages(delay=60.0, stream=quiet)
    for done in range(4):
        brief("quick step", done, 3)
    assert quiet.getvalue() == ""  # a step shorter than the delay shows nothing


def test_a_log_sees_a_line_a_minute_however_short_each_stage(monkeypatch):
    import io
    import time

    from benchsel.progress import Stages

    log = io.StringIO()  # not a terminal
    stages = Stages(stream=log, interval=0.05)
    for round_ in range(8):  # many stages, each far shorter than the interval
        for done in range(3):
            stages(f"stage {round_ % 2}", done, 2)
        time.sleep(0.02)
    stages.close()
    lines = log.getvalue().splitlines()
    assert 1 <= len(lines) <= 4, lines  # about one per interval, not one per stage
    assert all(line.startswith("stage ") and "in all)" in line for line in lines)
    quiet = io.StringIO()
    brief = Stages(stream=quiet, interval=60.0)
    for done in range(3):
        brief("quick", done, 2)
    assert quiet.getvalue() == ""


def test_the_python_api_logs_long_steps_only_when_asked(monkeypatch, caplog):
    import logging

    import benchsel.progress as progress

    board = benchsel.load_dataset("helm_lite")
    with caplog.at_level(logging.WARNING, logger="benchsel"):
        benchsel.GaussianModel().fit(board).predict({"GSM8K": 0.6}, method="gaussian")
    assert not [r for r in caplog.records if r.name == "benchsel"]  # silent by default
    monkeypatch.setattr(progress, "LOG_INTERVAL", 0.0)  # every step, for the test
    monkeypatch.setattr(progress, "_LOG", progress._LogReporter())
    with caplog.at_level(logging.INFO, logger="benchsel"):
        benchsel.GaussianModel().fit(board).predict({"GSM8K": 0.6}, method="gaussian")
    records = [r.getMessage() for r in caplog.records if r.name == "benchsel"]
    assert records and all(m.startswith("calibrating the Gaussian's intervals: ")
                           for m in records)


@pytest.mark.parametrize("argv, message", [
    (["discover", "helm_lite", "--bootstrap", "1000000000"],
     "--bootstrap: must be from 0 to 100,000 (each one refits the model)"),
    (["select", "helm_lite", "-k", "2", "--seed", "-1"], "--seed: must be from 0 to"),
    (["evaluate", "helm_lite", "--jobs", "0"], "--jobs: must be -1 (every core)"),
    (["coreset-eval", "glue_rte", "--trials", "10000000"], "--trials: must be from 1 to"),
])
def test_counts_that_would_run_for_days_are_refused_before_work(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("command", ["audit", "budget", "discover"])
def test_commands_do_not_offer_options_they_cannot_use(command):
    """audit, budget and discover work on the score scale and print no error bars: no
    --transform and no --calibration (they used to be offered, then refused)."""
    from benchsel.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    flags = {f for a in sub.choices[command]._actions for f in a.option_strings}
    assert "--transform" not in flags and "--calibration" not in flags
    assert "--covariance" in flags


def test_a_model_name_without_its_version_suggests_the_versions():
    """`compare helm_lite --models "GPT-4,..."` suggested nothing: the leaderboard's name
    is "GPT-4 (0613)", too long for a close spelling."""
    from benchsel.matrix import closest_names

    helm = benchsel.load_dataset("helm_lite")
    assert closest_names("GPT-4", helm.models)[0] == "GPT-4 (0613)"
    assert closest_names("gpt-4 (0613)", helm.models)[0] == "GPT-4 (0613)"


def test_compare_suggests_a_model_by_its_name(capsys):
    code, _, err = run(capsys, "compare", "helm_lite", "--models", "GPT-4,Claude 2")
    assert code == 1 and "did you mean 'GPT-4 (0613)'" in err


def test_a_transposed_leaderboard_is_refused_with_what_to_do(tmp_path, capsys):
    """Models as columns, first header 'benchmark': the models were "selected" as
    benchmarks, exit 0, no warning."""
    frame = benchsel.load_dataset("helm_lite").to_frame().T
    frame.index.name = "benchmark"
    path = tmp_path / "transposed.csv"
    frame.to_csv(path)
    code, _, err = run(capsys, "select", path, "-k", "3")
    assert code == 1 and "its rows look like benchmarks" in err and "Transpose" in err
    # Transposed back, as the message says, it reads.
    import pandas as pd

    pd.read_csv(path, index_col=0).T.to_csv(tmp_path / "back.csv")
    code, out, _ = run(capsys, "select", tmp_path / "back.csv", "-k", "3", "--json")
    assert code == 0 and len(json.loads(out)["selected"]) == 3


def test_a_pick_run_on_a_handful_of_models_is_said_to_be_one():
    """Greedy entropy on MERGED picks the MT-Bench columns, three models each, first:
    their variance rests on three scores. Nothing said so."""
    import warnings

    from benchsel.matrix import FEW_MODELS, DataWarning

    merged = benchsel.load_dataset("merged")
    model = benchsel.GaussianModel().fit(merged)
    with pytest.warns(DataWarning, match="chosen on few source models") as caught:
        picked = model.select(3, objective="entropy").items
    counts = dict(zip(merged.items, (~np.isnan(merged.values)).sum(axis=0)))
    few = [name for name in picked if counts[name] < FEW_MODELS]
    message = next(str(w.message) for w in caught if "few source models" in str(w.message))
    assert few and all(f"{name!r} ({counts[name]} models)" in message for name in few)
    helm = benchsel.GaussianModel().fit(benchsel.load_dataset("helm_lite"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        warnings.filterwarnings("ignore", "left out of the choice", DataWarning)
        helm.select(3)  # every HELM Lite column has all its models: nothing to say
