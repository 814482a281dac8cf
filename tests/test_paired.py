"""Paired differences on shared questions (``compare --paired``), on real per-question data."""

from __future__ import annotations

import json
from importlib import resources
from math import comb
from pathlib import Path

import numpy as np
import pytest

from benchsel.analyses.paired import paired_difference
from benchsel.cli import main
from benchsel.io import read_scores

QUESTIONS = Path(str(resources.files("benchsel.datasets").joinpath("data", "questions")))
ARC = QUESTIONS / "openllm_arc_challenge.npz"


def mcnemar_reference(a_only: int, b_only: int) -> float:
    """Exact two-sided McNemar p-value, summed term by term."""
    n, k = a_only + b_only, min(a_only, b_only)
    tail = sum(comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def test_matches_a_direct_computation():
    scores = read_scores(ARC)
    a, b = scores.models[0], scores.models[5]
    result = paired_difference(scores, a, b)
    va, vb = scores.values[0], scores.values[5]
    d = [y - x for x, y in zip(va, vb)]
    n = len(d)
    mean = sum(d) / n
    sd = (sum((x - mean) ** 2 for x in d) / (n - 1)) ** 0.5
    assert result.questions == n
    assert result.difference == pytest.approx(mean, abs=1e-12)
    assert result.std == pytest.approx(sd / n ** 0.5, rel=1e-10)
    assert result.a_only == sum(x > y for x, y in zip(va, vb))
    assert result.b_only == sum(y > x for x, y in zip(va, vb))
    assert result.mcnemar_p == pytest.approx(mcnemar_reference(result.a_only, result.b_only))
    assert result.low < result.difference < result.high


def test_interval_covers_the_full_task_difference():
    """Truth known: the difference on all questions; each draw shows both models 100 of them."""
    scores = read_scores(ARC)
    rng = np.random.default_rng(0)
    hits = total = 0
    pairs = [(0, 1), (3, 40), (10, 100), (50, 51), (7, 150)]
    for i, j in pairs:
        truth = float(np.mean(scores.values[j] - scores.values[i]))
        for _ in range(200):
            cols = rng.choice(scores.n_items, 100, replace=False)
            sample = scores.subset(items=cols)
            r = paired_difference(sample, scores.models[i], scores.models[j])
            hits += r.low <= truth <= r.high
            total += 1
    coverage = hits / total
    # Sampling without replacement makes the interval slightly conservative.
    assert 0.85 <= coverage <= 0.97, coverage


def test_only_shared_questions_count():
    scores = read_scores(ARC).subset(models=[0, 1], items=np.arange(60))
    values = scores.values.copy()
    values[0, :10] = np.nan
    values[1, 10:20] = np.nan
    partial = scores._replace(values=values)
    r = paired_difference(partial, partial.models[0], partial.models[1])
    assert r.questions == 40
    full = paired_difference(scores.subset(items=np.arange(20, 60)), scores.models[0],
                             scores.models[1])
    assert r.difference == pytest.approx(full.difference)


def test_refuses_what_it_cannot_compare():
    scores = read_scores(ARC).subset(models=[0, 1], items=[0, 1])
    values = scores.values.copy()
    values[0, 0] = np.nan
    with pytest.raises(ValueError, match="share 1 question"):
        paired_difference(scores._replace(values=values), *scores.models)
    with pytest.raises(ValueError, match="not a model"):
        paired_difference(scores, "nobody", scores.models[0])


def test_cli_paired(capsys):
    scores = read_scores(ARC)
    a, b = scores.models[0], scores.models[5]
    assert main(["compare", str(ARC), "--models", f"{a},{b}", "--paired", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["paired"]
    direct = paired_difference(scores, a, b)
    assert out["difference"] == pytest.approx(direct.difference)
    assert out["model_a"] == a and out["model_b"] == b
    assert main(["compare", str(ARC), "--models", f"{a},{b}", "--paired"]) == 0
    assert "exact McNemar p" in capsys.readouterr().out
