"""benchsel budget: questions per selected benchmark and a total budget's allocation."""

import json

import numpy as np
import pytest

from benchsel import GaussianModel, ScoreMatrix, load_dataset
from benchsel.analyses.budget import question_budget, rest_variance
from benchsel.cli import main


@pytest.fixture(scope="module")
def helm():
    return GaussianModel().fit(load_dataset("helm_lite"))


def test_questions_needed_follow_the_conditional_variance(helm):
    sel = ["MMLU", "GSM8K", "MATH"]
    res = question_budget(helm, sel, fraction=0.2)
    sigma, idx = helm.covariance_, [helm.items_.index(s) for s in sel]
    for row, j in zip(res.rows, idx):
        others = [i for i in idx if i != j]
        cond = sigma[j, j] - sigma[j, others] @ np.linalg.solve(
            sigma[np.ix_(others, others)], sigma[others, j])
        assert row.conditional_variance == pytest.approx(cond)
        p = helm.mean_[j]
        assert row.questions_needed == int(np.ceil(p * (1 - p) / (0.2 * cond)))
    # A question count caps the need.
    capped = question_budget(helm, sel, fraction=0.2, questions={"MMLU": 10})
    assert capped.rows[0].questions_needed == min(10, res.rows[0].questions_needed)


def test_allocation_spends_the_budget_and_beats_an_equal_split(helm):
    sel = ["MMLU", "GSM8K", "MATH", "LegalBench"]
    res = question_budget(helm, sel, total=400)
    alloc = [r.allocated for r in res.rows]
    assert sum(alloc) == 400 and min(alloc) >= 1
    idx = [helm.items_.index(s) for s in sel]
    plan = [(float(np.clip(helm.mean_[j], 1e-3, 1 - 1e-3)), 1.0, None) for j in idx]
    assert res.rest_variance == pytest.approx(
        rest_variance(helm, idx, plan, dict(enumerate(alloc))))
    assert res.rest_variance <= rest_variance(helm, idx, plan, {k: 100 for k in range(4)})
    # More questions never hurt.
    assert rest_variance(helm, idx, plan, {k: 1000 for k in range(4)}) < res.rest_variance


def test_a_score_without_a_binomial_model_says_why():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(40, 3)) @ rng.normal(size=(3, 4))
    values[:, :3] = 1 / (1 + np.exp(-values[:, :3]))  # three accuracies, one raw score
    model = GaussianModel().fit(ScoreMatrix(values, [f"m{i}" for i in range(40)],
                                            ["a", "b", "c", "elo"]))
    res = question_budget(model, ["a", "elo"])
    assert res.rows[1].questions_needed is None and "binomial" in res.rows[1].reason
    with pytest.raises(ValueError, match="fraction"):
        question_budget(model, ["a"], fraction=0)


def test_cli_budget_json(capsys):
    assert main(["budget", "helm_lite", "-k", "3", "--total", "300", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    rows = payload["benchmarks"]
    assert len(rows) == 3 and sum(r["allocated"] for r in rows) == 300
    assert payload["rest_variance"] > 0


def test_scores_that_are_not_means_over_questions_get_no_count(capsys):
    """MTEB's STS and clustering scores are correlations and V-measures: no number of
    questions gives their noise (issue 30), unless --per-question says otherwise."""
    assert main(["budget", "mteb", "--select", "STS15,BiorxivClusteringS2S,"
                 "AmazonPolarityClassification", "--total", "500", "--json", "-q"]) == 0
    rows = {r["benchmark"]: r for r in json.loads(capsys.readouterr().out)["benchmarks"]}
    for name in ("STS15", "BiorxivClusteringS2S"):
        assert rows[name]["questions_needed"] is None and rows[name]["allocated"] is None
        assert "not a mean over questions" in rows[name]["reason"]
    assert rows["AmazonPolarityClassification"]["allocated"] == 500
    assert main(["budget", "mteb", "--select", "STS15,AmazonPolarityClassification",
                 "--per-question", "STS15", "--json", "-q"]) == 0
    rows = {r["benchmark"]: r for r in json.loads(capsys.readouterr().out)["benchmarks"]}
    assert rows["STS15"]["questions_needed"] > 0


def test_budget_table_explains_its_columns_and_units(capsys):
    assert main(["budget", "helm_lite", "-k", "2", "--total", "300", "-q"]) == 0
    out = capsys.readouterr().out
    assert "in score units squared" in out and "cond. variance: what the other" in out
    assert "(summed over them, score units squared)" in out


def test_question_counts_file_with_its_documented_header(tmp_path, capsys):
    path = tmp_path / "questions.csv"
    path.write_text("benchmark,questions\nGSM8K,1319\nMMLU,14042\n")
    assert main(["budget", "helm_lite", "--select", "GSM8K,MMLU", "--questions", str(path),
                 "--json", "-q"]) == 0
    rows = {r["benchmark"]: r for r in json.loads(capsys.readouterr().out)["benchmarks"]}
    assert rows["GSM8K"]["questions_available"] == 1319
    path.write_text("benchmark,questions\nGSM8K,13.5\n")
    assert main(["budget", "helm_lite", "--select", "GSM8K", "--questions", str(path)]) == 1
    assert "question count '13.5' for 'GSM8K' is not a positive whole number" in \
        capsys.readouterr().err
