"""Intervals on boards no rule was tuned on: inside the score's bounds, never wider than
knowing nothing, judged on the evidence, and measured on synthetic boards with known truth."""

import warnings

import numpy as np
import pytest

from benchsel import ConvergenceWarning, DataWarning, GaussianModel, ScoreMatrix, load_dataset
from benchsel.bounds import infer_bounds, truncated_std
from benchsel.calibration import range_excess, regime_excess, spread_limit
from benchsel.calibration.regimes import _range_excess_loop
from benchsel.datasets.synthetic import SYNTHETIC_BOARDS, synthetic_board
from benchsel.evaluation import extrapolate, frontier
from benchsel.evaluation.metrics import interval_score


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", DataWarning)
        yield


def test_truncated_std_is_scipys_where_scipy_is_exact_and_bounded_everywhere():
    from scipy.stats import truncnorm

    rng = np.random.default_rng(0)
    n = 4000
    mean = rng.normal(0.5, 1.0, n)
    std = np.exp(rng.normal(-1.0, 1.0, n))
    low = np.where(rng.random(n) < 0.2, -np.inf, 0.0)
    high = np.where(rng.random(n) < 0.2, np.inf, 1.0)
    got = truncated_std(mean, std, low, high)
    a, b = (low - mean) / std, (high - mean) / std
    exact = (np.maximum(np.abs(a), np.abs(b)) < 30) | (np.minimum(a, -b) < -1)
    expected = truncnorm.std(a, b, loc=mean, scale=std)
    ok = exact & (np.minimum(np.abs(a), np.abs(b)) < 30)
    np.testing.assert_allclose(got[ok], expected[ok], rtol=1e-6)
    # Never more than the normal's, nor than half the bounds' width.
    assert np.all(got <= std * (1 + 1e-12))
    width = high - low
    assert np.all(got[np.isfinite(width)] <= width[np.isfinite(width)] / 2)
    # Far beyond a bound: the tail's spread, std / distance (scipy loses it there).
    far = truncated_std(np.array([-1e5]), np.array([1.0]), 0.0, 1.0)
    assert far[0] == pytest.approx(1e-5, rel=1e-3)
    assert truncated_std(np.array([0.5]), np.array([0.0]), 0.0, 1.0)[0] == 0.0


def test_interval_score_charges_width_and_misses_together():
    # Width 2, y inside: 2. y 1 below low: width + 2 / 0.1 * 1 = 22.
    assert interval_score([0.0], [-1.0], [1.0], 0.9) == pytest.approx(2.0)
    assert interval_score([-2.0], [-1.0], [1.0], 0.9) == pytest.approx(22.0)
    assert interval_score([3.0, 0.0], [-1.0, -1.0], [1.0, 1.0], 0.9) == pytest.approx(22.0)
    assert np.isnan(interval_score([], [], [], 0.9))
    with pytest.raises(ValueError, match="level"):
        interval_score([0.0], [0.0], [1.0], 1.5)


def test_synthetic_boards_have_what_they_are_named_for():
    sparse = synthetic_board(**SYNTHETIC_BOARDS["sparse"])
    counts = (~np.isnan(sparse.values)).sum(axis=0)
    assert np.all((counts[-8:] >= 2) & (counts[-8:] <= 10)) and counts[:-8].min() > 20
    assert not np.isnan(sparse.values).all(axis=1).any()
    ceiling = synthetic_board(**SYNTHETIC_BOARDS["ceiling"])
    assert (ceiling.values == 100).sum() > 100
    mixed = synthetic_board(**SYNTHETIC_BOARDS["mixed"])
    low, high = infer_bounds(mixed.values)
    assert {1.0, 100.0, np.inf} <= set(high.tolist())
    again = synthetic_board(**SYNTHETIC_BOARDS["everything"])
    np.testing.assert_array_equal(again.values,
                                  synthetic_board(**SYNTHETIC_BOARDS["everything"]).values)
    with pytest.raises(ValueError, match="missing"):
        synthetic_board(missing=1.0)


def test_a_column_of_a_few_models_does_not_put_a_model_outside_the_range():
    rng = np.random.default_rng(3)
    reference = rng.normal(size=(40, 4))
    reference[5:, 3] = np.nan  # five models ran the last benchmark
    reference[:5, 3] = [0.9, 1.0, 1.1, 1.2, 1.3]
    row = np.array([[0.1, -0.2, 0.0, -3.0]])  # typical, but below all five there
    assert regime_excess(reference, row)[0] == 0
    assert range_excess(reference, row)[0] == 0
    # Given only the sparse column, it is the only evidence there is.
    alone = np.array([[np.nan, np.nan, np.nan, -3.0]])
    assert regime_excess(reference, alone)[0] > 0
    rows = np.vstack([row, alone, [[2.5, 2.4, 2.6, np.nan]]])
    np.testing.assert_allclose(range_excess(reference, rows),
                               _range_excess_loop(reference, rows), rtol=1e-12)


def _strangers_predictions():
    """The strongest two models of the synthetic board with everything, each run on its
    first five benchmarks (a sparse one among them where it has it)."""
    board = synthetic_board(**SYNTHETIC_BOARDS["everything"])
    strength = np.nanmean((board.values - np.nanmean(board.values, axis=0))
                          / np.nanstd(board.values, axis=0), axis=1)
    held = np.argsort(-strength)[:2]
    model = GaussianModel().fit(board.subset(models=np.setdiff1d(np.arange(board.n_models),
                                                                 held)))
    x = np.full((2, len(model.items_)), np.nan)
    for r, i in enumerate(held):
        have = [j for j in range(len(model.items_)) if not np.isnan(board.values[i, j])]
        keep = have[:5] + [j for j in have if j >= board.n_items - 6][:1]
        x[r, keep] = board.values[i, keep]
    return model, model.predict(ScoreMatrix(x, ["A", "B"], list(model.items_)))


def test_a_strangers_predictions_stay_inside_bounds_and_knowing_nothing():
    model, pred = _strangers_predictions()
    low, high = model.bounds_
    todo = ~pred.observed
    assert np.all((pred.low >= low) & (pred.high <= high))
    half = np.broadcast_to((high - low) / 2, pred.std.shape)
    bounded = todo & np.isfinite(half)
    assert bounded.any() and np.all(pred.std[bounded] <= half[bounded])
    limit = spread_limit(model.scores_.values, pred.level)
    assert np.all(pred.std[todo] <= np.broadcast_to(limit, pred.std.shape)[todo] * (1 + 1e-9))
    assert np.all(pred.high - pred.low <= 2 * 1.6448536269514722
                  * np.broadcast_to(limit, pred.std.shape) * (1 + 1e-9))
    # A capped cell says so, in the record a user reads.
    records = pred.records(0) + pred.records(1)
    assert sum(r["column_spread_only"] for r in records) == int(pred.limited.sum())


def test_spread_limit_is_the_calibrated_column_spread():
    scores = load_dataset("helm_lite")
    limit = spread_limit(scores.values, 0.9)
    sd = np.nanstd(scores.values, axis=0, ddof=1)
    ratio = limit / sd
    assert np.allclose(ratio, ratio[0]) and 1.0 < ratio[0] < 5.0
    few = spread_limit(scores.values[:5], 0.9)  # too few models to calibrate: no limit
    assert np.all(np.isinf(few))


def test_the_shipped_default_beats_knowing_nothing_where_it_was_tuned():
    result = frontier(load_dataset("helm_lite"), objectives=("mi",), k_max=3)
    for row in result.rows:
        assert row.cells > 0
        assert row.interval_score < row.baseline_interval_score
        assert row.mae < row.baseline_mae
    # The paper's Gaussian path has no such figures.
    paper = frontier(load_dataset("helm_lite"), objectives=("mi",), k_max=1,
                     predictor="gaussian")
    assert paper.rows[0].cells == 0 and np.isnan(paper.rows[0].interval_score)


@pytest.mark.parametrize("name", ["lowrank", "ceiling", "drift"])
def test_frontier_coverage_holds_on_boards_no_rule_was_tuned_on(name):
    # Measured with benchmarks/held_out_boards.py: before scores at a bound could be
    # covered, the ceiling board's frontier covered 56-61%.
    board = synthetic_board(name=name, **SYNTHETIC_BOARDS[name])
    result = frontier(board, objectives=("mi",), k_max=3)
    for row in result.rows:
        assert row.cells >= 40
        assert 0.85 <= row.interval_coverage, (name, row.k, row.interval_coverage)
        assert row.interval_score < row.baseline_interval_score


def test_extrapolation_beats_knowing_nothing_on_a_held_out_board_from_k_3():
    board = synthetic_board(name="lowrank", **SYNTHETIC_BOARDS["lowrank"])
    result = extrapolate(board, objectives=("mi",), k_max=3)
    row = result.row("mi", 3)
    assert row.interval_score < row.baseline_interval_score and row.mae < row.baseline_mae


def test_compare_says_in_one_line_which_differences_cannot_be_predicted(tmp_path, capsys):
    import json

    from benchsel.cli import main
    from benchsel.models.compare import compare_models

    model, pred = _strangers_predictions()
    board = synthetic_board(**SYNTHETIC_BOARDS["everything"])
    held = [board.models.index(m) for m in board.models
            if m not in model.scores_.models]
    values = board.values.copy()
    given = ~pred.observed  # what A and B were not run on
    for r, i in enumerate(held):
        values[i, [board.items.index(it) for it in np.array(model.items_)[given[r]]]] = np.nan
    path = tmp_path / "board.csv"
    import pandas as pd

    pd.DataFrame(values, index=pd.Index(board.models, name="model"),
                 columns=board.items).to_csv(path)
    names = [board.models[i] for i in held]
    rows = [{it: v for it, v in zip(board.items, values[i]) if not np.isnan(v)} for i in held]
    expected = compare_models(model, rows[0], rows[1], names=tuple(names))
    assert expected.unpredictable()  # the two strongest, run on six benchmarks each
    code = main(["compare", str(path), "--models", ",".join(names)])
    out = capsys.readouterr().out
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith("cannot be predicted"))
    assert f"on {len(expected.unpredictable())} of {len(expected.items)} benchmarks" in line
    # Every interval of a difference stays within what two bounded scores can differ by.
    width = model.bounds_[1] - model.bounds_[0]
    # (NaN where both were run and no measurement noise is known.)
    assert not np.any(expected.high > width) and not np.any(expected.low < -width)
    assert np.isfinite(expected.high).sum() > 30
    code = main(["compare", str(path), "--models", ",".join(names), "--json"])
    payload = json.loads(capsys.readouterr().out)
    flagged = [d["benchmark"] for d in payload["differences"] if d["column_spread_only"]]
    assert flagged == expected.unpredictable()


def test_evaluate_says_where_a_selection_predicts_worse_than_the_mean():
    from benchsel.commands.evaluate import _below_zero
    from benchsel.evaluation.cv import CVRow

    def row(objective, k, r2):
        return CVRow(objective, k, r2, 0.1, 0.5, 1.0, 1.0, 0.9, 0.5)

    result = type("Result", (), {"rows": [row("mi", 1, 0.4), row("entropy", 4, -0.11),
                                          row("entropy", 5, -0.25), row("random", 1, np.nan)]})
    text = _below_zero(result)
    assert text.strip().startswith("entropy: R² below 0 at k = 4, 5")
    assert "mi" not in text and "random" not in text
    assert _below_zero(type("Result", (), {"rows": [row("mi", 1, 0.4)]})) == ""


def test_select_says_what_an_unstable_pick_means():
    from benchsel.commands.select import _stability_line

    text = _stability_line({"A": 1.0, "B": 0.3, "C": 0.45}, "benchmark")
    assert text.strip().startswith("2 of 3 picks are chosen again in fewer than half")
    assert "(B, C)" in text
    assert _stability_line({"A": 1.0, "B": 0.5}, "benchmark") == ""
