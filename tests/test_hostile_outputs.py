"""Issue 31, items 4 and 5: numbers at the edges, and output targets.

Every output target (``-o``, ``--emit-lm-eval-samples``, ``--plots``) is
checked before any work: a symbolic link loop, a read-only file, an empty
name, a folder, an input or a path in a missing folder ends in a
``benchsel: error:`` that names the user's path (never a temporary file),
with the inputs untouched. Scores up to the readers' limit (1e300) go
through ``budget`` and ``report`` without a traceback or numpy's own
warnings, and ``--total`` has an upper bound checked before loading.
"""

from __future__ import annotations

import errno
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from test_properties import _cli as cli

from benchsel import ScoreMatrix
from benchsel.matrix import DataWarning

#: Cells that broke earlier versions (as in tests/test_properties.py).
EXTREMES = [0.0, 1.0, 1e308, -1e308, 1e-320, 5e-324, 1e-300, 1e300, 1e100, -1e100, 1e99]


def numpy_noise(text: str) -> list[str]:
    """numpy's own floating-point complaints (they name no input)."""
    return [line for line in text.splitlines()
            if "encountered" in line or "Degrees of freedom" in line
            or "empty slice" in line or "All-NaN" in line]


def write_board(path: Path, values: np.ndarray) -> Path:
    m, n = values.shape
    lines = ["model," + ",".join(f"b{j}" for j in range(n))]
    lines += [f"m{i}," + ",".join("" if np.isnan(v) else repr(float(v)) for v in values[i])
              for i in range(m)]
    path.write_text("\n".join(lines) + "\n")
    return path


def small_board(path: Path, scale: float = 1.0, seed: int = 0) -> Path:
    """12 models x 4 benchmarks of rank-1 scores (fractions at scale 1)."""
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(12, 1)) @ rng.normal(size=(1, 4)) + 0.3 * rng.normal(size=(12, 4))
    values = 1 / (1 + np.exp(-values)) if scale == 1.0 else scale * values
    return write_board(path, values)


def leftovers(folder: Path) -> list[Path]:
    """Temporary files a writer left behind."""
    return [p for p in folder.rglob("*.tmp")]


# ------------------------------------------------------------ output targets
def test_symlink_loop_is_refused_by_name(tmp_path, capsys):
    board = small_board(tmp_path / "board.csv")
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    code, _, err = cli(capsys, "select", board, "-k", 1, "-o", loop)
    assert code == 1 and "Traceback" not in err
    assert f"{loop}: is a symbolic link that leads back to itself" in err


def test_read_only_target_is_refused_and_kept(tmp_path, capsys):
    board = small_board(tmp_path / "board.csv")
    target = tmp_path / "ro.json"
    target.write_text("keep me\n")
    target.chmod(0o444)
    code, _, err = cli(capsys, "select", board, "-k", 1, "-o", target)
    assert code == 1 and f"{target}: is read-only" in err
    assert target.read_text() == "keep me\n"
    assert not leftovers(tmp_path)


def test_empty_output_name_is_a_usage_error(tmp_path, capsys):
    board = small_board(tmp_path / "board.csv")
    code, out, err = cli(capsys, "select", board, "-k", 1, "-o", "")
    assert code == 2 and "-o/--output: an empty file name" in err and out == ""


def test_dash_output_prints_and_writes_no_file(tmp_path, capsys, monkeypatch):
    """``-o -`` is standard output, as the convention has it: the same bytes as no -o,
    and no file named ``-``; a command whose output is a file of its own refuses it."""
    board = small_board(tmp_path / "board.csv")
    monkeypatch.chdir(tmp_path)
    code, printed, _ = cli(capsys, "select", board, "-k", 1, "--json")
    assert code == 0
    code, out, _ = cli(capsys, "select", board, "-k", 1, "--json", "-o", "-")
    assert code == 0 and json.loads(out) == json.loads(printed)
    assert not (tmp_path / "-").exists()
    code, out, err = cli(capsys, "plan", board, "-k", 1, "-o", "-")
    assert code == 2 and "-o -: plan writes a file; give its name" in err
    assert not (tmp_path / "-").exists()


def test_proc_file_is_refused_without_a_temporary_name(capsys):
    if not Path("/proc/self/status").exists():
        pytest.skip("no /proc")
    code, _, err = cli(capsys, "select", "helm_lite", "-k", 1, "-o", "/proc/self/status")
    assert code == 1 and "/proc/self/status" in err
    assert ".tmp" not in err and ".status." not in err


def test_write_error_names_the_users_path(tmp_path, capsys, monkeypatch):
    board = small_board(tmp_path / "board.csv")
    target = tmp_path / "out.json"

    def failing_replace(src, dst):
        raise OSError(errno.EXDEV, "Invalid cross-device link", str(src))

    monkeypatch.setattr(os, "replace", failing_replace)
    code, _, err = cli(capsys, "select", board, "-k", 1, "--json", "-o", target)
    assert code == 1 and f"{target}: cannot write it (Invalid cross-device link)" in err
    assert ".tmp" not in err and not leftovers(tmp_path) and not target.exists()


def test_plots_onto_an_input_is_refused_before_the_page(tmp_path, capsys):
    board = small_board(tmp_path / "board.csv")
    before = board.read_bytes()
    page = tmp_path / "r.html"
    code, _, err = cli(capsys, "report", board, "-o", page, "--plots", board, "--quiet")
    assert code == 1 and f"{board}: is an input" in err and "Errno" not in err
    assert not page.exists()  # refused before any work, not after writing the page
    assert board.read_bytes() == before


def test_plots_folder_that_is_a_file_or_the_page(tmp_path, capsys):
    board = small_board(tmp_path / "board.csv")
    page = tmp_path / "r.html"
    taken = tmp_path / "taken"
    taken.write_text("a file\n")
    code, _, err = cli(capsys, "report", board, "-o", page, "--plots", taken, "--quiet")
    assert code == 1 and f"{taken}: exists and is not a folder" in err
    code, _, err = cli(capsys, "report", board, "-o", page, "--plots", page, "--quiet")
    assert code == 2 and "name the same path" in err
    code, _, err = cli(capsys, "report", board, "-o", page, "--plots", "", "--quiet")
    assert code == 2 and "--plots: an empty folder name" in err
    assert not page.exists() and taken.read_text() == "a file\n"


def test_a_deep_costs_file_is_refused_by_name(tmp_path, capsys):
    costs = tmp_path / "costs.json"
    costs.write_text("[" * 100_000 + "]" * 100_000)
    code, _, err = cli(capsys, "select", "helm_lite", "-k", 1, "--costs", costs)
    assert code == 1 and str(costs) in err and "Traceback" not in err


# ------------------------------------------------------------ numbers at the edges
def test_budget_on_scores_near_1e200(tmp_path, capsys):
    board = small_board(tmp_path / "big.csv", scale=1e200)
    code, out, err = cli(capsys, "budget", board, "-k", 2, "--total", 100, "--json")
    assert code == 0, err
    rows = json.loads(out)["benchmarks"]
    assert all(r["conditional_variance"] is None for r in rows)
    assert all("beyond float64's range" in r["reason"] for r in rows)


def test_budget_total_is_bounded_before_loading(tmp_path, capsys):
    missing = tmp_path / "not-there.csv"  # loading it would be an error of its own
    code, _, err = cli(capsys, "budget", missing, "-k", 1, "--total", 10**12)
    assert code == 2 and "at most 10,000,000 questions" in err


def test_budget_at_the_largest_total_is_quick(capsys):
    start = time.perf_counter()
    code, out, err = cli(capsys, "budget", "helm_lite", "-k", 3, "--total", 10**7, "--json")
    assert code == 0, err
    assert time.perf_counter() - start < 60  # 1e6 took 49 s with chunks of 10
    allocated = [r["allocated"] for r in json.loads(out)["benchmarks"]]
    assert sum(a for a in allocated if a is not None) == 10**7


def test_discover_bootstrap_names_unranked_benchmarks():
    from benchsel.analyses.discover import discover

    nan = float("nan")
    values = np.array([[nan, nan, 0.114, 0.653], [0.853, 0.202, nan, 0.717],
                       [0.471, 0.415, 0.349, nan]])
    scores = ScoreMatrix(values, ["m0", "m1", "m2"], ["b0", "b1", "b2", "b3"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = discover(scores, bootstrap=5, seed=0)
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]
    named = [str(w.message) for w in caught if issubclass(w.category, DataWarning)
             and "could rank" in str(w.message)]
    assert named
    unranked = [r for r in result.rows if r.rank_low is None]
    assert unranked and all(r.top3_share is None for r in unranked)


def test_cv_spread_of_extreme_fold_r2_does_not_overflow():
    from benchsel.evaluation.folds import _nanmean, _nanstd

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        values = np.array([-1e200, 0.5, np.nan, -3e199])
        assert np.isfinite(_nanstd(values)) and np.isfinite(_nanmean(values))
        assert _nanmean(np.array([1e308, 1e308])) == pytest.approx(1e308)


# ------------------------------------------------------------ properties
TARGETS = ["new", "odd", "existing", "loop", "dangling", "dangling_in_missing", "read_only",
           "empty", "folder", "input", "missing_folder"]
PLOTS = [None, "new", "file", "input", "same_as_page", "empty"]


def _target(kind: str, root: Path, board: Path) -> str:
    """An output path of the given kind, made under ``root``."""
    if kind == "new":
        return str(root / "out.txt")
    if kind == "odd":
        return str(root / "ü ñ 'q' $x;[1].txt")
    if kind == "existing":
        (root / "old.txt").write_text("old\n")
        return str(root / "old.txt")
    if kind == "loop":
        (root / "loop.txt").symlink_to(root / "loop.txt")
        return str(root / "loop.txt")
    if kind == "dangling":
        (root / "link.txt").symlink_to(root / "missing-target.txt")
        return str(root / "link.txt")
    if kind == "dangling_in_missing":
        (root / "link2.txt").symlink_to(root / "nowhere" / "x.txt")
        return str(root / "link2.txt")
    if kind == "read_only":
        (root / "ro.txt").write_text("read only\n")
        (root / "ro.txt").chmod(0o444)
        return str(root / "ro.txt")
    if kind == "empty":
        return ""
    if kind == "folder":
        (root / "adir").mkdir()
        return str(root / "adir")
    if kind == "input":
        return str(board)
    assert kind == "missing_folder"
    return str(root / "no" / "such" / "out.txt")


def _snapshot(root: Path) -> dict:
    """Bytes of every regular file (links not followed) under ``root``."""
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.is_symlink()}


@given(command=st.sampled_from(["select", "budget", "report"]),
       target=st.sampled_from(TARGETS), plots=st.sampled_from(PLOTS),
       as_json=st.booleans())
def test_any_output_target_is_written_or_refused_by_name(tmp_path_factory, capsys, command,
                                                         target, plots, as_json):
    root = tmp_path_factory.mktemp("out")
    board = small_board(root / "board.csv")
    path = _target(target, root, board)
    folder = None
    args = {"select": ["select", board, "-k", 2],
            "budget": ["budget", board, "-k", 2],
            "report": ["report", board, "--quiet", "--folds", 2, "--k-max", 3]}[command]
    if command == "report" and plots is not None:
        folder = {"new": root / "figs", "file": root / "old.txt", "input": board,
                  "same_as_page": path, "empty": ""}[plots]
        if plots == "file":
            (root / "old.txt").write_text("old\n")
        args += ["--plots", folder]
    if as_json and command != "report":
        args.append("--json")
    before = _snapshot(root)
    protected = {p: b for p, b in before.items() if p == board or p.name == "ro.txt"}
    code, out, err = cli(capsys, *args, "-o", path)
    event(f"{command} {target}: exit {code}")
    assert "Traceback" not in err and not numpy_noise(err)
    assert ".tmp" not in err and not leftovers(root)
    for p, content in protected.items():  # inputs and read-only files byte-identical
        assert p.read_bytes() == content, p
    if code == 0:
        written = Path(path).resolve()
        text = written.read_text()
        if command == "report":
            assert text.rstrip().endswith("</html>")
        elif as_json:
            json.loads(text)
        else:
            assert text.endswith("\n") and text.strip()
        assert target in ("new", "odd", "existing", "dangling"), (target, plots)
    else:
        line = [x for x in err.splitlines() if x.startswith("benchsel: error:")]
        assert line, err
        if code == 1:
            good = target in ("new", "odd", "existing", "dangling")
            named = str(folder) if good else path  # a good -o: --plots was refused
            assert named in line[0], (line, named)
        else:
            assert code == 2 and ("empty" in line[0] or "same path" in line[0]), line


@st.composite
def extreme_boards(draw):
    """Models x benchmarks on any scale up to the readers' limit, some cells extreme."""
    m = draw(st.integers(3, 14))
    n = draw(st.integers(2, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([5e-324, 1e-300, 1e-6, 1.0, 1e100, 1e200, 1e300]))
    sign = draw(st.sampled_from([1.0, -1.0]))
    values = rng.normal(size=(m, 1)) @ rng.normal(size=(1, n)) + 0.3 * rng.normal(size=(m, n))
    values = sign * scale * values / max(1.0, float(np.abs(values).max()))
    values[rng.random((m, n)) < draw(st.sampled_from([0.0, 0.2, 0.5]))] = np.nan
    for _ in range(draw(st.integers(0, 2))):
        values[draw(st.integers(0, m - 1)), draw(st.integers(0, n - 1))] = \
            draw(st.sampled_from(EXTREMES))
    return values


@given(board=extreme_boards(), k=st.integers(1, 3), total=st.sampled_from([None, 50, 10**6]),
       report=st.integers(0, 3))
def test_extreme_magnitudes_through_budget_and_report(tmp_path_factory, capsys, board, k,
                                                      total, report):
    root = tmp_path_factory.mktemp("extreme")
    path = write_board(root / "board.csv", board)
    before = path.read_bytes()
    extra = [] if total is None else ["--total", total]
    code, out, err = cli(capsys, "budget", path, "-k", k, "--json", *extra)
    _check(code, out, err)
    if code == 0:
        json.loads(out, parse_constant=_no_constant)
    if report == 0:  # a quarter of the cases: the page takes seconds
        page = root / "r.html"
        code, out, err = cli(capsys, "report", path, "-o", page, "--quiet", "--folds", 2,
                             "--k-max", 3, "-k", k)
        _check(code, out, err)
        if code == 0:
            assert not numpy_noise(page.read_text())
    assert path.read_bytes() == before


def _no_constant(name):
    raise AssertionError(f"{name} in JSON output")


def _check(code: int, out: str, err: str) -> None:
    event(f"exit {code}")
    assert "Traceback" not in err and not numpy_noise(err), err
    if code == 1:
        assert [x for x in err.splitlines() if x.startswith("benchsel: error:")], err
    else:
        assert code in (0, 2), (code, err)


_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                min_size=1, max_size=12)
#: Names, half of them opening as a spreadsheet formula would.
NAMES = st.one_of(_TEXT, st.builds(lambda a, b: a + b, st.sampled_from("=+-@"), _TEXT)) \
    .filter(lambda t: t.strip() == t and t.strip())


@given(models=st.lists(NAMES, min_size=2, max_size=3, unique=True),
       first=NAMES.filter(lambda t: t not in ("MMLU", "GSM8K")))
def test_csv_output_never_starts_a_formula_and_keeps_every_name(tmp_path_factory, capsys,
                                                                models, first):
    """Any names of new models and of a benchmark go into ``predict --format csv``: no
    text cell starts a spreadsheet formula, and each name is there, behind a ``'``
    where it would have started one."""
    import csv
    import io

    from benchsel import load_dataset

    helm = load_dataset("helm_lite")
    root = tmp_path_factory.mktemp("csv")
    board, observed = root / "board.csv", root / "new.csv"
    helm.to_frame().rename(columns={"MedQA": first}).to_csv(board)
    with observed.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["model", "MMLU", "GSM8K"])
        writer.writerows([name, 0.6, 0.5] for name in models)
    code, out, err = cli(capsys, "predict", board, "--observed", observed, "--format", "csv",
                         "--method", "gaussian")
    event(f"exit code {code}")
    if code != 0:  # a name the readers refuse, by name
        assert code == 1 and err.startswith("benchsel: error:") and "Traceback" not in err
        return
    rows = list(csv.reader(io.StringIO(out, newline="")))
    texts = [*rows[0], *(row[0] for row in rows[1:])]
    assert not [t for t in texts if t.startswith(("=", "+", "-", "@", "\t", "\r"))]
    shown = {t[1:] if t[:1] == "'" and t[1:2] and t[1] in "=+-@\t\r" else t for t in texts}
    assert set(models) <= shown and first in shown
    for row in rows[1:]:
        assert all(np.isfinite(float(v)) for v in row[1:])
