"""The residual Gaussian process (``gp``) and predictors other than the Gaussian in cv."""

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, RationalQuadratic, WhiteKernel

import benchsel
from benchsel.calibration import unknown_calibration
from benchsel.evaluation import cross_validate, extrapolate
from benchsel.evaluation.folds import _shipped_model, _shipped_scores
from benchsel.gaussian.covariance import fit_standardizer
from benchsel.prediction import complete
from benchsel.prediction import gp as residual_gp
from benchsel.splits import kfold_with_holdout


def _curved(m=240, seed=0):
    """Models on a latent strength t: three benchmarks linear in t, three that bend."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(-2, 2, m)
    noise = lambda: 0.1 * rng.standard_normal(m)  # noqa: E731
    cols = [t + noise(), 0.8 * t + noise(), 1.2 * t + noise(),
            t**2 + noise(), np.abs(t) + noise(), np.tanh(2 * t) + noise()]
    return np.column_stack(cols) * 10 + 50


def test_fit_matches_direct_solves_and_the_grid_optimum():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((60, 3))
    y = np.sin(x[:, 0]) + 0.3 * x[:, 1] ** 2 + 0.1 * rng.standard_normal(60)
    fit = residual_gp.fit_residual_gp(x, y)
    # The chosen hyperparameters maximize the profile likelihood over the grid,
    # evaluated here with determinants instead of eigenvalues.
    best = -np.inf
    centred = y - y.mean()
    for length in residual_gp.LENGTH_SCALES:
        k = residual_gp.kernel(x, x, length)
        for lam in residual_gp.NOISE_RATIOS:
            a = k + lam * np.eye(60)
            s2 = centred @ np.linalg.solve(a, centred) / 60
            ll = -30 * np.log(s2) - 0.5 * np.linalg.slogdet(a)[1]
            if ll > best:
                best, arg = ll, (length, lam)
    assert (fit.length, fit.noise) == pytest.approx(arg)
    assert fit.log_likelihood == pytest.approx(best, rel=1e-9)
    # Posterior mean and variance from explicit solves.
    new = rng.standard_normal((7, 3))
    a = residual_gp.kernel(x, x, fit.length) + fit.noise * np.eye(60)
    cross = residual_gp.kernel(new, x, fit.length)
    mean = y.mean() + cross @ np.linalg.solve(a, centred)
    var = fit.scale * (1 - np.einsum("ij,ji->i", cross, np.linalg.solve(a, cross.T)) + fit.noise)
    got_mean, got_sd = fit.predict(new)
    np.testing.assert_allclose(got_mean, mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(got_sd, np.sqrt(var), rtol=1e-7)


def test_fit_agrees_with_scikit_learn_at_the_same_kernel():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((80, 4))
    y = np.tanh(x @ np.array([1.0, -0.5, 0.3, 0.0])) + 0.2 * rng.standard_normal(80)
    fit = residual_gp.fit_residual_gp(x, y)
    # Ours is rational quadratic (alpha 1) in units of sqrt(p), scale s^2,
    # white noise s^2 lam.
    kernel = (ConstantKernel(fit.scale, "fixed")
              * RationalQuadratic(fit.length * 2.0, 1.0, "fixed", "fixed")
              + WhiteKernel(fit.scale * fit.noise, "fixed"))
    ref = GaussianProcessRegressor(kernel, optimizer=None).fit(x, y - y.mean())
    new = rng.standard_normal((9, 4))
    mean, sd = ref.predict(new, return_std=True)
    got_mean, got_sd = fit.predict(new)
    np.testing.assert_allclose(got_mean, mean + y.mean(), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got_sd, sd, rtol=1e-6)


def test_hyperparameters_are_shared_by_the_targets_and_the_joint_fit_is_per_target():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((50, 2))
    y = np.column_stack([np.sin(x[:, 0]), x[:, 1] ** 2, 0.3 * x[:, 0] * x[:, 1]])
    y = y + 0.1 * rng.standard_normal(y.shape)
    # The summed likelihood, brute force: the sum of each target's.
    total = np.zeros((len(residual_gp.LENGTH_SCALES), residual_gp.NOISE_RATIOS.size))
    for t in range(3):
        c = y[:, t] - y[:, t].mean()
        for i, length in enumerate(residual_gp.LENGTH_SCALES):
            for j, lam in enumerate(residual_gp.NOISE_RATIOS):
                a = residual_gp.kernel(x, x, length) + lam * np.eye(50)
                total[i, j] += (-25 * np.log(c @ np.linalg.solve(a, c) / 50)
                                - 0.5 * np.linalg.slogdet(a)[1])
    i, j = np.unravel_index(np.argmax(total), total.shape)
    length, noise = residual_gp.choose_hyperparameters(x, y)
    assert (length, noise) == pytest.approx((residual_gp.LENGTH_SCALES[i],
                                             residual_gp.NOISE_RATIOS[j]))
    joint = residual_gp.fit_residual_gp(x, y, length, noise)
    new = rng.standard_normal((6, 2))
    mean, sd = joint.predict(new)
    assert mean.shape == sd.shape == (6, 3)
    for t in range(3):
        alone = residual_gp.fit_residual_gp(x, y[:, t], length, noise).predict(new)
        # Solving for three right-hand sides at once rounds differently from
        # one: a mean near zero (-0.00275) was seen 3.6e-13 apart, so an
        # absolute term keeps rtol from demanding 1e-16 there.
        np.testing.assert_allclose(mean[:, t], alone[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(sd[:, t], alone[1], rtol=1e-10, atol=1e-12)


def test_far_from_every_training_model_the_correction_vanishes():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((50, 2))
    y = np.sin(2 * x[:, 0]) + 0.1 * rng.standard_normal(50)
    fit = residual_gp.fit_residual_gp(x, y)
    # The rational quadratic kernel decays as 1 / distance^2: the
    # correction shrinks steadily with distance and is gone far enough out.
    far = np.array([[4.0, -4.0], [40.0, -40.0], [4e4, -4e4]])
    mean, sd = fit.predict(far)
    gap = np.abs(mean - y.mean())
    assert gap[0] > gap[1] > gap[2] and gap[2] < 1e-8
    assert sd[2] == pytest.approx(np.sqrt(fit.scale * (1 + fit.noise)))


def test_gp_learns_what_the_linear_predictor_misses():
    values = _curved()
    rng = np.random.default_rng(0)
    new = rng.choice(len(values), 40, replace=False)
    hidden = values.copy()
    hidden[new, 3:] = np.nan  # new models ran the three linear benchmarks only
    truth = values[new, 3:]
    gauss = complete(hidden, "gaussian").mean[new, 3:]
    gp = complete(hidden, "gp")
    err_gauss = np.sqrt(np.mean((gauss - truth) ** 2))
    err_gp = np.sqrt(np.mean((gp.mean[new, 3:] - truth) ** 2))
    assert err_gp < 0.5 * err_gauss
    # Its error bars are the right size: most truths inside mean +- 1.645 sd.
    inside = np.abs(gp.mean[new, 3:] - truth) <= 1.645 * gp.std[new, 3:]
    assert 0.8 <= inside.mean() <= 0.99
    # Observed cells are kept; rows with many scores get the Gaussian's cells.
    np.testing.assert_array_equal(gp.mean[~np.isnan(hidden)], hidden[~np.isnan(hidden)])


def test_rows_with_many_scores_stay_gaussian_and_new_rows_do_not_sway_each_other():
    rng = np.random.default_rng(4)
    values = rng.standard_normal((100, 14)) + rng.standard_normal((100, 1))
    hidden = values.copy()
    hidden[:5, 12:] = np.nan  # 12 observed: more than MAX_INPUTS, plain gaussian
    hidden[5:40, 2:] = np.nan  # 35 new models run on two items
    gauss, gp = complete(hidden, "gaussian"), complete(hidden, "gp")
    np.testing.assert_array_equal(gp.mean[:5], gauss.mean[:5])
    np.testing.assert_array_equal(gp.std[:5], gauss.std[:5])
    # The Gaussian under the process is fitted on the source models only: one
    # new model's scores do not move another's prediction (they do under the
    # transductive `gaussian` completer).
    moved = hidden.copy()
    moved[5, :2] += 3.0
    others = slice(6, 40)
    np.testing.assert_allclose(complete(moved, "gp").mean[others], gp.mean[others], atol=1e-12)
    assert np.abs(complete(moved, "gaussian").mean[others] - gauss.mean[others]).max() > 1e-6


def _first_fold(name):
    """A bundled board's scores, its first cv fold, that fold's standardizer and columns."""
    values = benchsel.load_dataset(name).cleaned().values
    fold = kfold_with_holdout(len(values), 5, 0.1, 0)[0]
    std = fit_standardizer(values[fold.train], "auto")
    return values, fold, std, np.flatnonzero(~std.constant)


def test_cv_predictions_never_see_the_validation_models_other_scores():
    values, fold, std, cols = _first_fold("helm_lite")
    sel = np.array([0, 3])
    model = _shipped_model(values[fold.train], "auto", "none", True)
    scored = ~np.isnan(values[np.ix_(fold.validation, cols)])
    scored[:, sel] = False
    before = _shipped_scores(model, values[fold.validation], cols, sel, std, 10.0, 0.9, "gp",
                             scored)
    changed = values.copy()
    rest = np.setdiff1d(np.arange(values.shape[1]), cols[sel])
    changed[np.ix_(fold.validation, rest)] = 1e3  # nonsense nobody may read
    after = _shipped_scores(model, changed[fold.validation], cols, sel, std, 10.0, 0.9, "gp",
                            scored)
    np.testing.assert_array_equal(before[0], after[0])  # the same predictions
    # Scored against the nonsense: all miss.
    assert before[2] == "gp" and after[1]["coverage"] == 0.0


def test_cv_with_gp_beats_the_gaussian_on_curved_scores():
    scores = benchsel.ScoreMatrix(_curved(seed=5), models=[f"m{i}" for i in range(240)],
                                  items=[f"b{j}" for j in range(6)])
    kw = dict(objectives=("mi",), k_max=2, folds=4, calibrate=False)
    gauss = cross_validate(scores, **kw, predictor="gaussian")
    gp = cross_validate(scores, predictor="gp", **kw)
    assert gp.predictor == "gp" and gp.choices["mi"][0][:2] == ["gp", "gp"]
    assert gp.row("mi", 1).r2_mean > gauss.row("mi", 1).r2_mean + 0.2
    assert gp.row("mi", 2).r2_mean > gauss.row("mi", 2).r2_mean
    auto = extrapolate(scores, objectives=("mi",), k_max=2, predictor="auto")
    assert all(m in benchsel.prediction.COMPLETERS for m in auto.choices["mi"][0][:2])
    assert "choices" in auto.to_dict() and auto.to_dict()["predictor"] == "auto"


def test_predictor_is_validated():
    scores = benchsel.load_dataset("helm_lite")
    with pytest.raises(ValueError, match="predictor must be one of"):
        cross_validate(scores, predictor="nope")
    with pytest.raises(ValueError, match="without a transform"):
        extrapolate(scores, predictor="gp", transform="logit")


def test_completion_calibration_with_a_pattern_holds_out_the_strongest_and_weakest():
    from benchsel.matrix import model_strength
    from benchsel.prediction.residuals import completion_residuals

    values = _curved(m=60, seed=6)
    given = np.array([True, True, False, False, False, False])
    residual, std, excess = completion_residuals(values, "gp", given=given, seed=0)
    # The random third, then the weakest half predicting the strongest 30%
    # from their given cells, then the reverse: each a completion of its own.
    order = np.argsort(model_strength(values), kind="stable")
    expected = []
    rows = np.random.default_rng(0).permutation(60)[:20]
    splits = [(np.setdiff1d(np.arange(60), rows), rows),
              (order[:30], order[-18:]), (order[-30:], order[:18])]
    for fit, held in splits:
        keep = np.sort(np.concatenate([fit, held]))
        sub = values[keep].copy()
        hide = np.isin(keep, held)[:, None] & ~given
        sub[hide] = np.nan
        done = complete(sub, "gp")
        expected.append(values[keep][hide] - done.mean[hide])
    np.testing.assert_allclose(residual, np.concatenate(expected), rtol=1e-10, atol=1e-10)
    assert len(std) == len(residual) == len(excess) == 20 * 4 + 18 * 4 * 2
    assert (excess > 0).sum() > 18 * 4 // 2  # the strongest lie beyond the weakest half


def test_the_cache_reuses_the_gaussian_and_gives_the_same_completion():
    from benchsel.prediction.cache import CompletionCache

    hidden = _curved(seed=7)
    hidden[:30, 3:] = np.nan
    cache = CompletionCache()
    cache.get(hidden, "gaussian")
    cached, direct = cache.get(hidden, "gp"), complete(hidden, "gp")
    np.testing.assert_array_equal(cached.mean, direct.mean)
    np.testing.assert_array_equal(cached.std, direct.std)


def test_residual_process_against_direct_solves_per_target():
    from benchsel.gaussian.conditional import conditional_moments

    values = _curved(m=90, seed=9)
    z = (values - values.mean(axis=0)) / values.std(axis=0)
    z[:10, 2:] = np.nan  # the new models: two given items
    z[10:25, 3] = np.nan  # training models lacking one target or another:
    z[30:40, 4] = np.nan  # targets 2 and 5 share their models, 3 and 4 do not
    train = np.arange(10, 90)
    mean, sigma = z[40:].mean(axis=0), np.cov(z[40:], rowvar=False)
    mu, sd = residual_gp.residual_process(z, mean, sigma, np.arange(10))
    given = np.full((80, 6), np.nan)
    given[:, :2] = z[train, :2]
    base, _ = conditional_moments(given, mean, sigma)
    base_new, _ = conditional_moments(z[:10], mean, sigma)
    # Hyperparameters from the largest group, targets 2 and 5, by the grid.
    residual = z[train] - base
    length, noise = residual_gp.choose_hyperparameters(z[train, :2], residual[:, [2, 5]])
    for j in range(2, 6):
        fit = ~np.isnan(z[train, j])
        x, r = z[train][fit, :2], residual[fit, j]
        c = r - r.mean()
        a = residual_gp.kernel(x, x, length) + noise * np.eye(fit.sum())
        cross = residual_gp.kernel(z[:10, :2], x, length)
        scale = c @ np.linalg.solve(a, c) / fit.sum()
        var = scale * (1 - np.einsum("ij,ji->i", cross, np.linalg.solve(a, cross.T)) + noise)
        expected = base_new[:, j] + r.mean() + cross @ np.linalg.solve(a, c)
        np.testing.assert_allclose(mu[:, j], expected, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(sd[:, j], np.sqrt(var), rtol=1e-7)
    assert np.isnan(mu[:, :2]).all()


def test_completion_predictions_are_scored_in_the_targets_clipped_frame():
    # alpaca_eval's strongest models lie more than 10 training standard
    # deviations up: their standardized scores are clipped, so predictions
    # must be too, or a method that predicts them well looks bad (0.79 vs
    # the Gaussian's 0.98 at k = 1 before).
    data = benchsel.load_dataset("alpaca_eval")
    gauss = extrapolate(data, objectives=("mi",), k_max=2, calibrate=False, predictor="gaussian")
    em = extrapolate(data, objectives=("mi",), k_max=2, predictor="gaussian-em", calibrate=False)
    for k in (1, 2):
        assert em.row("mi", k).r2_mean > gauss.row("mi", k).r2_mean - 0.02


def test_a_model_with_no_selected_score_gets_the_column_means_and_the_widest_intervals():
    """As in the evaluation protocols: a validation model lacking every selected item."""
    values, fold, std, cols = _first_fold("livebench")
    val = values[np.ix_(fold.validation, cols)]
    # An item some validation models have and others lack.
    j = int(np.flatnonzero(np.isnan(val).any(axis=0) & ~np.isnan(val).all(axis=0))[0])
    blank = np.isnan(val[:, j])
    unknown = unknown_calibration(values[fold.train], 0.9).inside
    assert unknown > 1
    train = values[fold.train]
    # Unbounded, so that the point is the distribution's centre, not a median cut at 0 or 1.
    model = benchsel.GaussianModel(bounds="none").fit(benchsel.ScoreMatrix(
        train, [f"m{i}" for i in range(len(train))], [str(c) for c in range(train.shape[1])]))
    x = benchsel.ScoreMatrix(val[:, [j]], [f"v{i}" for i in range(len(val))], [str(cols[j])])
    means = np.nanmean(values[fold.train], axis=0)
    for predictor in ("auto", "gp", "svd"):
        with pytest.warns(benchsel.DataWarning, match="no observed score"):
            pred = model.predict(x, method=predictor)
        given = [c for c, name in enumerate(pred.items) if name != str(cols[j])]
        np.testing.assert_allclose(pred.mean[np.ix_(blank, given)],
                                   np.broadcast_to(means[[int(pred.items[c]) for c in given]],
                                                   (blank.sum(), len(given))), atol=1e-9)
        # Nothing says where such a model lies: intervals for one beyond the range.
        assert all(pred.calibration[r]["multiplier"] == unknown
                   for r in np.flatnonzero(blank))
        assert not np.allclose(pred.mean[~blank][:, given], means[[int(pred.items[c])
                                                                    for c in given]])


def test_new_rows_share_one_gaussian_and_get_what_a_stack_of_their_pattern_gets():
    from benchsel.datasets import load_dataset
    from benchsel.prediction.registry import complete_new_rows

    values = load_dataset("merged").cleaned().values
    train, new = values[:100].copy(), values[100:].copy()
    # Every training row with more than 10 scores: complete_gp's stack then fits
    # its Gaussian on the same rows as gp.base_rows (with sparser training rows it
    # leaves them out, as it cannot tell them from the new ones).
    dense = (~np.isnan(train)).sum(axis=1) > 10
    train = train[dense]
    train[:, 5] = 55.0  # a column constant on the source rows: its mean stands
    keep = np.zeros(new.shape[1], dtype=bool)
    keep[[0, 3, 7, 20, 40]] = True
    new[:, ~keep] = np.nan
    new[1::3, 20] = np.nan  # a second pattern, and rows lacking the selection
    new[2] = np.nan  # no scores at all: the column means
    together = complete_new_rows(train, new, "gp")
    patterns = {tuple(~np.isnan(row)) for row in new if not np.isnan(row).all()}
    assert len(patterns) == 2
    np.testing.assert_allclose(together.mean[2], np.nanmean(train, axis=0), rtol=1e-12)
    for pattern in patterns:
        rows = np.flatnonzero([tuple(~np.isnan(row)) == pattern for row in new])
        stack = complete(np.vstack([train, new[rows]]), "gp")
        np.testing.assert_allclose(together.mean[rows], stack.mean[len(train):], rtol=1e-10)
        np.testing.assert_allclose(together.std[rows], stack.std[len(train):], rtol=1e-10)
    assert not np.isnan(together.mean).any()
    np.testing.assert_allclose(together.mean[:, 5], np.nanmean(train[:, 5]), rtol=1e-12)


def test_gp_predicts_new_rows_on_gaussians_own_fit_of_every_training_row():
    from benchsel.datasets import load_dataset
    from benchsel.prediction.fits import FitStore
    from benchsel.prediction.registry import complete_new_rows

    values = load_dataset("merged").cleaned().values
    train, new = values[:100].copy(), values[100:].copy()
    train[:12, 8:] = np.nan  # training rows with <= 10 scores stay in the Gaussian
    new[:, 5:] = np.nan
    fits = FitStore()
    alone = complete_new_rows(train, new, "gaussian", fits=fits)
    made = len(fits)
    corrected = complete_new_rows(train, new, "gp", fits=fits)
    assert len(fits) == made == 1  # one fit: gaussian's
    # Cells the process cannot correct are the Gaussian's.
    same = corrected.mean == alone.mean
    assert same.any() and not same.all()


def test_cv_labels_several_choices_when_validation_models_miss_some_selected_scores():
    """On a sparse board validation models have different patterns of the selected items,
    so auto may choose differently for each: the label names every method it used."""
    values, fold, std, cols = _first_fold("livebench")
    val = values[np.ix_(fold.validation, cols)]
    counts = (~np.isnan(val)).sum(axis=0)
    # Two items most validation models have, but not all: several patterns.
    sel = np.argsort(-np.where(counts < len(val), counts, -1), kind="stable")[:2]
    patterns = {tuple(row) for row in ~np.isnan(val[:, sel])}
    assert len(patterns) >= 2
    model = _shipped_model(values[fold.train], "auto", "none", True)
    scored = ~np.isnan(val)
    scored[:, sel] = False
    pred, figures, label = _shipped_scores(model, values[fold.validation], cols, sel, std,
                                           10.0, 0.9, "auto", scored)
    cover = figures["coverage"]
    used = label.replace(" (outside: ", "/").rstrip(")").split("/")
    assert len(set(used)) >= 2  # several choices, each named
    assert all(m in benchsel.prediction.COMPLETERS for m in used)
    assert 0 <= cover <= 1 and pred.shape == (int(scored.sum()),)


def _process_by_hand(z, mean, sigma, rows):
    """The residual process one target group at a time, by fit_residual_gp (the reference)."""
    from benchsel.gaussian.conditional import conditional_moments

    obs = ~np.isnan(z)
    mu, var = conditional_moments(z[rows], mean, sigma)
    sd = np.sqrt(var)
    mu[obs[rows]], sd[obs[rows]] = np.nan, np.nan
    for r, i in enumerate(rows):
        given = np.flatnonzero(obs[i])
        train = np.flatnonzero(obs[:, given].all(axis=1) & (obs.sum(axis=1) > given.size))
        if not given.size or train.size < residual_gp.MIN_ROWS:
            continue
        x = np.full((train.size, z.shape[1]), np.nan)
        x[:, given] = z[np.ix_(train, given)]
        base, _ = conditional_moments(x, mean, sigma)
        groups = {}
        for j in np.flatnonzero(~obs[i]):
            fit = residual_gp._spread(np.flatnonzero(obs[train, j]), residual_gp.MAX_ROWS)
            if fit.size >= residual_gp.MIN_ROWS:
                groups.setdefault(fit.tobytes(), []).append(j)
        if not groups:
            continue
        fits = [(np.frombuffer(key, dtype=np.intp), js) for key, js in groups.items()]
        fit, js = max(fits, key=lambda f: (len(f[1]), f[0].size))
        length, noise = residual_gp.choose_hyperparameters(
            z[np.ix_(train[fit], given)], z[np.ix_(train[fit], js)] - base[np.ix_(fit, js)])
        for fit, js in fits:
            gp_fit = residual_gp.fit_residual_gp(
                z[np.ix_(train[fit], given)], z[np.ix_(train[fit], js)] - base[np.ix_(fit, js)],
                length, noise)
            correction, spread = gp_fit.predict(z[i, given][None, :])
            mu[r, js] += correction[0]
            sd[r, js] = spread[0]
    return mu, sd


@pytest.mark.parametrize("most_rows", [residual_gp.MAX_ROWS, 30])
def test_the_process_is_the_process_fitted_group_by_group(monkeypatch, most_rows):
    # MERGED's training models lack targets in many ways: groups of many sizes, each
    # from its block of the kernel on the models some group uses (with 30 rows at
    # most, evenly spaced subsets of them).
    monkeypatch.setattr(residual_gp, "MAX_ROWS", most_rows)
    values = benchsel.load_dataset("merged").values
    spread = np.nanstd(values, axis=0)
    z = (values - np.nanmean(values, axis=0)) / np.where(spread > 0, spread, 1.0)
    rng = np.random.default_rng(3)
    rows = np.arange(12)
    common = np.argsort(-(~np.isnan(z)).sum(axis=0))[:8]
    for i in rows:  # new models run on 1 to 5 of the common benchmarks
        keep = rng.choice(common, rng.integers(1, 6), replace=False)
        z[i, np.setdiff1d(np.arange(z.shape[1]), keep)] = np.nan
    filled = np.where(np.isnan(z[12:]), 0.0, z[12:])
    mean, sigma = filled.mean(axis=0), np.cov(filled, rowvar=False) + 0.1 * np.eye(z.shape[1])
    got = residual_gp.residual_process(z, mean, sigma, rows)
    want = _process_by_hand(z, mean, sigma, rows)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-7, atol=1e-9)
    assert np.isfinite(got[0][np.isnan(z[rows])]).all()
