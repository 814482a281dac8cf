"""Fits reused within a coreset-eval trial give exactly what fitting again gives."""

import numpy as np

from benchsel._reuse import reuse_fits, reused
from benchsel.coreset.registry import make_method
from benchsel.evaluation.questions import run_trial


def _binary(seed=0, m=40, n=120):
    rng = np.random.default_rng(seed)
    ability, difficulty = rng.normal(size=(m, 1)), rng.normal(size=(1, n))
    return (rng.random((m, n)) < 1 / (1 + np.exp(difficulty - ability))).astype(float)


def _counting_draw(calls):
    def compute(x, rng):
        calls.append(1)
        return {"draw": rng.random(3) + x.sum()}
    return compute


def test_outside_a_scope_every_call_computes():
    calls = []
    compute = _counting_draw(calls)
    x = np.ones(4)
    for _ in range(2):
        rng = np.random.default_rng(0)
        reused("t", lambda rng=rng: compute(x, rng), x, rng=rng)
    assert len(calls) == 2


def test_a_reuse_returns_a_copy_and_leaves_the_generator_where_computing_would():
    calls = []
    compute = _counting_draw(calls)
    x = np.arange(5.0)
    with reuse_fits():
        first_rng = np.random.default_rng(7)
        first = reused("t", lambda: compute(x, first_rng), x, rng=first_rng, k=1)
        first["draw"][:] = -1.0  # the caller's copy; the kept one is untouched
        again_rng = np.random.default_rng(7)
        again = reused("t", lambda: compute(x, again_rng), x, rng=again_rng, k=1)
        assert len(calls) == 1
        fresh_rng = np.random.default_rng(7)
        want = compute(x, fresh_rng)
        np.testing.assert_array_equal(again["draw"], want["draw"])
        assert again_rng.random() == fresh_rng.random()
        # Another generator state, other arrays or other parameters: computed anew.
        reused("t", lambda: compute(x, first_rng), x, rng=first_rng, k=1)
        other = np.random.default_rng(7)
        reused("t", lambda: compute(x + 1, other), x + 1, rng=other, k=1)
        other = np.random.default_rng(7)
        reused("t", lambda: compute(x, other), x, rng=other, k=2)
        assert len(calls) == 5
    calls.clear()
    rng = np.random.default_rng(7)
    reused("t", lambda: compute(x, rng), x, rng=rng, k=1)
    assert calls == [1]  # the scope's fits are gone with it


def test_methods_sharing_a_fit_match_their_own_fit():
    source, target = _binary(1), _binary(2, m=6)
    names = ["anchor-points-weighted", "anchor-points-predictor", "anchor-points-weighted++",
             "p-irt", "gp-irt", "gp-irt++"]
    alone = {}
    for name in names:
        method = make_method(name, n_questions=10, random_state=3).fit(source)
        alone[name] = method.selected_, method.predict(target[:, method.selected_])
    with reuse_fits():
        for name in names:
            method = make_method(name, n_questions=10, random_state=3).fit(source)
            selected, (mean, sd) = alone[name]
            np.testing.assert_array_equal(method.selected_, selected)
            got_mean, got_sd = method.predict(target[:, method.selected_])
            np.testing.assert_array_equal(got_mean, mean)
            np.testing.assert_array_equal(got_sd, sd)


def test_a_trial_is_the_same_whichever_methods_run_beside():
    values = _binary(4, m=50)
    both = run_trial(values, "interpolation", None, 0, 0,
                     ["anchor-points-weighted", "anchor-points-weighted+"], 10)
    single = run_trial(values, "interpolation", None, 0, 0, ["anchor-points-weighted+"], 10)
    for got, want in zip(both["anchor-points-weighted+"], single["anchor-points-weighted+"]):
        if isinstance(want, np.ndarray):
            np.testing.assert_array_equal(got, want)
