"""Score bounds: inference, parsing, truncated predictions, and the extrapolation flag."""

import json
import warnings

import numpy as np
import pytest

from benchsel import ConvergenceWarning, GaussianModel, ScoreMatrix, load_dataset
from benchsel.bounds import (
    clip_to_bounds,
    infer_bounds,
    parse_bounds,
    resolve_bounds,
    truncated_interval,
)
from benchsel.prediction import COMPLETERS


@pytest.fixture(autouse=True)
def _quiet_em():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def best_row(scores: ScoreMatrix) -> int:
    """The model with the highest mean standardized score."""
    v = scores.values
    z = (v - np.nanmean(v, axis=0)) / np.nanstd(v, axis=0)
    return int(np.nanargmax(np.nanmean(z, axis=1)))


def pushed_to_top(scores: ScoreMatrix, top: float) -> dict:
    """The best model's scores on every other item, pushed up to ``top``."""
    i = best_row(scores)
    return {
        c: max(top, float(scores.values[i, j]))
        for j, c in enumerate(scores.items)
        if j % 2 == 0 and not np.isnan(scores.values[i, j])
    }


# ------------------------------------------------------------------ inference


def test_inferred_bounds_of_percent_and_fraction_boards():
    percent = load_dataset("bigcodebench")  # pass rates in %, 0.7 to 65.9
    low, high = infer_bounds(percent.values)
    np.testing.assert_array_equal(low, 0.0)
    np.testing.assert_array_equal(high, 100.0)
    fraction = load_dataset("helm_lite")  # accuracies in [0, 1]
    low, high = infer_bounds(fraction.values)
    np.testing.assert_array_equal(low, 0.0)
    np.testing.assert_array_equal(high, 1.0)
    # MTEB: most tasks are fractions, a few (correlations) go negative.
    mteb = load_dataset("mteb")
    low, high = infer_bounds(mteb.values)
    negative = np.nanmin(mteb.values, axis=0) < 0
    assert 0 < negative.sum() < mteb.n_items
    assert np.all(np.isneginf(low[negative])) and np.all(np.isposinf(high[negative]))
    assert np.all(low[~negative] == 0.0) and np.all(high[~negative] == 1.0)
    # A fitted model keeps what it inferred.
    model = GaussianModel().fit(mteb)
    np.testing.assert_array_equal(model.bounds_, np.vstack(infer_bounds(model.scores_.values)))


def test_unbounded_columns_elo_and_empty():
    values = np.array([[1150.0, 0.5, np.nan], [980.0, 0.7, np.nan], [1302.0, 0.9, np.nan]])
    low, high = infer_bounds(values)
    assert np.isneginf(low[0]) and np.isposinf(high[0])  # Elo: above 100
    assert (low[1], high[1]) == (0.0, 1.0)
    assert np.isneginf(low[2]) and np.isposinf(high[2])  # nothing observed


def test_parse_bounds():
    assert parse_bounds("0,1") == (0.0, 1.0)
    assert parse_bounds(" 0 , 100 ") == (0.0, 100.0)
    assert parse_bounds("-inf,0") == (-np.inf, 0.0)
    assert parse_bounds("none") == (-np.inf, np.inf)
    for text in ("0-1", "0,1,2", "a,b", ""):
        with pytest.raises(ValueError, match=r"bounds must be 'LOW,HIGH'.*got"):
            parse_bounds(text)
    for text in ("1,0", "5,5", "nan,1"):
        with pytest.raises(ValueError, match=r"low < high.*got"):
            parse_bounds(text)


def test_bad_bounds_raise_naming_the_parameter_and_value():
    data = load_dataset("bigcodebench")
    cases = [
        ("percent", r"bounds must be None or 'infer'.*got 'percent'"),
        (5, r"bounds must be None or 'infer'.*got 5"),
        ((0,), r"bounds must be a \(low, high\) pair of numbers; got \(0,\)"),
        (("a", "b"), r"bounds must be a \(low, high\) pair"),
        ((100, 0), r"bounds must have low < high.*got \(100.0, 0.0\)"),
        ({"NotATask": (0, 100)}, r"bounds name unknown item\(s\) 'NotATask'; valid names"),
        ({"Time_complete": (0, np.nan)}, r"bounds for 'Time_complete' must have low < high"),
        ((0, 1), r"bounds exclude training scores of 14 item\(s\).*'0,100'"),
        ("0,1", r"bounds exclude training scores"),
        ({"Time_complete": (0, 50)}, r"'Time_complete' has scores 0.7 to 56.6, bounds \[0, 50\]"),
    ]
    for bounds, message in cases:
        with pytest.raises(ValueError, match=message):
            GaussianModel(bounds=bounds).fit(data)


def test_explicit_bounds_override_inference():
    data = load_dataset("bigcodebench")
    assert np.all(np.isinf(GaussianModel(bounds="none").fit(data).bounds_))
    as_text = GaussianModel(bounds="0,100").fit(data)
    np.testing.assert_array_equal(as_text.bounds_, GaussianModel(bounds=(0, 100)).fit(data).bounds_)
    # A mapping bounds the items it names; the others keep the inferred [0, 100].
    cap = {"Network_complete": (0, 45), "Network_instruct": [-np.inf, 40]}
    model = GaussianModel(bounds=cap).fit(data)
    low, high = model.bounds_
    j, k = model.items_.index("Network_complete"), model.items_.index("Network_instruct")
    assert (low[j], high[j], low[k], high[k]) == (0, 45, -np.inf, 40)
    others = np.ones(len(model.items_), bool)
    others[[j, k]] = False
    assert np.all(high[others] == 100) and np.all(low[others] == 0)
    obs = {c: 99.0 for c in model.items_ if not c.startswith("Network")}
    free = GaussianModel(bounds="none").fit(data).predict(obs, method="gaussian")
    assert free.high[0, j] > 45 and free.high[0, k] > 40  # so the cap below does something
    pred = model.predict(obs, method="gaussian")
    # The normal's interval reaches past the cap, so the interval ends there (a score
    # can sit at its bound); the point prediction stays inside.
    assert pred.high[0, j] == 45 and pred.high[0, k] == 40
    assert pred.mean[0, j] < 45 and pred.mean[0, k] < 40
    # Inference and explicit bounds agree when they say the same thing.
    np.testing.assert_array_equal(as_text.bounds_, GaussianModel().fit(data).bounds_)


def test_resolve_and_clip_functions():
    values = np.array([[10.0, 0.2], [90.0, 0.8]])
    low, high = resolve_bounds({"b": (0, 2)}, ["a", "b"], values)
    np.testing.assert_array_equal(low, [0, 0])
    np.testing.assert_array_equal(high, [100, 2])
    x = np.array([[120.0, -1.0], [50.0, 3.0]])
    observed = np.array([[True, False], [False, False]])
    (out,) = clip_to_bounds([x], observed, low, high)
    np.testing.assert_array_equal(out, [[120.0, 0.0], [50.0, 2.0]])  # observed 120 kept


# ------------------------------------------------------------------ predictions


def test_prediction_for_a_very_strong_model_never_exceeds_100():
    data = load_dataset("bigcodebench")
    obs = pushed_to_top(data, 99.0)
    assert len(obs) == 7
    unbounded = GaussianModel(bounds="none").fit(data).predict(obs, method="gaussian")
    pred = GaussianModel().fit(data).predict(obs, method="gaussian")
    todo = ~pred.observed[0]
    # Without bounds the Gaussian predicts impossible scores (the HellaSwag 100.4 bug) ...
    assert unbounded.mean[0, todo].max() > 100 and unbounded.high[0, todo].max() > 100
    # ... with the inferred [0, 100] it does not, and no interval collapses.
    assert pred.mean[0, todo].max() <= 100 and pred.high[0, todo].max() <= 100
    assert np.all(pred.low[0, todo] < pred.mean[0, todo])
    assert np.all(pred.mean[0, todo] < pred.high[0, todo])
    # The std is the truncated distribution's: never more than the normal's nor than
    # half the range, and well under the normal's where the mean lies near 100.
    assert np.all(pred.std <= unbounded.std * (1 + 1e-12))
    assert np.all(pred.std[0, todo] <= 50)
    near = unbounded.mean[0, todo] > 100 - unbounded.std[0, todo]
    assert near.any()
    assert np.all(pred.std[0, todo][near] < 0.9 * unbounded.std[0, todo][near])
    assert pred.extrapolation[0]["flag"]


def test_truncation_leaves_predictions_far_from_the_bounds_as_they_were():
    data = load_dataset("bigcodebench")
    middle = np.argsort(np.nanmean(data.values, axis=1))[data.n_models // 2]
    obs = {c: float(data.values[middle, j]) for j, c in enumerate(data.items)
           if j % 2 == 0 and not np.isnan(data.values[middle, j])}
    unbounded = GaussianModel(bounds="none").fit(data).predict(obs, method="gaussian")
    pred = GaussianModel().fit(data).predict(obs, method="gaussian")
    # The normal's mass beyond a bound is under 1e-9 six standard deviations in.
    far = (unbounded.mean + 6 * unbounded.std < 100) & (unbounded.mean - 6 * unbounded.std > 0)
    assert far[~pred.observed].any()
    for got, plain in ((pred.mean, unbounded.mean), (pred.low, unbounded.low),
                       (pred.high, unbounded.high)):
        np.testing.assert_allclose(got[far], plain[far], rtol=0, atol=1e-6)
    for r in pred.records():
        assert r["high"] <= 100


@pytest.mark.parametrize(
    ("method", "transform"),
    [(m, "none") for m in COMPLETERS] + [("gaussian", "logit")],
)
def test_intervals_stay_within_bounds_for_every_method(method, transform):
    cases = [
        ("bigcodebench", pushed_to_top(load_dataset("bigcodebench"), 99.0)),
        ("open_llm_v2", {c: 0.0 for c in load_dataset("open_llm_v2").items[::2]}),
        ("helm_lite", {c: 1.0 for c in load_dataset("helm_lite").items[:4]}),
    ]
    for name, obs in cases:
        data = load_dataset(name)
        model = GaussianModel(transform=transform).fit(data)
        pred = model.predict(obs, method=method)
        low, high = model.bounds_
        todo = ~pred.observed
        for arr in (pred.mean, pred.low, pred.high):
            assert np.all(np.isfinite(arr))
            assert np.all((arr >= low) & (arr <= high)), (name, method)
        assert np.all(pred.low[todo] <= pred.mean[todo])
        assert np.all(pred.mean[todo] <= pred.high[todo])
        if transform == "none":  # never zero width (issue 28); a transform's ends are clipped
            assert np.all(pred.low[todo] < pred.high[todo]), (name, method)
        for item, value in obs.items():
            j = pred.items.index(item)
            assert pred.mean[0, j] == value and pred.std[0, j] == 0
        json.dumps(pred.to_dict(), allow_nan=False)


def test_observed_scores_outside_the_bounds_are_kept_and_flagged():
    data = load_dataset("bigcodebench")
    model = GaussianModel().fit(data)
    item = data.items[0]
    pred = model.predict({item: 101.0}, method="gaussian")
    assert pred.mean[0, 0] == 101.0 and pred.std[0, 0] == 0  # not silently changed
    assert pred.high[0, 1:].max() <= 100
    ex = pred.extrapolation[0]
    assert ex["flag"] and ex["scale_mismatch"] == [item]
    assert ex["reasons"][0].startswith(
        f"scores on another scale: {item} = 101 lies outside the score range [0, 100] "
        "(training range"
    )
    assert ex["items_above_training_max"] == 1


# ------------------------------------------------------------------ extrapolation flag


def test_typical_model_is_not_flagged():
    data = load_dataset("bigcodebench")
    medians = np.nanmedian(data.values, axis=0)
    ex = GaussianModel().fit(data).predict(
        {c: float(medians[j]) for j, c in enumerate(data.items[:5])}
    , method="gaussian").extrapolation[0]
    assert ex == {
        "flag": False, "direction": None, "reasons": [], "strength": ex["strength"],
        "strength_percentile": ex["strength_percentile"], "items_above_training_max": 0,
        "items_below_training_min": 0, "scale_mismatch": [],
    }
    assert 20 < ex["strength_percentile"] < 80


def test_flag_fires_for_a_model_weaker_than_every_model_seen():
    data = load_dataset("bigcodebench")
    model = GaussianModel().fit(data)
    v = data.values
    worst = int(np.nanargmin(np.nanmean(v, axis=1)))
    items = [c for j, c in enumerate(data.items) if not np.isnan(v[worst, j])][:4]
    # The weakest training model itself is inside the range ...
    at_worst = {c: float(v[worst, data.items.index(c)]) for c in items}
    ex = model.predict(at_worst, method="gaussian").extrapolation[0]
    assert ex["direction"] != "weaker" and ex["items_below_training_min"] == 0
    # ... a model below every one of them on the same items is not.
    below = {c: 0.5 * float(np.nanmin(v[:, data.items.index(c)])) for c in items}
    ex = model.predict(below, method="gaussian").extrapolation[0]
    assert ex["flag"] and ex["direction"] == "weaker"
    assert ex["items_below_training_min"] == 4 and ex["strength_percentile"] == 0.0
    assert ex["reasons"][0] == "weaker than every model fitted on"
    assert ex["reasons"][1].startswith("below the worst training score on 4 benchmark(s): ")
    assert ex["scale_mismatch"] == []
    json.dumps(ex, allow_nan=False)


def test_flag_reasons_for_a_model_stronger_than_every_model_seen():
    data = load_dataset("bigcodebench")
    ex = GaussianModel().fit(data).predict(pushed_to_top(data, 99.0),
                                           method="gaussian").extrapolation[0]
    assert ex["flag"] and ex["direction"] == "stronger"
    assert ex["reasons"][:2] == [
        "stronger than every model fitted on",
        ex["reasons"][1],
    ] and ex["reasons"][1].startswith("above the best training score on 7 benchmark(s): ")
    assert ex["items_above_training_max"] == 7 and ex["strength_percentile"] == 100.0


def test_fractions_given_for_a_percent_leaderboard_are_a_scale_mismatch():
    data = load_dataset("alpaca_eval")  # win rates in percent, every one above 1
    model = GaussianModel().fit(data)
    v = data.values
    i = int(np.argsort(np.nanmean(v, axis=1))[len(v) // 2])  # a middling model
    as_percent = {c: float(v[i, j]) for j, c in enumerate(data.items[:2])}
    assert not model.predict(as_percent, method="gaussian").extrapolation[0]["flag"]
    as_fraction = {c: s / 100 for c, s in as_percent.items()}
    pred = model.predict(as_fraction, method="gaussian")
    ex = pred.extrapolation[0]
    assert ex["flag"] and ex["scale_mismatch"] == list(as_fraction)
    first = data.items[0]
    lo, hi = np.nanmin(v[:, 0]), np.nanmax(v[:, 0])
    assert ex["reasons"][0].startswith(
        f"scores on another scale: {first} = {as_fraction[first]:.4g} looks like a fraction "
        f"but the column is in percent (training range {lo:.4g}-{hi:.4g})"
    )
    # The predictions are still within the bounds.
    assert np.all((pred.low >= 0) & (pred.high <= 100))
    json.dumps(pred.to_dict(), allow_nan=False)
    # MT-Bench's 1-10 scale is bounded to [0, 100] but is not called percent.
    mt = load_dataset("mt_bench")
    ex = GaussianModel().fit(mt).predict({"coding": 0.9, "math": 6.0},
                                         method="gaussian").extrapolation[0]
    assert ex["scale_mismatch"] == ["coding"]
    assert "coding = 0.9 looks like a fraction but every training score is above 1" in (
        ex["reasons"][0]
    )


def test_percents_given_for_a_fraction_leaderboard_are_a_scale_mismatch():
    data = load_dataset("helm_lite")
    model = GaussianModel().fit(data)
    row = {c: float(data.values[5, j]) for j, c in enumerate(data.items[:3])}
    assert model.predict(row, method="gaussian").extrapolation[0]["scale_mismatch"] == []
    ex = model.predict({c: 100 * s for c, s in row.items()}, method="gaussian").extrapolation[0]
    assert ex["flag"] and ex["scale_mismatch"] == list(row)
    assert "looks like a percent but the column is in fractions" in ex["reasons"][0]
    # With bounds off, the scale is still judged from the training column.
    ex = GaussianModel(bounds="none").fit(data).predict(
        {c: 100 * s for c, s in row.items()}
    , method="gaussian").extrapolation[0]
    assert ex["scale_mismatch"] == list(row)


def test_extrapolation_of_many_models_and_of_an_array():
    data = load_dataset("helm_lite")
    model = GaussianModel().fit(data)
    x = np.full((3, data.n_items), np.nan)
    x[0, :2] = np.nanmedian(data.values[:, :2], axis=0)
    x[1, :2] = 100 * x[0, :2]
    flags = model.extrapolation(x)
    assert [f["flag"] for f in flags] == [False, True, False]
    assert flags[2]["strength"] is None and flags[2]["reasons"] == []
    batch = model.predict(ScoreMatrix(x[:2], ["a", "b"], data.items),
                          method="gaussian").extrapolation
    assert batch == flags[:2]
    json.dumps(flags, allow_nan=False)
    with pytest.raises(ValueError, match=r"one column per fitted item \(11\); got shape"):
        model.extrapolation(np.zeros((1, 3)))


def test_truncated_interval_is_the_truncated_normal_reaching_the_bound_it_may_touch():
    from scipy.stats import truncnorm

    mean = np.array([[0.5, 0.95, 1.0, 1.2, 5.0, 50.0, 1e4, -0.3, -1e3, 0.02, 3.0, 0.7]])
    std = np.full_like(mean, 0.1065)
    low = np.array([0.0] * 10 + [-np.inf, -np.inf])
    high = np.array([1.0] * 10 + [np.inf, 1.0])
    observed = np.zeros(mean.shape, dtype=bool)
    got = np.vstack(truncated_interval(mean, std, observed, low, high, 0.9))
    a, b = (low - mean) / std, (high - mean) / std
    expected = truncnorm.ppf([[0.5], [0.05], [0.95]], a, b, loc=mean, scale=std)
    # The ends: the truncated normal's, or the bound where the plain normal's interval
    # reaches it (the censored normal's ends, clipped).
    z = 1.6448536269514722
    expected[1] = np.minimum(expected[1], np.clip(mean - z * std, low, high))
    expected[2] = np.maximum(expected[2], np.clip(mean + z * std, low, high))
    # Far beyond a bound (a mean 470 standard deviations past it) included.
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert got[2, 2] == 1.0 and got[2, 0] < 1.0  # at the bound it is reached; inside not
    assert np.all(got[1] < got[2]) and np.all((got >= low) & (got <= high))
    # Unbounded: the plain normal interval.
    assert got[1, 10] == pytest.approx(3.0 - 1.6448536269514722 * 0.1065)


def test_truncated_interval_keeps_observed_cells_and_degenerate_ones():
    mean = np.array([[1.4, 1.4, 0.5, np.nan]])
    std = np.array([[0.1, 0.0, np.nan, 0.1]])
    observed = np.array([[True, False, False, False]])
    med, lo, hi = truncated_interval(mean, std, observed, np.zeros(4), np.ones(4), 0.9)
    assert (med[0, 0], lo[0, 0], hi[0, 0]) == (1.4, 1.4, 1.4)  # an observed 1.4 is kept
    assert (med[0, 1], lo[0, 1], hi[0, 1]) == (1.0, 1.0, 1.0)  # no spread: the clipped mean
    assert med[0, 2] == 0.5 and np.isnan(lo[0, 2]) and np.isnan(hi[0, 2])
    assert np.isnan(med[0, 3])


def test_a_strong_models_interval_at_the_bound_has_width():
    # Issue 28: OpenbookQA was predicted 1.0 [1.0, 1.0] here.
    model = GaussianModel().fit(load_dataset("helm_lite"))
    for method in ("auto", "gaussian"):
        pred = model.predict({"GSM8K": 0.95, "MMLU": 0.9}, method=method)
        j = pred.items.index("OpenbookQA")
        assert 0.8 < pred.low[0, j] < pred.mean[0, j] < pred.high[0, j] <= 1.0
