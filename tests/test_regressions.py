"""Regression tests for defects found in review (each failed before its fix)."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import benchsel
from benchsel import (
    DataWarning,
    GaussianModel,
    ScoreMatrix,
    em_covariance,
    load_dataset,
    read_scores,
)
from benchsel.cli import main
from benchsel.datasets import bundled_path
from benchsel.inputs import read_costs
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
        pred = model.predict({"a": 0.1, "d": 5.0}, method="gaussian")
    assert pred.items == ["a", "b"]
    new = ScoreMatrix([[0.1, np.nan, np.nan, 5.0]], ["new"], ["a", "b", "c", "d"])
    with pytest.warns(DataWarning, match="ignoring 'c', 'd'"):
        assert model.predict(new, method="gaussian").records()[0]["benchmark"] == "b"
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
    pred = model.predict({"a": 1e160}, method="gaussian")
    assert np.all(np.isfinite(pred.mean)) and np.all(np.isfinite(pred.std))


def test_a_score_of_1e300_beside_tiny_ones_predicts_finite_json(tmp_path, capsys):
    # Found by the big property profile: the column mean's spread and the
    # percentage errors of `auto`'s choice overflowed (numpy warnings, then inf in JSON).
    path = tmp_path / "board.csv"
    path.write_text("model,b0,b1\nm0,1.2166763139521995e-07,1e+300\n"
                    "m1,2.7026647330302875e-07,-1.4035604143131183e-07\n"
                    "m2,-3.1244603025485524e-07,-5.300371384823358e-07\n")
    assert main(["predict", str(path), "--observed", "b0=1.2166763139521995e-07",
                 "--json"]) == 0
    captured = capsys.readouterr()
    assert "encountered" not in captured.err
    out = json.loads(captured.out)
    cells = [p for p in out["predictions"] if p["benchmark"] == "b1"]
    assert cells and all(np.isfinite([c["mean"], c["std"], c["low"], c["high"]]).all()
                         for c in cells)


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
    out = benchsel.evaluation.cross_validate(scores, k_max=3, folds=4,
                                             predictor="gaussian").to_dict()
    json.dumps(out, allow_nan=False)  # raises on NaN


# ---------------------------------------------------------------- second review


def test_predict_with_a_partial_method_falls_back_and_writes_valid_json(capsys):
    assert main(["predict", "merged", "--observed", "arena_hard/score=50", "--method",
                 "ridge", "--json"]) == 0
    captured = capsys.readouterr()
    assert "fall back to the Gaussian" in captured.err
    out = json.loads(captured.out)  # json.loads accepts NaN; check explicitly
    assert all(np.isfinite(r["mean"]) and np.isfinite(r["std"]) for r in out["predictions"])


def test_logit_transform_still_flags_scores_above_the_training_max():
    data = load_dataset("mteb")
    top = {c: float(np.nanmax(data.to_frame()[c])) + 0.001 for c in data.items[:3]}
    for transform in ("none", "logit"):
        model = GaussianModel(transform=transform).fit(data)
        flags = model.predict(top, method="gaussian").extrapolation[0]
        assert flags["flag"] and flags["items_above_training_max"] == 3


def test_oracle_on_a_three_item_board(capsys):
    assert main(["evaluate", "livebench", "--protocol", "oracle", "--k-max", "3"]) == 1
    assert "leaves nothing to predict" in capsys.readouterr().err
    assert main(["evaluate", "livebench", "--protocol", "oracle", "--k-max", "2", "--json",
                 "--quiet"]) == 0
    json.loads(capsys.readouterr().out)


def test_model_left_with_no_score_after_dropping_a_constant_column(tmp_path, capsys):
    rows = ["model,a,b,flat"] + [f"m{i},{i},{i * i % 7},3" for i in range(6)] + ["lonely,,,3"]
    path = tmp_path / "constrow.csv"
    path.write_text("\n".join(rows) + "\n")
    assert main(["select", str(path), "-k", "1", "--json"]) == 0
    captured = capsys.readouterr()
    json.loads(captured.out)
    assert "DPOTRI" not in captured.out + captured.err


def test_training_size_is_the_exact_floor():
    from benchsel.evaluation import kfold_with_holdout

    for m in (10, 30, 50, 100):
        assert kfold_with_holdout(m, 10, 0.9, 0)[0].train.size == m // 10


def test_svd_leaves_a_column_nobody_observed_unpredicted():
    from benchsel.prediction import complete

    rng = np.random.default_rng(0)
    x = 50 + 10 * rng.normal(size=(20, 5))
    x[:, 4] = np.nan
    res = complete(x, "svd")
    assert np.isnan(res.mean[:, 4]).all() and not np.isnan(res.mean[:, :4]).any()


def test_mardia_refuses_collinear_columns_without_losing_shapiro_wilk():
    from benchsel.analyses import normality

    rng = np.random.default_rng(1)
    x = rng.normal(size=(40, 3))
    x = np.column_stack([x, x.mean(axis=1)])  # an "average" column
    report = normality(ScoreMatrix(x, [f"m{i}" for i in range(40)], list("abcd")))
    assert report.mardia is None and "singular" in report.mardia_note
    assert len(report.items) == 4


def test_cli_rejects_options_a_protocol_ignores(capsys):
    assert main(["evaluate", "helm_lite", "--protocol", "complete", "--covariance", "em"]) == 1
    assert "does not apply" in capsys.readouterr().err
    assert main(["evaluate", "helm_lite", "--protocol", "complete", "--transform", "logit"]) == 1
    assert main(["evaluate", "wildbench", "--protocol", "complete", "--folds", "4", "--json",
                 "--methods", "mean", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["folds"] == 4
    with pytest.raises(SystemExit) as exit_info:
        main(["diagnose", "helm_lite", "--transform", "logit"])
    assert exit_info.value.code == 2


def test_released_npz_with_repeated_model_names_loads_with_numbered_names(tmp_path):
    path = tmp_path / "q.npz"
    np.savez(path, scores=np.eye(4), models=np.array(["a", "b", "a", "a"]))
    with pytest.warns(DataWarning, match="repeated model name"):
        scores = read_scores(path)
    assert scores.models == ("a", "b", "a#2", "a#3")


def test_every_bundled_question_matrix_loads():
    from benchsel.datasets import bundled_path, list_datasets

    files = [bundled_path(info.name) for info in list_datasets("questions")]
    assert len(files) == 10
    for path in files:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            scores = read_scores(path)
        assert scores.n_models >= 83 and scores.n_items >= 277


def test_em_extrapolation_falls_back_where_two_items_never_meet():
    # Found by hypothesis in CI: two benchmarks no model has together, tiny
    # scores. SQUAREM's extrapolation overflowed in the calibrator's EM and
    # numpy's warnings reached the user.
    nan = np.nan
    b0 = [nan, nan, nan, 4.9e-07, 2.1e-07, nan, nan, -2.2e-07, -6.3e-07, nan, 7.1e-09,
          -5.8e-08, -1.7e-07]
    b1 = [-7.1e-07, 4.2e-06, -5.0e-07, nan, nan, -2.0e-06, 1.1e-07, nan, nan, 4.6e-06, nan,
          nan, nan]
    scores = ScoreMatrix(np.column_stack([b0, b1]), [f"m{i}" for i in range(13)], ["b0", "b1"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        pred = GaussianModel().fit(scores).predict({"b0": -5.8e-08}, method="auto")
    assert np.isfinite(pred.mean).all() and np.isfinite(pred.high).all()


def test_a_held_out_model_of_1e300_among_scores_of_1e_7_predicts_without_overflow(tmp_path,
                                                                                  capsys):
    # auto's choice predicts each held-out model from a fit on the others: one
    # scored 1e300 where they score 1e-7 standardized to inf (found by the
    # property suite, which asks for no numerical warnings).
    frame = pd.DataFrame([[6.99367223e-08, 2.98642823e-07], [6.37800240e-08, 4.08151741e-07],
                          [1e300, -1.18457262e-06]], index=["a", "b", "c"], columns=["x", "y"])
    frame.to_csv(tmp_path / "board.csv")
    with np.errstate(all="raise"):
        assert main(["predict", str(tmp_path / "board.csv"), "--observed", "x=7e-8",
                     "--json"]) == 0
    out = capsys.readouterr()
    assert "overflow" not in out.err
    assert all(np.isfinite(p["mean"]) for p in json.loads(out.out)["predictions"])


def test_a_fold_whose_rows_are_all_constant_predicts_without_numpy_noise(tmp_path, capsys):
    """Found by the property tests: auto's folds kept rows on which every column was
    constant, and EM averaged over no entries ("Mean of empty slice")."""
    from benchsel.gaussian.covariance import COVARIANCE_METHODS, estimate_covariance

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for method in COVARIANCE_METHODS:
            est = estimate_covariance(np.zeros((5, 0)), method)
            assert est.mean.shape == (0,) and est.covariance.shape == (0, 0)
    path = tmp_path / "board.csv"
    path.write_text("model,b0,b1,b2\nm0,0.5,0.5,0.5\nm1,0.5,0.5,0.5\nm2,0,0.5,0.5\n"
                    "m3,0.5,0.5,0.5\nm4,0.5,0.4,0.5\n")
    assert main(["predict", str(path), "--observed", "b0=0.5", "--json"]) == 0
    err = capsys.readouterr().err
    assert "empty slice" not in err and "invalid value" not in err, err


def test_a_dataframe_of_dates_or_repeated_columns_is_refused_by_column():
    """Datetimes were read as epoch microseconds; a repeated column was pandas' TypeError."""
    from benchsel.sources import as_scores

    dates = pd.DataFrame({"x": [0.1, 0.2, 0.3], "when": pd.to_datetime(["2024-01-01"] * 3)},
                         index=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"column 'when' holds dates or times"):
        as_scores(dates)
    twice = pd.DataFrame([[0.1, 0.2], [0.3, 0.4]], index=["a", "b"], columns=["x", "x"])
    with pytest.raises(ValueError, match=r"columns \['x'\] appear more than once"):
        as_scores(twice)


def test_a_parquet_column_of_lists_names_the_file_row_and_column(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "lists.parquet"
    pq.write_table(pa.table({"model": ["a", "b"], "x": [[1.0, 2.0], [3.0]],
                             "y": [0.1, 0.2]}), path)
    with pytest.raises(ValueError, match=rf"{path.name}: row 1, column 'x': holds a list"):
        read_scores(path)


def test_an_observed_file_that_fails_while_read_is_named(capsys):
    """/proc/self/mem opens but cannot be read: the error named no file."""
    assert main(["predict", "helm_lite", "--observed", "/proc/self/mem"]) == 1
    err = capsys.readouterr().err
    assert "/proc/self/mem: cannot be read" in err and "Traceback" not in err


def test_the_report_shows_no_control_character(tmp_path):
    from benchsel.report.html import escape

    assert escape("a\x00b\x1b[31m<i>\tc\n") == "ab[31m&lt;i&gt;\tc\n"
    helm = benchsel.load_dataset("helm_lite")
    board = helm._replace(items=["MM\x00LU\x07" if i == "MMLU" else i for i in helm.items])
    data, page = tmp_path / "board.csv", tmp_path / "report.html"
    board.to_frame().to_csv(data)
    assert main(["report", str(data), "-o", str(page), "--quiet", "--folds", "2",
                 "--k-max", "2"]) == 0
    html = page.read_text()
    assert "\x00" not in html and "\x07" not in html and ">MMLU<" in html


def test_an_interrupted_report_plots_leaves_no_plot_file(tmp_path, monkeypatch):
    from benchsel.report import figures

    encode, calls = figures.encode, []

    def interrupted(fig, fmt):
        calls.append(fmt)
        if len(calls) == 5:  # some figures rendered, more to come
            raise KeyboardInterrupt
        return encode(fig, fmt)

    monkeypatch.setattr(figures, "encode", interrupted)
    plots = tmp_path / "plots"
    assert main(["report", "helm_lite", "-o", str(tmp_path / "r.html"), "--plots", str(plots),
                 "--quiet", "--folds", "2", "--k-max", "2"]) == 130  # "interrupted"
    assert len(calls) == 5 and not [p for p in plots.rglob("*") if p.is_file()]
