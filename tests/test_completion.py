"""Matrix completion: methods, the complete protocol's bookkeeping and metrics."""

import json

import numpy as np
import pytest

from benchsel import DataWarning, GaussianModel, ScoreMatrix, load_dataset
from benchsel.bounds import truncated_interval
from benchsel.calibration import unknown_calibration
from benchsel.cli import main
from benchsel.evaluation import completion_masks, evaluate_completion
from benchsel.prediction import COMPLETERS, Completion, complete, complete_new_rows, percent_scale
from benchsel.prediction.fits import INDUCTIVE


def rank2_percentages(m=60, n=12, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(m, 2)), rng.normal(size=(2, n))
    return 50 + 10 * (a @ b) / 2


def test_masks_hide_about_h_of_each_eligible_model_once():
    rng = np.random.default_rng(1)
    observed = rng.random((40, 20)) < 0.6
    observed[:5, :] = False
    observed[:5, :5] = True  # 5 observed: not eligible
    masks = completion_masks(observed, hide=0.5, folds=3, min_observed=8, seed=2)
    assert len(masks) == 3
    total = sum(m.astype(int) for m in masks)
    assert total.max() == 1 and not (total.astype(bool) & ~observed).any()
    hidden_models = total.any(axis=1)
    counts = observed.sum(axis=1)
    assert np.array_equal(hidden_models, counts >= 8)
    for i in np.flatnonzero(hidden_models):
        assert total[i].sum() == min(max(1, round(0.5 * counts[i])), counts[i] - 1)
    sizes = [m.any(axis=1).sum() for m in masks]
    assert max(sizes) - min(sizes) <= 1


def test_metrics_of_the_mean_method_by_hand():
    values = rank2_percentages()
    values[np.random.default_rng(3).random(values.shape) < 0.2] = np.nan
    scores = ScoreMatrix(values, [f"m{i}" for i in range(60)], [f"b{j}" for j in range(12)])
    res = evaluate_completion(scores, methods=("mean",), seed=4)
    masks = completion_masks(~np.isnan(values), 0.5, 3, 8, seed=4)
    true, pred, sd = [], [], []
    for mask in masks:
        train = np.where(mask, np.nan, values)
        mu, s = np.nanmean(train, axis=0), np.nanstd(train, axis=0, ddof=1)
        rows, cols = np.nonzero(mask)
        true.append(values[rows, cols])
        pred.append(mu[cols])
        sd.append(s[cols])
    true, pred, sd = map(np.concatenate, (true, pred, sd))
    err = np.abs(pred - true)
    row = res.row("mean")
    assert row.medape == pytest.approx(np.median(100 * err / np.abs(true)))
    assert row.median_ae == pytest.approx(np.median(err))  # percentage scale: points = units
    assert row.within3 == pytest.approx(100 * np.mean(err <= 3))
    assert row.interval_coverage == pytest.approx(100 * np.mean(err <= 1.6448536269514722 * sd))
    assert row.coverage == 100.0 and row.cells == true.size


def test_every_method_fills_hidden_cells_and_keeps_observed_ones():
    values = rank2_percentages()
    hidden = np.random.default_rng(5).random(values.shape) < 0.3
    train = np.where(hidden, np.nan, values)
    for method in COMPLETERS:
        res = complete(train, method)
        np.testing.assert_array_equal(res.mean[~hidden], values[~hidden])
        np.testing.assert_array_equal(res.std[~hidden], 0.0)
        got = ~np.isnan(res.mean[hidden])
        assert got.mean() > (0.7 if method == "ridge" else 0.999)  # ridge may decline
        assert np.all(res.std[hidden][got] >= 0)


def test_low_rank_methods_recover_exact_low_rank_data():
    """Noise-free rank-2 percentages inside (0, 100): SVD and Gaussian are near exact,
    the column mean is not."""
    values = rank2_percentages()
    hidden = np.random.default_rng(6).random(values.shape) < 0.3
    train = np.where(hidden, np.nan, values)
    err = {m: np.median(np.abs(complete(train, m).mean[hidden] - values[hidden]))
           for m in ("mean", "gaussian", "svd")}
    assert err["gaussian"] < 0.05 * err["mean"]
    assert err["svd"] < 0.2 * err["mean"]


def test_gaussian_completion_is_the_conditional_mean():
    data = load_dataset("wildbench")
    values = data.values.copy()
    values[:5, :6] = np.nan
    res = complete(values, "gaussian")
    # complete() gives the predictor's own std; calibration is a separate step.
    model = GaussianModel(calibration="none").fit(ScoreMatrix(values, data.models, data.items))
    pred = model.predict(ScoreMatrix(values[:5], data.models[:5], data.items), method="gaussian")
    np.testing.assert_allclose(res.mean[:5], pred.mean, rtol=1e-9)
    np.testing.assert_allclose(res.std[:5], pred.std, rtol=1e-9)


def test_percent_scale_detection():
    x = np.array([[0.2, 50.0, -1.0, 300.0], [0.9, 99.0, 2.0, 100.0]])
    np.testing.assert_array_equal(percent_scale(x), [1.0, 100.0, np.nan, np.nan])


@pytest.mark.slow
def test_merged_completion_beats_the_mean_with_calibrated_intervals():
    res = evaluate_completion(load_dataset("merged"), methods=("mean", "gaussian", "svd+ridge"))
    assert res.default == "gaussian"
    g = res.row("gaussian")
    assert g.medape < 0.5 * res.row("mean").medape
    assert g.coverage == 100.0 and 85 <= g.interval_coverage <= 95


def test_cli_complete_json_and_predict_method(capsys):
    assert main(["evaluate", "wildbench", "--protocol", "complete", "--methods",
                 "mean,gaussian,svd", "--json", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["protocol"] == "complete" and out["default"] == "gaussian"
    keys = {"method", "medape", "median_ae", "within3", "within5", "coverage",
            "interval_coverage"}
    assert all(keys <= set(m) for m in out["methods"]) and len(out["methods"]) == 3
    assert main(["predict", "helm_lite", "--observed", "GSM8K=0.6,MMLU=0.6", "--method",
                 "svd+ridge", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "svd+ridge" and len(out["predictions"]) == 9
    with pytest.raises(SystemExit):
        main(["predict", "helm_lite", "--observed", "GSM8K=0.6", "--method", "knn"])


# ------------------------------------------------------------------ auto
def test_auto_choice_is_never_empty_and_small_boards_fall_back():
    from benchsel.prediction.choice import choose_completer

    values = load_dataset("wildbench").values
    choice = choose_completer(values, methods=["mean", "gaussian", "ridge"])
    assert choice.method in ("mean", "gaussian", "ridge") and choice.cells > 0
    assert set(choice.fallbacks) | {choice.method} == {"mean", "gaussian", "ridge"}
    # The winner has the lowest MedAPE among methods that predicted >= 99%.
    eligible = [m for m in choice.medape if choice.coverage[m] >= 99]
    assert choice.method == min(eligible, key=choice.medape.get)
    assert choice.margin >= 0
    tiny = choose_completer(values[:2])
    assert tiny.method == "gaussian" and tiny.cells == 0 and tiny.fallbacks == ("mean",)


def test_auto_fills_cells_its_winner_cannot_predict():
    from benchsel.prediction.choice import MethodChoice, complete_auto

    values = load_dataset("merged").cleaned().values
    ridge = complete(values, "ridge")
    assert np.isnan(ridge.mean).any()  # sparse board: ridge leaves cells out
    forced = MethodChoice("ridge", ("gaussian", "mean"), {}, {}, 0)
    res = complete_auto(values, forced)
    gap = np.isnan(ridge.mean)
    assert not np.isnan(res.mean).any()
    np.testing.assert_allclose(res.mean[gap], complete(values, "gaussian").mean[gap])
    np.testing.assert_allclose(res.mean[~gap], ridge.mean[~gap])


def test_completion_cache_returns_what_complete_does_and_shares_the_choice_folds():
    from benchsel.prediction.cache import CompletionCache
    from benchsel.prediction.choice import choose_completer, complete_auto
    from benchsel.prediction.residuals import calibrate_completion

    values = load_dataset("bigcodebench").cleaned().values
    cache = CompletionCache()
    for m in COMPLETERS:
        if m == "auto":
            continue
        got, ref = cache.get(values, m), complete(values, m)
        np.testing.assert_array_equal(got.mean, ref.mean)
        np.testing.assert_array_equal(got.std, ref.std)
    # Same content in another array: found; one cell changed: computed anew.
    assert cache.get(values.copy(), "gaussian") is cache.get(values, "gaussian")
    changed = values.copy()
    changed[0, np.flatnonzero(~np.isnan(changed[0]))[0]] += 1.0
    assert cache.get(changed, "gaussian") is not cache.get(values, "gaussian")
    # The choice's first fold hides what calibration hides: no new completion.
    shared = CompletionCache()
    methods = ["mean", "gaussian", "svd", "gaussian+svd"]
    choice = choose_completer(values, methods=methods, seed=[0, 1], cache=shared)
    entries = len(shared._done)
    for m in methods:
        cal = calibrate_completion(values, m, seed=[0, 1], cache=shared)
        alone = calibrate_completion(values, m, seed=[0, 1])
        assert cal == alone
    assert len(shared._done) == entries
    auto = complete_auto(values, choice, cache=shared)
    ref = complete_auto(values, choice)
    np.testing.assert_array_equal(auto.mean, ref.mean)


def test_complete_protocol_folds_in_parallel_give_the_serial_result(capsys):
    data = load_dataset("bigcodebench")
    methods = ("mean", "gaussian", "svd+ridge", "auto")
    serial = evaluate_completion(data, methods=methods, seed=1)
    parallel = evaluate_completion(data, methods=methods, seed=1, n_jobs=2)
    assert [r.to_dict() for r in serial.rows] == [r.to_dict() for r in parallel.rows]
    assert serial.choices == parallel.choices and len(serial.choices) == 3
    main(["evaluate", "bigcodebench", "--protocol", "complete", "--methods", "mean,svd",
          "--jobs", "2", "--json", "--quiet"])
    cli = json.loads(capsys.readouterr().out)
    ref = evaluate_completion(data, methods=("mean", "svd")).to_dict()
    assert cli["methods"] == ref["methods"]


def test_auto_in_the_complete_protocol_never_sees_the_hidden_cells():
    data = load_dataset("bigcodebench").cleaned()
    methods = ("mean", "gaussian", "svd", "auto")
    first = evaluate_completion(data, methods=methods, seed=3, calibrate=False)
    # Scramble the cells fold 0 hides (they train folds 1 and 2): fold 0's
    # nested choice must not move.
    values = data.values.copy()
    mask = completion_masks(~np.isnan(values), 0.5, 3, 8, seed=3)[0]
    values[mask] = np.random.default_rng(0).uniform(0, 100, size=mask.sum())
    second = evaluate_completion(data._replace(values=values), methods=methods, seed=3,
                                 calibrate=False)
    assert len(first.choices) == 3
    assert first.choices[0] == second.choices[0]
    assert first.choices[1:] != second.choices[1:]  # the scrambled cells did matter there
    assert first.default


def test_predict_auto_reports_its_choice():
    from benchsel import GaussianModel

    data = load_dataset("wildbench")
    model = GaussianModel().fit(data)
    given = {name: float(data.values[0, data.items.index(name)]) for name in data.items[:3]}
    pred = model.predict(given, method="auto")
    choice = pred.to_dict()["choice"]
    assert pred.method == "auto" and choice["method"] in COMPLETERS
    assert choice["cells"] > 0 and not np.isnan(pred.mean).any()


def test_auto_calibrates_the_gaussian_only_for_rows_it_predicts():
    # The Gaussian's calibration refits the covariance on five splits: a row
    # that auto predicts by another method must not pay for it, and every row
    # gets what it would get alone.
    data = load_dataset("livebench")
    frame = data.to_frame()
    items = [data.items[0], data.items[2]]
    strong = {b: float(frame[b].max()) for b in items}  # auto picks a completer here
    median = {b: float(frame[b].median()) for b in items}  # and the Gaussian here
    model = GaussianModel().fit(data)
    pred = model.predict(strong)
    method = pred.choices[0]["method"]
    assert method != "gaussian"
    assert model._calibrator is None
    alone = GaussianModel().fit(data).predict(strong, method=method)
    for name in ("mean", "std", "low", "high"):
        np.testing.assert_array_equal(getattr(pred, name), getattr(alone, name))
    assert pred.calibration == alone.calibration
    assert pred.extrapolation == alone.extrapolation
    single = GaussianModel().fit(data).predict(median)
    assert single.choices[0]["method"] == "gaussian"
    both = GaussianModel().fit(data).predict(ScoreMatrix(
        np.array([[strong[b] for b in items], [median[b] for b in items]]),
        ["strong", "median"], items))
    for name in ("mean", "std", "low", "high"):
        np.testing.assert_array_equal(getattr(both, name),
                                      np.vstack([getattr(pred, name), getattr(single, name)]))
    assert both.calibration == pred.calibration + single.calibration


def test_near_choice_scores_each_method_on_the_tails():
    from benchsel.matrix import model_strength
    from benchsel.prediction.choice import choose_completer, median_ape

    values = load_dataset("bigcodebench").cleaned().values
    given = np.zeros(values.shape[1], dtype=bool)
    given[[0, 3]] = True
    methods = ["mean", "gaussian", "ridge"]
    choice = choose_completer(values, methods=methods, given=given, split="near")
    assert choice.split == "near" and choice.to_dict()["split"] == "near"
    # By hand: the other models complete the strongest 10% (at least 5) from their
    # given cells, then the weakest 10%; MedAPE over both.
    m = len(values)
    order = np.argsort(model_strength(values), kind="stable")
    observed = ~np.isnan(values)
    true, pred = [], {k: [] for k in methods}
    tail = max(5, m // 10)
    for held in (order[m - tail:], order[:tail]):
        out = np.isin(np.arange(m), held)
        hide = out[:, None] & ~given & observed
        hide &= (observed & given).any(axis=1)[:, None]
        true.append(values[hide])
        rows = np.flatnonzero(hide.any(axis=1))
        for k in methods:
            if k == "gaussian":  # fitted on the other models, as predict meets a new one
                new = complete_new_rows(values[~out], np.where(hide[rows], np.nan, values[rows]),
                                        k).mean
                got = np.full(values.shape, np.nan)
                got[rows] = new
                pred[k].append(got[hide])
            else:
                pred[k].append(complete(np.where(hide, np.nan, values), k).mean[hide])
    true = np.concatenate(true)
    assert choice.cells == true.size > 0
    for k in methods:
        p = np.concatenate(pred[k])
        got = ~np.isnan(p)  # ridge leaves some cells out; MedAPE is over the rest
        assert choice.medape[k] == pytest.approx(median_ape(true[got], p[got]))
        assert choice.coverage[k] == pytest.approx(100 * got.mean())
    full = [k for k in methods if choice.coverage[k] >= 99]
    assert choice.method == min(full, key=choice.medape.get)
    with pytest.raises(ValueError, match="needs the given items"):
        choose_completer(values, split="near")
    with pytest.raises(ValueError, match="'random' or 'near'"):
        choose_completer(values, given=given, split="strength")


def test_new_models_beyond_the_range_get_the_choice_of_the_tails():
    """Inside the range: random folds. Beyond it, however far and on either side:
    the strongest and weakest 10% (at least 5) predicted from the others."""
    from benchsel.prediction.choice import choose_completer, choose_for_new_models

    values = load_dataset("wildbench").values
    given = np.zeros(values.shape[1], dtype=bool)
    given[:3] = True
    picked = choose_for_new_models(values, given, [0.0, 1e-9, 40.0, -1e-9, -40.0])
    assert [c.split for c in picked] == ["random", "near", "near", "near", "near"]
    assert picked[0] == choose_completer(values, given=given)
    assert picked[2] == choose_completer(values, given=given, split="near")
    # Too few models for the tails: the random folds' choice for all.
    small = choose_for_new_models(values[:8], given, [1e-9, 0.0, 5.0])
    assert [c.split for c in small] == ["random", "random", "random"]


def test_predict_auto_chooses_by_regime_and_says_so(capsys):
    data = load_dataset("wildbench")
    model = GaussianModel().fit(data)
    names = data.items[:3]
    cols = [data.items.index(n) for n in names]
    inside = np.median(data.values[:, cols], axis=0)
    top = data.values[:, cols].max(axis=0)
    # Stronger than every source model: just (as the strongest 10% are beyond the
    # others), and far.
    new = ScoreMatrix(np.vstack([inside, top + 1, top + 40]), models=["mid", "top", "far"],
                      items=list(names))
    pred = model.predict(new, method="auto")
    assert [c["split"] for c in pred.choices] == ["random", "near", "near"]
    assert [c["regime"] for c in pred.calibration] == ["inside", "outside", "outside"]
    # Each row is what predicting it alone with its regime's method gives.
    for i, choice in enumerate(pred.choices):
        alone = model.predict({n: float(new.values[i, j]) for j, n in enumerate(names)},
                              method=choice["method"])
        np.testing.assert_allclose(pred.mean[i], alone.mean[0], rtol=1e-9)
        np.testing.assert_allclose(pred.high[i], alone.high[0], rtol=1e-9)


@pytest.mark.parametrize("method", [m for m in COMPLETERS if m != "auto"])
def test_a_new_row_with_no_score_gets_the_column_means_and_spreads(method):
    from benchsel.prediction import complete_new_rows

    values = load_dataset("merged").cleaned().values  # sparse: EM mean != observed mean
    train, new = values[:-3], values[-3:].copy()
    new[1] = np.nan
    res = complete_new_rows(train, new, method)
    spread = np.nanstd(train, axis=0, ddof=1)
    several = (~np.isnan(train)).sum(axis=0) > 1
    np.testing.assert_allclose(res.mean[1], np.nanmean(train, axis=0), rtol=1e-12)
    np.testing.assert_allclose(res.std[1, several], spread[several], rtol=1e-10)
    # The other rows are unaffected: each as if it came alone.
    alone = complete_new_rows(train, new[:1], method)
    np.testing.assert_allclose(res.mean[0], alone.mean[0], rtol=1e-9)


def _blank_prediction(method):
    """MERGED's model, and its prediction of a new model with no observed score."""
    data = load_dataset("merged")
    model = GaussianModel().fit(data)
    blank = ScoreMatrix(np.full((1, data.n_items), np.nan), models=["blank"],
                        items=list(data.items))
    with pytest.warns(DataWarning, match="'blank': no observed score"):
        return data, model, blank, model.predict(blank, method=method)


def test_auto_predicts_a_new_model_with_no_score_by_the_column_means():
    data, model, blank, pred = _blank_prediction("auto")
    assert pred.choices[0]["method"] == "mean" and pred.choices[0]["split"] == "none"
    # The column means, as the median of each column's spread truncated to
    # the score's bounds: unchanged where a mean lies well inside them.
    col_mean = np.nanmean(model.scores_.values, axis=0)
    spread = complete_new_rows(model.scores_.values, blank.values, "mean").std
    expected = truncated_interval(col_mean[None, :], spread, np.zeros((1, data.n_items), bool),
                                  *model.bounds_, 0.9)[0][0]
    np.testing.assert_allclose(pred.mean[0], expected, rtol=1e-9)
    low, high = model.bounds_
    inside = (col_mean - 6 * spread[0] > low) & (col_mean + 6 * spread[0] < high)
    assert inside.any()
    np.testing.assert_allclose(pred.mean[0, inside], col_mean[inside], rtol=1e-9)
    assert np.all(pred.low[0] < pred.mean[0]) and np.all(pred.mean[0] < pred.high[0])
    cal = pred.calibration[0]
    assert cal["regime"] == "unknown"
    assert cal["multiplier"] == pytest.approx(unknown_calibration(model.scores_.values).inside)


def test_cli_says_a_model_with_no_score_gets_the_unknown_width(tmp_path, capsys):
    observed = tmp_path / "new.csv"
    observed.write_text("model,GSM8K,MMLU\nblank,,\nrun,0.6,0.6\n")
    assert main(["predict", "helm_lite", "--observed", str(observed)]) == 0
    out = capsys.readouterr()
    blank, run = out.out.split("\n\n")[:2]
    assert "no observed score: as wide as a model beyond the source models' strength range" \
        in blank
    assert "no observed score" not in run and "'blank': no observed score" in out.err
    assert main(["predict", "helm_lite", "--observed", str(observed), "--json"]) == 0
    cal = [m["calibration"] for m in json.loads(capsys.readouterr().out)["models"]]
    assert cal[0]["regime"] == "unknown" and cal[0]["multiplier"] > 1
    assert cal[1]["regime"] in ("inside", "outside")


@pytest.mark.parametrize("method", [m for m in COMPLETERS if m != "auto"])
def test_new_rows_are_predicted_as_if_each_came_alone(method):
    from benchsel.prediction import complete_new_rows

    values = load_dataset("bigcodebench").cleaned().values
    train, new = values[:120], values[120:126].copy()
    new[:, 4:] = np.nan
    new[2, 2:] = np.nan  # another pattern
    new[3] += 30  # a strong model, far beyond the others
    together = complete_new_rows(train, new, method)
    for i in (0, 2, 5):
        if method in INDUCTIVE:  # fitted on train alone: the row is predicted from that fit
            alone = complete_new_rows(train, new[i:i + 1], method)
            alone = Completion(alone.mean[[0]], alone.std[[0]])
        else:  # completed with train stacked on the row
            alone = complete(np.vstack([train, new[i:i + 1]]), method)
            alone = Completion(alone.mean[[-1]], alone.std[[-1]])
        np.testing.assert_allclose(together.mean[i], alone.mean[0], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(together.std[i], alone.std[0], rtol=1e-9, atol=1e-12)


def test_the_gaussian_method_gives_a_model_with_no_score_the_unknown_width_too():
    _, model, _, pred = _blank_prediction("gaussian")
    cal = pred.calibration[0]
    assert cal["regime"] == "unknown"
    assert cal["multiplier"] == pytest.approx(unknown_calibration(model.scores_.values).inside)
