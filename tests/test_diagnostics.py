"""Normality diagnostics against hand computations and known distributions."""

import json

import numpy as np
import pytest
from scipy import stats

from benchsel import ScoreMatrix, load_dataset
from benchsel.analyses import mardia, normality, shapiro_wilk_bh
from benchsel.cli import main


def test_mardia_by_hand():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3))
    c = x - x.mean(0)
    s = c.T @ c / 40
    d = c @ np.linalg.inv(s) @ c.T
    out = mardia(x)
    assert out["skewness"] == pytest.approx((d**3).sum() / 40**2)
    assert out["kurtosis"] == pytest.approx(np.mean(np.diag(d) ** 2))
    assert out["kurtosis_expected"] == 15.0
    assert out["skewness_p"] == pytest.approx(stats.chi2.sf(40 * out["skewness"] / 6, 10))


def test_gaussian_data_is_not_rejected_but_skewed_data_is():
    rng = np.random.default_rng(1)
    gauss = rng.multivariate_normal(np.zeros(4), np.eye(4) + 0.5, size=300)
    skewed = np.exp(gauss)
    names = [f"m{i}" for i in range(300)]
    ok = normality(ScoreMatrix(gauss, names, list("abcd")))
    bad = normality(ScoreMatrix(skewed, names, list("abcd")))
    assert ok.reject.sum() == 0 and ok.mardia["skewness_p"] > 0.01
    assert bad.reject.all() and bad.mardia["skewness_p"] < 1e-6


def test_bh_adjustment_matches_scipy_and_columns_are_skipped_when_untestable():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(30, 4))
    x[:, 1] = 3.0  # constant: untestable
    x[3:, 2] = np.nan  # three values only: still testable
    cols, w, p, q, reject = shapiro_wilk_bh(x)
    assert cols.tolist() == [0, 2, 3]
    np.testing.assert_allclose(q, stats.false_discovery_control(p))
    np.testing.assert_allclose(w[0], stats.shapiro(x[:, 0]).statistic)


def test_mteb_rejects_everywhere_as_in_the_paper():
    report = normality(load_dataset("mteb"))
    assert report.reject.sum() == 56 == len(report.items)
    worst = report.items[int(np.argmin(report.w))]
    assert worst == "SprintDuplicateQuestions" and np.min(report.w) == pytest.approx(0.46, abs=0.01)
    # 133 MTEB models have every task: enough for Mardia, which rejects too.
    assert report.mardia["n_models"] == 133 and report.mardia["kurtosis_p"] < 1e-10
    merged = normality(load_dataset("merged"))
    assert merged.reject.sum() == 60  # the paper's count (App. H.2)
    assert merged.mardia is None and "observed on every benchmark" in merged.mardia_note


def test_cli_diagnose_json(capsys):
    assert main(["diagnose", "helm_lite", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tested"] == 11 and out["mardia"]["n_models"] == 30
    json.dumps(out, allow_nan=False)
