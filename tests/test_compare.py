"""benchsel compare: the difference of two models with an error bar, checked on hidden truth."""

import json

import numpy as np
import pytest

from benchsel import GaussianModel, ScoreMatrix, load_dataset
from benchsel.cli import main
from benchsel.gaussian.compare import compare_models


def _gaussian_board(m=700, n=10, seed=0):
    rng = np.random.default_rng(seed)
    loadings = rng.normal(size=(3, n))
    values = rng.normal(size=(m, 3)) @ loadings + 0.5 * rng.normal(size=(m, n))
    return ScoreMatrix(values, [f"m{i}" for i in range(m)], [f"b{j}" for j in range(n)])


def test_difference_intervals_cover_hidden_truth_on_gaussian_data():
    board = _gaussian_board()
    model = GaussianModel().fit(board.subset(models=np.arange(300)))
    rng = np.random.default_rng(1)
    inside = []
    for _ in range(150):
        i, j = rng.choice(np.arange(300, 700), 2, replace=False)
        given = [f"b{c}" for c in (0, 4, 7)]
        obs = [{g: board.values[r, int(g[1:])] for g in given} for r in (i, j)]
        cmp = compare_models(model, obs[0], obs[1])
        truth = board.values[j] - board.values[i]
        hidden = ~cmp.observed
        inside.append((cmp.low[hidden] <= truth[hidden]) & (truth[hidden] <= cmp.high[hidden]))
        both = cmp.observed
        np.testing.assert_allclose(cmp.difference[both], truth[both])
        assert np.all(cmp.std[both] == 0)
        assert np.all((cmp.p_b_better >= 0) & (cmp.p_b_better <= 1))
    assert 0.85 <= np.mean(inside) <= 0.95


def test_errors_of_models_beyond_the_fit_are_correlated():
    # Bent board: the fit on weak models misses every strong model the same way.
    rng = np.random.default_rng(2)
    ability = rng.normal(size=(400, 1))
    bend = rng.uniform(-0.4, 0.4, size=(1, 10))
    values = ability * rng.uniform(0.5, 1.5, size=(1, 10)) + bend * ability**2 \
        + 0.3 * rng.normal(size=(400, 10))
    board = ScoreMatrix(values, [f"m{i}" for i in range(400)], [f"b{j}" for j in range(10)])
    model = GaussianModel().fit(board)
    model.predict({"b0": 0.0}, method="gaussian")  # builds the calibrator
    given = np.zeros(10, bool)
    given[[0, 5]] = True
    inside, outside = model._calibrator.error_correlation(given)
    assert 0 <= inside < 0.2
    assert outside > inside + 0.2


def test_cli_compare_on_a_sparse_board(capsys):
    board = load_dataset("merged").cleaned()
    counts = (~np.isnan(board.values)).sum(axis=1)
    a, b = (board.models[i] for i in np.argsort(-counts)[:2])
    assert main(["compare", "merged", "--models", f"{a},{b}", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["model_a"] == a and payload["model_b"] == b
    diffs = payload["differences"]
    assert any(d["observed"] for d in diffs) and any(not d["observed"] for d in diffs)
    for d in diffs:
        assert d["low"] <= d["difference"] <= d["high"]
        assert (d["std"] == 0) == d["observed"]


def test_cli_compare_bad_models(capsys):
    assert main(["compare", "helm_lite", "--models", "nobody,else"]) == 1
    assert "no model named 'nobody'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["compare", "helm_lite", "--models", "x"])
    assert exc.value.code == 2
    assert "two different model names" in capsys.readouterr().err


def test_cli_compare_two_runs_with_a_plan(capsys, tmp_path):
    board = load_dataset("wildbench").cleaned()
    held = [0, 1]
    rest = board.subset(models=np.arange(2, board.n_models))
    source = tmp_path / "rest.csv"
    rest.to_frame().to_csv(source)
    plan = tmp_path / "plan.json"
    assert main(["plan", str(source), "-k", "3", "-o", str(plan)]) == 0
    selected = json.loads(plan.read_text())["benchmarks"]["selection"]["selected"]
    capsys.readouterr()
    runs = tmp_path / "runs.csv"
    cols = [board.items.index(s) for s in selected]
    lines = ["model," + ",".join(selected)]
    for i in held:
        lines.append(board.models[i] + "," + ",".join(repr(float(board.values[i, c]))
                                                      for c in cols))
    runs.write_text("\n".join(lines) + "\n")
    assert main(["compare", "--plan", str(plan), "--observed", str(runs), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert (payload["model_a"], payload["model_b"]) == (board.models[0], board.models[1])
    by = {d["benchmark"]: d for d in payload["differences"]}
    for s in selected:
        assert by[s]["observed"] and by[s]["std"] == 0
        truth = board.values[1, board.items.index(s)] - board.values[0, board.items.index(s)]
        assert by[s]["difference"] == pytest.approx(truth)
    hidden = [d for d in payload["differences"] if not d["observed"]]
    assert hidden and all(d["std"] > 0 for d in hidden)
    # DATA and --plan together are refused.
    with pytest.raises(SystemExit):
        main(["compare", str(source), "--plan", str(plan), "--observed", str(runs)])
