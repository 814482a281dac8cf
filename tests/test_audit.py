"""benchsel audit: leave-one-out residuals, injected anomalies and drift."""

import json

import numpy as np
import pytest

from benchsel import ScoreMatrix
from benchsel.analyses.audit import audit, loo_residuals
from benchsel.cli import main


def _board(m=300, n=10, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(m, 3)) @ rng.normal(size=(3, n)) + 0.4 * rng.normal(size=(m, n))
    return ScoreMatrix(values, [f"m{i}" for i in range(m)], [f"b{j}" for j in range(n)])


def test_loo_residuals_match_the_explicit_conditional():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(5, 5))
    sigma = a @ a.T + np.eye(5)
    mean = rng.normal(size=5)
    z = rng.normal(size=(4, 5))
    z[1, 2] = np.nan
    pred, resid = loo_residuals(z, mean, sigma, ridge=0.0)
    for i in range(4):
        o = np.flatnonzero(~np.isnan(z[i]))
        for j in o:
            rest = o[o != j]
            w = np.linalg.solve(sigma[np.ix_(rest, rest)], sigma[rest, j])
            mu = mean[j] + (z[i, rest] - mean[rest]) @ w
            var = sigma[j, j] - sigma[j, rest] @ w
            assert pred[i, j] == pytest.approx(mu)
            assert resid[i, j] == pytest.approx((z[i, j] - mu) / np.sqrt(var))
    assert np.isnan(pred[1, 2])


def test_injected_inflation_is_found_with_few_false_alarms():
    board = _board()
    values = board.values.copy()
    sd = values[:, 4].std()
    hit = [3, 50, 120, 200, 260]
    values[hit, 4] += 4 * sd
    result = audit(board._replace(values=values))
    flagged = {(c.model, c.benchmark) for c in result.cells}
    assert {(f"m{i}", "b4") for i in hit} <= flagged
    assert len(flagged) <= 5 + 2
    assert all(c.z > 0 for c in result.cells if c.benchmark == "b4")
    b4 = next(b for b in result.benchmarks if b.benchmark == "b4")
    assert b4.flagged_cells == 5 and b4.replacement not in (None, "b4")
    clean = audit(board)
    assert len(clean.cells) <= 2


def test_drift_across_model_order_marks_a_benchmark_decoupled():
    board = _board(seed=2)
    values = board.values.copy()
    values[150:, 7] += 0.8  # the later half got better at b7 alone
    result = audit(board._replace(values=values))
    b7 = next(b for b in result.benchmarks if b.benchmark == "b7")
    assert b7.decoupled and b7.drift_t > 3 and b7.replacement is not None
    assert sum(b.decoupled for b in result.benchmarks) <= 2
    # The same drift is invisible when the order says the models are interleaved.
    shuffled = audit(board._replace(values=values),
                     order=np.random.default_rng(0).permutation(300))
    assert not next(b for b in shuffled.benchmarks if b.benchmark == "b7").decoupled


def test_cli_audit_json(capsys, tmp_path):
    board = _board(m=120, seed=3)
    values = board.values.copy()
    values[7, 2] += 10
    path = tmp_path / "board.csv"
    board._replace(values=values).to_frame().to_csv(path)
    assert main(["audit", str(path), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["threshold"] == 5.0 and payload["cells_checked"] == 120 * 10
    top = payload["cells"][0]
    assert (top["model"], top["benchmark"]) == ("m7", "b2") and top["z"] > 5
    assert set(top) == {"model", "benchmark", "observed", "predicted", "z"}


def test_cli_audit_order_file_of_dates(capsys, tmp_path):
    """Drift is tested along the release dates given, not the row order."""
    board = _board(seed=2)
    values = board.values.copy()
    values[::2, 7] += 0.8  # the even rows are the later models, and better at b7 alone
    data = tmp_path / "board.csv"
    board._replace(values=values).to_frame().to_csv(data)
    order = tmp_path / "released.csv"
    lines = ["model,order"] + [f"m{i},{'2024' if i % 2 == 0 else '2023'}-0{1 + i % 9}-15"
                               for i in range(300)]
    order.write_text("\n".join(lines) + "\n")
    assert main(["audit", str(data), "--json"]) == 0
    by_row = json.loads(capsys.readouterr().out)
    assert not next(b for b in by_row["benchmarks"] if b["benchmark"] == "b7")["decoupled"]
    assert main(["audit", str(data), "--order", str(order), "--json"]) == 0
    by_date = json.loads(capsys.readouterr().out)
    b7 = next(b for b in by_date["benchmarks"] if b["benchmark"] == "b7")
    assert b7["decoupled"] and b7["drift_t"] > 3


def test_audit_order_is_matched_by_name_after_empty_rows_are_dropped():
    board = _board(seed=2)
    values = board.values.copy()
    values[150:, 7] += 0.8
    values[0] = np.nan  # dropped by cleaning: the keys must still follow the names
    keys = {f"m{i}": float(i) for i in range(300)}
    result = audit(board._replace(values=values), order=keys)
    assert next(b for b in result.benchmarks if b.benchmark == "b7").decoupled
    del keys["m5"]
    with pytest.raises(ValueError, match="no key for 1 model.*'m5'"):
        audit(board._replace(values=values), order=keys)


def test_order_file_errors_name_the_line_and_value(tmp_path, capsys):
    order = tmp_path / "order.csv"
    order.write_text("model,order\nm0,2024-01-01\nm1,last spring\n")
    board = tmp_path / "board.csv"
    _board(m=40).to_frame().to_csv(board)
    assert main(["audit", str(board), "--order", str(order)]) == 1
    err = capsys.readouterr().err
    assert "line 3" in err and "'last spring'" in err and "date" in err


def test_audit_table_says_what_its_columns_mean(capsys):
    from benchsel.cli import main

    assert main(["audit", "mteb", "-q"]) == 0
    out = capsys.readouterr().out
    assert "drift t: Welch's t of late against early" in out
    assert "replacement: the unflagged benchmark most correlated with it" in out
