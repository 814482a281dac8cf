"""Conformal calibration of error bars: the pieces against slow references, and
coverage on synthetic data where the truth is known."""

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.base import clone

from benchsel.calibration import (
    Calibration,
    calibration_splits,
    conformal_quantile,
    fit_calibration,
    outside_range,
    unknown_calibration,
)
from benchsel.coreset._base import CoresetMethod
from benchsel.evaluation import evaluate_completion, extrapolate
from benchsel.matrix import ScoreMatrix
from benchsel.models.calibrator import GaussianCalibrator
from benchsel.prediction.residuals import calibrate_completion

Z90 = norm.ppf(0.95)


def _gaussian_scores(m, n=8, rank=2, noise=0.4, seed=0):
    rng = np.random.default_rng(seed)
    loadings = rng.normal(size=(rank, n))
    return rng.normal(size=(m, rank)) @ loadings + noise * rng.normal(size=(m, n))


def test_conformal_quantile_matches_rank_definition():
    rng = np.random.default_rng(1)
    for n in (1, 5, 19, 100):
        s = rng.exponential(size=n)
        for level in (0.5, 0.9):
            rank = int(np.ceil((n + 1) * level))
            want = np.sort(s)[rank - 1] if rank <= n else np.inf
            assert conformal_quantile(s, level) == want


def test_fit_calibration_recovers_known_scale_per_regime():
    rng = np.random.default_rng(2)
    n = 20000
    outside = rng.random(n) < 0.3
    true_sd = np.where(outside, 3.0, 2.0)
    resid = true_sd * rng.normal(size=n)
    cal = fit_calibration(resid, np.ones(n), outside, level=0.9)
    assert cal.inside == pytest.approx(2.0, rel=0.05)
    assert cal.outside == pytest.approx(3.0, rel=0.05)
    assert (cal.n_inside, cal.n_outside) == (int((~outside).sum()), int(outside.sum()))


def test_fit_calibration_outside_never_narrower_and_small_regimes_pool():
    rng = np.random.default_rng(3)
    resid = rng.normal(size=500)
    outside = np.zeros(500, dtype=bool)
    outside[:10] = True  # too few for a multiplier of their own
    resid[:10] *= 0.01
    cal = fit_calibration(resid, np.ones(500), outside, min_cells=30)
    assert cal.outside >= cal.inside
    pooled = conformal_quantile(np.abs(resid), 0.9) / Z90
    assert cal.outside == pytest.approx(max(cal.inside, pooled))


def test_fit_calibration_too_few_cells_is_uncalibrated_and_skips_zero_std():
    cal = fit_calibration(np.ones(5), np.ones(5), np.zeros(5, bool))
    assert not cal.calibrated and cal.factor([True, False]).tolist() == [1.0, 1.0]
    # Zero or NaN standard deviations carry no information and are dropped.
    resid = np.r_[np.ones(40), 5.0 * np.ones(40)]
    std = np.r_[np.ones(40), np.zeros(40)]
    cal = fit_calibration(resid, std, np.zeros(80, bool))
    assert cal.n_inside == 40 and cal.inside == pytest.approx(1 / Z90)
    with pytest.raises(ValueError, match="level"):
        fit_calibration(resid, std, np.zeros(80, bool), level=1.5)
    with pytest.raises(ValueError, match="one entry per cell"):
        fit_calibration(resid, std[:3], np.zeros(80, bool))


def test_outside_range_and_signed_excess_match_row_by_row_reference():
    from benchsel.calibration import range_excess

    rng = np.random.default_rng(4)
    ref = rng.normal(size=(40, 6))
    ref[rng.random(ref.shape) < 0.3] = np.nan
    rows = 2.5 * rng.normal(size=(60, 6))
    rows[rng.random(rows.shape) < 0.5] = np.nan
    got = outside_range(ref, rows)
    signed = range_excess(ref, rows, signed=True)
    np.testing.assert_array_equal(np.abs(signed), range_excess(ref, rows))
    sides = []
    for r in range(rows.shape[0]):
        g = ~np.isnan(rows[r])
        if not g.any():
            assert not got[r] and signed[r] == 0
            continue
        strengths = [np.nanmean(ref[i, g]) for i in range(ref.shape[0])
                     if (~np.isnan(ref[i, g])).any()]
        s = rows[r, g].mean()
        assert got[r] == (s > max(strengths) or s < min(strengths))
        side = 1 if s > max(strengths) else -1 if s < min(strengths) else 0
        assert np.sign(signed[r]) == side
        sides.append(side)
    assert {-1, 1} <= set(sides)  # both sides occur


def test_fit_calibration_calibrates_models_above_and_below_the_range_apart():
    rng = np.random.default_rng(6)
    n = 9000
    side = rng.choice([-1.0, 0.0, 1.0], size=n)
    excess = side * rng.uniform(0.1, 0.5, n)
    # Misses below the range are three times those above it.
    resid = np.where(side < 0, 3.0, 1.0) * rng.normal(size=n)
    cal = fit_calibration(resid, np.ones(n), excess)
    assert cal.outside == pytest.approx(1.0, rel=0.08)
    assert cal.below == pytest.approx(3.0, rel=0.08)
    assert cal.n_below == int((side < 0).sum())
    assert cal.n_outside == int((side != 0).sum())
    assert cal.factor([0.2])[0] < 1.5 < cal.factor([-0.2])[0]
    # Unsigned excesses: one outside regime for both sides, as before.
    pooled = fit_calibration(resid, np.ones(n), np.abs(excess))
    assert pooled.below is None and 1.0 < pooled.outside < 3.0
    assert "below" not in pooled.to_dict() and "below" in cal.to_dict()


def _strength_board(rng, m=300, n=12):
    """Scores driven by one latent strength plus noise: models differ mostly in level."""
    strength = rng.normal(size=m)
    return np.sort(strength)[:, None] * rng.uniform(0.6, 1.2, n) + 0.5 * rng.normal(size=(m, n))


def test_unknown_calibration_covers_models_stronger_than_every_source():
    """A model with no score, predicted as the column means: the multiplier must
    cover models beyond the sources' range, where the column spread alone does not."""
    rng = np.random.default_rng(5)
    values = _strength_board(rng)  # rows sorted by latent strength
    source, strong = values[:210], values[210:]  # the strongest 30% are new
    cal = unknown_calibration(source)
    assert cal.calibrated and cal.n_inside > 0
    mu, sd = source.mean(axis=0), source.std(axis=0)
    z = norm.ppf(0.95)
    plain = np.mean(np.abs(strong - mu) <= z * sd)
    covered = np.mean(np.abs(strong - mu) <= z * sd * cal.inside)
    assert plain < 0.85 and covered >= 0.85


def test_unknown_calibration_is_never_narrower_than_the_random_folds_need():
    rng = np.random.default_rng(6)
    values = rng.normal(size=(200, 8))  # exchangeable models: the spread is right
    cal = unknown_calibration(values)
    assert 0.9 < cal.inside < 1.6
    assert not unknown_calibration(values[:8]).calibrated  # too few models


def test_calibration_splits_hold_out_random_folds_and_both_tails():
    values = _gaussian_scores(60)
    splits = calibration_splits(values, folds=3, seed=0)
    assert len(splits) == 5
    held = np.concatenate([s.validation for s in splits[:3]])
    assert sorted(held.tolist()) == list(range(60))
    strength = values.mean(axis=1)
    up, down = splits[3], splits[4]
    assert strength[up.validation].min() > strength[up.train].max()
    assert strength[down.validation].max() < strength[down.train].min()
    assert calibration_splits(values[:9]) == []


def test_calibration_splits_of_a_large_board_come_from_a_subsample():
    values = _gaussian_scores(300)
    values[7] = np.nan  # a model without scores is never drawn
    capped = calibration_splits(values, folds=3, seed=4, max_models=100)
    used = np.unique(np.concatenate([np.r_[s.train, s.validation] for s in capped]))
    assert used.size == 100 and 7 not in used
    held = np.concatenate([s.validation for s in capped[:3]])
    assert sorted(held.tolist()) == used.tolist()  # random folds cover the subsample once
    assert all(np.isin(np.r_[s.train, s.validation], used).all() for s in capped[3:])
    # At or under the cap nothing changes (and the default cap is far above 300).
    full = calibration_splits(values, folds=3, seed=4, max_models=None)
    for a, b in ((calibration_splits(values, folds=3, seed=4), full),
                 (calibration_splits(values, folds=3, seed=4, max_models=299), full)):
        assert all(np.array_equal(x.validation, y.validation) for x, y in zip(a, b))


def test_regime_excess_makes_a_row_beyond_any_item_outside():
    from benchsel.calibration import range_excess, regime_excess

    rng = np.random.default_rng(5)
    ref = rng.normal(size=(40, 6))
    ref[rng.random(ref.shape) < 0.3] = np.nan
    rows = 1.5 * rng.normal(size=(80, 6))
    rows[rng.random(rows.shape) < 0.5] = np.nan
    got, strength = regime_excess(ref, rows), range_excess(ref, rows)
    for r in range(rows.shape[0]):
        g = np.flatnonzero(~np.isnan(rows[r]))
        beyond = any(rows[r, j] > np.nanmax(ref[:, j]) or rows[r, j] < np.nanmin(ref[:, j])
                     for j in g)
        assert (got[r] > 0) == (strength[r] > 0 or beyond)
        if strength[r] > 0:
            assert got[r] == strength[r]  # the strength rule's excess is kept as it was
    # The data hold rows of each kind: inside, beyond on an item only, beyond in strength.
    only_item = (got > 0) & (strength == 0)
    assert only_item.any() and (strength > 0).any() and (got == 0).any()


def test_a_flagged_model_is_calibrated_as_outside():
    from benchsel import GaussianModel, load_dataset

    model = GaussianModel().fit(load_dataset("helm_lite"))
    # GSM8K below every source model's, MMLU within: weaker on one benchmark,
    # not on average.
    pred = model.predict({"GSM8K": 0.02, "MMLU": 0.3}, method="gaussian")
    ex = pred.extrapolation[0]
    assert ex["flag"] and ex["items_below_training_min"] == 1
    assert ex["strength_percentile"] > 0  # within the sources' strength range
    assert pred.calibration[0]["regime"] == "outside"
    inside = model.predict({"GSM8K": 0.6, "MMLU": 0.6}, method="gaussian")
    assert not inside.extrapolation[0]["flag"]
    assert inside.calibration[0]["regime"] == "inside"
    assert pred.calibration[0]["multiplier"] > inside.calibration[0]["multiplier"]


def _calibrated_coverage(train, test, given):
    """Coverage on ``test`` of the Gaussian fitted on ``train``, raw and calibrated."""
    from benchsel.calibration import outside_range as regime
    from benchsel.gaussian.conditional import conditional_moments
    from benchsel.gaussian.covariance import estimate_covariance

    mu0, sd0 = train.mean(axis=0), train.std(axis=0, ddof=1)
    zt, zv = (train - mu0) / sd0, (test - mu0) / sd0
    est = estimate_covariance(zt, "pairwise")
    x = np.where(given, zv, np.nan)
    mu, var = conditional_moments(x, est.mean, est.covariance)
    cal = GaussianCalibrator(zt, covariance="pairwise").calibration(given)
    factor = cal.factor(regime(zt[:, given], x[:, given]))[:, None]
    err = np.abs(zv - mu)[:, ~given]
    sd = np.sqrt(var)[:, ~given]
    return np.mean(err <= Z90 * sd), np.mean(err <= Z90 * sd * factor[:, :1])


def test_gaussian_calibration_keeps_honest_intervals_honest():
    values = _gaussian_scores(1200, seed=5)
    given = np.zeros(8, bool)
    given[[0, 3]] = True
    raw, calibrated = _calibrated_coverage(values[:200], values[200:], given)
    assert 0.87 <= raw <= 0.93
    assert 0.86 <= calibrated <= 0.95


def test_gaussian_calibration_repairs_intervals_too_narrow_from_few_models():
    # 25 source models for 20 items: the estimated covariance overfits and
    # its conditional variances are too small (parameter uncertainty).
    given = np.zeros(20, bool)
    given[[1, 5, 9]] = True
    raw, calibrated = np.mean([
        _calibrated_coverage(v[:25], v[25:], given)
        for v in (_gaussian_scores(1025, n=20, rank=4, noise=0.6, seed=s) for s in range(4))
    ], axis=0)
    assert raw < 0.86
    assert 0.86 <= calibrated <= 0.95


def _bent_board(curvature, seed):
    """One ability, items that bend with it: strong models leave the linear regime."""
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=(300, 1))
    slopes = rng.uniform(0.5, 1.5, size=(1, 10))
    bend = rng.uniform(-curvature, curvature, size=(1, 10))
    values = ability * slopes + bend * ability**2 + 0.3 * rng.normal(size=(300, 10))
    return ScoreMatrix(values, [f"m{i}" for i in range(300)], [f"b{j}" for j in range(10)])


def test_calibration_widens_intervals_for_models_beyond_the_fit():
    # Fit on the weakest half, predict the strongest 30%: the linear
    # Gaussian misses the bend, and its own variances cover about half.
    rows = [r for seed in (7, 8) for r in
            extrapolate(_bent_board(0.15, seed), objectives=("mi",), k_max=3,
                        predictor="gaussian").rows]
    raw = np.mean([r.uncalibrated_coverage for r in rows])
    calibrated = np.mean([r.interval_coverage for r in rows])
    assert raw < 0.7
    # Measured 0.86 (seed 7: 0.92-0.95, seed 8: 0.76-0.86): far better, not
    # always 0.85 -- the held-out strong models of the calibration splits lie
    # less far out than the protocol's.
    assert calibrated >= 0.82 and calibrated - raw >= 0.2


def test_cv_without_calibration_reports_raw_coverage_twice():
    values = _gaussian_scores(60, seed=8)
    scores = ScoreMatrix(values, [f"m{i}" for i in range(60)], [f"b{j}" for j in range(8)])
    result = extrapolate(scores, objectives=("mi",), k_max=2, calibrate=False, predictor="gaussian")
    for row in result.rows:
        assert row.interval_coverage == row.uncalibrated_coverage


def test_completion_calibration_widens_a_too_narrow_method():
    values = _gaussian_scores(150, n=10, seed=9) * 5 + 50
    cal = calibrate_completion(values, "svd", seed=0)
    assert cal.calibrated and cal.n_inside > 0
    # The rank-2 SVD's in-sample residual spread understates held-out error.
    assert cal.inside > 1.0
    scores = ScoreMatrix(values, [f"m{i}" for i in range(150)], [f"b{j}" for j in range(10)])
    result = evaluate_completion(scores, methods=("svd", "gaussian"))
    for row in result.rows:
        assert 83 <= row.interval_coverage <= 97


def test_calibration_is_a_plain_record():
    cal = Calibration(0.9, 1.2, 2.0, 100, 40, outside_slope=0.5)
    assert cal.to_dict() == {"method": "conformal", "level": 0.9, "inside": 1.2,
                             "outside": 2.0, "outside_slope": 0.5, "cells_inside": 100,
                             "cells_outside": 40}
    # Beyond the range: the larger of the constant and the growing multiplier.
    assert cal.factor([0.0, 1.0, 5.0]).tolist() == [1.2, 2.0, 3.0]
    assert Calibration(0.9).to_dict()["method"] == "none"


def test_outside_multiplier_grows_with_distance_when_misses_do():
    # Held-out misses proportional to 1 + excess: the growing multiplier
    # covers a model twice as far out as any held-out one.
    rng = np.random.default_rng(13)
    excess = np.r_[np.zeros(2000), rng.uniform(0.1, 1.0, 2000)]
    resid = (1 + excess) * rng.normal(size=4000)
    cal = fit_calibration(resid, np.ones(4000), excess)
    assert cal.inside == pytest.approx(1.0, rel=0.08)
    assert cal.outside_slope == pytest.approx(1.0, rel=0.08)
    far = 3.0  # beyond every calibration cell
    z = rng.normal(size=20000) * (1 + far)
    assert np.mean(np.abs(z) <= Z90 * cal.factor(far)) == pytest.approx(0.9, abs=0.02)


def test_outside_steps_match_the_nearest_cells_by_hand():
    rng = np.random.default_rng(21)
    excess = np.r_[np.zeros(300), rng.uniform(0.01, 4.0, 250)]
    resid = rng.normal(size=550) * (1 + excess)
    cal = fit_calibration(resid, np.ones(550), excess, min_cells=30)
    out = np.sort(excess[excess > 0])
    scores = np.abs(resid[excess > 0])[np.argsort(excess[excess > 0], kind="stable")]
    want, top = [], 0.0
    for count in (*range(31, 250, 31), 250):  # steps of an eighth of the 250 outside cells
        top = max(top, conformal_quantile(scores[:count], 0.9) / Z90)
        want.append((out[count - 1], top))
    # pytest.approx takes flat sequences only (nested ones are a TypeError from pytest 9.1).
    assert np.asarray(cal.outside_steps).shape == (len(want), 2)
    np.testing.assert_allclose(np.asarray(cal.outside_steps), np.asarray(want), rtol=1e-12)
    # The multiplier of a row: the first step reaching its excess, or the slope term.
    for e in (0.0, 0.005, out[29], out[30], 2.0, 10.0):
        steps = [m for edge, m in want if edge >= e] or [want[-1][1]]
        expect = cal.inside if e == 0 else max(cal.inside, steps[0],
                                               cal.outside_slope * (1 + e))
        assert cal.factor(e) == pytest.approx(expect)
    grid = np.linspace(0.001, 6, 400)
    assert np.all(np.diff(cal.factor(grid)) >= 0)  # further out is never narrower
    assert cal.to_dict()["outside_steps"] == [list(step) for step in cal.outside_steps]


def test_a_model_just_past_the_range_is_calibrated_by_the_cells_near_it():
    # Held-out models just past their fit are missed as often as inside ones;
    # those far beyond it three times as badly. A new model just past the
    # range keeps a 90% interval, not the far models' width.
    rng = np.random.default_rng(22)
    excess = np.r_[np.zeros(3000), rng.uniform(0.05, 0.5, 1500), rng.uniform(1.5, 4, 1500)]
    sd = np.where(excess > 1, 3.0, 1.0)
    cal = fit_calibration(sd * rng.normal(size=6000), np.ones(6000), excess)
    near = rng.normal(size=40000)
    assert np.mean(np.abs(near) <= Z90 * cal.factor(0.3)) == pytest.approx(0.9, abs=0.02)
    # One constant for every outside model would have covered it far more.
    assert np.mean(np.abs(near) <= Z90 * cal.outside) > 0.97
    far = 3.0 * rng.normal(size=40000)
    assert np.mean(np.abs(far) <= Z90 * cal.factor(3.0)) >= 0.88


def test_one_badly_missed_model_nearest_the_range_does_not_widen_every_step():
    # 40 cells of one held-out model just past its fit, missed 3 times as
    # badly as the 6000 others near the range: the nearest step holds more
    # than that one model, so a new model near the range keeps about 90%
    # (a first step of those 40 cells alone gave it 3 times the width).
    rng = np.random.default_rng(23)
    excess = np.r_[np.zeros(2000), np.full(40, 0.005), rng.uniform(0.01, 0.5, 6000)]
    sd = np.r_[np.ones(2000), np.full(40, 3.0), np.ones(6000)]
    cal = fit_calibration(sd * rng.normal(size=8040), np.ones(8040), excess)
    near = rng.normal(size=40000)
    assert 0.88 <= np.mean(np.abs(near) <= Z90 * cal.factor(0.1)) <= 0.94


# ------------------------------------------------------------ question level
def _irt_answers(models=160, questions=300, seed=10):
    """0/1 answers of a one-ability IRT population."""
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=(models, 1))
    difficulty = rng.normal(size=(1, questions))
    p = 1 / (1 + np.exp(-(1.7 * ability - difficulty)))
    return (rng.random(p.shape) < p).astype(float)


def test_calibrated_question_method_keeps_questions_and_means():
    from benchsel.coreset.calibrated import Calibrated
    from benchsel.coreset.registry import make_method

    values = _irt_answers()
    method = make_method("aipw", n_questions=40, random_state=0)
    plain = clone(method).fit(values[:120])
    cal = Calibrated(method).fit(values[:120])
    np.testing.assert_array_equal(plain.selected_, cal.selected_)
    m0, s0 = plain.predict(values[120:, plain.selected_])
    m1, s1 = cal.predict(values[120:, cal.selected_])
    np.testing.assert_allclose(m0, m1)
    # Widen only: never narrower than the method's own error bar.
    assert np.all(s1 >= s0 - 1e-15) and cal.calibration_.calibrated


def test_calibrated_question_method_repairs_a_learned_method_beyond_its_sources():
    from benchsel.coreset.calibrated import Calibrated
    from benchsel.coreset.registry import make_method

    values = _irt_answers(models=300, seed=11)
    order = np.argsort(values.mean(axis=1))
    weak, strong = order[:150], order[-90:]
    truth = values[strong].mean(axis=1)
    raw_cover, cal_cover = [], []
    for seed in range(3):
        method = make_method("random-sampling-learn", n_questions=30, random_state=seed)
        plain = clone(method).fit(values[weak])
        cal = Calibrated(method).fit(values[weak])
        m, s = plain.predict(values[np.ix_(strong, plain.selected_)])
        raw_cover.append(np.abs(m - truth) <= Z90 * s)
        details = cal.predict_details(values[np.ix_(strong, cal.selected_)])
        cal_cover.append(np.abs(details.mean - truth) <= Z90 * details.sd)
        assert details.outside.mean() > 0.5  # most of them beyond the sources' range
    assert np.mean(raw_cover) < 0.6
    assert np.mean(cal_cover) >= 0.85


def test_calibrated_random_sampling_is_never_zero_width():
    from benchsel.coreset.calibrated import Calibrated
    from benchsel.coreset.registry import make_method

    values = _irt_answers(seed=12)
    cal = Calibrated(make_method("random-sampling", n_questions=20, random_state=1))
    cal.fit(values[:120])
    perfect = np.ones((1, 20))  # every planned answer right: the sample's own sd is 0
    mean, sd = cal.predict(perfect)
    assert mean[0] == 1.0 and sd[0] >= cal.floor_ > 0


class _HalfDesignBased(CoresetMethod):
    """Rows with a positive first answer are design-based (the sample mean, its own
    error bar); the others model-based, off by 0.2 with an error bar of 0.01."""

    name = "half-design-based"

    def _fit(self, source, n, rng):
        self.selected_ = np.arange(n)

    def _predict(self, x):
        design = x[:, 0] > 0
        spread = x.std(axis=1, ddof=1) / np.sqrt(x.shape[1])
        return (np.where(design, x.mean(axis=1), x.mean(axis=1) + 0.2),
                np.where(design, spread, 0.01))

    def design_based(self, x_selected):
        return self._check_x(x_selected)[:, 0] > 0


def test_calibrated_keeps_design_based_rows_apart_from_model_based_ones():
    from benchsel.coreset.calibrated import Calibrated

    values = _irt_answers(models=200, seed=14)
    cal = Calibrated(_HalfDesignBased(n_questions=40, random_state=0)).fit(values[:150])
    # The model-based rows' error bars were far too narrow; the design-based
    # rows' were right, and pooling the two would have widened them as well.
    assert cal.calibration_.inside > 5
    assert 1.0 <= cal.design_calibration_.inside < 1.5
    x = values[150:, :40]
    mean, sd = cal.predict(x)
    design = x[:, 0] > 0
    assert design.any() and (~design).any()
    details = cal.predict_details(x)
    np.testing.assert_array_equal(details.design_based, design)
    np.testing.assert_array_equal(details.sd, sd)
    raw = details.raw_sd
    np.testing.assert_allclose(sd[design], raw[design] * cal.design_calibration_.inside)
    assert np.all(sd[~design] >= 5 * raw[~design])


class _WideAmongSources(CoresetMethod):
    """The sample mean with an error bar five times its own: model-based rows, too wide."""

    name = "wide-among-sources"

    def _fit(self, source, n, rng):
        self.selected_ = np.arange(n)

    def _predict(self, x):
        return x.mean(axis=1), 5 * x.std(axis=1, ddof=1) / np.sqrt(x.shape[1])


class _WideGuarded(_WideAmongSources):
    model_rows_among_sources = True


def test_calibration_narrows_model_based_rows_only_of_a_method_that_keeps_them_among_sources():
    from benchsel.coreset.calibrated import Calibrated

    values = _irt_answers(models=200, seed=15)
    x = values[150:, :40]
    own = _WideAmongSources(n_questions=40).fit(values[:150]).predict(x)[1]
    widen_only = Calibrated(_WideAmongSources(n_questions=40, random_state=0)).fit(values[:150])
    narrowed = Calibrated(_WideGuarded(n_questions=40, random_state=0)).fit(values[:150])
    assert widen_only.calibration_.inside == 1.0
    assert narrowed.calibration_.inside < 0.5
    np.testing.assert_allclose(widen_only.predict(x)[1], np.maximum(own, widen_only.floor_))
    np.testing.assert_allclose(narrowed.predict(x)[1],
                               np.maximum(own, narrowed.floor_) * narrowed.calibration_.inside)


def test_frontier_rows_by_hand():
    from benchsel.calibration import frontier_rows

    reference = np.array([[0.0, np.nan], [1.0, 1.0], [2.0, np.nan], [np.nan, np.nan],
                          [3.0, 5.0], [0.5, 0.5]])
    rows = np.array([[3.0, 3.0], [0.0, np.nan], [np.nan, np.nan], [2.9, np.nan]])
    strength = np.array([0.0, 1.0, 2.0, 4.0, 0.5])  # the reference rows with a score
    cut = np.quantile(strength, 0.8)
    got = frontier_rows(reference, rows, fraction=0.2)
    np.testing.assert_array_equal(got, [3.0 >= cut, False, False, 2.9 >= cut])


def _convex_board(m, seed=0):
    """Items linear in one ability, except the last, which strong models pull ahead on."""
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=(m, 1))
    values = ability * np.ones((1, 6)) + 0.4 * rng.normal(size=(m, 6))
    values[:, 5] += 0.8 * np.maximum(ability[:, 0] - 1.0, 0.0) ** 2
    return ScoreMatrix(values, [f"m{i}" for i in range(m)], [f"b{j}" for j in range(6)])


def test_frontier_shift_measures_the_bias_on_the_strongest_sources_only_where_clear():
    board = _convex_board(2000)
    given = np.zeros(6, bool)
    given[[0, 1]] = True
    shift = GaussianCalibrator(board.values).frontier_shift(given)
    assert np.all(shift[given] == 0)
    # Models picked as the strongest by all their scores lie above the linear
    # prediction of every other item (about 0.3-0.6 SD here: selection), and far
    # above it on the item strong models pull ahead on.
    assert np.all((shift[2:5] > 0.2) & (shift[2:5] < 0.8))
    assert shift[5] > shift[2:5].max() + 0.7
    # Too few source models for 30 strong ones: no shift at all.
    small = _convex_board(250).values
    assert np.all(GaussianCalibrator(small).frontier_shift(given) == 0)


def test_predict_moves_only_frontier_models_by_the_measured_shift():
    from benchsel import GaussianModel
    from benchsel.splits import frontier_split

    board = _convex_board(2000, seed=1)
    split = frontier_split(board.values)
    train = board.subset(models=split.train)
    model = GaussianModel().fit(train)
    plain = GaussianModel(calibration="none").fit(train)
    rows = np.concatenate([split.validation, split.train[:40]])
    new = board.subset(models=rows, items=[0, 1])
    pred, raw = model.predict(new, method="gaussian"), plain.predict(new, method="gaussian")
    at_top = np.array([c["frontier_shift"] for c in pred.calibration])
    # At the frontier by the given scores (frontier_rows against the training models).
    std = model.standardizer_
    z_train = std.transform(train.values)[:, :2]
    z_new = std.transform(np.pad(new.values, ((0, 0), (0, 4)), constant_values=np.nan))[:, :2]
    mean_train, mean_new = z_train.mean(axis=1), z_new.mean(axis=1)
    from benchsel.calibration import FRONTIER_APPLY_FRACTION

    np.testing.assert_array_equal(
        at_top, mean_new >= np.quantile(mean_train, 1 - FRONTIER_APPLY_FRACTION))
    assert at_top[: split.validation.size].mean() > 0.8 and at_top[-40:].mean() < 0.1
    # Weak rows: the Gaussian's own mean; strong rows: moved by shift x conditional SD.
    np.testing.assert_allclose(pred.mean[~at_top], raw.mean[~at_top], rtol=1e-12)
    shift = model._calibrator.frontier_shift(np.isin(np.arange(6), [0, 1]))
    sd = raw.std[at_top][:, 5]  # uncalibrated conditional SD, raw units
    np.testing.assert_allclose(pred.mean[at_top][:, 5] - raw.mean[at_top][:, 5],
                               shift[5] * sd, rtol=1e-9)
    # And it helps: on the frontier models' bent item the Gaussian's bias shrinks (measured
    # -0.80 -> -0.57: the bend grows further up than the sources' own top reaches).
    top = np.flatnonzero(at_top[: split.validation.size])
    truth = board.values[split.validation[top], 5]
    before, after = raw.mean[top, 5] - truth, pred.mean[top, 5] - truth
    assert before.mean() < -0.5 and abs(after.mean()) < 0.8 * abs(before.mean())
    assert np.abs(after).mean() < np.abs(before).mean()


def test_auto_keeps_its_choice_at_the_frontier_and_adds_that_methods_own_shift():
    """A model at the frontier keeps the method auto chose for it, moved by that
    method's own mean residual on the strongest sources (issue 28): checked against
    the shift computed by hand from a fit without them."""
    from benchsel import GaussianModel
    from benchsel.calibration import MIN_CELLS
    from benchsel.matrix import model_strength
    from benchsel.splits import frontier_split

    board = _convex_board(2000, seed=1)
    split = frontier_split(board.values)
    train = board.subset(models=split.train)
    model = GaussianModel().fit(train)
    plain = GaussianModel(calibration="none").fit(train)
    new = board.subset(models=np.concatenate([split.validation[:20], split.train[:20]]),
                       items=[0, 1])
    auto = model.predict(new, method="auto")
    moved = np.array([c["frontier_shift"] for c in auto.calibration])
    assert moved[:20].all() and not moved[20:].any()
    chosen = np.array([c["method"] for c in auto.choices])
    assert all(c["split"] in ("random", "near") for c in auto.choices)
    # By hand: the strongest 10% of the sources predicted from the others, given b0, b1.
    order = np.argsort(model_strength(train.values), kind="stable")
    strong = order[-max(5, len(order) // 10):]
    inner = GaussianModel(calibration="none").fit(
        train.subset(models=np.setdiff1d(np.arange(len(order)), strong)))
    checked = 0
    for method in set(chosen[moved]) - {"gaussian"}:
        held = inner.predict(train.subset(models=strong, items=[0, 1]), method=method)
        resid = train.values[strong][:, 2:] - held.mean[:, 2:]
        mean, se = resid.mean(axis=0), resid.std(axis=0, ddof=1) / np.sqrt(len(strong))
        assert len(strong) >= MIN_CELLS
        shift = np.r_[0.0, 0.0, np.where(np.abs(mean) > 2 * se, mean, 0.0)]
        # The strongest by all their scores lie above the others' prediction (selection).
        assert np.all(shift[2:] > 0.1)
        rows = moved & (chosen == method)
        own = plain.predict(new.subset(models=np.flatnonzero(rows)), method=method)
        # To the fits' convergence: the hand's fit on the others is a separate EM run.
        np.testing.assert_allclose(auto.mean[rows] - own.mean, np.tile(shift, (rows.sum(), 1)),
                                   atol=2e-4)
        checked += rows.sum()
    assert checked > 0
    # Models below the frontier: each method as it is.
    for i in np.flatnonzero(~moved):
        own = plain.predict(new.subset(models=[i]), method=chosen[i])
        np.testing.assert_allclose(auto.mean[i], own.mean[0], rtol=1e-12)
    # And it helps on the bent item: the frontier models' bias there shrinks.
    truth = board.values[split.validation[:20], 5]
    before = np.array([plain.predict(new.subset(models=[i]), method=chosen[i]).mean[0, 5]
                       for i in range(20)])
    assert np.abs(auto.mean[:20, 5] - truth).mean() < np.abs(before - truth).mean()


def test_cli_predict_says_when_a_models_mean_was_corrected_at_the_frontier(
        tmp_path, capsys, monkeypatch):
    from benchsel.cli import main

    monkeypatch.setenv("BENCHSEL_CACHE_DIR", "off")
    board = _convex_board(2000, seed=2)
    path = tmp_path / "board.csv"
    board.to_frame().to_csv(path)
    top = np.quantile(board.values[:, :2].mean(axis=1), 0.999)
    line = "corrected by the shortfall its method showed on the strongest 10%"
    for given, moved in ((top + 0.2, True), (0.0, False)):
        assert main(["predict", str(path), "--observed", f"b0={given},b1={given}",
                     "--quiet"]) == 0
        assert (line in capsys.readouterr().out) == moved


def test_a_plan_keeps_each_methods_frontier_shift_and_predicts_without_remeasuring(
        tmp_path, monkeypatch):
    """A benchmark plan on a board that measures frontier shifts stores the shift of
    every method auto may choose, so predicting from the saved plan measures nothing."""
    import json

    from benchsel import load_plan, plan_benchmarks
    from benchsel.prediction import frontier

    monkeypatch.setenv("BENCHSEL_CACHE_DIR", "off")
    board = _convex_board(2000, seed=3)
    plan = plan_benchmarks(board, k=2)
    path = tmp_path / "plan.json"
    plan.save(path)
    shifts = json.loads(path.read_text())["benchmarks"]["auto"]["shifts"]
    chosen = {c["method"] for c in json.loads(path.read_text())["benchmarks"]["auto"]["choices"]}
    assert {s["method"] for s in shifts} == (chosen - {"gaussian"}) | {"gaussian-conditional"}
    # Just past the best source on each planned benchmark: auto's near choice, a
    # completion method, and a frontier shift.
    observed = {name: float(board.values[:, board.items.index(name)].max()) + 0.3
                for name in plan.run_in_full}
    before = [plan.predict(observed, method=m) for m in ("auto", "gaussian")]
    assert before[0].choices[0]["method"] != "gaussian"
    assert all(p.calibration[0]["frontier_shift"] for p in before)

    def remeasured(*args, **kwargs):
        raise AssertionError("the plan's shift was measured again")

    monkeypatch.setattr(frontier, "completion_frontier_shift", remeasured)
    monkeypatch.setattr(GaussianCalibrator, "frontier_shift", remeasured)
    loaded = load_plan(path)
    for p, m in zip(before, ("auto", "gaussian")):
        after = loaded.predict(observed, method=m)
        assert after.calibration[0]["frontier_shift"]
        np.testing.assert_allclose(after.mean, p.mean, rtol=1e-12)
        np.testing.assert_allclose(after.high, p.high, rtol=1e-12)


def test_a_high_level_gets_finite_multipliers_where_the_regime_has_the_cells():
    """A step or regime of 30 cells has no finite 0.99 quantile (it asks for the 31st
    smallest): every step of the outside regime was infinite, and every interval the
    whole score range, though the regime had the cells for its multiplier."""
    rng = np.random.default_rng(0)
    residual = rng.normal(size=400)
    excess = np.r_[np.zeros(200), rng.uniform(0, 3, 200)]
    z = norm.ppf(0.995)
    cal = fit_calibration(residual, np.ones(400), excess, level=0.99)
    factors = cal.factor([0.0, 0.1, 2.0, 5.0])
    assert np.isfinite(factors).all() and np.isfinite(cal.outside)
    assert cal.inside == pytest.approx(conformal_quantile(np.abs(residual[:200]), 0.99) / z)
    # The steps, where there are any, are groups of at least the 99 cells 0.99 needs.
    cells = np.sort(excess[200:])
    for edge, _ in cal.outside_steps:
        assert np.sum(cells <= edge) >= 99
    # Fewer cells than the level needs anywhere: uncalibrated, as for too few cells.
    few = fit_calibration(residual[:60], np.ones(60), excess[:60], level=0.99)
    assert not few.calibrated


def test_a_high_level_prediction_on_a_bundled_board_has_finite_intervals():
    from benchsel import GaussianModel, load_dataset

    model = GaussianModel().fit(load_dataset("helm_lite"))
    top = float(np.nanmax(model.scores_.values[:, model.items_.index("MedQA")]))
    p = model.predict({"MedQA": min(top * 1.02, 0.99)}, level=0.99)
    assert np.isfinite([c["multiplier"] for c in p.calibration]).all()
    hidden = ~np.asarray(p.observed, dtype=bool)
    assert (p.high - p.low)[hidden].min() > 0
    assert ((p.high - p.low)[hidden] < 1).all()  # not the whole [0, 1] of every score


def test_clear_column_bias_keeps_a_column_mean_only_where_enough_models_show_it():
    from benchsel.calibration import MIN_CELLS, clear_column_bias

    rng = np.random.default_rng(3)
    residual = rng.normal(size=(60, 5))
    residual[:, 1] += 2.0               # a clear bias
    residual[MIN_CELLS - 1:, 2] = np.nan  # a bias on too few models
    residual[:, 2] += 2.0
    residual[:, 3] = np.nan             # no model has it
    got = clear_column_bias(residual)
    for j in range(residual.shape[1]):  # one column at a time, by hand
        col = residual[:, j][~np.isnan(residual[:, j])]
        clear = col.size >= MIN_CELLS and abs(col.mean()) > 2 * col.std(ddof=1) / np.sqrt(col.size)
        assert got[j] == pytest.approx(col.mean() if clear else 0.0, rel=1e-12, abs=0)
    assert got[1] > 1.5 and got[2] == 0 and got[3] == 0
