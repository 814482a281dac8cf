"""Selection guarantees reported to the user: entropy certificates, MI oracle gaps,
-k auto, the non-monotone MI warning and bootstrap selection frequencies."""

import json
from itertools import combinations

import numpy as np
import pytest

from benchsel import GaussianModel, load_dataset
from benchsel.cli import main
from benchsel.evaluation.bootstrap import selection_frequency
from benchsel.selection.greedy import (
    EntropyObjective,
    entropy_certificate,
    mi_oracle_gap,
    mutual_information_of,
    run_greedy,
)

LOG_2PIE = np.log(2 * np.pi * np.e)


def _cov(n=9, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, 3))
    cov = a @ a.T + 0.3 * np.eye(n)
    d = np.sqrt(np.diag(cov))
    return cov / np.outer(d, d)


def _shifted_entropy(sigma, subset, shift):
    sub = sigma[np.ix_(subset, subset)]
    return 0.5 * (len(subset) * LOG_2PIE + np.linalg.slogdet(sub)[1]) + shift * len(subset)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_entropy_certificate_bounds_the_exhaustive_optimum(seed):
    sigma = _cov(seed=seed)
    k = 3
    sel = run_greedy(sigma, k, objective="entropy").indices
    cert = entropy_certificate(sigma, sel)
    shift = EntropyObjective(sigma).shift()
    assert cert["value"] == pytest.approx(_shifted_entropy(sigma, sel, shift), rel=1e-9)
    best = max(_shifted_entropy(sigma, list(s), shift) for s in combinations(range(9), k))
    assert cert["value"] <= best + 1e-9 <= cert["upper_bound"] + 1e-9
    assert cert["fraction"] == max(cert["data_fraction"], 1 - 1 / np.e)
    # Every marginal of the shifted objective is non-negative: it is monotone.
    assert all(_shifted_entropy(sigma, list(s), shift) >= -1e-9
               for s in combinations(range(9), 2))


def test_mi_oracle_gap_matches_brute_force_and_says_why_there_is_no_bound():
    sigma = _cov(seed=3)
    sel = run_greedy(sigma, 3, objective="mi").indices
    gap = mi_oracle_gap(sigma, sel)
    best = max(mutual_information_of(sigma, s) for s in combinations(range(9), 3))
    assert gap["fraction"] is None and "not monotone" in gap["reason"]
    assert gap["oracle_value"] == pytest.approx(best)
    assert 0 < gap["oracle_fraction"] <= 1
    big = mi_oracle_gap(_cov(n=40, seed=4), list(range(6)), max_subsets=1000)
    assert big["oracle_fraction"] is None and "too many" in big["oracle_reason"]


def test_mutual_information_of_matches_the_greedy_gains():
    sigma = _cov(seed=5)
    res = run_greedy(sigma, 4, objective="mi")
    assert mutual_information_of(sigma, res.indices) == pytest.approx(res.gains.sum(),
                                                                      rel=1e-8)


def test_k_auto_stops_before_the_first_non_positive_mi_gain():
    model = GaussianModel().fit(load_dataset("helm_lite"))
    full = run_greedy(model.estimate_.covariance, 10, objective="mi")
    first_bad = int(np.flatnonzero(full.gains <= 0)[0])
    # Unconstrained, as the greedy run it is compared with (Mean win rate may be chosen).
    auto = model.select("auto", keep_aggregates=True)
    assert auto.stopped_by == "no positive gain" and len(auto.items) == first_bad
    assert np.all(auto.gains > 0)
    with pytest.warns(UserWarning, match=f"not positive from pick {first_bad + 1}"):
        model.select(first_bad + 2, keep_aggregates=True)
    with pytest.raises(ValueError, match="objective='mi'"):
        model.select("auto", objective="entropy")


def test_selection_frequency_over_resamples():
    scores = load_dataset("helm_lite")
    shares, skipped = selection_frequency(scores, 3, bootstrap=15, seed=1,
                                          select_options={"objective": "mi"})
    assert skipped == 0
    assert all(0 < v <= 1 for v in shares.values())
    assert sum(shares.values()) == pytest.approx(3.0)  # three picks per resample
    with pytest.raises(ValueError, match="bootstrap"):
        selection_frequency(scores, 3, bootstrap=0)


def test_cli_select_json_carries_certificate_frequency_and_auto(capsys):
    assert main(["select", "helm_lite", "-k", "auto", "--bootstrap", "8", "--quiet",
                 "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["stopped_by"] == "no positive gain"
    assert set(payload["frequency"]) == set(payload["selected"])
    assert payload["certificate"]["objective"] == "mi"
    assert main(["select", "mteb", "-k", "4", "--objective", "entropy", "--json"]) == 0
    cert = json.loads(capsys.readouterr().out)["certificate"]
    assert 0 < cert["data_fraction"] <= 1 and cert["fraction"] >= 1 - 1 / np.e


def test_cli_k_rejects_other_words(capsys):
    with pytest.raises(SystemExit):
        main(["select", "helm_lite", "-k", "many"])
