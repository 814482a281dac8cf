"""benchsel discover: novelty and information rankings, bootstrap, correlation input."""

import json

import numpy as np
import pytest

from benchsel import ScoreMatrix, load_dataset
from benchsel.analyses import discover, novelty, read_correlation
from benchsel.cli import main


def _board(seed=0, m=200):
    """Five benchmarks on two factors, an independent one, and a near-copy of 'b0'."""
    rng = np.random.default_rng(seed)
    factors = rng.normal(size=(m, 2))
    load = rng.uniform(0.5, 1.0, size=(2, 5))
    base = factors @ load + 0.5 * rng.normal(size=(m, 5))
    indep = rng.normal(size=(m, 1))
    copy = base[:, :1] + 0.05 * rng.normal(size=(m, 1))
    values = np.hstack([base, indep, copy])
    names = [f"b{j}" for j in range(5)] + ["independent", "copy"]
    return ScoreMatrix(values, [f"m{i}" for i in range(m)], names)


def test_novelty_is_conditional_variance_given_the_rest():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(6, 6))
    cov = a @ a.T + np.eye(6)
    d = np.sqrt(np.diag(cov))
    r = cov / np.outer(d, d)
    want = [r[j, j] - r[j, np.arange(6) != j] @ np.linalg.solve(
        r[np.ix_(np.arange(6) != j, np.arange(6) != j)], r[np.arange(6) != j, j])
        for j in range(6)]
    np.testing.assert_allclose(novelty(r), want, rtol=1e-10)


def test_independent_benchmark_is_most_novel_and_least_informative():
    result = discover(_board())
    names = [r.benchmark for r in result.rows]
    ind = result.row("independent")
    assert names[0] == "independent" and ind.novelty_rank == 1 and ind.novelty > 0.95
    assert ind.mi_rank == len(names)  # carries nothing about the rest
    assert ind.information == pytest.approx(-0.5 * np.log(ind.novelty))
    # A benchmark and its near-copy explain each other: the last two by novelty.
    assert set(names[-2:]) == {"b0", "copy"}
    assert result.row("copy").novelty < 0.02


def test_bootstrap_intervals_and_top3_shares():
    result = discover(_board(seed=2), bootstrap=40, seed=3)
    ind = result.row("independent")
    assert ind.top3_share == 1.0 and ind.rank_low == ind.rank_high == 1
    for r in result.rows:
        assert 1 <= r.rank_low <= r.rank_high <= len(result.rows)
        assert 0 <= r.top3_share <= 1
    again = discover(_board(seed=2), bootstrap=40, seed=3)
    assert [r.to_dict() for r in again.rows] == [r.to_dict() for r in result.rows]


def test_correlation_input_matches_scores_input(tmp_path):
    board = _board(seed=4)
    from_scores = discover(board)
    names = [r.benchmark for r in from_scores.rows]
    path = tmp_path / "corr.csv"
    import pandas as pd

    order = [board.items.index(n) for n in board.items]
    pd.DataFrame(from_scores.correlation, index=[board.items[j] for j in order],
                 columns=[board.items[j] for j in order]).to_csv(path)
    given = discover(correlation=read_correlation(path))
    assert [r.benchmark for r in given.rows] == names
    with pytest.raises(ValueError, match="bootstrap needs the scores"):
        discover(correlation=read_correlation(path), bootstrap=5)


@pytest.mark.parametrize("edit, message", [
    (lambda r: r.__setitem__((0, 1), 0.3), "not symmetric"),
    (lambda r: r.__setitem__((2, 2), 0.9), "diagonal must be 1"),
    (lambda r: r.__setitem__((0, 1), 1.5) or r.__setitem__((1, 0), 1.5), "not a correlation"),
])
def test_correlation_file_errors_name_the_cell(tmp_path, edit, message):
    import pandas as pd

    r = np.eye(3)
    r[0, 1] = r[1, 0] = 0.5
    edit(r)
    path = tmp_path / "bad.csv"
    pd.DataFrame(r, index=list("abc"), columns=list("abc")).to_csv(path)
    with pytest.raises(ValueError, match=message):
        read_correlation(path)


def test_not_positive_semidefinite_is_refused(tmp_path):
    import pandas as pd

    r = np.array([[1, 0.9, -0.9], [0.9, 1, 0.9], [-0.9, 0.9, 1]])
    path = tmp_path / "npsd.csv"
    pd.DataFrame(r, index=list("abc"), columns=list("abc")).to_csv(path)
    with pytest.raises(ValueError, match="smallest eigenvalue"):
        read_correlation(path)


def test_cli_discover_json_on_a_bundled_board(capsys):
    code = main(["discover", "helm_lite", "--new", "GSM8K", "--bootstrap", "10", "--quiet",
                 "--json"])
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    rows = payload["benchmarks"]
    assert [r["novelty_rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert set(rows[0]) >= {"benchmark", "novelty", "novelty_rank", "rank_low", "rank_high",
                            "top3_share", "entropy_rank", "information", "mi_rank"}
    assert sum(r["new"] for r in rows) == 1
    assert sorted(r["mi_rank"] for r in rows) == list(range(1, len(rows) + 1))
    assert payload["bootstrap"] == 10


def test_cli_discover_unknown_new_benchmark_is_an_error(capsys):
    assert main(["discover", "helm_lite", "--new", "Nope"]) != 0
    assert "--new names unknown benchmark(s) ['Nope']" in capsys.readouterr().err
    # The library names its parameter, not the flag.
    from benchsel.analyses import discover

    with pytest.raises(ValueError, match=r"^new names unknown benchmark\(s\) \['Nope'\]"):
        discover("helm_lite", new=["Nope"])


def test_discover_runs_on_a_sparse_board():
    result = discover(load_dataset("merged"))
    assert len(result.rows) > 50
    assert all(0 <= r.novelty <= 1 for r in result.rows)
