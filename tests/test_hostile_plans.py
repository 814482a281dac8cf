"""Plan files from someone else: refused by name before use, never a traceback or a bomb.

Each case the hostile-input campaign of issue 31 found is a regression test;
a property test mutates real plans (a benchmark-level plan with ``auto``'s
decisions, a question-level plan) anywhere in their JSON and sends them
through ``benchsel predict --plan``. Profiles as in tests/test_properties.py::

    python -m pytest tests/test_hostile_plans.py --hypothesis-profile big \
        --hypothesis-show-statistics
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import tempfile
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from test_properties import _check_outcome, _cli

from benchsel import load_dataset, load_plan, plan_benchmarks, plan_questions
from benchsel.matrix import DataWarning


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    """A benchmark-level plan (with auto's decisions) and a question-level plan, saved,
    with an ``--observed`` file for each."""
    root = tmp_path_factory.mktemp("plans")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # helm_lite's aggregate, left out
        bench = plan_benchmarks("helm_lite", k=2)
    bench.save(root / "bench.json")
    chosen = bench.run_in_full
    (root / "bench_obs.json").write_text(json.dumps({b: 0.6 for b in chosen}))
    questions = plan_questions({"glue_rte": load_dataset("glue_rte")}, n=8)
    questions.save(root / "questions.json")
    (root / "questions_obs.json").write_text(json.dumps(
        {"glue_rte": {str(d): d % 2 for d in questions.questions["glue_rte"]}}))
    return {kind: (root / f"{kind}.json", root / f"{kind}_obs.json")
            for kind in ("bench", "questions")}


def _edited(path: Path, edit) -> Path:
    obj = json.loads(path.read_text())
    edit(obj)
    out = path.with_name("edited.json")
    out.write_text(json.dumps(obj))
    return out


def _predict(capsys, plan: Path, observed: Path):
    return _cli(capsys, "predict", "--plan", plan, "--observed", observed, "--json")


def _refused(capsys, plan, observed, *fragments):
    code, out, err = _predict(capsys, plan, observed)
    assert code == 1 and "Traceback" not in err, err
    line = next(x for x in err.splitlines() if x.startswith("benchsel: error:"))
    assert str(plan) in line, line
    for fragment in fragments:
        assert fragment in line, line
    return line


def _set(*path_and_value):
    *path, value = path_and_value

    def edit(obj):
        for key in path[:-1]:
            obj = obj[key]
        obj[path[-1]] = value
    return edit


def _shift_entry(given=None, method="gp", length=None):
    """An edit that adds one frontier-shift entry to a benchmark plan's ``auto``: valid but
    for what the arguments change (``length``: values in the shift)."""
    from benchsel._arrays import encode_array

    def edit(obj):
        part = obj["benchmarks"]
        items = part["source"]["items"]
        n = len(items) if length is None else length
        part["auto"].setdefault("shifts", []).append(
            {"given": given or part["selection"]["selected"][:1], "method": method,
             "shift": encode_array(np.zeros(n))})
    return edit


def test_the_undamaged_plans_predict(plans, capsys):
    """The base of every generated case: both plans predict from their --observed file
    (for the question plan, a JSON file {task: {doc_id: score}})."""
    for kind in ("bench", "questions"):
        code, out, err = _predict(capsys, *plans[kind])
        assert code == 0, err
        assert json.loads(out)["predictions"]


# ------------------------------------------------------------ the campaign's cases
@pytest.mark.parametrize("edit, fragments", [
    (_set("benchmarks", "selection", "selected", None),
     ["benchmarks.selection.selected: expected a list; got null"]),
    (_set("benchmarks", "selection", "selected", 5), ["selected: expected a list"]),
    (_set("benchmarks", "selection", "selected", 0.5), ["selected: expected a list"]),
    (_set("benchmarks", "options", "extra", 1),
     ["benchmarks.options.extra: unknown key"]),
    (_set("benchmarks", "options", "floor", "x"),
     ["benchmarks.options.floor: expected a number; got a string 'x'"]),
    (_set("benchmarks", "options", "max_iter", 10**9),
     ["benchmarks.options.max_iter: 1000000000 is outside"]),
    (_set("format_version", True), ["plan format version True"]),
    (_set("seed", True), ["seed: expected a whole number; got a boolean"]),
    (_set("benchmarks", "selection", "selected", ["no such benchmark"]),
     ["benchmarks.selection.selected: 'no such benchmark' is not a benchmark"]),
    (_set("benchmarks", "auto", "choices", 3), ["benchmarks.auto.choices: expected a list"]),
    (_set("benchmarks", "auto", "shifts", {}), ["benchmarks.auto.shifts: expected a list"]),
    (_shift_entry(given=["no such benchmark"]),
     ["benchmarks.auto.shifts[0].given: expected a list of the model's benchmarks"]),
    (_shift_entry(method="rm -rf"),
     ["benchmarks.auto.shifts[0].method: 'rm -rf' is not a completion method"]),
    (_shift_entry(length=3),
     ["benchmarks.auto.shifts[0].shift: expected 11 finite values", "got shape [3]"]),
    # Read when the plan is, though only the rebuild uses it.
    (_set("benchmarks", "options", "bounds", "abc"),
     ["benchmarks.options.bounds: bounds must be", "got 'abc'"]),
    # Valid, but not what the plan was made with: found by the rebuild, at prediction.
    (_set("benchmarks", "options", "ridge", 0.5),
     ["benchmarks: the predictor rebuilt from the plan does not reproduce"]),
])
def test_hostile_benchmark_plans_are_refused_by_json_path(plans, capsys, edit, fragments):
    plan, observed = plans["bench"]
    _refused(capsys, _edited(plan, edit), observed, *fragments)


@pytest.mark.parametrize("edit, fragments", [
    (_set("tasks", "glue_rte", "doc_ids", 0, 10**40),
     ["tasks.glue_rte.doc_ids[0]: expected a whole number; got a number 1e+40"]),
    (_set("tasks", "glue_rte", "selected", 0, -1), ["tasks.glue_rte.selected[0]: -1 is outside"]),
    (_set("tasks", "glue_rte", "n", 1.5), ["tasks.glue_rte.n: expected a whole number"]),
    (_set("tasks", "glue_rte", "method", "rm -rf"), ["tasks.glue_rte.method: 'rm -rf' is not"]),
    (_set("tasks", "glue_rte", "doc_ids", [1, 1]), ["tasks.glue_rte.doc_ids: 1 appears more"]),
    (_set("columns", {"glue_rte": "x"}), []),  # a questions plan with columns: checked below
])
def test_hostile_question_plans_are_refused_by_json_path(plans, capsys, edit, fragments):
    plan, observed = plans["questions"]
    code, _, err = _predict(capsys, _edited(plan, edit), observed)
    assert "Traceback" not in err
    if fragments:
        assert code == 1 and all(f in err for f in fragments), err


def test_a_question_plan_rebuilt_otherwise_is_refused_by_json_path(plans, capsys):
    plan, observed = plans["questions"]
    _refused(capsys, _edited(plan, _set("tasks", "glue_rte", "seed", 12345)), observed,
             "tasks.glue_rte: the method rebuilt from the plan chose other questions")


def test_observed_question_scores_are_checked_by_file_doc_and_value(plans, capsys, tmp_path):
    """A score outside the task's [0, 1], a doc id given twice or a planned one missing
    names the --observed file (json would keep the last of two equal keys without a
    word)."""
    plan, observed = plans["questions"]
    runs = json.loads(observed.read_text())
    doc = next(iter(runs["glue_rte"]))
    for name, text, fragments in [
        ("big.json", json.dumps({"glue_rte": {**runs["glue_rte"], doc: 1e300}}),
         [f"task 'glue_rte', doc {doc}: score 1e+300; expected a number in [0, 1]"]),
        ("short.json", json.dumps({"glue_rte": {d: v for d, v in runs["glue_rte"].items()
                                                if d != doc}}),
         [f"task 'glue_rte': the run lacks 1 of the {len(runs['glue_rte'])} planned questions"
          f" (doc ids {doc})"]),
        ("twice.json", json.dumps({"glue_rte": runs["glue_rte"]})[:-2] + f', "{doc}": 0.5}}}}',
         [f"the key '{doc}' appears twice in one object"]),
    ]:
        path = tmp_path / name
        path.write_text(text)
        code, _, err = _predict(capsys, plan, path)
        assert code == 1 and "Traceback" not in err, err
        line = next(x for x in err.splitlines() if x.startswith("benchsel: error:"))
        assert str(path) in line and all(f in line for f in fragments), line


def test_non_finite_numbers_and_deep_nesting(plans, capsys, tmp_path):
    plan, observed = plans["bench"]
    text = plan.read_text()
    bad = tmp_path / "inf.json"
    bad.write_text(text.replace('"selected": [', '"selected": [-Infinity, ', 1))
    _refused(capsys, bad, observed, "-Infinity is not a JSON number")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    _refused(capsys, deep, observed, "nested 100000 levels deep")


def _bomb(nbytes: int) -> str:
    """base64 of zlib data that inflates to ``nbytes`` zero bytes."""
    stream = zlib.compressobj(9)
    block = bytes(1 << 24)
    parts = [stream.compress(block) for _ in range(nbytes >> 24)]
    return base64.b64encode(b"".join(parts) + stream.flush()).decode()


def test_a_decompression_bomb_is_refused_before_it_is_inflated(plans, tmp_path):
    """Half a GiB of zeros in 0.7 MB (the campaign's was 3 GB in 4.2 MB: the same case):
    refused by its data's length, by the declared shape's size, or by inflating no more
    than the declared shape -- in a child process whose address space is capped, so
    that a regression fails the test, not the machine."""
    plan, _ = plans["bench"]
    bomb = _bomb(512 << 20)
    cases = {"shape [1, 1]": ([1, 1], "more than an array of shape [1, 1] can take"),
             "shape [1000, 1000]": ([1000, 1000], "inflates to more than the 1000000 values"),
             "3 GiB declared": ([402653184, 1], "past the plan's limit")}
    for name, (shape, expected) in cases.items():
        path = tmp_path / f"bomb{shape[0]}.json"
        path.write_text(plan.read_text())
        _edited(path, _set("benchmarks", "check",
                           {"shape": shape, "encoding": "float64-zlib", "data": bomb})
                ).rename(path)
        peak, message = _load_in_capped_child(path)
        assert f"{path}: benchmarks.check" in message and expected in message, (name, message)
        # Reading the text costs a few times its size, plus the declared 8 MB at most.
        assert peak < 6 * path.stat().st_size + (80 << 20), (name, peak)


_CHILD = """
import resource, sys

def status(key):  # kB figures of /proc/self/status; VmHWM is this process's peak RSS
    lines = open("/proc/self/status").read().splitlines()
    return int(next(x.split()[1] for x in lines if x.startswith(key + ":"))) * 1024

cap = status("VmSize") + (1 << 30)
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
from benchsel import load_plan
before = status("VmHWM")
try:
    load_plan(sys.argv[1])
    message = "loaded"
except ValueError as err:
    message = str(err)
print(status("VmHWM") - before)
print(message)
"""


def _load_in_capped_child(path: Path) -> tuple[int, str]:
    """(peak memory growth in bytes, message) of ``load_plan(path)`` in a child process
    limited to 1 GiB more address space than it starts with."""
    warm = "import benchsel, benchsel.plan, numpy, scipy.linalg\n"
    done = subprocess.run([sys.executable, "-c", warm + _CHILD, str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    peak, message = done.stdout.split("\n", 1)
    return int(peak), message.strip()


@pytest.mark.slow  # a subprocess per case, to measure its peak memory alone
@pytest.mark.parametrize("encoding", ["float64-zlib", "bits"])
def test_a_legitimate_plan_loads_within_twice_its_decoded_size(plans, tmp_path, encoding):
    """A plan with a 64 MiB array (random scores, which zlib cannot shrink, or 0/1
    answers packed as bits): loading peaks below twice the decoded array (plus 32 MiB
    of working space), the 80 MiB of base64 text left on disk until it is decoded."""
    from benchsel._arrays import encode_array

    values = np.random.default_rng(0).random((4096, 2048))
    if encoding == "bits":
        values = np.round(values)
    plan, _ = plans["questions"]
    obj = json.loads(plan.read_text())
    obj["tasks"]["glue_rte"]["check"] = encode_array(values)
    assert obj["tasks"]["glue_rte"]["check"]["encoding"] == encoding
    path = tmp_path / "big.json"
    path.write_text(json.dumps(obj))
    peak, message = _load_in_capped_child(path)
    text = path.stat().st_size
    assert message == "loaded"
    assert values.nbytes < peak <= 2 * values.nbytes + (32 << 20), (peak, values.nbytes, text)


def test_the_decoded_size_limit_is_adjustable(plans, tmp_path, monkeypatch):
    plan, _ = plans["questions"]
    with pytest.raises(ValueError, match=r"tasks.glue_rte.source.values: its declared shape "
                       r"decodes to \d+ bytes, past the plan's limit of 1000 bytes"):
        load_plan(plan, max_decoded_bytes=1000)
    monkeypatch.setenv("BENCHSEL_MAX_PLAN_BYTES", "1000")
    with pytest.raises(ValueError, match="limit of 1000 bytes"):
        load_plan(plan)
    monkeypatch.delenv("BENCHSEL_MAX_PLAN_BYTES")
    assert load_plan(plan).level == "questions"


# ------------------------------------------------------------------ generated cases
HOSTILE_VALUES = [None, True, False, 0, -1, 2**63, 10**40, 1e308, -1e308, 0.5, "", "x",
                  "x" * 5000, [], {}, [None], {"k": 1}, [[[[[[1]]]]]], float("nan"),
                  float("-inf"), "NaN", -(2**31)]


def _nodes(obj, path=()):
    """Every path into a JSON value (objects by key, lists by index)."""
    yield path
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _nodes(value, (*path, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj[:12]):  # the first entries of long lists stand for all
            yield from _nodes(value, (*path, i))


def _at(obj, path):
    for key in path:
        obj = obj[key]
    return obj


@st.composite
def damaged(draw, text: str) -> tuple[str, str]:
    """(kind of damage, damaged text) of the plan ``text``."""
    kinds = ["replace", "delete", "add key", "array", "truncate", "wrap"]
    kind = kinds[draw(st.integers(0, len(kinds) - 1))]
    if kind == "truncate":
        return kind, text[:draw(st.integers(0, len(text) - 1))]
    if kind == "wrap":
        depth = draw(st.sampled_from([1, 30, 70, 5000]))
        return kind, "[" * depth + text + "]" * depth
    obj = json.loads(text)
    nodes = list(_nodes(obj))
    if kind == "array":
        arrays = [p for p in nodes if isinstance(_at(obj, p), dict) and "encoding" in _at(obj, p)]
        target = _at(obj, draw(st.sampled_from(arrays)))
        shape = draw(st.sampled_from([[1, 1], [1000, 1000], [0, 5], [3], [2**40, 2**40],
                                      target["shape"][::-1]]))
        data = draw(st.sampled_from([_SMALL_BOMB, "!!", "", target["data"][:-8],
                                     base64.b64encode(b"\x00" * 64).decode()]))
        target.update(shape=shape, data=data,
                      encoding=draw(st.sampled_from(["bits", "float64-zlib", "other"])))
        return kind, json.dumps(obj)
    path = draw(st.sampled_from([p for p in nodes if p]))
    parent, key = _at(obj, path[:-1]), path[-1]
    if kind == "delete":
        del parent[key]
    elif kind == "add key":
        target = _at(obj, path) if isinstance(_at(obj, path), dict) else parent
        if isinstance(target, dict):
            target[draw(st.sampled_from(["extra", "", "options"]))] = 1
        else:
            target.append(draw(st.sampled_from(HOSTILE_VALUES)))
    else:
        parent[key] = draw(st.one_of(st.sampled_from(HOSTILE_VALUES), st.integers(),
                                     st.floats(), st.text(max_size=20)))
    return kind, json.dumps(obj)


_SMALL_BOMB = _bomb(64 << 20)


def _run_damaged(capsys, plans, kind_of_plan, case):
    plan, observed = plans[kind_of_plan]
    damage, text = case
    event(f"damage: {damage}")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "plan.json"
        path.write_text(text)
        code, out, err = _predict(capsys, path, observed)
    _check_outcome(code, out, err, path)


@given(data=st.data())
def test_damaged_benchmark_plans_end_in_a_named_error_or_a_finite_answer(plans, capsys, data):
    text = plans["bench"][0].read_text()
    _run_damaged(capsys, plans, "bench", data.draw(damaged(text)))


@given(data=st.data())
def test_damaged_question_plans_end_in_a_named_error_or_a_finite_answer(plans, capsys, data):
    text = plans["questions"][0].read_text()
    _run_damaged(capsys, plans, "questions", data.draw(damaged(text)))


def test_a_folder_given_as_the_plan_is_named_as_a_folder(capsys, tmp_path):
    code, _, err = _cli(capsys, "predict", "--plan", tmp_path, "--observed", "MedQA=0.5")
    assert code == 1 and f"{tmp_path}: is a folder, not a plan file" in err, err


def test_an_observed_file_s_names_and_scales_are_checked_by_file(plans, capsys, tmp_path):
    """An --observed file with a benchmark the plan lacks, or a score in percent where the
    board holds fractions: the error names the file, the benchmark and the value."""
    plan, observed = plans["bench"]
    scores = json.loads(observed.read_text())
    first = next(iter(scores))
    for name, content, fragments in [
        ("unknown.json", {**scores, "Nope": 0.5}, ["unknown benchmark name(s): 'Nope'"]),
        ("percent.json", {**scores, first: 62}, [f"{first} = 62 looks like a percent"]),
    ]:
        path = tmp_path / name
        path.write_text(json.dumps(content))
        code, _, err = _predict(capsys, plan, path)
        assert code == 1 and "Traceback" not in err, err
        line = next(x for x in err.splitlines() if x.startswith("benchsel: error:"))
        assert line.startswith(f"benchsel: error: {path}: ") and \
            all(f in line for f in fragments), line
