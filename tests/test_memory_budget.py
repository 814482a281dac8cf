"""Memory is planned, not discovered: estimates, the budget, and what switches or refuses."""

import tracemalloc
import warnings

import numpy as np
import pytest

from benchsel import DataWarning, ScoreMatrix
from benchsel._memory import BUDGET_ENV, MemoryBudgetError, memory_budget, parse_size
from benchsel.gaussian.covariance import (
    em_covariance,
    em_memory_bytes,
    estimate_covariance,
    pairwise_covariance,
)


def _board(m, n, missing, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((m, 3)) @ rng.standard_normal((3, n))
    z += 0.5 * rng.standard_normal((m, n))
    z[rng.random(z.shape) < missing] = np.nan
    return z


def test_sizes_and_the_budget(monkeypatch):
    assert parse_size("4G") == 4 * 2**30 and parse_size("512MiB") == 512 * 2**20
    assert parse_size("1.5k") == 1536 and parse_size("1000") == 1000
    for bad in ("", "-1G", "0", "4X", "four"):
        with pytest.raises(ValueError, match="memory size"):
            parse_size(bad)
    monkeypatch.setenv(BUDGET_ENV, "3M")
    assert memory_budget() == 3 * 2**20
    monkeypatch.setenv(BUDGET_ENV, "lots")
    with pytest.raises(ValueError, match=BUDGET_ENV):
        memory_budget()
    monkeypatch.delenv(BUDGET_ENV)
    assert memory_budget() > 2**20  # half the machine's memory


@pytest.mark.parametrize("m, n, missing", [(300, 120, 0.5), (80, 300, 0.6)])
def test_em_memory_estimate_is_an_upper_bound_close_to_the_peak(m, n, missing):
    z = _board(m, n, missing)
    tracemalloc.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        em_covariance(z, max_iter=2)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    estimate = em_memory_bytes(~np.isnan(z))
    assert peak <= estimate <= 2.5 * peak


def test_over_the_budget_auto_switches_and_an_explicit_em_refuses(monkeypatch):
    z = _board(200, 300, 0.5)
    monkeypatch.setenv(BUDGET_ENV, "50M")
    with pytest.warns(DataWarning, match="more memory than the budget"):
        assert estimate_covariance(z, "auto").method == "factor"
    with pytest.raises(MemoryBudgetError, match=r"EM on 200 x 300 scores would need about .* "
                                                r"over the memory budget of 50.0 MiB"):
        em_covariance(z)
    with pytest.raises(MemoryBudgetError, match="the covariance of 300 items"):
        monkeypatch.setenv(BUDGET_ENV, "1M")
        pairwise_covariance(z)


def test_the_default_predictor_fits_a_small_budget_and_says_why_em_cannot(monkeypatch, tmp_path,
                                                                          capsys):
    import pandas as pd

    from benchsel import GaussianModel
    from benchsel.cli import main
    from benchsel.prediction.completers import complete_gaussian_em

    values = 50 + 10 * _board(120, 200, 0.5)
    monkeypatch.setenv(BUDGET_ENV, "40M")
    assert np.isnan(complete_gaussian_em(values).mean[np.isnan(values)]).all()
    scores = ScoreMatrix(values, [f"m{i}" for i in range(120)], [f"b{j}" for j in range(200)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pred = GaussianModel().fit(scores).predict({"b0": 50.0, "b1": 61.0})
    assert np.isfinite(pred.mean).all() and pred.choices[0]["method"] != "gaussian-em"
    path = tmp_path / "board.csv"
    pd.DataFrame(values, index=pd.Index(scores.models, name="model"),
                 columns=scores.items).to_csv(path)
    monkeypatch.delenv(BUDGET_ENV)
    code = main(["predict", str(path), "--covariance", "em", "--observed", "b0=50",
                 "--memory-budget", "40M"])
    assert code == 1
    assert "EM on 120 x 200 scores would need about" in capsys.readouterr().err
    import os

    assert BUDGET_ENV not in os.environ  # set for the command's run only


def test_held_out_completions_are_kept_by_their_hidden_rows_only():
    from benchsel import load_dataset
    from benchsel.prediction.cache import CompletionCache
    from benchsel.prediction.fits import FitStore
    from benchsel.prediction.holdout import choice_folds

    values = load_dataset("bigcodebench").cleaned().values
    given = np.zeros(values.shape[1], dtype=bool)
    given[:2] = True
    held, hidden = choice_folds(values, given, "random")[0]
    cache, fits = CompletionCache(), FitStore()
    for method in ("gaussian", "svd", "gp"):
        first = cache.held_out(values, held, hidden, method, fits)
        again = cache.held_out(values, held, hidden, method, fits)
        np.testing.assert_array_equal(first.mean[hidden], again.mean[hidden])
        np.testing.assert_array_equal(first.std[hidden], again.std[hidden])
    kept = list(cache._held.values())
    rows = int(hidden.any(axis=1).sum())
    assert len(kept) == 3 and all(k.mean.shape == (rows, values.shape[1]) for k in kept)
    assert rows < values.shape[0] / 2
