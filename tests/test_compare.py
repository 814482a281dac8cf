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
    model.predict({"b0": 0.0})  # builds the calibrator
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
