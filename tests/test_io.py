"""Readers, small-input parsers, the atomic writer, bundled datasets and ScoreMatrix basics."""

import hashlib
import json
import os
import re
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import benchsel
from benchsel import DataWarning, ScoreMatrix, list_datasets, load_dataset, read_scores
from benchsel.inputs import parse_observed, read_costs
from benchsel.outputs import write_text_atomic

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
#: sha256 of every file of ../shared/data that the package bundles, recorded from the
#: shared copy when it was bundled: a clone without ../shared still checks its copies.
SHARED_SHA256 = json.loads((Path(__file__).parent / "data" / "shared_sha256.json").read_text())

GOOD = "model,a,b\nx,1,2\ny,3,4\nz,5,6\n"


# ------------------------------------------------------------------ helpers
def write(tmp_path: Path, text: str, name: str = "scores.csv") -> Path:
    """Write ``text`` to ``tmp_path/name`` and return the path."""
    path = tmp_path / name
    path.write_text(text)
    return path


def read_text(tmp_path: Path, text: str, name: str = "scores.csv", **options) -> ScoreMatrix:
    """Write ``text`` to a file and read it back with :func:`read_scores`."""
    return read_scores(write(tmp_path, text, name), **options)


def message(path: Path, rest: str) -> str:
    """A regex matching ``"<path>: <rest>"`` literally."""
    return re.escape(f"{path}: {rest}")


def assert_same_matrix(a: ScoreMatrix, b: ScoreMatrix) -> None:
    """Same names in the same order and the same values (NaN where missing)."""
    assert a.models == b.models
    assert a.items == b.items
    np.testing.assert_array_equal(a.values, b.values)


# ------------------------------------------------------------------ wide CSV
def test_wide_csv_reads_names_and_values(tmp_path):
    """A well-formed wide CSV gives models as rows and benchmarks as columns."""
    scores = read_text(tmp_path, GOOD)
    assert scores.models == ("x", "y", "z")
    assert scores.items == ("a", "b")
    np.testing.assert_array_equal(scores.values, [[1, 2], [3, 4], [5, 6]])
    assert scores.source == str(tmp_path / "scores.csv")


def test_non_numeric_cell_names_file_line_column_and_value(tmp_path):
    """A text cell is reported with the file, its 1-based line, its column and the value."""
    path = write(tmp_path, "model,a,b\nx,1,2\ny,3,oops\nz,5,6\n")
    with pytest.raises(ValueError, match=message(path, "line 3, column 'b': value 'oops'")):
        read_scores(path)


def test_duplicate_model_names_give_both_lines(tmp_path):
    """A model listed twice is an error naming both of its lines."""
    path = write(tmp_path, "model,a,b\nx,1,2\ny,3,4\nx,5,6\nz,7,8\n")
    expected = "duplicate model name 'x' at line 2 and line 4"
    with pytest.raises(ValueError, match=message(path, expected)):
        read_scores(path)


def test_duplicate_benchmark_columns_are_an_error(tmp_path):
    """A benchmark column that appears twice in the header is an error naming it."""
    path = write(tmp_path, "model,a,a,b\nx,1,2,3\ny,4,5,6\nz,7,8,9\n")
    with pytest.raises(ValueError, match=r"duplicate column name\(s\) \['a'\]"):
        read_scores(path)


def test_all_text_columns_are_an_error(tmp_path):
    """A table without a single numeric column is rejected, naming the text columns."""
    path = write(tmp_path, "model,a,b\nx,p,q\ny,r,s\nz,t,u\n")
    with pytest.raises(ValueError, match=r"no numeric columns.*\['a', 'b'\]"):
        read_scores(path)


def test_only_a_model_column_is_an_error(tmp_path):
    """A file with nothing but model names has no score columns."""
    path = write(tmp_path, "model\nx\ny\nz\n")
    with pytest.raises(ValueError, match=message(path, "no score columns")):
        read_scores(path)


def test_fewer_than_three_models_is_an_error(tmp_path):
    """Two models cannot give a covariance; the message says how many are needed."""
    path = write(tmp_path, "model,a,b\nx,1,2\ny,3,4\n")
    with pytest.raises(ValueError, match=r"found 2 model\(s\).*at least 3 are needed"):
        read_scores(path)


def test_two_models_are_accepted_without_cleaning(tmp_path):
    """``clean=False`` skips the three-model minimum (used for new-model files)."""
    scores = read_text(tmp_path, "model,a,b\nx,1,2\ny,3,4\n", clean=False)
    assert scores.shape == (2, 2)


@pytest.mark.parametrize("cell", ["inf", "-inf", "Infinity"])
def test_infinite_cell_is_an_error(tmp_path, cell):
    """Infinite scores are rejected with their position and text."""
    path = write(tmp_path, f"model,a,b\nx,1,2\ny,3,4\nz,{cell},6\n")
    with pytest.raises(ValueError, match=message(path, f"line 4, column 'a': value '{cell}'")):
        read_scores(path)


@pytest.mark.parametrize("text", ["", "\n"])
def test_empty_file_is_an_error(tmp_path, text):
    """An empty file asks for a header line."""
    path = write(tmp_path, text)
    with pytest.raises(ValueError, match=message(path, "the file is empty")):
        read_scores(path)


def test_all_missing_rows_and_columns_are_dropped_with_warnings(tmp_path):
    """A model and a benchmark with no score are dropped, each with a DataWarning naming it."""
    text = "model,a,b,c\nx,1,,\ny,3,NA,\nw,,,\nz,nan,6,\nv,2,5,\n"
    with pytest.warns(DataWarning) as record:
        scores = read_text(tmp_path, text)
    messages = [str(w.message) for w in record if issubclass(w.category, DataWarning)]
    assert any(re.search(r"dropping 1 model\(s\) with no observed score: .*'w'", m)
               for m in messages), messages
    assert any(re.search(r"dropping 1 item\(s\) with no observed score: .*'c'", m)
               for m in messages), messages
    assert scores.models == ("x", "y", "z", "v")
    assert scores.items == ("a", "b")


@pytest.mark.filterwarnings("ignore::benchsel.DataWarning")
def test_drop_warning_shows_plain_names(tmp_path):
    """The drop warning lists names as plain quoted strings, not numpy reprs."""
    with pytest.warns(DataWarning, match=r"no observed score: 'w'$"):
        read_text(tmp_path, "model,a,b\nx,1,2\ny,3,4\nz,5,6\nw,,\n")


def test_tsv_is_read_by_extension(tmp_path):
    """A ``.tsv`` file is tab-separated; the same bytes as ``.csv`` are not split."""
    text = GOOD.replace(",", "\t")
    scores = read_text(tmp_path, text, name="scores.tsv")
    assert_same_matrix(scores, read_text(tmp_path, GOOD))
    with pytest.raises(ValueError, match=r"looks '\\t'-separated: give sep='\\t'"):
        read_text(tmp_path, text, name="tabs.csv")


def test_explicit_separator_overrides_extension(tmp_path):
    """``sep`` reads a semicolon-separated ``.csv``."""
    scores = read_text(tmp_path, GOOD.replace(",", ";"), sep=";")
    assert_same_matrix(scores, read_text(tmp_path, GOOD, name="comma.csv"))


@pytest.mark.parametrize("token", ["", "NA", "nan", "NaN", "n/a", "null", "None", " na "])
def test_missing_tokens_read_as_missing(tmp_path, token):
    """Empty cells and NA/nan-like words are missing, not errors or zeros."""
    scores = read_text(tmp_path, f"model,a,b\nx,1,{token}\ny,3,4\nz,5,6\n")
    assert np.isnan(scores.values[0, 1])
    assert scores.observed.tolist() == [[True, False], [True, True], [True, True]]


def test_empty_model_name_is_an_error(tmp_path):
    """A row without a model name is reported by line."""
    path = write(tmp_path, "model,a,b\nx,1,2\n,3,4\nz,5,6\n")
    with pytest.raises(ValueError, match=message(path, "line 3, column 'model': empty model name")):
        read_scores(path)


def test_unknown_model_column_lists_columns(tmp_path):
    """``model_column`` that is not in the header is an error listing the header."""
    path = write(tmp_path, GOOD)
    with pytest.raises(ValueError, match=re.escape("columns are ['model', 'a', 'b']")):
        read_scores(path, model_column="name")


def test_model_column_need_not_be_first(tmp_path):
    """With ``model_column`` the names may sit in any column."""
    scores = read_text(tmp_path, "a,name,b\n1,x,2\n3,y,4\n5,z,6\n", model_column="name")
    assert scores.models == ("x", "y", "z")
    assert scores.items == ("a", "b")
    np.testing.assert_array_equal(scores.values[:, 1], [2, 4, 6])


def test_unparseable_csv_is_an_error(tmp_path):
    """An unterminated quote is a parse error naming the file."""
    path = write(tmp_path, 'model,a,b\n"x,1,2\ny,3,4\nz,5,6\n')
    with pytest.raises(ValueError, match=message(path, "cannot parse")):
        read_scores(path)


def test_non_utf8_file_is_an_error(tmp_path):
    """Bytes that are not UTF-8 give a clear error instead of a UnicodeDecodeError."""
    path = tmp_path / "latin1.csv"
    path.write_bytes(b"model,a\nx,\xff\ny,2\nz,3\n")
    with pytest.raises(ValueError, match=message(path, "not a UTF-8 text file")):
        read_scores(path)


def test_missing_file_and_bad_format(tmp_path):
    """A missing path is FileNotFoundError; an unknown format lists the valid ones."""
    with pytest.raises(FileNotFoundError, match="nothere.csv: no such file"):
        read_scores(tmp_path / "nothere.csv")
    path = write(tmp_path, GOOD)
    with pytest.raises(ValueError, match="format must be one of wide, long, npz, parquet"):
        read_scores(path, format="excel")


def test_line_numbers_count_blank_lines(tmp_path):
    """The reported line is the file's own line even after a blank line."""
    path = write(tmp_path, "model,a,b\nx,1,2\n\ny,3,oops\nz,5,6\n")
    with pytest.raises(ValueError, match=message(path, "line 4, column 'b': value 'oops'")):
        read_scores(path)


@pytest.mark.filterwarnings("ignore::benchsel.DataWarning")
def test_rows_longer_than_the_header_are_an_error(tmp_path):
    """Data rows with more fields than the header are rejected, not silently shifted."""
    path = write(tmp_path, "model,a,b\nx,1,2,\ny,3,4,\nz,5,6,\n")
    with pytest.raises(ValueError, match=str(path)):
        read_scores(path)


# ------------------------------------------------------------------ long CSV
def test_long_csv_round_trips_to_the_wide_matrix(tmp_path):
    """A long file with custom column names reads to the same matrix as the wide file."""
    wide = read_text(tmp_path, "model,a,b,c\nx,1,2,\ny,3,,6\nz,7,8,9\n")
    lines = ["who,task,val"]
    for i, model in enumerate(wide.models):
        for j, item in enumerate(wide.items):
            if wide.observed[i, j]:
                lines.append(f"{model},{item},{float(wide.values[i, j])!r}")
    long = read_text(
        tmp_path, "\n".join(lines) + "\n", name="long.csv",
        format="long", model_column="who", item_column="task", score_column="val",
    )
    assert_same_matrix(long, wide)


def test_long_csv_default_column_names(tmp_path):
    """Without options a long file uses the columns model/benchmark/score."""
    text = "model,benchmark,score\nx,a,1\nx,b,2\ny,a,3\ny,b,4\nz,a,5\nz,b,6\n"
    long = read_text(tmp_path, text, format="long")
    assert_same_matrix(long, read_text(tmp_path, GOOD, name="wide.csv"))


def test_long_csv_score_given_twice_names_both_lines(tmp_path):
    """A (model, benchmark) pair given twice is an error naming both lines."""
    path = write(tmp_path, "model,benchmark,score\nx,a,1\nx,b,2\ny,a,3\nx,a,4\nz,a,5\n")
    with pytest.raises(ValueError, match=message(
            path, "model 'x' has two scores for 'a', at line 2 and line 5")):
        read_scores(path, format="long")


@pytest.mark.parametrize(
    "options, role, name",
    [
        ({}, "model", "model"),
        ({"model_column": "who"}, "item", "benchmark"),
        ({"model_column": "who", "item_column": "task"}, "score", "score"),
    ],
)
def test_long_csv_missing_column_lists_columns(tmp_path, options, role, name):
    """A long-format column that is not in the header is named with the real header."""
    path = write(tmp_path, "who,task,val\nx,a,1\ny,a,2\nz,a,3\n")
    expected = f"no {role} column named '{name}'; columns are ['who', 'task', 'val']"
    with pytest.raises(ValueError, match=message(path, expected)):
        read_scores(path, format="long", **options)


def test_long_csv_bad_score_names_line(tmp_path):
    """A non-numeric long-format score is reported by line and score column."""
    path = write(tmp_path, "model,benchmark,score\nx,a,1\ny,a,high\nz,a,3\n")
    with pytest.raises(ValueError, match=message(path, "line 3, column 'score': value 'high'")):
        read_scores(path, format="long")


# ----------------------------------------------------------------------- NPZ
def test_npz_with_mask_and_names(tmp_path):
    """``B`` with mask ``O`` and name arrays: unobserved cells become missing."""
    values = np.arange(12.0).reshape(4, 3)
    mask = np.ones((4, 3), dtype=bool)
    mask[1, 1] = mask[3, 2] = False
    path = tmp_path / "scores.npz"
    np.savez(path, B=values, O=mask, models=np.array(["m1", "m2", "m3", "m4"]),
             benchmarks=np.array(["a", "b", "c"]))
    scores = read_scores(path)
    assert scores.models == ("m1", "m2", "m3", "m4")
    assert scores.items == ("a", "b", "c")
    np.testing.assert_array_equal(scores.observed, mask)
    np.testing.assert_array_equal(scores.values[mask], values[mask])


def test_npz_scores_with_empty_model_names_gets_generated_names(tmp_path):
    """``scores`` with an empty ``models`` array gets model_i / item_j names."""
    path = tmp_path / "q.npz"
    np.savez(path, scores=np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=np.float32),
             models=np.array([], dtype=str))
    scores = read_scores(path)
    assert scores.models == ("model_0", "model_1", "model_2")
    assert scores.items == ("item_0", "item_1")
    assert scores.values.dtype == np.float64


@pytest.mark.parametrize("key", ["scores", "models"])
def test_npz_object_array_is_refused_without_unpickling(tmp_path, key):
    """An object (pickled) array is a clear error naming the array, never loaded."""
    arrays = {"scores": np.ones((3, 2)), "models": np.array(["a", "b", "c"])}
    arrays[key] = arrays[key].astype(object)
    path = tmp_path / "pickled.npz"
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=message(path, f"array '{key}' holds Python objects")):
        read_scores(path)


def test_npz_without_score_array_lists_keys(tmp_path):
    """An archive with no B/scores array lists the arrays it does hold."""
    path = tmp_path / "other.npz"
    np.savez(path, X=np.ones((3, 2)), names=np.array(["a", "b"]))
    with pytest.raises(ValueError, match=re.escape("found ['X', 'names']")):
        read_scores(path)


def test_npz_shape_errors(tmp_path):
    """A 1-D score array and a mask of the wrong shape are both rejected."""
    flat = tmp_path / "flat.npz"
    np.savez(flat, scores=np.ones(5))
    with pytest.raises(ValueError, match=r"shape \(5,\); expected 2-D"):
        read_scores(flat)
    masked = tmp_path / "mask.npz"
    np.savez(masked, B=np.ones((3, 2)), O=np.ones((2, 3), dtype=bool))
    with pytest.raises(ValueError, match=r"mask 'O' has shape \(2, 3\); expected \(3, 2\)"):
        read_scores(masked)


def test_npz_name_count_mismatch(tmp_path):
    """Model names that do not match the number of rows are an error."""
    path = tmp_path / "names.npz"
    np.savez(path, scores=np.ones((3, 2)), models=np.array(["a", "b"]))
    with pytest.raises(ValueError, match="2 model names for 3 models"):
        read_scores(path)


def test_file_that_is_not_an_npz_archive(tmp_path):
    """Text in a ``.npz`` file is reported as unreadable, not crashed on."""
    path = write(tmp_path, "hello", name="text.npz")
    with pytest.raises(ValueError, match=message(path, "not a readable NPZ archive")):
        read_scores(path)


def test_real_question_level_npz_matches_readme():
    """glue_rte.npz is 87 models x 277 questions of 0/1 scores, as the data README says."""
    scores = read_scores(benchsel.datasets.bundled_path("glue_rte"))
    assert scores.shape == (87, 277)
    assert set(np.unique(scores.values[scores.observed])) <= {0.0, 1.0}


# ------------------------------------------------------------------- Parquet
def test_parquet_equals_csv_reading(tmp_path):
    """A DataFrame written with to_parquet reads back equal to its CSV, missing cells included."""
    pytest.importorskip("pyarrow")
    csv = write(tmp_path, "model,a,b,c\nx,1.5,,3\ny,0.1,2,\nz,7,8,9\nw,4,5,6\n")
    frame = pd.read_csv(csv)
    frame.to_parquet(tmp_path / "plain.parquet")
    frame.set_index("model").to_parquet(tmp_path / "indexed.parquet")
    expected = read_scores(csv)
    assert_same_matrix(read_scores(tmp_path / "plain.parquet"), expected)
    assert_same_matrix(read_scores(tmp_path / "indexed.parquet"), expected)


def test_parquet_of_a_real_leaderboard(tmp_path):
    """The bundled mteb CSV (with gaps) survives a Parquet round trip unchanged."""
    pytest.importorskip("pyarrow")
    csv = Path(str(benchsel.datasets._path(benchsel.datasets._DATASETS["mteb"])))
    pd.read_csv(csv).to_parquet(tmp_path / "mteb.pq")
    assert_same_matrix(read_scores(tmp_path / "mteb.pq"), read_scores(csv))


def test_parquet_bad_cell_names_row(tmp_path):
    """A text cell in a Parquet file is reported by 1-based row and column."""
    pytest.importorskip("pyarrow")
    frame = pd.DataFrame({"model": ["x", "y", "z"], "a": ["1", "bad", "3"]})
    path = tmp_path / "bad.parquet"
    frame.to_parquet(path)
    with pytest.raises(ValueError, match=message(path, "row 2, column 'a': value 'bad'")):
        read_scores(path)


def test_long_parquet(tmp_path):
    """A long-format Parquet file reads with ``format='long'``."""
    pytest.importorskip("pyarrow")
    frame = pd.DataFrame({"model": list("xxyyzz"), "benchmark": list("ababab"),
                          "score": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    path = tmp_path / "long.parquet"
    frame.to_parquet(path)
    assert_same_matrix(read_scores(path, format="long"), read_text(tmp_path, GOOD))


# ---------------------------------------------------------------- read_costs
@pytest.mark.parametrize(
    "name, text",
    [
        ("costs.json", '{"a": 1.5, "b": 2}'),
        ("costs.csv", "benchmark,cost\na,1.5\nb,2\n"),
        ("costs.csv", "a,1.5\nb,2\n"),
        ("costs.txt", "a, 1.5\n\nb ,2\n"),
        ("costs.csv", "benchmark,gpu_hours\na,1.5\nb,2\n"),  # a header of one's own
        ("costs.csv", "Task,USD\na,1.5\nb,2\n"),
    ],
)
def test_read_costs_formats(tmp_path, name, text):
    """JSON objects and CSV files with or without a header give the same costs."""
    assert read_costs(write(tmp_path, text, name)) == {"a": 1.5, "b": 2.0}


@pytest.mark.parametrize(
    "name, text, expected",
    [
        ("costs.csv", "a,1\nb,0\n", "line 2: cost '0' for 'b'"),
        ("costs.csv", "benchmark,cost\na,-2\n", "line 2: cost '-2' for 'a'"),
        ("costs.csv", "a,1\nb,lots\n", "line 2: cost 'lots' for 'b'"),
        ("costs.json", '{"a": 1, "b": -1}', "key 'b': cost -1 for 'b'"),
        ("costs.json", '{"a": 1, "b": 0}', "key 'b': cost 0 for 'b'"),
    ],
)
def test_read_costs_rejects_non_positive(tmp_path, name, text, expected):
    """Zero, negative and non-numeric costs are errors naming the place and value."""
    path = write(tmp_path, text, name)
    with pytest.raises(ValueError, match=message(path, expected + " is not a positive number")):
        read_costs(path)


def test_model_order_headers_name_the_date_column_as_they_like(tmp_path):
    from benchsel.inputs import read_model_order

    expected = read_model_order(write(tmp_path, "m1,2024-01-02\nm2,3\n", "plain.csv"))
    for header in ("model,order", "model,released", "name,release_date", "Model,Date"):
        path = write(tmp_path, f"{header}\nm1,2024-01-02\nm2,3\n", "order.csv")
        assert read_model_order(path) == expected
    # Any other first line is data, and a bad date there is named.
    with pytest.raises(ValueError, match="line 1: order 'released' for 'id'"):
        read_model_order(write(tmp_path, "id,released\nm1,3\n", "order.csv"))


def test_read_costs_structural_errors(tmp_path):
    """Non-object JSON, invalid JSON, three-column rows and a missing file are errors."""
    with pytest.raises(ValueError, match="expected a JSON object"):
        read_costs(write(tmp_path, "[1, 2]", "list.json"))
    with pytest.raises(ValueError, match="not valid JSON"):
        read_costs(write(tmp_path, "{a: 1", "broken.json"))
    with pytest.raises(ValueError, match=r"line 1: expected 'name,cost'"):
        read_costs(write(tmp_path, "a,1,2\n", "three.csv"))
    with pytest.raises(ValueError, match="duplicate cost for 'a'"):
        read_costs(write(tmp_path, "a,1\na,2\n", "twice.csv"))
    with pytest.raises(FileNotFoundError, match="no such costs file"):
        read_costs(tmp_path / "none.json")


# ------------------------------------------------------------ parse_observed
def test_parse_observed_inline():
    """Inline ``name=value`` pairs become a dict of floats; names may contain spaces."""
    assert parse_observed("a=1, Mean win rate = 0.5,") == {"a": 1.0, "Mean win rate": 0.5}


def test_parse_observed_json_file(tmp_path):
    """A JSON object file maps benchmarks to scores."""
    path = write(tmp_path, '{"a": 1, "b": 2.5}', "obs.json")
    assert parse_observed(str(path)) == {"a": 1.0, "b": 2.5}


def test_parse_observed_csv_of_new_models(tmp_path):
    """A wide CSV of two new models is read without the three-model minimum."""
    path = write(tmp_path, "model,a,b\nnew1,1,\nnew2,,2\n", "new.csv")
    observed = parse_observed(str(path))
    assert isinstance(observed, ScoreMatrix)
    assert observed.models == ("new1", "new2")
    assert observed.observed.tolist() == [[True, False], [False, True]]


@pytest.mark.parametrize(
    "spec, pattern",
    [
        ("a=1,b=x", "value 'x' for 'b' is not a finite number"),
        ("a=nan", "value 'nan' for 'a' is not a finite number"),
        ("a=inf", "value 'inf' for 'a' is not a finite number"),
        ("a=1,a=2", "'a' is given twice"),
        ("a=1,=2", "'=2' is not of the form 'name=value'"),
        ("just-a-name", "not a file and not of the form"),
    ],
)
def test_parse_observed_bad_values(spec, pattern):
    """Bad inline specs are errors quoting the offending part."""
    with pytest.raises(ValueError, match=re.escape(pattern)):
        parse_observed(spec)


def test_parse_observed_bad_json_files(tmp_path):
    """JSON files with a non-numeric score, no scores or a list are errors naming the file."""
    path = write(tmp_path, '{"a": "high"}', "obs.json")
    with pytest.raises(ValueError, match=message(path, "value 'high' for 'a'")):
        parse_observed(str(path))
    path = write(tmp_path, "{}", "empty.json")
    with pytest.raises(ValueError, match=message(path, "no scores given")):
        parse_observed(str(path))
    path = write(tmp_path, "[1]", "list.json")
    with pytest.raises(ValueError, match=message(path, "expected a JSON object")):
        parse_observed(str(path))


# -------------------------------------------------------- write_text_atomic
def test_write_text_atomic_writes_and_leaves_no_temp(tmp_path):
    """The target holds the text and nothing else is left in the directory."""
    target = tmp_path / "out.json"
    write_text_atomic(target, "first\n")
    write_text_atomic(target, "second\n")
    assert target.read_text() == "second\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_write_text_atomic_refuses_protected_input(tmp_path):
    """A path given in ``protect`` (even spelled differently) is never overwritten."""
    data = write(tmp_path, GOOD, "data.csv")
    (tmp_path / "sub").mkdir()
    other_spelling = tmp_path / "sub" / ".." / "data.csv"
    with pytest.raises(ValueError, match="refusing to overwrite an input file"):
        write_text_atomic(other_spelling, "oops", protect=[None, data])
    assert data.read_text() == GOOD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "sub"]


def test_write_text_atomic_allows_unrelated_protect(tmp_path):
    """Protecting another (or a nonexistent) file does not block the write."""
    data = write(tmp_path, GOOD, "data.csv")
    target = tmp_path / "out.txt"
    write_text_atomic(target, "ok", protect=[data, tmp_path / "missing.csv"])
    assert target.read_text() == "ok"


def test_write_text_atomic_respects_umask(tmp_path):
    """The written file gets the same permissions as one written with open()."""
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    expected = stat.S_IMODE(os.stat(plain).st_mode)
    if expected == 0o600:
        pytest.skip("umask 077: no difference to detect")
    target = tmp_path / "atomic.txt"
    write_text_atomic(target, "x")
    assert stat.S_IMODE(os.stat(target).st_mode) == expected


# ----------------------------------------------------------- bundled data
@pytest.mark.parametrize("name", [info.name for info in list_datasets()])
def test_every_bundled_dataset_loads(name):
    """Each bundled leaderboard loads with >= 3 models and every column observed somewhere."""
    scores = load_dataset(name)
    assert scores.n_models >= 3
    assert scores.n_items >= 1
    assert scores.observed.any(axis=0).all()
    assert scores.observed.any(axis=1).all()
    assert scores.source == name


@pytest.mark.parametrize(
    "name, shape, percent", [("mteb", (263, 56), 77.3), ("merged", (118, 114), 31.1)]
)
def test_paper_matrices_have_published_shape(name, shape, percent):
    """MTEB and MERGED match the sizes and observed fractions of the paper."""
    scores = load_dataset(name)
    assert scores.shape == shape
    assert round(100 * scores.observed_fraction, 1) == percent


def test_unknown_dataset_lists_valid_names():
    """An unknown dataset name is an error listing every bundled name."""
    with pytest.raises(ValueError, match="unknown dataset 'mtab'") as info:
        load_dataset("mtab")
    for dataset in list_datasets():
        assert dataset.name in str(info.value)


def test_auxiliary_columns_are_left_out():
    """alpaca_eval and arena_hard drop their count/error/length columns, which the file has."""
    for dataset in list_datasets():
        if not dataset.auxiliary:
            continue
        raw = read_scores(benchsel.datasets._path(dataset))
        assert set(dataset.auxiliary) <= set(raw.items)
        assert not set(dataset.auxiliary) & set(load_dataset(dataset.name).items)
    alpaca = load_dataset("alpaca_eval")
    assert "n_wins" not in alpaca.items
    assert "length_controlled_winrate" in alpaca.items


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("info", list_datasets(), ids=lambda info: info.name)
def test_bundled_files_are_the_shared_files(info):
    """Byte for byte: the bundled file has the recorded sha256 of the shared one, and so
    does the shared file where ../shared is beside the checkout."""
    kind = "leaderboards" if info.kind == "leaderboard" else "questions"
    key = f"{kind}/{Path(info.filename).name}"
    assert _sha256(benchsel.datasets.bundled_path(info.name)) == SHARED_SHA256[key]
    if (SHARED / key).exists():
        assert _sha256(SHARED / key) == SHARED_SHA256[key]


@pytest.mark.parametrize("info", list_datasets("questions"), ids=lambda info: info.name)
def test_bundled_question_sets_load_with_doc_id_names(info):
    """Loaded with items named <name>/<doc_id>, scores as stored."""
    scores = load_dataset(info.name)
    with np.load(benchsel.datasets.bundled_path(info.name)) as z:
        np.testing.assert_array_equal(scores.values, z["scores"].astype(float))
    assert scores.items[:2] == (f"{info.name}/0", f"{info.name}/1")


# --------------------------------------------------------------- ScoreMatrix
def small_matrix() -> ScoreMatrix:
    """A 3 x 2 matrix with one missing cell."""
    return ScoreMatrix([[1.0, np.nan], [3.0, 4.0], [5.0, 6.0]], ["x", "y", "z"], ["a", "b"])


def test_transpose_swaps_names_and_values():
    """transpose() (and .T) turns items into rows and models into columns."""
    scores = small_matrix()
    flipped = scores.transpose()
    assert flipped.models == ("a", "b")
    assert flipped.items == ("x", "y", "z")
    np.testing.assert_array_equal(flipped.values, scores.values.T)
    assert_same_matrix(scores.T.T, scores)


def test_item_indices_known_and_unknown():
    """Known names map to columns in the given order; an unknown one lists valid names."""
    scores = small_matrix()
    assert scores.item_indices(["b", "a"]).tolist() == [1, 0]
    with pytest.raises(ValueError, match=r"unknown item name\(s\): 'c'; valid names are: 'a', 'b'"):
        scores.item_indices(["a", "c"])


@pytest.mark.parametrize("costs", [[1.0, 0.0], [-1.0, 2.0], [1.0, np.nan], [np.inf, 1.0]])
def test_costs_must_be_positive_and_finite(costs):
    """Zero, negative, NaN and infinite costs are rejected naming the item."""
    bad = "a" if not (np.isfinite(costs[0]) and costs[0] > 0) else "b"
    with pytest.raises(ValueError, match=f"cost of item '{bad}'"):
        small_matrix().with_costs(np.array(costs))


def test_costs_length_and_mapping():
    """Costs need one per item; a mapping is ordered by item and must cover all items."""
    scores = small_matrix()
    with pytest.raises(ValueError, match="got 3 costs for 2 items"):
        scores.with_costs(np.ones(3))
    assert scores.with_costs({"b": 2.0, "a": 1.0}).costs.tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match=r"no cost given for item\(s\) 'b'"):
        scores.with_costs({"a": 1.0})


def test_matrix_rejects_inf_and_duplicates():
    """Infinite scores and repeated names are constructor errors."""
    with pytest.raises(ValueError, match="expected a finite number or NaN"):
        ScoreMatrix([[1.0, np.inf]], ["x"], ["a", "b"])
    with pytest.raises(ValueError, match=r"duplicate model name\(s\): 'x'"):
        ScoreMatrix(np.ones((2, 1)), ["x", "x"], ["a"])


def test_to_frame_round_trip(tmp_path):
    """to_frame() written as CSV reads back to the same matrix."""
    scores = small_matrix()
    path = tmp_path / "frame.csv"
    scores.to_frame().to_csv(path)
    assert_same_matrix(read_scores(path), scores)



def test_line_length_check_is_the_longest_line_by_hand(tmp_path):
    from benchsel.io import _check_line_lengths

    rng = np.random.default_rng(0)
    path = tmp_path / "lines.csv"
    for trial in range(300):
        lengths = rng.integers(0, 25, size=rng.integers(1, 12))
        data = b"\n".join(b"x" * int(n) for n in lengths) + (b"\n" if trial % 2 else b"")
        path.write_bytes(data)
        limit, chunk = int(rng.integers(5, 20)), int(rng.integers(1, 9))
        too_long = [i for i, line in enumerate(data.split(b"\n"), 1) if len(line) > limit]
        if too_long:
            with pytest.raises(ValueError, match=f"line {too_long[0]} is longer"):
                _check_line_lengths(path, limit, chunk)
        else:
            _check_line_lengths(path, limit, chunk)


def test_a_file_with_no_line_breaks_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    import benchsel.io as io

    path = tmp_path / "one_line.csv"
    path.write_text("model," + ",".join(["0.5"] * 5000))  # 20 kB, one line
    monkeypatch.setattr(io, "MAX_LINE_BYTES", 10_000)
    with pytest.raises(ValueError, match=r"one_line.csv: line 1 is longer than .*line breaks"):
        read_scores(path)


def test_duplicate_columns_of_a_wide_file_are_named(tmp_path):
    names = [f"b{j}" for j in range(20_000)] + ["b7", "b19999"]
    path = tmp_path / "wide.csv"
    path.write_text("model," + ",".join(names) + "\n" + "\n".join(
        f"m{i}," + ",".join(["0.5"] * len(names)) for i in range(3)) + "\n")
    with pytest.raises(ValueError, match=r"duplicate column name\(s\) \['b19999', 'b7'\]"):
        read_scores(path)
