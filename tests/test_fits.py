"""The fits ``auto`` makes on source rows: each against an obviously correct
reference, and the choice's use of them (one fit per board, whatever is given)."""

import warnings

import numpy as np
import pytest
from _cache import kept_fits

from benchsel import GaussianModel, ScoreMatrix, load_dataset
from benchsel.gaussian.covariance import estimate_covariance
from benchsel.matrix import Standardizer
from benchsel.prediction import choose_completer, complete_new_rows
from benchsel.prediction.cache import CompletionCache
from benchsel.prediction.choice import auto_candidates
from benchsel.prediction.completers import complete_ridge
from benchsel.prediction.fits import INDUCTIVE, FitStore, GaussianFit, SvdFit, held_out_completion
from benchsel.prediction.holdout import choice_folds
from benchsel.prediction.latent import Latent, soft_impute


def _board():
    return load_dataset("bigcodebench").cleaned().values


def test_gaussian_fit_conditions_a_row_as_the_textbook_formula():
    values = _board()
    train, x = values[:100], values[100:104].copy()
    x[:, 3:] = np.nan
    x[1, 1] = np.nan  # another pattern
    fit = GaussianFit(train, "em-shrink")
    got = fit.conditional(x)
    # By hand: standardize on train, the same covariance, mu_b + S_ba S_aa^-1 (x_a - mu_a).
    std = Standardizer.fit(train)
    z = std.transform(train)
    est = estimate_covariance(z, "em-shrink")
    for i, row in enumerate(std.transform(x)):
        a = ~np.isnan(row)
        b = ~a
        s_aa = est.covariance[np.ix_(a, a)]
        s_ba = est.covariance[np.ix_(b, a)]
        mu = est.mean[b] + s_ba @ np.linalg.solve(s_aa, row[a] - est.mean[a])
        var = np.diag(est.covariance[np.ix_(b, b)] - s_ba @ np.linalg.solve(s_aa, s_ba.T))
        np.testing.assert_allclose(got.mean[i, b], mu * std.scale[b] + std.mean[b], rtol=1e-8)
        np.testing.assert_allclose(got.std[i, b], np.sqrt(var) * std.scale[b], rtol=1e-8)
        np.testing.assert_array_equal(got.mean[i, a], x[i, a])  # given cells stay
        assert np.all(got.std[i, a] == 0)


def test_svd_fold_in_is_the_conditional_of_its_low_rank_gaussian():
    values = _board()
    train, x = values[:100], values[100:104].copy()
    x[:, 2:] = np.nan  # two given scores, as many as the rank
    x[1, 1] = np.nan  # and one
    fit = SvdFit(train)
    got = fit.fold_in(x)
    # By hand: the source's rank-2 subspace, its rows' coordinates in it, the
    # residual variance of each column; the Gaussian V c + noise, conditioned.
    lat = Latent(train)
    recon, rmse = soft_impute(lat.z)
    v = np.linalg.svd(recon, full_matrices=False)[2][:2].T
    coords = recon @ v
    mean = v @ coords.mean(axis=0)
    cov = v @ np.cov(coords, rowvar=False) @ v.T + np.diag(np.maximum(rmse**2, 1e-6))
    z = lat.std.transform(lat._forward(x))
    for i, row in enumerate(z):
        a = ~np.isnan(row)
        want = mean[~a] + cov[np.ix_(~a, a)] @ np.linalg.solve(cov[np.ix_(a, a)],
                                                              row[a] - mean[a])
        full = np.zeros(z.shape[1])
        full[~a] = want
        np.testing.assert_allclose(got.mean[i, ~a], lat.back(full[None])[0, ~a], rtol=1e-8)
        var = np.diag(cov[np.ix_(~a, ~a)]
                      - cov[np.ix_(~a, a)] @ np.linalg.solve(cov[np.ix_(a, a)], cov[np.ix_(a, ~a)]))
        sd = np.zeros(z.shape[1])
        sd[~a] = np.sqrt(var)
        np.testing.assert_allclose(
            got.std[i, ~a], lat.back_std(full[None], sd[None])[0, ~a], rtol=1e-8)
        np.testing.assert_array_equal(got.mean[i, a], x[i, a])


def test_choice_folds_hold_out_the_same_models_whatever_is_given():
    values = _board()
    one, two = np.zeros(values.shape[1], bool), np.zeros(values.shape[1], bool)
    one[[0, 3]] = True
    two[[1, 2, 5]] = True
    for split in ("random", "near"):
        a, b = choice_folds(values, one, split), choice_folds(values, two, split)
        assert len(a) == len(b) > 0
        for (held_a, hidden_a), (held_b, hidden_b) in zip(a, b):
            np.testing.assert_array_equal(held_a, held_b)
            assert not (hidden_a & one).any() and not (hidden_b & two).any()
            assert not hidden_a[~held_a].any()


@pytest.mark.parametrize("method", ["gaussian", "gaussian-em", "svd", "gaussian+svd"])
def test_a_fold_scores_the_method_as_predict_completes_a_new_model(method):
    # The choice's held-out models are predicted exactly as complete_new_rows
    # predicts a new model from the models the fold kept.
    values = _board()
    given = np.zeros(values.shape[1], bool)
    given[[0, 3]] = True
    held, hidden = choice_folds(values, given, "random")[0]
    got = held_out_completion(values, held, hidden, method, FitStore(), None)
    rows = np.flatnonzero(hidden.any(axis=1))
    want = complete_new_rows(values[~held], np.where(hidden[rows], np.nan, values[rows]), method)
    np.testing.assert_array_equal(got.mean[rows][hidden[rows]], want.mean[hidden[rows]])
    np.testing.assert_array_equal(got.std[rows][hidden[rows]], want.std[hidden[rows]])


def test_a_second_set_of_given_benchmarks_reuses_every_fit():
    values = _board()
    one, two = np.zeros(values.shape[1], bool), np.zeros(values.shape[1], bool)
    one[[0, 3]] = True
    two[[1, 2, 5]] = True
    store = FitStore()
    for split in ("random", "near"):
        choose_completer(values, given=one, split=split, fits=store)
    fitted = len(store)
    assert fitted > 0
    for split in ("random", "near"):
        kept = choose_completer(values, given=two, split=split, fits=store)
        assert kept == choose_completer(values, given=two, split=split)  # a fresh store
    assert len(store) == fitted
    assert set(INDUCTIVE) & set(auto_candidates(values)) <= set(kept.medape)


def test_auto_leaves_plain_em_to_complete_boards():
    # On a board with a missing cell the plain EM Gaussian is not compared, and
    # nothing fits it: its EM would run to its cap.
    values = _board()
    assert np.isnan(values).any()
    store = FitStore()
    choice = choose_completer(values, given=np.arange(values.shape[1]) < 2, fits=store)
    assert "gaussian-em" not in choice.medape and "gaussian" in choice.medape
    assert "em" not in {kind for kind, _, _ in store._fits}
    complete = np.where(np.isnan(values), np.nanmean(values, axis=0), values)
    assert "gaussian-em" in auto_candidates(complete)
    assert "gaussian-em" in choose_completer(complete, given=np.arange(values.shape[1]) < 2).medape


def test_a_fit_asked_for_by_auto_and_by_its_name_is_made_once():
    # gp's base asks for "auto", gaussian for "em-shrink": on a board with missing
    # cells they are one fit, and the same numbers as a fit asked for by name.
    values = _board()
    store = FitStore()
    by_auto = store.get(values, "auto")
    assert store.get(values, "em-shrink") is by_auto and len(store) == 1
    named = GaussianFit(values, "em-shrink")
    np.testing.assert_array_equal(by_auto.covariance, named.covariance)
    np.testing.assert_array_equal(GaussianFit(values, "auto").covariance, named.covariance)


def _same_store(got: FitStore, want: FitStore, keys=None) -> None:
    keys = list(got._fits) if keys is None else keys
    assert keys and set(keys) <= set(want._fits)
    for key in keys:
        mine, theirs = got._fits[key].arrays(), want._fits[key].arrays()
        assert mine.keys() == theirs.keys()
        for name in mine:
            np.testing.assert_array_equal(mine[name], theirs[name], err_msg=f"{key[0]} {name}")


def _same_predictions(got: FitStore, want: FitStore, values: np.ndarray) -> None:
    """Each fit of ``got`` predicts what ``want``'s fit of the same rows predicts.

    A rebuild cannot promise the bits of an iterative fit: EM stops once the
    covariance changes by less than 1e-5 (relatively) in an iteration, and
    converging at a rate of up to 0.99 per iteration it may stop up to
    1e-5 * 0.99 / 0.01 = 1e-3 from its limit, wherever rounding takes the
    path (another BLAS, another number of threads: the first fold's MERGED
    fits made with one thread differ from the shipped ones by up to 3e-4 in
    standard units; ``benchmarks/cache_checks.py --rebuild`` shows every fit).
    What a user sees is compared instead: the predictions of the board's
    models from every other score, to 2e-3 of each column's spread. A stale
    fit (a rule changed without :data:`~benchsel.prediction.memo.RULES`)
    moves them by far more. The column statistics the fits standardize by
    are direct sums, equal to rounding.
    """
    x = values.copy()
    x[::2, ::2] = np.nan
    x[1::2, 1::2] = np.nan
    spread = np.nanstd(values, axis=0)
    keys = list(got._fits)
    assert keys and set(keys) <= set(want._fits)
    for key in keys:
        mine, theirs = got._fits[key], want._fits[key]
        a, b = mine.arrays(), theirs.arrays()
        np.testing.assert_array_equal(a["std_constant"], b["std_constant"], err_msg=key[0])
        for name in ("std_mean", "std_scale"):
            np.testing.assert_allclose(a[name], b[name], rtol=1e-12, err_msg=f"{key[0]} {name}")
        predict = "fold_in" if key[0] == "svd" else "conditional"
        p, q = getattr(mine, predict)(x), getattr(theirs, predict)(x)
        for part in ("mean", "std"):
            mine_part, their_part = getattr(p, part), getattr(q, part)
            np.testing.assert_array_equal(np.isnan(mine_part), np.isnan(their_part))
            off = np.abs(mine_part - their_part) / np.where(spread > 0, spread, 1.0)
            assert np.nanmax(off, initial=0.0) <= 2e-3, \
                f"{key[0]} {part}: off by {np.nanmax(off):.2e} of a column's spread"


def test_the_shipped_fits_are_what_each_board_gives_today():
    # Stale files (a fitting method changed, RULES not raised) would make a
    # prediction depend on whether the board is bundled: recompute and compare.
    import json
    from importlib import resources

    from benchsel.prediction.memo import RULES
    from benchsel.prediction.shipped import board_fits, shipped_fits

    folder = resources.files("benchsel.datasets").joinpath("fits")
    index = json.loads(folder.joinpath("index.json").read_text())
    assert index["rules"] == RULES
    boards = sorted(v.removesuffix(".npz") for v in index["boards"].values())
    assert {"mteb", "merged", "open_llm_v2", "helm_lite"} <= set(boards)
    for name in boards:
        model = GaussianModel().fit(load_dataset(name))
        shipped = shipped_fits(model.scores_)
        assert shipped is not None and len(shipped) > 0, name
        fresh = GaussianModel().fit(load_dataset(name))
        fresh.auto_memo.fits = FitStore()
        values = model.scores_.values
        if name in ("helm_lite", "bigcodebench", "wildbench"):  # all of it, seconds
            _same_predictions(board_fits(fresh), shipped, values)
            assert len(fresh.auto_memo.fits) == len(shipped)
        elif name in ("mteb", "merged", "open_llm_v2"):  # the first random fold's fits
            from benchsel.prediction.cache import CompletionCache

            given = np.zeros(values.shape[1], bool)
            given[0] = True
            held, hidden = choice_folds(values, given, "random")[0]
            methods = ["gaussian"] if name == "open_llm_v2" else ["gaussian-em", "svd", "gp"]
            for method in methods:
                held_out_completion(values, held, hidden, method, fresh.auto_memo.fits,
                                    CompletionCache())
            _same_predictions(fresh.auto_memo.fits, shipped, values)


def test_the_cli_uses_the_shipped_fits_and_keeps_its_own_elsewhere(tmp_path, monkeypatch,
                                                                   capsys):
    from benchsel.cli import main

    monkeypatch.setenv("BENCHSEL_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["predict", "helm_lite", "--observed", "MMLU=0.7,GSM8K=0.6", "--json"]) == 0
    # Every fit auto needed was shipped: nothing new to keep.
    assert not list((tmp_path / "cache").glob("fits/*.npz"))
    capsys.readouterr()
    frame = load_dataset("helm_lite").to_frame().iloc[1:]  # not a bundled board any more
    frame.to_csv(tmp_path / "board.csv")
    middle = frame.median()  # new models inside the sources' range: the random folds' fits
    spec = f"MMLU={middle['MMLU']},GSM8K={middle['GSM8K']}"
    assert main(["predict", str(tmp_path / "board.csv"), "--observed", spec, "--json"]) == 0
    first = capsys.readouterr().out
    kept = list((tmp_path / "cache").glob("fits/*.npz"))
    assert len(kept) == 1 and len(kept_fits(kept[0])) > 0
    # Another set of given benchmarks on that board reuses the fits made before: it
    # makes fewer than it makes alone (the calibration's depend on the method chosen).
    first_fits = kept_fits(kept[0])
    other = ["--observed", f"MedQA={middle['MedQA']}", "--json"]
    assert main(["predict", str(tmp_path / "board.csv"), *other]) == 0
    both = kept_fits(kept[0])
    assert set(first_fits._fits) < set(both._fits)
    monkeypatch.setenv("BENCHSEL_CACHE_DIR", str(tmp_path / "alone"))
    assert main(["predict", str(tmp_path / "board.csv"), *other]) == 0
    alone = kept_fits(next((tmp_path / "alone").glob("fits/*.npz")))
    assert len(both) - len(first_fits) < len(alone)
    _same_store(alone, both)
    monkeypatch.setenv("BENCHSEL_CACHE_DIR", str(tmp_path / "cache"))
    kept[0].write_bytes(b"not a zip")  # a damaged file is as good as none
    for path in (tmp_path / "cache").glob("auto/*.json"):
        path.unlink()
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "board.csv"), "--observed", spec, "--json"]) == 0
    assert capsys.readouterr().out == first
    assert len(kept_fits(kept[0])) > 0  # written anew


def test_a_bundled_boards_cache_keeps_only_the_fits_the_package_does_not_ship(tmp_path,
                                                                             monkeypatch):
    # The shipped fits come with the package: copying them into a user's cache
    # whenever one new fit is made would write MERGED's 2.3 MB again per board.
    from benchsel import GaussianModel
    from benchsel.prediction.memo import load_cached, save_cached

    monkeypatch.setenv("BENCHSEL_CACHE_DIR", str(tmp_path))
    model = GaussianModel().fit(load_dataset("helm_lite"))
    shipped = len(model.auto_memo.fits)
    assert shipped > 0
    new = model.auto_memo.fits.get(model.scores_.values[:20], "svd")  # not shipped
    save_cached(model)
    kept = kept_fits(next(tmp_path.glob("fits/*.npz")))
    assert len(kept) == 1
    np.testing.assert_array_equal(next(iter(kept._fits.values())).basis, new.basis)
    again = GaussianModel().fit(load_dataset("helm_lite"))
    load_cached(again)
    assert len(again.auto_memo.fits) == shipped + 1 and again.auto_memo.fits.unsaved == 0


def test_a_fits_file_that_is_not_ours_is_refused_with_its_path_and_entry(tmp_path):
    values = _board()
    store = FitStore()
    store.get(values[:50], "em-shrink")
    store.get(values[:50], "svd")
    path = tmp_path / "fits.npz"
    store.save(path)
    again = FitStore.load(path)
    _same_store(again, store)
    with np.load(path) as f:
        arrays = dict(f)
    bad = dict(arrays)
    bad["0.covariance"] = bad["0.covariance"][:-1]
    np.savez(tmp_path / "bad.npz", **bad)
    with pytest.raises(ValueError, match=r"bad\.npz: fit 0\.covariance: shape"):
        FitStore.load(tmp_path / "bad.npz")
    bad = dict(arrays, index=np.array('[["magic", [50, 6], "00"]]'))
    np.savez(tmp_path / "bad.npz", **bad)
    with pytest.raises(ValueError, match=r"bad\.npz: fit 0: expected \[kind"):
        FitStore.load(tmp_path / "bad.npz")
    bad = {k: v for k, v in arrays.items() if k != "1.basis"}
    np.savez(tmp_path / "bad.npz", **bad)
    with pytest.raises(ValueError, match=r"bad\.npz: fit 1\.basis: missing"):
        FitStore.load(tmp_path / "bad.npz")


def test_a_row_at_the_score_bound_keeps_error_bars_of_positive_width():
    """Folded in at GPQA = MUSR = 1.0, a row's latent prediction lies so deep in the
    logit's flat tail that its slope underflowed: standard deviations of 0 and the
    interval [1, 1] for cells no one observed, whatever the calibration multiplied."""
    scores = load_dataset("open_llm_v2")
    x = np.full((1, scores.n_items), np.nan)
    x[0, [scores.items.index("GPQA"), scores.items.index("MUSR")]] = 1.0
    std = SvdFit(scores.values).fold_in(x).std
    hidden = np.isnan(x)
    assert (std[hidden] > 0.01).all(), std
    p = GaussianModel().fit(scores).predict({"GPQA": 0.9, "MUSR": 0.9}, method="svd")
    width = (p.high - p.low)[~np.asarray(p.observed, dtype=bool)]
    assert (width > 0.05).all(), width


def test_ridge_asked_for_some_rows_predicts_them_as_the_whole_completion():
    # A held-out fold reads the rows that hide cells: ridge predicts those alone,
    # fitted on every row, the same numbers as completing the whole matrix.
    values = load_dataset("merged").values
    rows = np.zeros(values.shape[0], bool)
    rows[np.random.default_rng(0).choice(values.shape[0], 20, replace=False)] = True
    whole = complete_ridge(values)
    cache = CompletionCache()
    some = cache.get(values, "ridge", rows)
    np.testing.assert_array_equal(some.mean[rows], whole.mean[rows])
    np.testing.assert_array_equal(some.std[rows], whole.std[rows])
    assert np.isnan(some.mean[~rows][np.isnan(values[~rows])]).all()
    # A whole completion asked for later is not the partial one, and blends keep rows apart.
    np.testing.assert_array_equal(cache.get(values, "ridge").mean, whole.mean)
    both = cache.get(values, "svd+ridge", rows)
    np.testing.assert_array_equal(cache.get(values, "svd+ridge").mean[rows], both.mean[rows])
    # A method that completes every row keeps one entry whatever the rows.
    assert cache.get(values, "mean", rows) is cache.get(values, "mean")


def test_a_subsampled_frontier_split_is_fitted_on_its_own_models(monkeypatch):
    # Above MAX_MODELS the frontier split is drawn within a subsample; the fit auto's
    # store shares must be of that split's models, as the calibrator's own fit is.
    from benchsel.datasets.synthetic import synthetic_board
    from benchsel.models import calibrator as calibrator_module
    from benchsel.models.calibrator import GaussianCalibrator

    monkeypatch.setattr(calibrator_module, "MAX_MODELS", 300)
    scores = synthetic_board(n_models=400, n_items=8, rank=2, top_drift=1.5, missing=0.05,
                             seed=3)
    model = GaussianModel().fit(scores)
    given = np.arange(8) < 2
    shared = model._calibrator_for_predict()
    assert shared._shared is not None
    own = GaussianCalibrator(model._z, start=(model.estimate_.mean, model.estimate_.covariance))
    want = own.frontier_shift(given)
    assert np.abs(want).max() > 1  # the strongest pull ahead on some benchmarks
    np.testing.assert_allclose(shared.frontier_shift(given), want, atol=0.05)


def test_ridge_rows_may_be_indices():
    values = load_dataset("merged").values
    rows = np.array([3, 10, 40])
    mask = np.isin(np.arange(values.shape[0]), rows)
    by_index = CompletionCache().get(values, "ridge", rows)
    np.testing.assert_array_equal(by_index.mean, CompletionCache().get(values, "ridge", mask).mean)


def test_a_models_own_fit_of_its_board_is_the_fit_auto_would_make():
    # Not a bundled board (no shipped fits): the model's EM fit is adopted by its
    # store, and it is the fit the store would make of the same rows: the same EM on
    # the same standardized scores, which agree to rounding (MERGED's EM stops at
    # its cap, where rounding shows at 1e-7).
    values = load_dataset("merged").values[1:]
    scores = ScoreMatrix(values, [f"m{i}" for i in range(len(values))],
                                  [f"b{j}" for j in range(values.shape[1])])
    model = GaussianModel().fit(scores)
    assert model.estimate_.method == "em-shrink"
    store = model.auto_memo.fits
    assert len(store) == 1
    own = store.get(model.scores_.values, "em-shrink")
    made = GaussianFit(model.scores_.values, "em-shrink")
    for name, array in made.arrays().items():
        np.testing.assert_allclose(own.arrays()[name], array, rtol=1e-5, atol=1e-6,
                                   err_msg=name)
    assert len(store) == 1
    # A transform fits other numbers: nothing adopted.
    assert len(GaussianModel(transform="logit").fit(scores).auto_memo.fits) == 0


def _factor_model_after_a_prediction(values: np.ndarray) -> GaussianModel:
    """The default model of ``values`` (EM's cost cap set by the caller so that it is a
    factor model), after one default prediction of a new model given two benchmarks."""
    scores = ScoreMatrix(values, [f"m{i}" for i in range(len(values))],
                         [f"b{j}" for j in range(values.shape[1])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = GaussianModel().fit(scores)
        assert model.estimate_.method == "factor"
        model.predict({f"b{j}": float(np.nanmean(values[:, j])) for j in (0, 3)})
    return model


def test_the_folds_of_a_factor_board_keep_its_rank(monkeypatch):
    # Where EM is out of reach the board is a factor model, its rank chosen on its
    # held-out cells; auto's fold fits take that rank rather than choosing again.
    import benchsel.gaussian.covariance as covariance
    from benchsel._lowrank import FactorCovariance

    monkeypatch.setattr(covariance, "EM_MAX_FLOPS", 1.0)
    model = _factor_model_after_a_prediction(load_dataset("mteb").values)
    factors = [fit.covariance for (kind, _, _), fit in model.auto_memo.fits._fits.items()
               if kind == "factor"]
    assert len(factors) >= 3  # the choice's folds
    assert all(isinstance(f, FactorCovariance) and f.rank == model.estimate_.rank
               for f in factors)


def test_the_folds_of_a_board_too_wide_for_em_are_factor_models_too(monkeypatch):
    # EM's cost cap just below the board's: the board is a factor model, and a
    # fold of fewer rows would fall within the cap. Its fits stay factor models
    # (on 300 x 1,000 a fold's EM took hours where the factor model takes seconds).
    import benchsel.gaussian.covariance as covariance

    values = load_dataset("mteb").values
    monkeypatch.setattr(covariance, "EM_MAX_FLOPS",
                        covariance.em_iteration_flops(~np.isnan(values)) - 1)
    assert covariance.em_affordable(~np.isnan(values[: len(values) * 2 // 3]))
    model = _factor_model_after_a_prediction(values)
    kinds = [kind for kind, _, _ in model.auto_memo.fits._fits]
    assert kinds.count("factor") >= 3 and "em-shrink" not in kinds
