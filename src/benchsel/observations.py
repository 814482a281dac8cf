"""What a new model was run on, read and matched to a plan's names.

:func:`observe` turns anything a user has after running the plan -- an
lm-eval output folder, a results JSON, sample logs, a CSV of scores, a
mapping ``{benchmark: score}`` or ``{task: {doc_id: score}}`` -- into
:class:`Observations` that :meth:`benchsel.Plan.predict` takes. ``benchsel
predict --observed`` goes through the same functions.

Names are matched forgivingly where that cannot be ambiguous: a bare task
name (``arc_easy``) stands for a leaderboard's one ``arc_easy/...`` column,
and lm-eval's ``<task>/<metric>,<filter>`` scores stand for a leaderboard
named by bare tasks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._json import load_file
from .inputs import _as_scores, parse_observed, read_question_counts
from .lmeval import is_lm_eval_path, read_lm_eval, read_sample_scores
from .matrix import DataWarning, ScoreMatrix, did_you_mean
from .sources import as_scores

__all__ = ["Observations", "binomial_stderr", "observe", "observe_benchmarks",
           "observe_questions", "question_counts", "split_stderr"]

NEW_MODEL = "new model"  # the name of a model given as one mapping of scores


@dataclass
class Observations:
    """Scores of new model(s) on what a plan asked them to run.

    Attributes
    ----------
    benchmarks : ScoreMatrix or None
        Full-benchmark scores, columns named as the plan's leaderboard.
    questions : dict model -> task -> {doc_id: score}
        Per-question scores of the plan's sampled tasks.
    """

    benchmarks: ScoreMatrix | None = None
    questions: dict = field(default_factory=dict)

    @property
    def models(self) -> list[str]:
        """The new models, in the order first seen."""
        names = list(self.benchmarks.models) if self.benchmarks is not None else []
        return names + [m for m in self.questions if m not in names]


def observe(plan, source) -> Observations:
    """Read the scores of new model(s) for ``plan``.

    Parameters
    ----------
    plan : benchsel.Plan
    source : path, sequence of paths, mapping, ScoreMatrix or DataFrame
        Benchmark-level plans: lm-eval output (folders, ``results_*.json``),
        a score file (CSV/TSV/Parquet/NPZ of new models, or a JSON object
        ``{"benchmark": score}``), inline ``"name=value,name=value"``, a
        mapping ``{benchmark: score}``, or a ScoreMatrix/DataFrame of new
        models. Question-level plans: lm-eval output with sample logs, or a
        mapping ``{task: {doc_id: score}}`` (one new model) or ``{model:
        {task: {doc_id: score}}}``. Mixed plans: lm-eval output holding both
        the full runs and the sampled tasks' logs.

    Returns
    -------
    Observations
    """
    if plan.level == "benchmarks":
        return Observations(benchmarks=observe_benchmarks(source, plan.benchmarks.source.items))
    questions = observe_questions(plan, source)
    if plan.level == "questions":
        return Observations(questions=questions)
    full = None
    specs = _lm_eval_specs(source)
    if specs is not None:
        runs = read_lm_eval(specs)
        if any(not r.partial and r.scores for r in runs.runs.values()):
            full = observe_benchmarks(source, plan.benchmarks.source.items,
                                      quiet_partial=True)
    return Observations(benchmarks=full, questions=questions)


def _lm_eval_specs(source) -> list[str] | None:
    """``source`` as a list of lm-eval output paths, or None if it is something else."""
    if isinstance(source, (str, os.PathLike)):
        specs = [source]
    elif isinstance(source, Sequence) and source and \
            all(isinstance(s, (str, os.PathLike)) for s in source):
        specs = list(source)
    else:
        return None
    return [str(s) for s in specs] if all(is_lm_eval_output(s) for s in specs) else None


def is_lm_eval_output(spec) -> bool:
    """Whether ``spec`` is lm-eval output: a folder of runs, a sample log or a results JSON."""
    path = Path(spec)
    if is_lm_eval_path(path):
        return True
    if path.is_file() and path.suffix.lower() == ".json":
        try:
            obj = load_file(path)
        except ValueError:
            # Not JSON benchsel reads (too deep, too large, damaged): the score-file
            # reader that comes next refuses it by name.
            return False
        return isinstance(obj, dict) and isinstance(obj.get("results"), dict)
    return False


# ---------------------------------------------------------------- benchmarks
def observe_benchmarks(source, items: Sequence[str], *, quiet_partial: bool = False):
    """Benchmark scores of new model(s), named as ``items``.

    Returns a ScoreMatrix (one row per model); see :func:`observe` for the
    forms ``source`` takes. lm-eval output is read with the metric and
    filter ``items`` name; scores of tasks not among ``items`` are left out
    with a warning.
    """
    import warnings

    specs = _lm_eval_specs(source)
    if specs is not None:
        with warnings.catch_warnings():
            if quiet_partial:  # a mixed plan's sampled tasks are partial by design
                warnings.filterwarnings("ignore", ".*partial run", DataWarning)
            return _lm_eval_benchmarks(specs, items)
    if isinstance(source, Sequence) and not isinstance(source, str):
        if len(source) != 1:
            raise ValueError(f"observed {', '.join(map(str, source))}: several sources must "
                             "all be lm-eval output (folders, results_<date>.json, sample logs)")
        source = source[0]
    if isinstance(source, (str, os.PathLike)):
        source = parse_observed(str(source))
    if isinstance(source, Mapping):
        if any(isinstance(v, Mapping) for v in source.values()):
            raise ValueError("observed scores of a benchmark-level plan map benchmarks to "
                             "numbers; a mapping of mappings is per-question scores")
        names = as_items(list(source), items)
        return _one_model({n: v for n, v in zip(names, source.values())})
    scores = as_scores(source, clean=False)
    return scores._replace(items=as_items(list(scores.items), items))


def _one_model(scores: Mapping) -> ScoreMatrix:
    checked = _as_scores(scores.items(), "observed scores")
    return ScoreMatrix([list(checked.values())], [NEW_MODEL], list(checked),
                       source="observed scores")


def observe_stderr(source, items: Sequence[str]) -> ScoreMatrix | None:
    """Standard errors of the scores :func:`observe_benchmarks` reads from ``source``:
    lm-eval's ``*_stderr`` beside each score (NaN where it wrote none); None for
    sources that carry none (files of scores, mappings)."""
    import warnings

    specs = _lm_eval_specs(source)
    if specs is None:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # said when the scores were read
        return _lm_eval_benchmarks(specs, items, stderr=True)


def _lm_eval_benchmarks(specs: list[str], items: Sequence[str], *,
                        stderr: bool = False) -> ScoreMatrix:
    import warnings

    metric, filt = {}, {}
    for item in items:
        task, _, key = item.partition("/")
        if "," in key:
            metric[task], filt[task] = key.split(",", 1)
    board = read_lm_eval(specs).leaderboard(metric=metric, filter=filt, stderr=stderr)
    renamed = as_items(list(board.items), items)
    known = set(items)
    extra = [c for c in renamed if c not in known]
    where = " ".join(specs)
    if len(extra) == len(renamed):
        raise ValueError(
            f"observed {where}: none of its scores ({', '.join(extra)}) is a benchmark of "
            f"the model; its benchmarks are {short_names(items)}")
    if extra:
        warnings.warn(f"observed {where}: ignoring scores of {', '.join(extra)}: not "
                      "benchmarks of the model", DataWarning, stacklevel=3)
        board = board.subset(items=[j for j, c in enumerate(renamed) if c in known])
        renamed = [c for c in renamed if c in known]
    if len(set(renamed)) != len(renamed):
        raise ValueError(f"observed {where}: two lm-eval scores map to the same benchmark "
                         f"({', '.join(board.items)}); choose one metric per task")
    return board._replace(items=renamed)


def short_names(items, limit: int = 20) -> str:
    """The first ``limit`` names, and how many more."""
    items = list(items)
    return ", ".join(items[:limit]) + (f", ... ({len(items) - limit} more)"
                                       if len(items) > limit else "")


def _task_columns(items) -> dict[str, list[str]]:
    """Task -> its ``<task>/...`` columns (lm-eval leaderboards)."""
    out: dict[str, list[str]] = {}
    for item in items:
        if "/" in item:
            out.setdefault(item.split("/", 1)[0], []).append(item)
    return out


def as_items(names: Sequence[str], items) -> list[str]:
    """``names`` with each unknown one that is a task (or ``task/...``) of exactly one item
    renamed to that item."""
    known, by_task = set(items), _task_columns(items)
    out = []
    for name in names:
        name = str(name)
        task = name.split("/", 1)[0]
        if name not in known and len(by_task.get(task, ())) == 1:
            name = by_task[task][0]
        elif name not in known and task in known:
            name = task  # a leaderboard named by bare tasks, lm-eval columns observed
        out.append(name)
    return out


# ----------------------------------------------------------------- questions
def observe_questions(plan, source) -> dict:
    """model -> task -> {doc_id: score} of the plan's tasks (see :func:`observe`)."""
    if isinstance(source, Mapping):
        return _question_mapping(plan, source)
    specs = _lm_eval_specs(source)
    mapping_file = _json_file(source) if specs is None else None
    if mapping_file is not None:  # {task: {doc_id: score}} (or by model) written as JSON
        obj = load_file(mapping_file)
        if not isinstance(obj, Mapping):
            raise ValueError(f"{mapping_file}: expected a JSON object {{task: {{doc_id: "
                             "score}}}} (or {model: {task: ...}})")
        try:
            return _question_mapping(plan, obj)
        except ValueError as err:
            raise ValueError(f"{mapping_file}: {err}") from None
    if specs is None:
        raise ValueError(
            f"observed {source}: a question-level plan needs lm-eval output of the new "
            "model (its --output_path folder, results_<date>.json or samples_*.jsonl) or a "
            "mapping {task: {doc_id: score}} (in Python, or as a JSON file)")
    runs = read_lm_eval(specs)
    out: dict = {}
    for (model, task), run in runs.runs.items():
        if task not in plan.tasks:
            continue
        if run.samples_file is None:
            raise ValueError(f"{run.results_file}: no sample log of {task!r} beside it; run "
                             "lm-eval with --log_samples")
        part = plan.tasks[task]
        out.setdefault(model, {})[task] = read_sample_scores(run, metric=part.metric,
                                                             filter=part.filter)
    if not out:
        raise ValueError(f"{runs.source}: no run of the plan's tasks "
                         f"({', '.join(plan.tasks)}); tasks found: {', '.join(runs.tasks)}")
    return out


def _json_file(source) -> Path | None:
    """``source`` if it names one ``.json`` file (given alone or in a list of one)."""
    if isinstance(source, Sequence) and not isinstance(source, str) and len(source) == 1:
        source = source[0]
    if isinstance(source, (str, os.PathLike)) and Path(source).is_file() and \
            Path(source).suffix.lower() == ".json":
        return Path(source)
    return None


def _question_mapping(plan, source: Mapping) -> dict:
    """``{task: {doc_id: score}}`` (one model) or ``{model: {task: ...}}``, checked."""
    def is_task_level(value) -> bool:  # {doc_id: score}: numbers inside
        return isinstance(value, Mapping) and not any(isinstance(v, Mapping)
                                                      for v in value.values())

    if not source or not all(isinstance(v, Mapping) for v in source.values()):
        raise ValueError("per-question scores must map tasks to {doc_id: score} (or models "
                         "to such mappings)")
    models = {NEW_MODEL: source} if all(is_task_level(v) for v in source.values()) else source
    out: dict = {}
    for model, runs in models.items():
        if not isinstance(runs, Mapping) or not all(is_task_level(v) for v in runs.values()):
            raise ValueError(f"{model}: per-question scores must map tasks to "
                             "{doc_id: score}")
        out[str(model)] = {str(task): _doc_scores(f"{model}: {task}", scores)
                           for task, scores in runs.items()}
        for task, scores in out[str(model)].items():
            if task in plan.tasks:  # other tasks are left out, with a warning, later
                plan.tasks[task].check_run(scores, f"{model}: task {task!r}")
    return out


def _doc_scores(where: str, scores: Mapping) -> dict[int, float]:
    import math

    out = {}
    for doc, value in scores.items():
        try:
            doc_id = int(doc)
            if doc_id != doc and str(doc_id) != str(doc):
                raise ValueError
        except (TypeError, ValueError):
            raise ValueError(f"{where}: doc id {doc!r} is not a whole number") from None
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number) or isinstance(value, bool):
            raise ValueError(f"{where}: the score of doc {doc_id} is {value!r}; expected a "
                             "finite number")
        out[doc_id] = number
    return out


# ---------------------------------------------------------------- measurement noise
def question_counts(counts, items: Sequence[str]) -> dict:
    """The questions behind each benchmark's score, checked against ``items``.

    Parameters
    ----------
    counts : int, mapping {benchmark: int}, str or path
        One count for every benchmark; a count per benchmark (a mapping, or
        text ``NAME=N,...``); or a file of counts (CSV ``benchmark,count`` or
        JSON, :func:`benchsel.inputs.read_question_counts`).
    items : sequence of str
        The board's benchmarks.

    Returns
    -------
    dict
        ``{benchmark: n}``, or ``{None: n}`` for one count for all.
    """
    items = list(items)
    if isinstance(counts, (str, os.PathLike)) and Path(counts).is_file():
        read = read_question_counts(counts)
        return dict(zip(as_items(list(read), items), read.values()))
    if isinstance(counts, str) and "=" in counts:
        pairs = [part.rpartition("=") for part in filter(None, (t.strip()
                                                              for t in counts.split(",")))]
        counts = {name: value.strip() for name, _, value in pairs}
    if isinstance(counts, Mapping):
        unknown = [name for name in counts if name not in items]
        if unknown:
            raise ValueError(f"questions: no benchmark {unknown[0]!r}"
                             f"{did_you_mean([unknown[0]], items)}")
        return {name: _count(value, f" {name}") for name, value in counts.items()}
    return {None: _count(counts, "")}


def _count(value, where: str) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"questions{where}: {value!r} is not a positive whole number")
    return n


def binomial_stderr(model, x, counts) -> np.ndarray:
    """The standard error ``sqrt(p (1 - p) / n)`` of each observed score of ``x``.

    An accuracy ``p`` measured on ``n`` questions has that standard error;
    ``GaussianModel.predict(..., observed_std=...)`` then conditions on the
    score with that noise (``benchsel predict --questions``).

    Parameters
    ----------
    model : GaussianModel
        Fitted: its ``items_`` name the columns of ``x`` and its ``bounds_``
        give each benchmark's scale, [0, 1] or [0, 100].
    x : ndarray, shape (R, N)
        Observed scores over ``model.items_`` (NaN: not observed).
    counts
        As :func:`question_counts` reads them.

    Returns
    -------
    ndarray, shape (R, N)
        On the benchmark's own scale; NaN where a score is observed without
        a count, 0 where none is observed.
    """
    x = np.asarray(x, dtype=float)
    items = list(model.items_)
    out = np.where(np.isnan(x), 0.0, np.nan)
    known = question_counts(counts, items)
    for j, item in enumerate(items):
        n = known.get(item, known.get(None))
        rows = ~np.isnan(x[:, j])
        if n is None or not rows.any():
            continue
        low, high = model.bounds_[:, j]
        if not (low == 0 and high in (1, 100)):
            raise ValueError(f"questions: {item!r} is not a score in [0, 1] or [0, 100] "
                             f"(bounds {low:g}, {high:g}); give its standard error in a "
                             "'_stderr' column instead")
        p = np.clip(x[rows, j] / high, 0.0, 1.0)
        out[rows, j] = high * np.sqrt(p * (1 - p) / n)
    return out


def split_stderr(scores: ScoreMatrix) -> tuple[ScoreMatrix, dict]:
    """A board's ``<benchmark>_stderr`` columns apart: (the scores without them,
    ``{model: {benchmark: standard error}}`` where one is given)."""
    pairs = {item: item[: -len("_stderr")] for item in scores.items
             if item.endswith("_stderr") and item[: -len("_stderr")] in scores.items}
    if not pairs:
        return scores, {}
    keep = [j for j, item in enumerate(scores.items) if item not in pairs]
    stderr = {}
    for i, model in enumerate(scores.models):
        stderr[model] = {
            pairs[item]: float(scores.values[i, j]) for j, item in enumerate(scores.items)
            if item in pairs and not np.isnan(scores.values[i, j])}
    return scores.subset(items=keep), stderr
