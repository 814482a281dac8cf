"""Regression tests for defects found in review (each failed before its fix)."""

import json

import numpy as np
import pandas as pd
import pytest

import benchsel
from benchsel import DataWarning, GaussianModel, ScoreMatrix, em_covariance, read_scores
from benchsel.cli import main
from benchsel.datasets import bundled_path
from benchsel.io import read_costs
from benchsel.selection.greedy import run_greedy


def test_single_npy_renamed_npz_is_a_clean_error(tmp_path, capsys):
    path = tmp_path / "fake.npz"
    with path.open("wb") as fh:
        np.save(fh, np.ones((3, 3)))
    assert main(["select", str(path), "-k", "1"]) == 1
    assert "single .npy array" in capsys.readouterr().err


def test_corrupt_zip_is_a_clean_error(tmp_path, capsys):
    path = tmp_path / "bad.npz"
    path.write_bytes(b"PK\x03\x04x")
    assert main(["select", str(path), "-k", "1"]) == 1
    assert "not a readable NPZ archive" in capsys.readouterr().err


def test_output_to_a_directory_is_a_clean_error(tmp_path, capsys):
    assert main(["select", "helm_lite", "-k", "1", "-o", str(tmp_path)]) == 1
    assert "benchsel: error:" in capsys.readouterr().err


def test_output_never_overwrites_a_bundled_dataset(capsys):
    target = bundled_path("helm_lite")
    before = target.read_bytes()
    assert main(["select", "helm_lite", "-k", "1", "--json", "-o", str(target)]) == 1
    assert "refusing to overwrite an input file" in capsys.readouterr().err
    assert target.read_bytes() == before


def dropped_matrix():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(10, 4))
    x[:, 2] = np.nan  # all missing
    x[:, 3] = 5.0  # constant
    return ScoreMatrix(x, [f"m{i}" for i in range(10)], ["a", "b", "c", "d"])


def test_inputs_naming_dropped_columns_are_ignored_with_a_warning():
    with pytest.warns(DataWarning):
        model = GaussianModel().fit(dropped_matrix())
    assert model.dropped_items_ == ["c", "d"]
    with pytest.warns(DataWarning, match="ignoring 'd' in the observed scores"):
        pred = model.predict({"a": 0.1, "d": 5.0})
    assert pred.items == ["a", "b"]
    new = ScoreMatrix([[0.1, np.nan, np.nan, 5.0]], ["new"], ["a", "b", "c", "d"])
    with pytest.warns(DataWarning, match="ignoring 'c', 'd'"):
        assert model.predict(new).records()[0]["benchmark"] == "b"
    with pytest.warns(DataWarning, match="in the costs"):
        sel = model.select(objective="mi", costs={"a": 1, "b": 1, "c": 1, "d": 1}, budget=1)
    assert len(sel.items) == 1
    with pytest.warns(DataWarning, match="in the exclusions"):
        assert model.select(1, exclude=["d", "a"]).items == ["b"]
    with pytest.raises(ValueError, match="cannot include 'd': left out"):
        model.select(1, include=["d"])
    with pytest.raises(ValueError, match="costs name unknown benchmark"):
        model.select(objective="mi", costs={"a": 1, "b": 1, "zz": 1}, budget=1)


def test_parquet_with_unnamed_integer_index_is_row_numbering(tmp_path):
    frame = pd.DataFrame(
        {"model": ["m1", "m2", "m3", "m4"], "x": [1.0, 2, 3, 4], "y": [2.0, 1, 4, 3]}
    )
    path = tmp_path / "p.parquet"
    frame[frame.x > 0].iloc[[3, 1, 0, 2]].to_parquet(path)  # non-range integer index
    scores = read_scores(path)
    assert scores.items == ("x", "y") and scores.models == ("m4", "m2", "m1", "m3")


def test_npz_byte_string_names_are_decoded(tmp_path):
    path = tmp_path / "b.npz"
    np.savez(path, B=np.arange(6.0).reshape(3, 2), models=np.array(["m1", "m2", "m3"], "S"),
             benchmarks=np.array(["x", "y"], "S"))
    scores = read_scores(path)
    assert scores.models == ("m1", "m2", "m3") and scores.items == ("x", "y")


def test_costs_with_byte_order_mark_and_bad_encoding(tmp_path):
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbfa,1\nb,2\n")
    assert read_costs(bom) == {"a": 1.0, "b": 2.0}
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"\xe9,1\n")
    with pytest.raises(ValueError, match="latin.csv: not a UTF-8 text file"):
        read_costs(latin)


def test_em_rejects_non_positive_floor_instead_of_hanging():
    x = np.array([[1.0, np.nan], [np.nan, 2.0], [np.nan, np.nan], [0.5, 1.0]])
    for floor in (0.0, -1.0):
        with pytest.raises(ValueError, match="floor must be a positive number"):
            em_covariance(x, floor=floor)


def test_huge_scores_do_not_become_nan():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(30, 3)) * 1e160
    model = GaussianModel().fit(ScoreMatrix(x, [f"m{i}" for i in range(30)], ["a", "b", "c"]))
    pred = model.predict({"a": 1e160})
    assert np.all(np.isfinite(pred.mean)) and np.all(np.isfinite(pred.std))


def test_budget_tie_prefers_the_cheaper_equal_selection():
    s = np.array([[1, 0.9, 0.9, 0], [0.9, 1, 0.9, 0], [0.9, 0.9, 1, 0], [0, 0, 0, 1.0]])
    res = run_greedy(s, objective="mi", costs=[10, 1, 1, 1], budget=10)
    assert res.cost == 1.0 and res.strategy == "cost-effective greedy"


def test_cv_json_has_no_nan_and_tiny_data_is_a_clear_error(capsys):
    assert main(["evaluate", "arena_hard", "--folds", "3"]) == 1
    assert "at least 2 items" in capsys.readouterr().err
    rng = np.random.default_rng(2)
    x = rng.normal(size=(20, 4))
    x[rng.random(x.shape) < 0.7] = np.nan
    x[:, 0] = rng.normal(size=20)
    scores = ScoreMatrix(x, [f"m{i}" for i in range(20)], list("abcd"))
    out = benchsel.evaluation.cross_validate(scores, k_max=3, folds=4).to_dict()
    json.dumps(out, allow_nan=False)  # raises on NaN
