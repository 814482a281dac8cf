"""Oracle subsets, the dask backend and the progress line."""

import io
import json
from itertools import combinations

import numpy as np
import pytest

from benchsel import load_dataset
from benchsel.cli import main
from benchsel.evaluation import cross_validate, kfold_with_holdout, oracle_subsets
from benchsel.evaluation.oracle import _FoldScorer
from benchsel.progress import Progress


def test_oracle_scorer_reproduces_cv_r2_of_the_greedy_prefix():
    data = load_dataset("mteb")
    cv = cross_validate(data, objectives=("mi",), k_max=3, predictor="gaussian")
    for f in (0, 5):
        fold = kfold_with_holdout(data.n_models, 10, 0.1, 0)[f]
        scorer = _FoldScorer(data.values, fold, "auto", 1e-2, 10.0)
        for k in (1, 3):
            prefix = tuple(data.items.index(n) for n in cv.orders["mi"][f][:k])
            assert scorer.r2(prefix) == pytest.approx(cv.r2["mi"][f, k - 1], rel=1e-10)


def test_oracle_is_the_exhaustive_maximum_and_bounds_greedy():
    data = load_dataset("helm_lite")
    res = oracle_subsets(data, k_max=2)
    folds = kfold_with_holdout(data.n_models, 10, 0.1, 0)
    scorers = [_FoldScorer(data.values, f, "auto", 1e-2, 10.0) for f in folds]
    for row in res.rows:
        means = {
            s: np.mean([sc.r2(s) for sc in scorers])
            for s in combinations(range(data.n_items), row.k)
        }
        best = max(means, key=means.get)
        assert row.best == [data.items[j] for j in best]
        assert row.r2_oracle == pytest.approx(means[best])
        assert row.subsets == len(means)
        for value in row.r2_greedy.values():
            assert value <= row.r2_oracle + 1e-12


def test_oracle_refuses_too_many_subsets():
    with pytest.raises(ValueError, match="exceed max_subsets"):
        oracle_subsets(load_dataset("merged"), k_max=3)


def test_cli_oracle_json(capsys):
    assert main(["evaluate", "helm_lite", "--protocol", "oracle", "--k-max", "1", "--json",
                 "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["protocol"] == "oracle"
    assert out["results"][0]["r2_oracle"] >= out["results"][0]["r2_mi"]


def test_dask_local_cluster_gives_the_serial_result():
    distributed = pytest.importorskip("dask.distributed")
    data = load_dataset("helm_lite")
    serial = cross_validate(data, k_max=2, folds=5, predictor="gaussian")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster, distributed.Client(cluster):
        on_dask = cross_validate(data, k_max=2, folds=5, backend="dask", n_jobs=-1,
                                 predictor="gaussian")
    for obj in ("mi", "entropy", "random"):
        np.testing.assert_allclose(on_dask.r2[obj], serial.r2[obj], rtol=1e-12)
        assert on_dask.orders[obj] == serial.orders[obj]


def test_progress_line_counts_folds_and_ends_with_newline():
    stream = io.StringIO()
    progress = Progress("folds", enabled=True, stream=stream)
    cross_validate(load_dataset("helm_lite"), k_max=1, folds=4, progress=progress,
                   predictor="gaussian")
    progress.close()
    text = stream.getvalue()
    assert "folds: 4/4 (100%)" in text and text.endswith("\n")


def test_progress_is_off_when_stderr_is_not_a_terminal():
    stream = io.StringIO()  # isatty() is False
    progress = Progress("folds", stream=stream)
    progress(1, 2)
    progress.close()
    assert stream.getvalue() == ""


def test_progress_says_how_long_is_left():
    progress = Progress("folds", enabled=True, stream=io.StringIO())
    progress.start = 0.0
    assert progress.status(1, 4, now=30.0) == "folds: 1/4 (25%) 30 s, about 1 min 30 s left"
    assert progress.status(4, 4, now=120.0) == "folds: 4/4 (100%) 2 min 00 s"


def test_progress_off_a_terminal_writes_a_line_per_interval():
    import time

    stream = io.StringIO()
    progress = Progress("trials", stream=stream, interval=0.05)
    progress(1, 3)  # before the first interval: nothing
    time.sleep(0.06)
    progress(2, 3)
    progress(3, 3)
    progress.close()
    lines = stream.getvalue().splitlines()
    assert [line.split(" (")[0] for line in lines] == ["trials: 2/3", "trials: 3/3"]
    assert "left" in lines[0] and "\r" not in stream.getvalue()
