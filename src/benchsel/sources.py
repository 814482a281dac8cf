"""Data arguments as score matrices: one reading for the library and the CLI.

Every function of the workflow API (:func:`benchsel.plan_benchmarks`,
:func:`benchsel.plan_questions`, :func:`benchsel.plan_mixed`, ``benchsel
DATA ...`` on the command line) takes its data in any of these forms:

- a :class:`~benchsel.matrix.ScoreMatrix`;
- a :class:`pandas.DataFrame`, models as rows (its index, or a first
  column of names) and benchmarks or questions as columns;
- a path: a CSV/TSV/Parquet/NPZ file (:func:`benchsel.io.read_scores`) or
  a folder of lm-evaluation-harness output (:func:`benchsel.read_lm_eval`);
- the name of a bundled dataset (:func:`benchsel.list_datasets`).

:func:`as_scores` reads a leaderboard (models x benchmarks);
:func:`task_sources` reads per-question scores of one or more tasks.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .datasets import bundled_path, resolve_data
from .lmeval import LmEvalRuns, is_lm_eval_path, read_lm_eval
from .matrix import DataWarning, ScoreMatrix, _short_list

__all__ = ["TaskSources", "as_scores", "is_lm_eval_data", "task_sources"]


def is_lm_eval_data(data) -> bool:
    """Whether ``data`` names lm-eval output (a folder of runs) rather than a table."""
    if not isinstance(data, (str, os.PathLike)):
        return False
    return bundled_path(data) is None and is_lm_eval_path(data)


def _per_task(value, task: str):
    return value.get(task) if isinstance(value, Mapping) else value


def as_scores(data, *, metric=None, filter=None, clean: bool = True,  # noqa: A002
              **read_options) -> ScoreMatrix:
    """Any data argument as a models x items :class:`~benchsel.matrix.ScoreMatrix`.

    Parameters
    ----------
    data : ScoreMatrix, pandas.DataFrame, path or str
        See the module docstring. A folder of lm-eval runs gives its
        leaderboard: one column ``<task>/<metric>,<filter>`` per task.
    metric, filter : str or mapping task -> str, optional
        lm-eval output only: which metric and filter each task's column
        holds (default: the task's primary one).
    clean : bool, default True
        Tables and files: drop all-missing rows and columns and require
        enough models to fit on (:meth:`ScoreMatrix.cleaned`); False for the
        scores of a few new models.
    read_options
        For files: ``format``, ``sep``, ``model_column``, ``item_column``,
        ``score_column`` (:func:`benchsel.io.read_scores`).

    Returns
    -------
    ScoreMatrix
    """
    if isinstance(data, ScoreMatrix):
        return data
    if _is_frame(data):
        return _from_frame(data, clean)
    if isinstance(data, LmEvalRuns):
        return data.leaderboard(metric=metric, filter=filter)
    if not isinstance(data, (str, os.PathLike)):
        raise TypeError("data must be a ScoreMatrix, a pandas DataFrame, a path or the name "
                        f"of a bundled dataset; got {type(data).__name__}")
    if is_lm_eval_data(data):
        return read_lm_eval(data).leaderboard(metric=metric, filter=filter)
    if metric is not None or filter is not None:
        raise ValueError(f"metric and filter choose columns of lm-eval output; {data} is not "
                         "a folder of lm-eval runs")
    return resolve_data(data, clean=clean, **read_options)


def _is_frame(data) -> bool:
    return type(data).__module__.startswith("pandas") and hasattr(data, "columns")


def _from_frame(frame, clean: bool) -> ScoreMatrix:
    """A DataFrame of scores (models as index or first column) as a ScoreMatrix."""
    import pandas as pd

    if frame.shape[1] and not isinstance(frame.index, pd.MultiIndex) and \
            isinstance(frame.index, pd.RangeIndex) and \
            not pd.api.types.is_numeric_dtype(frame.iloc[:, 0]):
        # to_csv/read_csv round trips and literal tables carry names in a column.
        frame = frame.set_index(frame.columns[0])
    if frame.columns.duplicated().any():
        twice = sorted({str(c) for c in frame.columns[frame.columns.duplicated()]})
        raise ValueError(f"DataFrame columns {twice} appear more than once; each benchmark "
                         "must be one column")
    columns = {}
    for name in frame.columns:
        column = frame[name]
        if pd.api.types.is_datetime64_any_dtype(column) or \
                pd.api.types.is_timedelta64_dtype(column):
            # pandas would give their integer ticks (epoch microseconds) as scores.
            raise ValueError(f"DataFrame column {name!r} holds dates or times "
                             f"({column.dtype}), not scores")
        numbers = pd.to_numeric(column, errors="coerce")
        bad = numbers.isna() & column.notna()
        if bad.any():
            row = bad.to_numpy().nonzero()[0][0]
            raise ValueError(f"DataFrame column {name!r}, row {frame.index[row]!r}: "
                             f"{column.iloc[row]!r} is not a number")
        columns[name] = numbers.to_numpy(dtype=float)
    values = np.column_stack(list(columns.values())) if columns else \
        np.empty((len(frame), 0))
    scores = ScoreMatrix(values, [str(m) for m in frame.index],
                         [str(c) for c in frame.columns], source="a pandas DataFrame")
    return scores.cleaned() if clean else scores


# ------------------------------------------------------------ per question
@dataclass
class TaskSources:
    """Per-question source scores of the tasks a plan samples.

    Attributes
    ----------
    scores : dict task -> ScoreMatrix
        Complete source models x questions, items named ``<task>/<doc_id>``.
    metrics, filters : dict task -> str or None
        Which per-sample score each task's matrix holds (lm-eval output).
    """

    scores: dict
    metrics: dict = field(default_factory=dict)
    filters: dict = field(default_factory=dict)


def task_sources(data, tasks: Sequence[str] | str | None = None, *, metric=None,
                 filter=None, fan_out: Mapping | None = None,  # noqa: A002
                 **read_options) -> TaskSources:
    """Per-question source scores of one or more tasks.

    Parameters
    ----------
    data : mapping task -> scores, folder of lm-eval runs, or one task's matrix
        A mapping gives each task's models x questions (any form
        :func:`as_scores` reads). A folder of lm-eval runs gives the
        complete sample logs of each of ``tasks``. Anything else is one
        task's matrix (a bundled per-question set, an NPZ/CSV file, a
        ScoreMatrix or DataFrame), its columns the doc ids.
    tasks : str or sequence of str, optional
        The tasks to read: required for lm-eval output; for one task's
        matrix, its name (default: the file's stem or the items' prefix).
    metric, filter : str or mapping task -> str, optional
        lm-eval output: the per-sample score (default: the task's primary).
        A mapping of matrices records them as what its scores are.
    fan_out : mapping, optional
        ``n_jobs``/``backend`` for reading sample logs in parallel
        (:meth:`benchsel.lmeval.LmEvalRuns.questions`).
    """
    names = [tasks] if isinstance(tasks, str) else list(tasks or [])
    if isinstance(data, Mapping):
        if names:
            raise ValueError("tasks names the tasks of lm-eval output; a mapping of task "
                             "matrices names its own")
        out = TaskSources({})
        for task, scores in data.items():
            task = str(task)
            out.scores[task] = question_items(as_scores(scores), task, task)[1]
            out.metrics[task], out.filters[task] = _per_task(metric, task), _per_task(filter, task)
        return out
    if is_lm_eval_data(data) or isinstance(data, LmEvalRuns):
        runs = data if isinstance(data, LmEvalRuns) else read_lm_eval(data)
        if not names:
            raise ValueError(f"{runs.source}: name the tasks to plan (tasks=[...]); it "
                             f"holds {', '.join(runs.tasks)}")
        runs.check_tasks(names)
        out = TaskSources({})
        for task in names:
            out.scores[task] = complete_task_runs(runs, task, metric=_per_task(metric, task),
                                                  filter=_per_task(filter, task),
                                                  fan_out=fan_out)
            primary = runs.run(runs.complete_models(task)[0], task).primary or ","
            primary_metric, _, primary_filter = primary.partition(",")
            out.metrics[task] = _per_task(metric, task) or primary_metric or None
            out.filters[task] = _per_task(filter, task) or primary_filter or None
        return out
    if len(names) > 1:
        raise ValueError(f"{data} holds one task's questions; {len(names)} tasks were named")
    scores = as_scores(data, **read_options).cleaned()
    task, scores = question_items(scores, names[0] if names else None, data)
    return TaskSources({task: scores})


def complete_task_runs(runs: LmEvalRuns, task: str, *, metric=None, filter=None,  # noqa: A002
                       fan_out: Mapping | None = None) -> ScoreMatrix:
    """Complete runs of ``task`` as models x questions; partial runs are named and left out."""
    runs.check_tasks([task])
    complete = runs.complete_models(task)
    partial = [m for (m, t), r in runs.runs.items()
               if t == task and r.partial and (m, t) not in runs.full_runs]
    if partial:
        warnings.warn(
            f"{runs.source}: left out {len(partial)} partial run(s) of {task!r} (fewer "
            f"documents than the task has; observations for a plan's prediction, not source "
            f"models): {', '.join(partial)}", DataWarning, stacklevel=3)
    if not complete:
        raise ValueError(f"{runs.source}: no model ran every question of {task!r} with "
                         "--log_samples; a question-level source needs full runs")
    return runs.questions(task, models=complete, metric=metric, filter=filter,
                          **dict(fan_out or {}))


def question_items(scores: ScoreMatrix, task: str | None, data) -> tuple[str, ScoreMatrix]:
    """(task, matrix with items named ``task/<doc_id>``) of a per-question matrix.

    Matrices read from lm-eval logs already name their items so; any other
    matrix's columns are doc ids when they are whole numbers, else positions
    0, 1, ... (with a warning) of ``task`` (default: the file's stem).
    """
    tails = [item.rpartition("/") for item in scores.items]
    heads = {head for head, _, _ in tails}
    if len(heads) == 1 and all(tail.isdigit() for _, _, tail in tails) and "" not in heads:
        read_task = heads.pop()
        if task is not None and task != read_task:
            raise ValueError(f"{data}: the questions are of task {read_task!r}, not {task!r}")
        return read_task, scores
    if task is None and not isinstance(data, (str, os.PathLike)):
        raise ValueError("name the task of a per-question matrix whose columns are not "
                         "'<task>/<doc_id>' (tasks='...')")
    task = task or Path(str(data)).stem
    if all(item.isdigit() for item in scores.items):
        return task, scores._replace(items=[f"{task}/{int(item)}" for item in scores.items])
    if list(scores.items) != [f"item_{j}" for j in range(scores.n_items)]:  # unnamed NPZ
        warnings.warn(f"{data}: columns are not doc ids (whole numbers); taking column "
                      f"positions 0..{scores.n_items - 1} as the doc ids of {task!r}",
                      DataWarning, stacklevel=3)
    return task, scores._replace(items=[f"{task}/{j}" for j in range(scores.n_items)])


def mixed_sources(data, tasks: Sequence[str] | str, *, metric=None, filter=None,  # noqa: A002
                  fan_out: Mapping | None = None):
    """(leaderboard, TaskSources, task -> column) of a mixed plan from lm-eval output."""
    if not (is_lm_eval_data(data) or isinstance(data, LmEvalRuns)):
        raise ValueError("a mixed plan reads a folder of lm-eval runs (full runs give the "
                         f"leaderboard, sample logs the questions); {data} is not one")
    runs = data if isinstance(data, LmEvalRuns) else read_lm_eval(data)
    sources = task_sources(runs, tasks, metric=metric, filter=filter, fan_out=fan_out)
    board = runs.leaderboard(metric=metric, filter=filter)
    columns = {t: f"{t}/{sources.metrics[t]},{sources.filters[t]}" for t in sources.scores}
    missing = [t for t, c in columns.items() if c not in board.items]
    if missing:
        raise ValueError(f"{runs.source}: task(s) {_short_list(missing)} have no column in "
                         f"its leaderboard; columns are {_short_list(board.items, limit=30)}")
    return board, sources, columns
