"""Property tests: whatever the input, benchsel ends in a named error, a warning, or finite output.

Generated inputs go through the readers, the library and the CLI (in process).
Each case must end in one of three ways:

* exit code 0 (or a returned result) whose every number is finite -- JSON may
  carry ``null`` for "not computable", never NaN or infinity;
* a ``benchsel: error:`` line (exit code 1) or a usage error (exit code 2);
* warnings on stderr beside either.

Anything else -- a traceback, a NaN in the output -- fails the test.

Profiles (``--hypothesis-profile``): ``ci`` (the default, 40 cases per test),
``medium`` (300) and ``big`` (2,500 per test, a tenth of that for the
``coreset-eval`` protocol: over 10,000 cases in all)::

    python -m pytest tests/test_properties.py --hypothesis-profile big
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from benchsel import GaussianModel, ScoreMatrix
from benchsel.cli import main
from benchsel.matrix import DataWarning

#: Cells that broke earlier versions: huge, subnormal, exact ties.
EXTREMES = [0.0, 1.0, 1e308, -1e308, 1e-320, 5e-324, 1e-300, 1e300, 1e100, -1e100, 1e99]


@st.composite
def boards(draw, max_models: int = 25, max_items: int = 8):
    """A models x benchmarks matrix: mostly leaderboard-like, sometimes hostile.

    Scores follow a low-rank model on a drawn scale and offset, with a drawn
    share missing; some boards get an extreme cell, a near-constant column, or
    too few models -- the cases that broke earlier versions.
    """
    m = draw(st.integers(1, max_models))
    n = draw(st.integers(1, max_items))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([1e-6, 1e-2, 1.0, 100.0, 1e6]))
    offset = draw(st.sampled_from([0.0, 0.5, 50.0, -3.0, 1e5]))
    rank = draw(st.integers(1, 3))
    values = offset + scale * (rng.normal(size=(m, rank)) @ rng.normal(size=(rank, n))
                               + 0.3 * rng.normal(size=(m, n)))
    if draw(st.booleans()):
        values = np.round(values, draw(st.integers(0, 3)))  # ties, as leaderboards print
    values[rng.random((m, n)) < draw(st.sampled_from([0.0, 0.1, 0.4, 0.7]))] = np.nan
    if draw(st.integers(0, 4)) == 0:  # an extreme cell somewhere
        values[draw(st.integers(0, m - 1)), draw(st.integers(0, n - 1))] = \
            draw(st.sampled_from(EXTREMES))
    if draw(st.integers(0, 4)) == 0 and n > 1:  # a near-constant column
        values[:, 0] = 0.5 + draw(st.sampled_from([0.0, 1e-15, 1e-9])) * np.arange(m)
    return values


def _write_csv(values: np.ndarray, path, long: bool = False) -> None:
    """A wide CSV of ``values`` (empty cells for NaN), or a long one, as any script writes."""
    m, n = values.shape
    if long:
        lines = ["model,benchmark,score"] + [
            f"m{i},b{j},{float(values[i, j])!r}" for i in range(m) for j in range(n)
            if not np.isnan(values[i, j])]
    else:
        lines = ["model," + ",".join(f"b{j}" for j in range(n))]
        lines += [f"m{i}," + ",".join("" if np.isnan(v) else repr(float(v)) for v in values[i])
                  for i in range(m)]
    path.write_text("\n".join(lines) + "\n")


def _finite(obj, where="output") -> None:
    """Every number in a parsed JSON document is finite."""
    if isinstance(obj, float):
        assert math.isfinite(obj), f"non-finite number in {where}"
    elif isinstance(obj, dict):
        for key, value in obj.items():
            _finite(value, f"{where}.{key}")
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            _finite(value, f"{where}[{i}]")


def _cli(capsys, *args) -> tuple[int, str, str]:
    try:
        code = main([str(a) for a in args])
    except SystemExit as exit_:  # usage errors (argparse) exit with 2
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _numpy_noise(err: str) -> list[str]:
    """numpy's floating-point complaints that reached the user (they name no input)."""
    return [line for line in err.splitlines()
            if "encountered in" in line or "Degrees of freedom" in line]


def _check_outcome(code: int, out: str, err: str, path) -> None:
    event(f"exit code {code}")  # --hypothesis-show-statistics: how cases ended
    assert "Traceback" not in err
    assert not _numpy_noise(err), err
    if code == 0:
        _finite(json.loads(out, parse_constant=lambda c: float(c)))
    elif code == 1:
        line = [x for x in err.splitlines() if x.startswith("benchsel: error:")]
        assert line, err
    else:
        assert code == 2, (code, err)


@given(board=boards(), k=st.integers(1, 6), objective=st.sampled_from(["mi", "entropy"]),
       long=st.booleans())
def test_select_and_predict_on_any_csv(tmp_path_factory, capsys, board, k, objective, long):
    path = tmp_path_factory.mktemp("board") / "board.csv"
    _write_csv(board, path, long)
    fmt = ["--input-format", "long"] if long else []
    code, out, err = _cli(capsys, "select", path, *fmt, "-k", k, "--objective", objective,
                          "--json")
    _check_outcome(code, out, err, path)
    # A new model run on the first benchmarks, at a typical score of each.
    given_items = [f"b{j}" for j in range(max(1, min(k, board.shape[1] - 1)))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        typical = np.nanmedian(board, axis=0)
    spec = ",".join(f"{name}={0.0 if not np.isfinite(v) else float(v)!r}"
                    for name, v in zip(given_items, typical))
    code, out, err = _cli(capsys, "predict", path, *fmt, "--observed", spec, "--json")
    _check_outcome(code, out, err, path)


@given(board=boards(max_models=30, max_items=6), k=st.integers(1, 5))
def test_gaussian_model_results_are_finite(board, k):
    m, n = board.shape
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        warnings.simplefilter("error", RuntimeWarning)  # numpy noise fails the case
        try:
            board = ScoreMatrix(board, [f"m{i}" for i in range(m)], [f"b{j}" for j in range(n)])
            model = GaussianModel(calibration="none").fit(board)
            selection = model.select(min(k, len(model.items_)), objective="mi")
        except ValueError:
            event("ValueError")
            return
        event("fitted and selected")
        assert np.isfinite(selection.gains).all()
        assert np.isfinite(selection.residual_variance).all()
        row = board.values[0, model.scores_.item_indices(selection.items)] \
            if selection.items else np.array([])
        observed = {name: float(v) for name, v in zip(selection.items, row) if np.isfinite(v)}
        if not observed:
            return
        try:
            pred = model.predict(observed, method="gaussian")
        except ValueError:
            return
    for array in (pred.mean, pred.std, pred.low, pred.high):
        assert np.isfinite(array).all()
    assert (pred.low <= pred.high).all()


@st.composite
def question_sets(draw):
    """Models x questions of 0/1 (or partial-credit) scores."""
    m = draw(st.integers(2, 30))
    n = draw(st.integers(2, 40))
    p = draw(st.floats(0, 1))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    values = (rng.random((m, n)) < p).astype(float)
    if draw(st.booleans()):
        values = np.round(values * rng.random((m, n)), 2)
    return ScoreMatrix(values, [f"m{i}" for i in range(m)], [str(j) for j in range(n)])


@given(scores=question_sets(), size=st.integers(1, 12), seed=st.integers(0, 5))
def test_coreset_output_is_finite(tmp_path_factory, capsys, scores, size, seed):
    path = tmp_path_factory.mktemp("questions") / "task.csv"
    scores.to_frame().to_csv(path)
    code, out, err = _cli(capsys, "coreset", path, "-n", size, "--seed", seed, "--json")
    _check_outcome(code, out, err, path)


@pytest.mark.slow
@given(scores=question_sets(), size=st.integers(1, 6))
@settings(max_examples=max(5, settings.default.max_examples // 10))  # a protocol per case
def test_coreset_eval_output_is_finite(tmp_path_factory, capsys, scores, size):
    path = tmp_path_factory.mktemp("questions") / "task.csv"
    scores.to_frame().to_csv(path)
    code, out, err = _cli(capsys, "coreset-eval", path, "-n", size, "--trials", 2, "--json",
                          "--quiet")
    _check_outcome(code, out, err, path)
    assert not _numpy_noise(err), err


@given(data=st.binary(min_size=0, max_size=600), offset=st.integers(0, 3000))
def test_damaged_npz_bytes(tmp_path_factory, capsys, data, offset):
    """Bytes spliced into a real archive: a named error or a readable matrix, nothing else."""
    import io

    buf = io.BytesIO()
    np.savez(buf, B=np.arange(12.0).reshape(4, 3), models=np.array(["a", "b", "c", "d"]))
    good = buf.getvalue()
    offset = min(offset, len(good))
    path = tmp_path_factory.mktemp("npz") / "damaged.npz"
    path.write_bytes(good[:offset] + data + good[offset + len(data):])
    code, out, err = _cli(capsys, "select", path, "-k", 1, "--json")
    _check_outcome(code, out, err, path)
    if code == 1:
        assert str(path) in err


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 2])
def test_coreset_eval_with_one_question_reports_null_coverage(tmp_path, capsys, n):
    """Regression: -n 1 reported interval_coverage 0.0 and flooded stderr with warnings."""
    rng = np.random.default_rng(0)
    scores = ScoreMatrix((rng.random((30, 50)) < 0.6).astype(float),
                         [f"m{i}" for i in range(30)], [str(j) for j in range(50)])
    path = tmp_path / "task.csv"
    scores.to_frame().to_csv(path)
    code, out, err = _cli(capsys, "coreset-eval", path, "-n", n, "--trials", 3, "--json",
                          "--quiet")
    assert code == 0, err
    assert not _numpy_noise(err), err
    payload = json.loads(out)
    _finite(payload)
    for row in payload["methods"]:
        coverage = row.get("interval_coverage")
        assert coverage is None or coverage > 0
