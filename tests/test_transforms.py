"""The logit transform (App. K) through the model and the evaluation."""

import numpy as np
import pytest

from benchsel import GaussianModel, ScoreMatrix, load_dataset
from benchsel.cli import main
from benchsel.evaluation import cross_validate
from benchsel.transforms import make_transform


def test_logit_round_trip_and_untouched_columns():
    x = np.array([[0.2, 50.0, -1.0], [0.5, 80.0, 2.0], [0.4, np.nan, 0.5]])
    tf = make_transform("logit", x)
    assert tf.active.tolist() == [True, True, False]
    latent = tf.forward(x)
    np.testing.assert_allclose(latent[0, 0], np.log(0.4 / 0.6))  # 0.2 / max 0.5
    np.testing.assert_allclose(tf.inverse(latent)[:2], [[0.2, 50, -1], [0.4995, 79.92, 2]],
                               rtol=1e-12)  # the max is clipped to 1 - eps
    assert np.isnan(latent[2, 1])
    eps = 1e-6
    np.testing.assert_allclose(
        (tf.inverse(latent + eps) - tf.inverse(latent - eps)) / (2 * eps), tf.slope(latent),
        rtol=1e-6, equal_nan=True,
    )
    with pytest.raises(ValueError, match="transform must be one of"):
        make_transform("log", x)


def test_logit_predictions_stay_in_range_and_intervals_are_ordered():
    data = load_dataset("helm_lite")
    model = GaussianModel(transform="logit").fit(data)
    pred = model.predict({"GSM8K": 0.9, "MMLU": 0.8}, method="gaussian")
    top = np.nanmax(data.values, axis=0)
    for r in pred.records():
        j = data.items.index(r["benchmark"])
        assert 0 <= r["low"] <= r["mean"] <= r["high"] <= top[j] and r["std"] > 0


def test_cv_with_no_transform_is_unchanged_by_the_transform_path():
    data = load_dataset("wildbench")
    base = cross_validate(data, k_max=3, folds=5, predictor="gaussian")
    # "none" goes through the identity path; logit changes the numbers
    again = cross_validate(data, k_max=3, folds=5, transform="none", predictor="gaussian")
    logit = cross_validate(data, k_max=3, folds=5, transform="logit", predictor="gaussian")
    np.testing.assert_array_equal(base.r2["mi"], again.r2["mi"])
    assert not np.allclose(base.r2["mi"], logit.r2["mi"])
    assert all(0 <= r.interval_coverage <= 1 for r in logit.rows)


def test_cli_transform_option(capsys):
    assert main(["predict", "helm_lite", "--observed", "GSM8K=0.6", "--transform", "logit",
                 "--json"]) == 0
    assert main(["evaluate", "helm_lite", "--protocol", "oracle", "--transform", "logit"]) == 1
    assert "not supported" in capsys.readouterr().err


def test_constant_after_transform_is_left_out():
    x = np.array([[0.5, 1.0], [0.6, 2.0], [0.7, 3.0], [0.55, 4.0]])
    model = GaussianModel(transform="logit").fit(ScoreMatrix(x, list("abcd"), ["p", "q"]))
    assert model.items_ == ["p", "q"]
