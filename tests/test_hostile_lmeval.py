"""lm-eval folders from strangers: every damage ends in a named error (issue 31).

Each case starts from real lm-eval 0.4.13 output (the ``lm_eval_runs``
fixture of tests/conftest.py, copied into a temporary folder) and damages
one part of it: a results file's ``n-samples``, ``results`` or ``configs``,
a sample line's score, the nesting depth of either, a folder's permissions.
Reading it must end in a ``ValueError`` naming the file, the JSON path or
line, the value and what was expected -- never a traceback of another type,
never a silent acceptance.

The property test at the end draws damaged folders and runs them through
the readers and the CLI in process, with the outcome conventions of
tests/test_properties.py. Outcome counts::

    python -m pytest tests/test_hostile_lmeval.py --hypothesis-profile big -q -s
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from test_properties import _check_outcome, _cli

from benchsel.lmeval import is_unit_metric, read_lm_eval, read_sample_scores
from benchsel.matrix import DataWarning

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

HUGE = "1" + "0" * 400  # an integer no float holds: Python's json made it an int


# ------------------------------------------------------------------ helpers
@pytest.fixture
def runs(lm_eval_runs, tmp_path) -> Path:
    """A copy of the real runs, ours to damage."""
    folder = tmp_path / "runs"
    shutil.copytree(lm_eval_runs.runs, folder)
    return folder


def results_file(runs: Path, model: str = "fake-00") -> Path:
    return next((runs / model).glob("results_*.json"))


def sample_log(runs: Path, task: str, model: str = "fake-00") -> Path:
    return next((runs / model).glob(f"samples_{task}_*.jsonl"))


def edit_results(path: Path, change) -> None:
    """Apply ``change`` to the parsed results file; a returned string is spliced in raw."""
    data = json.loads(path.read_text())
    raw = change(data)
    text = json.dumps(data)
    if raw is not None:  # text no Python value dumps to: deep nesting, huge integers
        text = text.replace('"@RAW@"', raw)
    path.write_text(text)


def edit_line(path: Path, number: int, change) -> None:
    """Apply ``change`` to the parsed sample line ``number`` (1-based); raw text as above."""
    lines = path.read_text().splitlines()
    obj = json.loads(lines[number - 1])
    raw = change(obj)
    text = json.dumps(obj)
    lines[number - 1] = text.replace('"@RAW@"', raw) if raw is not None else text
    path.write_text("\n".join(lines) + "\n")


def set_key(key, value, raw=None):
    def change(obj):
        obj[key] = value
        return raw
    return change


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def refused(capsys, *args) -> str:
    """Run the CLI; it must exit 1 with a ``benchsel: error:`` line, which is returned."""
    code, out, err = _cli(capsys, *args)
    assert code == 1, (code, err)
    assert "Traceback" not in err
    [line] = [x for x in err.splitlines() if x.startswith("benchsel: error:")]
    return line


# -------------------------------------------------------- results: types
@pytest.mark.parametrize("value", [7, [1, 2], "40"], ids=["int", "list", "str"])
def test_n_samples_of_a_task_must_be_an_object(runs, capsys, value):
    path = results_file(runs)
    edit_results(path, lambda d: d["n-samples"].__setitem__("bs_mc_a", value))
    with pytest.raises(ValueError, match=re.escape(f"n-samples.bs_mc_a is {json.dumps(value)} ")
                       + ".*expected an object of 'original' and 'effective'"):
        read_lm_eval(runs)
    assert str(path) in refused(capsys, "select", runs, "-k", 1)


@pytest.mark.parametrize("where, value, message", [
    ("n-samples", {"bs_mc_a": {"original": 40, "effective": "all"}},
     'n-samples.bs_mc_a.effective is "all"; expected a whole number'),
    ("n-samples", [40], r"n-samples is \[40\] \(a list\); expected an object"),
    ("results", {"bs_mc_a": 7},
     "results.bs_mc_a is 7 .*expected an object of '<metric>,<filter>' scores"),
    ("configs", {"bs_mc_a": []}, r"configs.bs_mc_a is \[\] \(a list\); expected an object"),
    ("configs", {"bs_gen": {"filter_list": 5}},
     r"configs.bs_gen.filter_list is 5 \(a number\); expected a list"),
    ("group_subtasks", ["bs_mc_a"], "group_subtasks is .*expected an object"),
    ("config", [1], r"config is \[1\] .*expected an object"),  # read without model_name
])
def test_parts_of_a_results_file_of_the_wrong_type(runs, where, value, message):
    path = results_file(runs)
    edit_results(path, lambda d: d.pop("model_name") and set_key(where, value)(d))
    with pytest.raises(ValueError, match=message) as caught:
        read_lm_eval(runs)
    assert str(caught.value).startswith(f"{path}: ")


# ------------------------------------------------------- nesting, numbers
def test_deep_nesting_in_a_results_file(runs, capsys):
    path = results_file(runs)
    edit_results(path, lambda d: d["results"]["bs_mc_a"].__setitem__("x", "@RAW@")
                 or deep(100_000))
    with pytest.raises(ValueError, match="nested 100003 levels deep; at most 64"):
        read_lm_eval(runs)
    assert str(path) in refused(capsys, "select", runs, "-k", 1)


def test_deep_nesting_in_a_sample_line(runs, capsys):
    log = sample_log(runs, "bs_mc_a")
    edit_line(log, 3, set_key("doc", "@RAW@", deep(100_000)))
    run = read_lm_eval(runs).run("fake-00", "bs_mc_a")
    with pytest.raises(ValueError, match=f"^{log}, line 3: JSON nested 100001 levels deep"):
        read_sample_scores(run)
    assert f"{log}, line 3" in refused(capsys, "coreset", runs, "--lm-eval-task", "bs_mc_a",
                                       "-n", 5)


def test_a_sample_line_longer_than_the_cap_is_refused(runs, monkeypatch):
    """One unbroken line would otherwise be read whole, however long it is."""
    import benchsel.lmeval_samples

    log = sample_log(runs, "bs_mc_a")
    longest = max(len(x) for x in log.read_text().splitlines())
    monkeypatch.setattr(benchsel.lmeval_samples, "MAX_SAMPLE_LINE", longest + 1)  # the newline too
    before = read_sample_scores(read_lm_eval(runs).run("fake-00", "bs_mc_a"))
    edit_line(log, 2, set_key("arguments", "x" * (longest + 10)))
    with pytest.raises(ValueError, match=f"^{log}: line 2: longer than {longest + 1:,} "
                                         "characters"):
        read_sample_scores(read_lm_eval(runs).run("fake-00", "bs_mc_a"))
    assert before  # the undamaged log was read under the same cap


def test_a_run_without_the_score_its_task_s_other_runs_give_is_named(runs):
    """lm-eval writes "N/A" where it could not compute a score: no score, but a
    missing cell among the task's others is said, with the results file."""
    path = results_file(runs, "fake-03")
    edit_results(path, lambda d: d["results"]["bs_mc_a"].__setitem__("acc,none", "N/A"))
    with pytest.warns(DataWarning, match=r"1 run\(s\) lack the score the task's other runs "
                                         r"give.*fake-03: bs_mc_a \(.*results_") as caught:
        board = read_lm_eval(runs).leaderboard()
    assert str(path) in str(caught[0].message)
    column = next(c for c in board.items if c.startswith("bs_mc_a/"))
    values = board.values[:, board.items.index(column)]
    assert np.isnan(values[board.models.index("fake-03")])
    assert np.isfinite(np.delete(values, board.models.index("fake-03"))).all()


def test_an_integer_beyond_float_range_in_results(runs, capsys):
    path = results_file(runs)
    edit_results(path, lambda d: d["results"]["bs_mc_a"].__setitem__("acc,none", "@RAW@")
                 or HUGE)
    with pytest.raises(ValueError, match=r"results.bs_mc_a.acc,none is Infinity; expected a "
                                         "finite number"):
        read_lm_eval(runs)
    assert str(path) in refused(capsys, "select", runs, "-k", 1)


def test_an_integer_beyond_float_range_in_a_sample_line(runs):
    log = sample_log(runs, "bs_mc_a")
    edit_line(log, 4, set_key("acc", "@RAW@", HUGE))
    with pytest.raises(ValueError, match=f"^{log}: line 4: metric 'acc' is Infinity; "
                                         "expected a finite number"):
        read_sample_scores(read_lm_eval(runs).run("fake-00", "bs_mc_a"))


def test_an_aggregated_score_out_of_range_is_refused_before_any_fit(runs, capsys, tmp_path):
    path = results_file(runs)
    edit_results(path, lambda d: d["results"]["bs_mc_a"].__setitem__("acc,none", 1e300))
    line = refused(capsys, "plan", runs, "-k", 1, "-o", tmp_path / "plan.json")
    assert f"{path}: results.bs_mc_a.acc,none is 1e+300; expected a score in [0, 1] " \
           "('acc' is a 0/1 metric)" in line
    assert not (tmp_path / "plan.json").exists()


# ---------------------------------------------------------- sample scores
@pytest.mark.parametrize("value, expected", [
    (2.0, "is 2.0; expected a score in [0, 1]"),
    (-1, "is -1; expected a score in [0, 1]"),
    (True, "is true (a boolean) but line 1 has 0.0 (a number); a log writes one kind"),
], ids=["2.0", "-1", "true"])
def test_sample_scores_out_of_range_or_a_stray_boolean(runs, capsys, value, expected):
    log = sample_log(runs, "bs_mc_a")
    first = json.loads(log.read_text().splitlines()[0])
    assert first["acc"] == 0.0  # the message below quotes line 1
    edit_line(log, 5, set_key("acc", value))
    with pytest.raises(ValueError, match=f"^{log}: line 5: metric 'acc' ") as caught:
        read_sample_scores(read_lm_eval(runs).run("fake-00", "bs_mc_a"))
    assert expected in str(caught.value)
    assert f"{log}: line 5" in refused(capsys, "coreset", runs, "--lm-eval-task", "bs_mc_a",
                                       "-n", 5)


def test_a_log_of_booleans_for_a_0_1_metric_is_read_as_0_1(runs):
    """ifeval's process_results writes prompt_level_strict_acc as true/false: accepted."""
    log = sample_log(runs, "bs_mc_a")
    before = read_sample_scores(read_lm_eval(runs).run("fake-00", "bs_mc_a"))
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    for obj in lines:
        obj["acc"] = bool(obj["acc"])
    log.write_text("".join(json.dumps(obj) + "\n" for obj in lines))
    assert read_sample_scores(read_lm_eval(runs).run("fake-00", "bs_mc_a")) == before


def test_a_boolean_is_no_score_of_a_metric_that_is_not_0_1(runs):
    log = sample_log(runs, "bs_mc_a")
    edit_line(log, 1, set_key("bleu", True))
    with pytest.raises(ValueError, match="line 1: metric 'bleu' is true .*booleans are read "
                                         "as 0/1 only for 0/1 metrics"):
        read_sample_scores(read_lm_eval(runs).run("fake-00", "bs_mc_a"), metric="bleu")


# ---------------------------------------------------------------- folders
def test_an_unreadable_model_folder_is_an_error_like_an_unreadable_file(runs, capsys,
                                                                          monkeypatch):
    folder = runs / "fake-03"
    folder.chmod(0)
    try:
        if os.access(folder, os.R_OK):  # root reads anything: refuse the listing as the OS would
            real = os.scandir

            def scandir(path="."):
                if Path(path) == folder:
                    raise PermissionError(13, "Permission denied", str(path))
                return real(path)

            monkeypatch.setattr(os, "scandir", scandir)
        with pytest.raises(ValueError, match=f"^{folder}: cannot be read \\(Permission denied\\)"):
            read_lm_eval(runs)
        assert f"{folder}: cannot be read" in refused(capsys, "select", runs, "-k", 1)
    finally:
        folder.chmod(0o755)


def test_an_unreadable_results_file_is_the_same_error(runs, monkeypatch):
    path = results_file(runs)
    real = Path.open

    def open_(self, *args, **kwargs):
        if self == path:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", open_)
    with pytest.raises(ValueError, match=f"^{path}: cannot be read \\(Permission denied\\)"):
        read_lm_eval(runs)


# ---------------------------------------------------------------- messages
def test_a_doc_id_only_one_log_has_is_traced_to_that_model(runs, capsys, tmp_path):
    """A sample line whose doc_id was changed leaves every other model without that
    question: the message says which models have it, so the odd log is found."""
    log = sample_log(runs, "bs_mc_a", "fake-04")
    edit_line(log, 3, set_key("doc_id", 99))
    line = refused(capsys, "plan", runs, "--kind", "questions", "--lm-eval-task", "bs_mc_a",
                   "-n", 3, "-o", tmp_path / "plan.json")
    assert "no score for 'bs_mc_a/99', which 1 of the 12 source models have ('fake-04')" \
        in line, line


def test_a_sample_log_alone_names_the_metrics_it_holds(lm_eval_runs, runs, capsys, tmp_path):
    """A benchmark-level plan given only sample logs said "it has  (choose with ...)"."""
    plan = tmp_path / "plan.json"
    assert _cli(capsys, "plan", runs, "-k", 1, "-o", plan, "--json")[0] == 0
    new = tmp_path / "new" / "m"
    new.mkdir(parents=True)
    shutil.copy(sample_log(runs, "bs_mc_b", "fake-05"), new)
    line = refused(capsys, "predict", "--plan", plan, "--observed", new.parent)
    assert "only its sample log was found" in line
    assert "hold per-question metric(s) 'acc'" in line
    assert "it has  (" not in line


# --------------------------------------------------------------- property
#: JSON texts put where a value was: wrong types, out of range, non-finite, too deep.
HOSTILE = ["7", "-1", "2.0", "0.5", "0", "1e300", "-1e300", "1e-320", "true", "false",
           "null", '"x"', '"N/A"', "[]", "{}", "[1, 2]", '{"t": 7}', HUGE, "-" + HUGE,
           "NaN", "Infinity", "-Infinity", deep(70), deep(5000)]
#: Whole sample lines put in place of one.
HOSTILE_LINES = [deep(5000), "[1, 2]", "7", '"line"', "{", "{}", '{"doc_id": -1}',
                 '{"doc_id": 0, "acc": 1.0}', '{"doc_id": "0", "acc": 0.0, "filter": "none"}',
                 '{"doc_id": 1e400, "acc": 0.0}', "\udcff"]
#: Parts of a results file that the readers use.
RESULT_PARTS = ("results", "n-samples", "configs", "group_subtasks", "groups", "config",
                "model_name")
COMMANDS = ("select", "predict-questions", "predict-benchmarks", "plan-questions")
OUTCOMES: Counter = Counter()


def _paths(node, prefix=(), depth=4):
    """Every (key path) inside ``node``, to ``depth`` levels."""
    yield prefix
    if depth == 0:
        return
    items = node.items() if isinstance(node, dict) else \
        enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        yield from _paths(child, (*prefix, key), depth - 1)


def _damage_results(draw, path: Path) -> str:
    data = json.loads(path.read_text())
    top = draw(st.sampled_from(RESULT_PARTS))
    if top not in data:
        data[top] = None
    where = draw(st.sampled_from(list(_paths(data[top], (top,)))))
    *parent, last = where
    node = data
    for key in parent:
        node = node[key]
    if draw(st.integers(0, 5)) == 0:
        del node[last]
        text = json.dumps(data)
    else:
        node[last] = "@RAW@"
        text = json.dumps(data).replace('"@RAW@"', draw(st.sampled_from(HOSTILE)))
    path.write_text(text, errors="surrogateescape")
    return f"results {top}"


def _damage_log(draw, path: Path) -> str:
    lines = path.read_text().splitlines()
    n = draw(st.integers(0, len(lines) - 1))
    if draw(st.booleans()):
        lines[n] = draw(st.sampled_from(HOSTILE_LINES))
        kind = "line"
    else:
        obj = json.loads(lines[n])
        key = draw(st.sampled_from(["doc_id", "filter", "metrics", *obj.get("metrics", [])]))
        obj[key] = "@RAW@"
        lines[n] = json.dumps(obj).replace('"@RAW@"', draw(st.sampled_from(HOSTILE)))
        kind = f"line {key}"
    path.write_text("\n".join(lines) + "\n", errors="surrogateescape")
    return f"log {kind}"


@st.composite
def damaged_runs(draw, source: Path, root: Path):
    """A copy of ``source`` with one to three parts of its files damaged."""
    folder = root / "runs"
    shutil.copytree(source, folder)
    models = sorted(p.name for p in folder.iterdir())
    damaged, done = [], set()
    for _ in range(draw(st.integers(1, 3))):
        model = draw(st.sampled_from(models))
        files = [f for f in sorted((folder / model).iterdir()) if f not in done]
        if not files:
            continue
        target = draw(st.sampled_from(files))
        done.add(target)  # damaged once: a second damage would parse the first
        damage = _damage_results if target.suffix == ".json" else _damage_log
        damaged.append(damage(draw, target))
    # The new model of 'predict' is the first one damaged: its files are what it reads.
    return folder, next(iter(done)).parent.name, damaged


@pytest.fixture(scope="module")
def plans(lm_eval_runs, tmp_path_factory):
    """A question-level and a benchmark-level plan made on the undamaged runs."""
    from benchsel.cli import main

    root = tmp_path_factory.mktemp("plans")
    questions, benchmarks = root / "questions.json", root / "benchmarks.json"
    assert main(["plan", str(lm_eval_runs.runs), "--kind", "questions", "--lm-eval-task",
                 "bs_mc_a,bs_gen", "-n", "6", "-o", str(questions)]) == 0
    assert main(["plan", str(lm_eval_runs.runs), "-k", "1", "-o", str(benchmarks)]) == 0
    yield {"questions": questions, "benchmarks": benchmarks}
    if OUTCOMES:
        print("\noutcomes of test_damaged_lm_eval_folders:",
              ", ".join(f"{k}: {v}" for k, v in sorted(OUTCOMES.items())))


def _read_everything(folder: Path) -> str:
    """The library's readers on ``folder``: a named ValueError or checked scores."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            runs = read_lm_eval(folder)
            for run in runs.runs.values():
                for key, value in run.scores.items():
                    assert math.isfinite(value), (run.results_file, key)
                    if "_stderr," not in key and is_unit_metric(key.partition(",")[0]):
                        assert 0 <= value <= 1, (run.results_file, key, value)
                if run.samples_file is not None:
                    scores = read_sample_scores(run)
                    assert all(math.isfinite(v) for v in scores.values()), run.samples_file
    except ValueError as err:
        assert str(err).startswith(str(folder)), err  # names the file it refuses
        return "read: refused"
    return "read: ok"


@given(data=st.data(), command=st.sampled_from(COMMANDS))
def test_damaged_lm_eval_folders(lm_eval_runs, plans, tmp_path_factory, capsys, data,
                                 command):
    folder, model, damaged = data.draw(damaged_runs(lm_eval_runs.runs,
                                                    tmp_path_factory.mktemp("damaged")))
    for kind in damaged:
        event(kind)
    read = _read_everything(folder)
    OUTCOMES[read] += 1
    if command == "select":
        args = ["select", folder, "-k", 2, "--json"]
    elif command == "plan-questions":
        args = ["plan", folder, "--kind", "questions", "--lm-eval-task", "bs_mc_a,bs_gen",
                "-n", 4, "-o", folder.parent / "plan.json", "--json"]
    else:
        plan = plans[command.split("-")[1]]
        args = ["predict", "--plan", plan, "--observed", folder / model, "--json"]
    code, out, err = _cli(capsys, *args)
    OUTCOMES[f"{command}: exit {code}"] += 1
    event(f"{command}: exit {code}")
    _check_outcome(code, out, err, folder)
