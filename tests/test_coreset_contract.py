"""Every question-level method keeps scikit-learn's estimator contract.

Constructor parameters round-trip through ``get_params``/``set_params``/
``clone``; nothing but ``fit`` changes a method; using it before ``fit``
raises :class:`benchsel.exceptions.NotFittedError`; ``fit`` checks its input
and parameters, naming them.
"""

import pickle

import numpy as np
import pytest
import sklearn.exceptions
from sklearn.base import BaseEstimator, clone

import benchsel
import benchsel.gaussian
from benchsel.coreset._base import CoresetMethod
from benchsel.coreset.calibrated import Calibrated
from benchsel.coreset.refit import Refit
from benchsel.coreset.registry import METHODS, make_method, method_names
from benchsel.exceptions import NotFittedError

#: Every registered method, the papers' refits, a ridge refit and the default.
NAMES = ["default", *method_names("all"), "random-sampling+"]
#: Settings that keep the slow methods quick on a small matrix.
SMALL = {"n_search": 200, "n_pilot": 20, "steps": 100}


def irt_scores(m=40, n=60, seed=0):
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=(m, 1))
    difficulty = rng.normal(size=(1, n))
    return (rng.random((m, n)) < 1 / (1 + np.exp(-1.5 * (ability - difficulty)))).astype(float)


def small(method: CoresetMethod, **params) -> CoresetMethod:
    """``method`` with ``params`` and :data:`SMALL` where it has those parameters."""
    names = method.get_params()
    for key, value in SMALL.items():
        for name in (key, f"estimator__{key}"):
            if name in names:
                params.setdefault(name, value)
    return method.set_params(**params)


def plain(method) -> dict:
    """``get_params()`` with nested estimators given by their own parameters (which the
    deep parameters list) instead of by identity."""
    return {k: (type(v), v.get_params()) if isinstance(v, BaseEstimator) else v
            for k, v in method.get_params().items()}


def test_the_registry_lists_every_method_family():
    assert all(issubclass(cls, CoresetMethod) for cls in METHODS.values())
    assert issubclass(Refit, CoresetMethod) and issubclass(Calibrated, CoresetMethod)
    assert issubclass(CoresetMethod, BaseEstimator)
    assert benchsel.NotFittedError is NotFittedError
    assert benchsel.exceptions.NotFittedError is NotFittedError


@pytest.mark.parametrize("name", NAMES)
def test_get_params_set_params_and_clone_round_trip(name):
    method = make_method(name)
    params = method.get_params(deep=False)
    assert {"n_questions", "random_state"} <= set(params)
    assert params["n_questions"] is None and params["random_state"] is None
    # Every constructor argument is stored under its own name.
    again = type(method)(**params)
    assert again.get_params(deep=False) == params
    tuned = make_method(name, n_questions=7, random_state=3)
    assert tuned.n_questions == 7 and tuned.random_state == 3
    copy = clone(tuned)
    assert copy is not tuned and plain(copy) == plain(tuned)
    assert copy.name == tuned.name
    assert plain(method.set_params(**tuned.get_params(deep=False))) == plain(tuned)
    assert "n_questions=7" in repr(tuned)


def test_make_method_passes_nested_parameters_and_refuses_unknown_ones():
    refit = make_method("mrmr++", n_questions=5, estimator__scheme="mid", gamma=0.5)
    assert (refit.estimator.scheme, refit.gamma, refit.name) == ("mid", 0.5, "mrmr++")
    assert clone(refit).estimator.scheme == "mid"
    with pytest.raises(ValueError, match="colour"):
        make_method("aipw", colour="red")


@pytest.mark.parametrize("name", NAMES)
def test_predict_and_fitted_attributes_before_fit_raise_not_fitted(name):
    method = make_method(name, n_questions=5, random_state=0)
    x = np.zeros((2, 5))
    for call in (lambda: method.predict(x), lambda: method.design_based(x),
                 lambda: method.selected_):
        with pytest.raises(NotFittedError, match="not fitted yet; call fit"):
            call()
    # scikit-learn's two bases: hasattr and getattr with a default work as usual.
    assert not hasattr(method, "selected_")
    assert getattr(method, "selected_", "none") == "none"
    with pytest.raises(NotFittedError) as info:
        method.predict(x)
    assert isinstance(info.value, ValueError) and isinstance(info.value, AttributeError)


def test_a_fitted_method_lacking_an_attribute_raises_a_plain_attribute_error():
    method = make_method("random-sampling", n_questions=5, random_state=0).fit(irt_scores())
    with pytest.raises(AttributeError) as info:
        method.strata_  # a uniform draw has no strata  # noqa: B018
    assert not isinstance(info.value, NotFittedError)


@pytest.mark.parametrize("name", NAMES)
def test_fit_returns_self_and_predict_changes_nothing(name):
    x = irt_scores()
    source = x[:30].copy()
    method = small(make_method(name), n_questions=6, random_state=1)
    params = plain(method)
    assert method.fit(source) is method
    np.testing.assert_array_equal(source, x[:30])  # the input is not modified
    assert plain(method) == params  # nor are the parameters
    before = pickle.dumps(vars(method))
    rows = x[30:][:, method.selected_]
    first = method.predict(rows)
    method.design_based(rows)
    assert pickle.dumps(vars(method)) == before
    second = method.predict(rows)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", NAMES)
def test_an_int_random_state_makes_fits_repeatable(name):
    x = irt_scores()
    first = small(make_method(name), n_questions=6, random_state=4).fit(x[:30])
    second = clone(first).fit(x[:30])
    np.testing.assert_array_equal(first.selected_, second.selected_)
    rows = x[30:][:, first.selected_]
    np.testing.assert_array_equal(first.predict(rows)[0], second.predict(rows)[0])


@pytest.mark.parametrize("name", ["default", "aipw", "mrmr++", "pca"])
def test_a_generator_random_state_draws_as_the_same_seed(name):
    x = irt_scores()
    seeded = make_method(name, n_questions=6, random_state=9).fit(x[:30])
    drawn = make_method(name, n_questions=6, random_state=np.random.default_rng(9)).fit(x[:30])
    np.testing.assert_array_equal(seeded.selected_, drawn.selected_)


@pytest.mark.parametrize("name", NAMES)
def test_fit_checks_its_input_and_names_the_parameter(name):
    x = irt_scores(m=20, n=30)
    method = small(make_method(name), random_state=0)
    with pytest.raises(ValueError, match=r"n_questions must be a whole number in \[1, 29\]; "
                                         "got None"):
        clone(method).fit(x)
    with pytest.raises(ValueError, match=r"n_questions must be in \[1, 29\]; got 30"):
        clone(method).set_params(n_questions=30).fit(x)
    with pytest.raises(ValueError, match="n_questions must be a whole number.*got 2.5"):
        clone(method).set_params(n_questions=2.5).fit(x)
    with pytest.raises(ValueError, match="random_state must be a non-negative int, a "
                                         "numpy.random.Generator or None; got 'seed'"):
        clone(method).set_params(n_questions=5, random_state="seed").fit(x)
    bad = x.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="complete and finite"):
        clone(method).set_params(n_questions=5).fit(bad)
    with pytest.raises(ValueError, match="2-D"):
        clone(method).set_params(n_questions=5).fit(x[0])
    fitted = clone(method).set_params(n_questions=5).fit(x)
    with pytest.raises(ValueError, match=r"x_selected must have shape \(models, 5\)"):
        fitted.predict(x[:, :4])
    with pytest.raises(ValueError, match="x_selected must be complete and finite"):
        fitted.predict(np.full((1, 5), np.nan))


def test_parameters_are_checked_by_fit_not_the_constructor():
    x = irt_scores(m=20, n=30)
    for name, params, message in [
        ("guarded-ensemble", dict(guard_level=1.0), "guard_level must be in"),
        ("mrmr", dict(scheme="max"), "scheme must be one of"),
        ("anchor-points-weighted", dict(metric="manhattan"), "metric must be one of"),
        ("mrmr+", dict(kind="+++"), "kind must be one of"),
    ]:
        method = make_method(name, n_questions=5, **params)  # stores, does not check
        with pytest.raises(ValueError, match=message):
            method.fit(x)


def test_calibrated_clones_its_estimator_and_follows_its_settings():
    x = irt_scores()
    estimator = make_method("aipw", n_questions=6, random_state=2)
    cal = Calibrated(estimator, level=0.8)
    assert cal.get_params()["estimator__n_questions"] == 6
    copy = clone(cal)
    assert copy.estimator is not estimator and plain(copy) == plain(cal)
    cal.fit(x[:30])
    assert "selected_" not in vars(estimator)  # the estimator itself is never fitted
    assert cal.method_ is not estimator and cal.name == "aipw"
    alone = clone(estimator).fit(x[:30])
    np.testing.assert_array_equal(cal.selected_, alone.selected_)
    rows = x[30:][:, cal.selected_]
    np.testing.assert_array_equal(cal.predict(rows)[0], alone.predict(rows)[0])
    # Its own n_questions and random_state, where given, win over the estimator's.
    other = Calibrated(estimator, n_questions=4, random_state=5).fit(x[:30])
    assert other.method_.n_questions == 4 and len(other.selected_) == 4
    # The calibrated sd is the details' one; neither call changes the method.
    before = pickle.dumps(vars(cal))
    details = cal.predict_details(rows)
    np.testing.assert_array_equal(details.sd, cal.predict(rows)[1])
    assert pickle.dumps(vars(cal)) == before
    with pytest.raises(NotFittedError):
        Calibrated(estimator).predict_details(rows)


def test_not_fitted_error_has_scikit_learns_bases():
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)
    assert set(NotFittedError.__bases__) == set(sklearn.exceptions.NotFittedError.__bases__)
