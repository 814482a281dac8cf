"""lm-evaluation-harness logs in, --samples JSON out (small logs in the documented format)."""

import json

import numpy as np
import pytest

from benchsel.harness import read_results, read_samples, write_samples


def write_model(root, model, files):
    folder = root / model
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (folder / name).write_text(content)


def sample_lines(rows):
    return "\n".join(json.dumps(r) for r in rows) + "\n"


@pytest.fixture
def runs(tmp_path):
    """Three models; arc with one filter, gsm8k with two, one model missing a question."""
    answers = {"model-a": [1, 0, 1, 1], "model-b": [0, 0, 1, 0], "model-c": [1, 1, 1]}
    for model, acc in answers.items():
        arc = [{"doc_id": d, "filter": "none", "acc": a, "resps": [["x"]], "target": 0,
                "metrics": ["acc"]} for d, a in enumerate(acc)]
        gsm = []
        for d in range(3):
            gsm.append({"doc_id": d, "filter": "strict-match", "exact_match": float(d % 2)})
            gsm.append({"doc_id": d, "filter": "flexible-extract", "exact_match": 1.0})
        results = {
            "results": {
                "mmlu": {"acc,none": 0.5, "alias": "mmlu"},
                "mmlu_anatomy": {"acc,none": 0.4, "alias": " - anatomy"},
                "mmlu_astronomy": {"acc,none": 0.6 if model != "model-b" else "N/A"},
                "arc": {"acc,none": float(np.mean(acc)), "acc_norm,none": 0.3},
            },
            "group_subtasks": {"mmlu": ["mmlu_anatomy", "mmlu_astronomy"]},
        }
        write_model(tmp_path, model, {
            "samples_arc_2024-01-01T00-00.jsonl": sample_lines(arc),
            "samples_gsm8k_2024-01-01T00-00.jsonl": sample_lines(gsm),
            "results_2024-01-01T00-00.json": json.dumps(results),
        })
    # an older run of model-a is ignored in favour of the latest file
    write_model(tmp_path, "model-a", {
        "samples_arc_2023-01-01T00-00.jsonl": sample_lines([{"doc_id": 0, "acc": 0}]),
    })
    return tmp_path


def test_samples_matrix(runs):
    m = read_samples(runs, "arc")
    assert m.models == ("model-a", "model-b", "model-c")
    assert m.items == ("arc/0", "arc/1", "arc/2", "arc/3")
    np.testing.assert_array_equal(m.values[0], [1, 0, 1, 1])
    assert np.isnan(m.values[2, 3])  # model-c did not answer question 3


def test_samples_filter_must_be_chosen_when_several(runs):
    with pytest.raises(ValueError, match="several filters.*flexible-extract.*strict-match"):
        read_samples(runs, "gsm8k")
    m = read_samples(runs, "gsm8k", filter="strict-match")
    np.testing.assert_array_equal(m.values[0], [0, 1, 0])
    assert read_samples(runs, "gsm8k", filter="flexible-extract").values.min() == 1.0
    with pytest.raises(ValueError, match="no lines with filter 'exact'"):
        read_samples(runs, "gsm8k", filter="exact")


def test_samples_bad_lines_name_file_and_line(tmp_path):
    write_model(tmp_path, "m", {"samples_t_2024.jsonl": '{"doc_id": 0, "acc": 1}\n{oops\n'})
    with pytest.raises(ValueError, match=r"samples_t_2024.jsonl: line 2: not valid JSON"):
        read_samples(tmp_path, "t")
    write_model(tmp_path, "m", {"samples_t_2024.jsonl": '{"doc_id": 0, "acc": "yes"}\n'})
    with pytest.raises(ValueError, match="line 1: metric 'acc' is 'yes'"):
        read_samples(tmp_path, "t")
    write_model(tmp_path, "m", {"samples_t_2024.jsonl": '{"doc_id": 0, "acc": 1, "f1": 0.5}\n'})
    with pytest.raises(ValueError, match="cannot tell the metric"):
        read_samples(tmp_path, "t")
    assert read_samples(tmp_path, "t", metric="f1").values[0, 0] == 0.5
    with pytest.raises(ValueError, match="no samples_nope_"):
        read_samples(tmp_path, "nope")


def test_results_leaderboard_skips_groups_and_na(runs):
    m = read_results(runs)
    assert m.items == ("arc", "mmlu_anatomy", "mmlu_astronomy")  # group 'mmlu' left out
    assert np.isnan(m.values[1, 2])  # model-b's "N/A"
    assert m.values[0, 0] == pytest.approx(0.75)
    assert "mmlu" in read_results(runs, include_groups=True).items
    assert read_results(runs, metric="acc_norm").items == ("arc",)
    with pytest.raises(ValueError, match="no task reports 'f1,none'"):
        read_results(runs, metric="f1")


def test_write_samples_sorted_unique(tmp_path):
    path = tmp_path / "samples.json"
    out = write_samples(path, {"arc": [3, 1, 3, np.int64(0)], "gsm8k": []})
    assert out == {"arc": [0, 1, 3], "gsm8k": []}
    assert json.loads(path.read_text()) == out
    with pytest.raises(ValueError, match="not a non-negative integer"):
        write_samples(path, {"arc": [-1]})
