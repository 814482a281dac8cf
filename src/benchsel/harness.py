"""lm-evaluation-harness outputs: per-sample logs and aggregated results in, ``--samples`` out.

A run of ``lm-eval ... --output_path OUT --log_samples`` writes, per model,
``OUT/<model>/results_<date>.json`` and ``OUT/<model>/samples_<task>_<date>.jsonl``.
The model name is the folder the files sit in.

* :func:`read_samples` builds a models x questions matrix for one task from
  the per-sample logs: one JSON object per line, ``doc_id`` identifies the
  question, the per-sample metric is a top-level key (``acc``,
  ``exact_match``, ...), and a document has one line per ``filter``, so the
  filter must be chosen when there are several.
* :func:`read_results` builds a models x tasks leaderboard from the
  aggregated results: ``results[task]["<metric>,<filter>"]``; groups
  (the keys of ``group_subtasks``) are told apart from leaf tasks and left out.
* :func:`write_samples` writes a selection as the JSON ``--samples`` takes:
  ``{"<leaf task>": [sorted, unique doc indices]}``.

When a folder holds several files for the same task (several dates), the
latest by name is read.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from .io import write_json_atomic
from .matrix import ScoreMatrix

__all__ = ["read_samples", "read_results", "write_samples", "sample_files", "result_files"]

_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<date>[^_]+)\.jsonl$")
_RESULTS = re.compile(r"^results_(?P<date>.+)\.json$")
# Keys of a sample line that are never per-sample metrics.
_NOT_METRICS = {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter",
                "metrics", "doc_hash", "prompt_hash", "target_hash"}


def _model_dirs(root: Path) -> list[Path]:
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such folder of lm-eval outputs")
    dirs = sorted(p for p in root.iterdir() if p.is_dir())
    return dirs


def sample_files(root: str | os.PathLike, task: str) -> dict[str, Path]:
    """Latest ``samples_<task>_<date>.jsonl`` per model folder under ``root``."""
    out = {}
    for folder in _model_dirs(Path(root)):
        found = sorted(
            p for p in folder.iterdir()
            if (m := _SAMPLES.match(p.name)) and m.group("task") == task
        )
        if found:
            out[folder.name] = found[-1]
    return out


def result_files(root: str | os.PathLike) -> dict[str, Path]:
    """Latest ``results_<date>.json`` per model folder under ``root``."""
    out = {}
    for folder in _model_dirs(Path(root)):
        found = sorted(p for p in folder.iterdir() if _RESULTS.match(p.name))
        if found:
            out[folder.name] = found[-1]
    return out


def _read_jsonl(path: Path) -> list[tuple[int, dict]]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}: line {line_no}: not valid JSON ({err.msg})") from None
            if not isinstance(obj, dict):
                raise ValueError(f"{path}: line {line_no}: expected a JSON object per line")
            rows.append((line_no, obj))
    return rows


def _as_score(value, path: Path, line: int, metric: str) -> float:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    raise ValueError(
        f"{path}: line {line}: metric {metric!r} is {value!r}; expected a finite number"
    )


def read_samples(
    root: str | os.PathLike,
    task: str,
    *,
    metric: str | None = None,
    filter: str | None = None,  # noqa: A002 - lm-eval's own word
) -> ScoreMatrix:
    """Models x questions matrix of one task from lm-eval per-sample logs.

    Parameters
    ----------
    root : path
        Folder with one sub-folder per model.
    task : str
        Leaf task name as in ``samples_<task>_<date>.jsonl``.
    metric : str, optional
        Per-sample metric key; inferred when every line has exactly one.
    filter : str, optional
        Which filter's lines to use; required when the logs have several.

    Returns
    -------
    ScoreMatrix
        Items are named ``"<task>/<doc_id>"`` in increasing ``doc_id`` order;
        a question a model did not answer is missing.
    """
    files = sample_files(root, task)
    if not files:
        raise ValueError(f"{root}: no samples_{task}_<date>.jsonl in any model folder")
    per_model: dict[str, dict[int, float]] = {}
    for model, path in files.items():
        rows = _read_jsonl(path)
        filters = sorted({str(obj.get("filter", "none")) for _, obj in rows})
        chosen = filter
        if chosen is None:
            if len(filters) > 1:
                raise ValueError(
                    f"{path}: the logs have several filters {filters}; choose one with filter="
                )
            chosen = filters[0] if filters else "none"
        elif chosen not in filters:
            raise ValueError(f"{path}: no lines with filter {chosen!r}; filters are {filters}")
        scores: dict[int, float] = {}
        for line, obj in rows:
            if str(obj.get("filter", "none")) != chosen:
                continue
            if "doc_id" not in obj:
                raise ValueError(f"{path}: line {line}: no 'doc_id'")
            doc = obj["doc_id"]
            if isinstance(doc, bool) or not isinstance(doc, int) or doc < 0:
                raise ValueError(
                    f"{path}: line {line}: doc_id {doc!r} is not a non-negative integer"
                )
            name = metric
            if name is None:
                names = obj.get("metrics") or [k for k in obj if k not in _NOT_METRICS]
                if len(names) != 1:
                    raise ValueError(
                        f"{path}: line {line}: cannot tell the metric among {sorted(names)}; "
                        "choose one with metric="
                    )
                name = names[0]
            if name not in obj:
                raise ValueError(f"{path}: line {line}: no metric {name!r}")
            if doc in scores:
                raise ValueError(
                    f"{path}: line {line}: doc_id {doc} appears twice for filter {chosen!r}"
                )
            scores[doc] = _as_score(obj[name], path, line, name)
        per_model[model] = scores
    docs = sorted(set().union(*(s.keys() for s in per_model.values())))
    index = {d: j for j, d in enumerate(docs)}
    values = np.full((len(per_model), len(docs)), np.nan)
    for i, scores in enumerate(per_model.values()):
        for doc, value in scores.items():
            values[i, index[doc]] = value
    return ScoreMatrix(values, list(per_model), [f"{task}/{d}" for d in docs], source=str(root))


def read_results(
    root: str | os.PathLike,
    *,
    metric: str = "acc",
    filter: str = "none",  # noqa: A002 - lm-eval's own word
    include_groups: bool = False,
) -> ScoreMatrix:
    """Models x tasks leaderboard from lm-eval ``results_<date>.json`` files.

    Each leaf task contributes ``results[task]["<metric>,<filter>"]``; a task
    without that key is missing for that model. Groups (keys of
    ``group_subtasks``, whose values are aggregates of leaf tasks) are left
    out unless ``include_groups``.
    """
    files = result_files(root)
    if not files:
        raise ValueError(f"{root}: no results_<date>.json in any model folder")
    key = f"{metric},{filter}"
    per_model: dict[str, dict[str, float]] = {}
    for model, path in files.items():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: not valid JSON ({err.msg})") from None
        results = data.get("results")
        if not isinstance(results, dict):
            raise ValueError(f"{path}: no 'results' object")
        groups = set((data.get("group_subtasks") or {}).keys())
        scores = {}
        for task, entry in results.items():
            if (task in groups and not include_groups) or not isinstance(entry, dict):
                continue
            if key in entry:
                try:
                    scores[task] = _as_score(entry[key], path, 0, key)
                except ValueError:
                    continue  # lm-eval writes "N/A" for metrics a task does not have
        per_model[model] = scores
    tasks = sorted(set().union(*(s.keys() for s in per_model.values())))
    if not tasks:
        raise ValueError(f"{root}: no task reports {key!r}; choose metric= and filter=")
    values = np.array([[s.get(t, np.nan) for t in tasks] for s in per_model.values()])
    return ScoreMatrix(values, list(per_model), tasks, source=str(root))


def write_samples(path: str | os.PathLike, selection: Mapping[str, Iterable[int]]) -> dict:
    """Write ``{"<leaf task>": [sorted, unique doc indices]}`` for lm-eval's ``--samples``.

    Returns the written object. Indices must be non-negative integers.
    """
    out = {}
    for task, docs in selection.items():
        clean = set()
        for d in docs:
            if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 0:
                raise ValueError(f"doc index {d!r} of task {task!r} is not a non-negative integer")
            clean.add(int(d))
        out[str(task)] = sorted(clean)
    write_json_atomic(path, out)
    return out
