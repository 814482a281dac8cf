"""The lm_eval_runs fixture: real lm-eval output for fake models of known skill."""

import json

import numpy as np
import pytest
from scipy.stats import spearmanr


def latest(folder, pattern):
    found = sorted(folder.glob(pattern))
    assert found, f"no {pattern} in {folder}"
    return found[-1]


def results_of(lm_eval_runs):
    return {m: json.loads(latest(lm_eval_runs.runs / m, "results_*.json").read_text())
            for m in lm_eval_runs.skills}


def samples_of(folder, task):
    path = latest(folder, f"samples_{task}_*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_one_folder_per_model_with_results_and_samples(lm_eval_runs):
    assert sorted(p.name for p in lm_eval_runs.runs.iterdir()) == sorted(lm_eval_runs.skills)
    for model in lm_eval_runs.skills:
        folder = lm_eval_runs.runs / model
        assert len(list(folder.glob("results_*.json"))) == 1
        for task in lm_eval_runs.leaf_tasks:
            assert len(list(folder.glob(f"samples_{task}_*.jsonl"))) == 1
        assert not list(folder.glob(f"samples_{lm_eval_runs.group}_*"))  # groups log nothing


def test_results_hold_every_task_and_the_group(lm_eval_runs):
    for model, res in results_of(lm_eval_runs).items():
        assert res["model_name"] == res["model_name_sanitized"] == model
        assert res["config"]["model"] == "benchsel-fake"
        assert set(res["results"]) == {*lm_eval_runs.leaf_tasks, lm_eval_runs.group}
        assert res["group_subtasks"] == {lm_eval_runs.group: ["bs_mc_a", "bs_mc_b"]}
        assert res["n-samples"]["bs_mc_a"] == {"original": 40, "effective": 40}


def test_accuracies_differ_and_follow_skill(lm_eval_runs):
    res = results_of(lm_eval_runs)
    skills = list(lm_eval_runs.skills.values())
    group = [res[m]["results"][lm_eval_runs.group]["acc,none"] for m in lm_eval_runs.skills]
    flex = [res[m]["results"]["bs_gen"]["exact_match,flex"] for m in lm_eval_runs.skills]
    assert len(set(group)) >= 8
    assert spearmanr(skills, group).statistic > 0.9
    assert spearmanr(skills, flex).statistic > 0.8
    assert max(group[:3]) < min(group[-3:])


def test_two_filters_extract_different_things(lm_eval_runs):
    res = results_of(lm_eval_runs)
    strict = np.array([res[m]["results"]["bs_gen"]["exact_match,strict"] for m in res])
    flex = np.array([res[m]["results"]["bs_gen"]["exact_match,flex"] for m in res])
    assert np.all(strict <= flex) and np.any(strict < flex)
    lines = samples_of(lm_eval_runs.runs / "fake-11", "bs_gen")
    assert sorted({line["filter"] for line in lines}) == sorted(lm_eval_runs.gen_filters)
    assert len(lines) == 2 * 30
    strict_answers = {line["filtered_resps"][0] for line in lines if line["filter"] == "strict"}
    assert "[invalid]" in strict_answers


def test_questions_differ_in_difficulty(lm_eval_runs):
    right = np.array([[line["acc"] for line in samples_of(lm_eval_runs.runs / m, "bs_mc_a")]
                      for m in lm_eval_runs.skills])
    per_question = right.mean(axis=0)
    assert right.shape == (12, 40)
    assert per_question.min() < 0.3 and per_question.max() > 0.7


def test_replay_reproduces_a_matrix(tmp_path):
    pytest.importorskip("lm_eval", reason="lm-evaluation-harness (lm_eval) is not installed")
    from lmeval.fake_lm import write_replay_task
    from lmeval.run import run_many

    scores = np.random.default_rng(0).integers(0, 2, size=(2, 25)).astype(float)
    scores[1, 3] = np.nan  # not 1: answered wrong
    np.savez(tmp_path / "m.npz", scores=scores)
    write_replay_task(tmp_path / "tasks", tmp_path / "m.npz", "bs_replay")
    run_many(tmp_path / "tasks", tmp_path / "runs",
             [{"pretrained": f"row-{i}", "replay": tmp_path / "m.npz", "row": i} for i in range(2)],
             ["bs_replay"])
    for i in range(2):
        lines = samples_of(tmp_path / "runs" / f"row-{i}", "bs_replay")
        assert [line["doc_id"] for line in lines] == list(range(25))
        np.testing.assert_array_equal([line["acc"] for line in lines], scores[i] == 1)
