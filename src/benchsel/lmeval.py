"""lm-evaluation-harness output in, ``--samples`` selections out.

What lm-eval 0.4.x writes, as this module reads it:

* ``lm_eval --output_path DIR`` writes ``DIR/<model>/results_<date>.json``
  and, with ``--log_samples``, ``DIR/<model>/samples_<task>_<date>.jsonl``
  beside it (``<model>`` is the model name with ``/``, ``:`` ... replaced by
  ``__``). ``--output_path FILE.json`` writes ``FILE_<date>.json`` and the
  sample logs into FILE's folder (lm-eval 0.4.13; 0.4.5 and 0.4.8 take
  ``FILE.json`` as a folder name). Users nest these folders freely (a common
  ``--output_path OUT/<model>`` gives ``OUT/<model>/<model>/...``), so a
  folder is searched at any depth.
* ``<date>`` is ``datetime.now().isoformat()`` with ``:`` replaced by ``-``;
  a results file and the sample logs of the same run share it.
* A results file holds ``results[task]["<metric>,<filter>"]`` for every task
  and group, ``group_subtasks`` (a group's members; lm-eval 0.4.5 and 0.4.8
  also list stand-alone tasks there, with an empty list), ``configs[task]``
  (``metric_list`` and ``filter_list``, whose first entries are the task's
  primary metric and filter), ``n-samples[task]`` (``original`` and
  ``effective`` document counts: a run restricted by ``--samples`` or
  ``--limit`` has ``effective < original``), and the model name
  (``model_name``; older files only ``config.model_args``).
* A sample-log line is one document under one filter: ``doc_id``, the
  per-sample metric values as top-level keys and, since lm-eval 0.4.6 or so,
  ``filter`` and ``metrics``. Older logs carry neither: a document then has
  one line per filter, in the order of the task's ``filter_list``.

What is read is checked, and a file that breaks a rule is refused with its
path, the JSON path or line, the value and what was expected -- never read
into a fit. Every JSON text goes through :mod:`benchsel._json` (bounded size
and nesting depth; integers beyond 18 digits read as floats). ``results``,
``configs``, ``n-samples``, ``groups`` and ``group_subtasks`` must be
objects of the types lm-eval writes; a score (aggregated or per sample) must
be a finite number, and a score of a 0/1 metric (:func:`is_unit_metric`:
``acc``, ``acc_norm``, ``exact_match``, ``prompt_level_strict_acc`` ...)
must lie in [0, 1]. Booleans are read as 0/1 only in sample logs, only for
0/1 metrics and only when the whole log writes that metric as booleans (as
ifeval's ``process_results`` does); a ``true`` among numbers is damage.
Strings (lm-eval's ``"N/A"``) and ``null`` are no score. A folder or file
that cannot be read is an error naming it, never skipped.

Partial runs are never read as full-task scores: :meth:`LmEvalRuns.leaderboard`
and the question-level sources use the latest *full* run of each task (a
later ``--limit`` smoke test does not hide it) and leave models with only
partial runs out, with a warning; a new model's partial run is read as the
observations of the questions it ran.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._json import load_file
from ._parallel import map_tasks
from .lmeval_samples import (
    _NOT_METRICS,
    _cannot_read,
    _kind,
    _read_jsonl,
    _score,
    _show,
    is_unit_metric,
    read_sample_scores,
)
from .matrix import DataWarning, ScoreMatrix, _short_list
from .outputs import write_json_atomic

__all__ = [
    "LmEvalRuns",
    "TaskRun",
    "read_lm_eval",
    "read_sample_scores",
    "is_lm_eval_path",
    "is_unit_metric",
    "parse_per_task",
    "write_samples",
]

# ``datetime.now().isoformat()`` with ':' replaced by '-': 2024-10-03T11-05-59.123456
_DATE = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?"
_RESULTS = re.compile(rf"^(?P<stem>.+)_(?P<date>{_DATE})\.json$")
_SAMPLES = re.compile(rf"^samples_(?P<task>.+)_(?P<date>{_DATE})\.jsonl$")
_MODEL_KEYS = ("peft", "delta", "pretrained", "model", "path", "engine")  # lm-eval's own order


@dataclass
class TaskRun:
    """One task of one lm-eval run of one model.

    Attributes
    ----------
    model, task : str
    date : str
        The run's date id (sorts in time order).
    scores : dict
        ``"<metric>,<filter>" -> value`` from the results file.
    primary : str or None
        The task's primary ``"<metric>,<filter>"`` (first of its metric and
        filter lists), when the results file has its config.
    filters : list of str
        The task's filters in ``filter_list`` order (``["none"]`` without one).
    n_original, n_effective : int or None
        Documents in the task and documents run.
    results_file : Path
    samples_file : Path or None
    """

    model: str
    task: str
    date: str
    scores: dict
    primary: str | None
    filters: list[str]
    n_original: int | None
    n_effective: int | None
    results_file: Path
    samples_file: Path | None = None

    @property
    def partial(self) -> bool:
        """True when the run covered fewer documents than the task has."""
        return (self.n_original is not None and self.n_effective is not None
                and self.n_effective < self.n_original)


@dataclass
class LmEvalRuns:
    """Everything read from lm-eval output: the latest run of each (model, task).

    Attributes
    ----------
    source : str
        What was read (for messages).
    runs : dict
        ``(model, task) -> TaskRun``, the latest run of each task per model
        (what a new model's output is read as).
    full_runs : dict
        ``(model, task) -> TaskRun``, the latest run of the whole task (what a
        leaderboard or a question-level source is built from: a later
        ``--limit`` or ``--samples`` run does not hide an earlier full one).
    superseded : list of TaskRun
        Earlier runs of the same (model, task) that neither of the above uses.
    groups : dict
        Group name -> member tasks (groups are aggregates, never leaf tasks).
    """

    source: str
    runs: dict = field(default_factory=dict)
    full_runs: dict = field(default_factory=dict)
    superseded: list = field(default_factory=list)
    groups: dict = field(default_factory=dict)

    # --------------------------------------------------------------- views
    @property
    def models(self) -> list[str]:
        """Models, sorted by name: the matrix a folder gives does not depend on the
        order its runs finished in (which moves calibration folds, and so intervals)."""
        return sorted({model for model, _ in self.runs})

    @property
    def tasks(self) -> list[str]:
        """Leaf tasks, sorted."""
        return sorted({task for _, task in self.runs})

    def run(self, model: str, task: str) -> TaskRun:
        try:
            return self.runs[(model, task)]
        except KeyError:
            have = [t for m, t in self.runs if m == model]
            raise ValueError(
                f"{self.source}: model {model!r} has no run of task {task!r}"
                + (f"; its tasks are {_short_list(have)}" if have else "")
            ) from None

    def check_tasks(self, tasks: Iterable[str], flag: str = "--lm-eval-task") -> list[str]:
        """``tasks`` as a list, each checked to be a leaf task that was read."""
        tasks = list(tasks)
        for task in tasks:
            if task in self.groups:
                raise ValueError(
                    f"{self.source}: {task!r} is a group of tasks "
                    f"({_short_list(self.groups[task])}); name its leaf tasks in {flag}"
                )
            if task not in self.tasks:
                raise ValueError(
                    f"{self.source}: no run of task {task!r} (from {flag}); tasks found: "
                    f"{_short_list(self.tasks, limit=30)}"
                )
        return tasks

    # ---------------------------------------------------------- leaderboard
    def leaderboard(
        self,
        *,
        metric: str | Mapping[str, str] | None = None,
        filter: str | Mapping[str, str] | None = None,  # noqa: A002 - lm-eval's own word
        models: Iterable[str] | None = None,
        partial: str = "skip",
        stderr: bool = False,
    ) -> ScoreMatrix:
        """Models x leaf tasks of full-task scores, columns ``"<task>/<metric>,<filter>"``.

        Parameters
        ----------
        metric, filter : str or mapping task -> str, optional
            Which score of each task; default the task's primary metric and
            filter (the first of its ``metric_list`` and ``filter_list``).
        models : iterable of str, optional
            Only these models (default all).
        partial : {"skip", "error"}
            What to do with a run of fewer documents than the task has: leave
            the cell missing with a warning, or raise.
        stderr : bool, default False
            The same cells' standard errors instead (lm-eval's
            ``"<metric>_stderr,<filter>"``; NaN where a run has none).
        """
        wanted = list(models) if models is not None else self.models
        cells: dict[tuple[str, str], float] = {}
        skipped, lacking, scored = [], [], set()
        for (model, task), run in self.runs.items():
            if model not in wanted:
                continue
            run = self.full_runs.get((model, task), run)
            key = self._score_key(run, metric, filter)
            if key is None:
                lacking.append(run)
                continue
            scored.add(task)
            if run.partial:
                if partial == "error":
                    raise ValueError(
                        f"{run.results_file}: {model!r} ran {run.n_effective} of "
                        f"{run.n_original} documents of {task!r} (a --samples or --limit "
                        "run); it is not a full-task score"
                    )
                skipped.append(f"{model}: {task} ({run.n_effective}/{run.n_original})")
                continue
            cells[(model, f"{task}/{key}")] = (
                run.scores.get(key.replace(",", "_stderr,", 1), np.nan) if stderr
                else run.scores[key])
        if skipped:
            warnings.warn(
                f"{self.source}: {len(skipped)} partial run(s) left out of the leaderboard "
                f"(fewer documents than the task has; they are observations for "
                f"'predict --plan', not full-task scores): {_short_list(skipped)}",
                DataWarning,
                stacklevel=2,
            )
        # A run without the score its task's other runs give: lm-eval wrote "N/A" or
        # nothing there. Its cell is missing, which the fit then has to impute: say so.
        lacking = [r for r in lacking if r.task in scored]
        if lacking:
            warnings.warn(
                f"{self.source}: {len(lacking)} run(s) lack the score the task's other runs "
                "give, and their cells are left missing: "
                + _short_list([f"{r.model}: {r.task} ({r.results_file})" for r in lacking]),
                DataWarning,
                stacklevel=2,
            )
        columns = sorted({c for _, c in cells})
        if not columns:
            raise ValueError(
                f"{self.source}: no full-task score to read"
                + (f" for metric {metric!r}" if metric else "")
                + (f" and filter {filter!r}" if filter else "")
                + "; choose them with --lm-eval-metric and --lm-eval-filter"
            )
        rows = [m for m in wanted if any((m, c) in cells for c in columns)]
        values = np.array([[cells.get((m, c), np.nan) for c in columns] for m in rows])
        return ScoreMatrix(values, rows, columns, source=self.source)

    def _score_key(self, run: TaskRun, metric, filter) -> str | None:  # noqa: A002
        """The ``"<metric>,<filter>"`` key of ``run`` to read, or None if it has no such score."""
        m = metric.get(run.task) if isinstance(metric, Mapping) else metric
        f = filter.get(run.task) if isinstance(filter, Mapping) else filter
        if m is None and f is None and run.primary in run.scores:
            return run.primary
        default_metric, _, default_filter = (run.primary or ",").partition(",")
        m = m or default_metric
        candidates = [f] if f else ([default_filter] if default_filter else []) + ["none"]
        for f in candidates:
            if f"{m},{f}" in run.scores:
                return f"{m},{f}"
        if isinstance(metric, Mapping) and run.task in metric:
            if not _metric_keys(run.scores):
                raise ValueError(_no_scores_message(run, m))
            raise ValueError(
                f"{run.results_file}: task {run.task!r} has no score {m!r} for filter "
                f"{candidates[0]!r}; it has {_short_list(_metric_keys(run.scores))} "
                "(choose with --lm-eval-metric and --lm-eval-filter)"
            )
        return None

    # -------------------------------------------------------------- samples
    def questions(
        self,
        task: str,
        *,
        metric: str | None = None,
        filter: str | None = None,  # noqa: A002 - lm-eval's own word
        models: Iterable[str] | None = None,
        n_jobs: int = 1,
        backend: str | None = None,
    ) -> ScoreMatrix:
        """Models x questions of one task from the sample logs.

        Items are ``"<task>/<doc_id>"`` in increasing ``doc_id``; a question a
        model did not run (a partial run) is missing. Models without sample
        logs for the task are left out.

        The logs are read one per model, streamed line by line and kept as
        (doc id, score) arrays, in parallel through joblib when ``n_jobs`` is
        not 1 -- on a Dask cluster with ``backend="dask"`` inside a
        ``dask.distributed.Client`` context. The matrix is the same either way.
        """
        self.check_tasks([task])
        wanted = list(models) if models is not None else self.models
        runs = {}
        for model in wanted:
            run = self.full_runs.get((model, task)) or self.runs.get((model, task))
            if run is not None and run.samples_file is not None:
                runs[model] = run
        if not runs:
            raise ValueError(
                f"{self.source}: no samples_{task}_<date>.jsonl beside a results file; "
                "run lm-eval with --log_samples"
            )
        parts = map_tasks(_sample_arrays, ((run, metric, filter) for run in runs.values()),
                          n_jobs=n_jobs, backend=backend)
        docs = np.unique(np.concatenate([d for d, _ in parts]))
        values = np.full((len(parts), docs.size), np.nan)
        for i, (doc, score) in enumerate(parts):
            values[i, np.searchsorted(docs, doc)] = score
        return ScoreMatrix(values, list(runs), [f"{task}/{d}" for d in docs],
                           source=self.source)

    def complete_models(self, task: str) -> list[str]:
        """Models whose run of ``task`` covered every document, with sample logs (sorted,
        as :attr:`models`)."""
        return sorted(m for (m, t), run in self.full_runs.items()
                      if t == task and run.samples_file is not None)


def _metric_keys(scores: Mapping) -> list[str]:
    return [k for k in scores if "_stderr," not in k]


def _no_scores_message(run: TaskRun, metric: str) -> str:
    """Why ``run`` has no full-task score, and what its files do hold."""
    if run.samples_file is not None and run.results_file == run.samples_file:
        held = _log_metrics(run.samples_file)
        return (f"{run.samples_file}: task {run.task!r} has no full-task score {metric!r}: "
                "only its sample log was found, with no results_<date>.json of the same "
                "date beside it; the log's lines hold per-question metric(s) "
                f"{_short_list(held) if held else '(none)'}. A benchmark-level plan reads "
                "the full-task scores of lm-eval's results file")
    return (f"{run.results_file}: task {run.task!r} has no score {metric!r}; its entry in "
            "'results' holds no scores at all")


def _log_metrics(path: Path) -> list[str]:
    """The metric names of the first line of a sample log (for messages)."""
    for _, obj in _read_jsonl(path, stop_after=1):
        names = obj.get("metrics")
        if isinstance(names, list) and all(isinstance(n, str) for n in names):
            return names
        return sorted(k for k in obj if k not in _NOT_METRICS)
    return []




# ------------------------------------------------------------------ reading
def is_lm_eval_path(path: str | os.PathLike) -> bool:
    """True for a folder, an lm-eval results JSON or a sample log."""
    p = Path(path)
    if p.is_dir():
        return True
    return p.is_file() and bool(_SAMPLES.match(p.name) or _RESULTS.match(p.name))


def _load_json(path: Path):
    """The parsed JSON of ``path``, bounded in size and depth (:func:`benchsel._json.load_file`)."""
    return load_file(path)






def _object(value, where: str, holds: str) -> dict:
    """``value`` if it is a JSON object, ``{}`` if absent or null; else a named error."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{where} is {_show(value)} ({_kind(value)}); expected an object "
                         f"of {holds}")
    return value


def _list(value, where: str, holds: str) -> list:
    """``value`` if it is a JSON list, ``[]`` if absent or null; else a named error."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{where} is {_show(value)} ({_kind(value)}); expected a list of "
                         f"{holds}")
    return value


def _model_name(data: dict, path: Path) -> str:
    """The model name the run recorded: ``model_name``, else from ``model_args``."""
    name = data.get("model_name")
    if isinstance(name, str) and name:
        return name
    config = _object(data.get("config"), f"{path}: config", "run settings")
    args = config.get("model_args")
    if isinstance(args, dict):
        for key in _MODEL_KEYS:
            if key in args:
                return str(args[key])
    elif isinstance(args, str):
        for key in _MODEL_KEYS:
            if f"{key}=" in args:
                return args.split(f"{key}=", 1)[1].split(",")[0]
    return path.parent.name


def _entries(config: dict, key: str, field_: str, where: str) -> list[str]:
    """The ``field_`` of each object in ``config[key]`` (a list), names only."""
    out = []
    for i, entry in enumerate(_list(config.get(key), f"{where}.{key}", "objects")):
        entry = _object(entry, f"{where}.{key}[{i}]", f"'{field_}' and settings")
        name = entry.get(field_)
        if isinstance(name, str) and name:
            out.append(name)
    return out


def _filters(config: dict, where: str) -> list[str]:
    return _entries(config, "filter_list", "name", where) or ["none"]


def _primary(config: dict, filters: list[str], scores: dict, where: str) -> str | None:
    for m in _entries(config, "metric_list", "metric", where)[:1]:
        for f in filters:
            if f"{m},{f}" in scores:
                return f"{m},{f}"
    keys = _metric_keys(scores)
    return keys[0] if keys else None




def _scores(entry: dict, where: str) -> dict[str, float]:
    """The ``"<metric>,<filter>"`` scores of one task's entry in ``results``.

    Strings (lm-eval writes ``"N/A"`` for what it could not compute) and
    nulls are no score; a standard error that is not a finite number is left
    out (lm-eval writes NaN there for one-document runs), never an error.
    """
    out = {}
    for key, value in entry.items():
        if "," not in key or value is None or isinstance(value, str | list | dict):
            continue
        if "_stderr," in key:
            if not isinstance(value, bool) and isinstance(value, int | float) \
                    and math.isfinite(value):
                out[key] = float(value)
            continue
        out[key] = _score(value, f"{where}.{key}", key.partition(",")[0])
    return out


def _count(value, where: str) -> int | None:
    """``n-samples`` document counts: a whole number >= 0, or absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{where} is {_show(value)}; expected a whole number of documents")
    return value


def _groups(data: dict, path: Path) -> dict[str, list[str]]:
    """Group -> member tasks from ``group_subtasks`` (and ``groups``' names)."""
    where = f"{path}: group_subtasks"
    groups = {}
    for group, members in _object(data.get("group_subtasks"), where, "member lists").items():
        members = _list(members, f"{where}.{group}", "task names")
        if not all(isinstance(m, str) for m in members):
            raise ValueError(f"{where}.{group} is {_show(members)}; expected a list of task "
                             "names")
        if members:
            groups[group] = list(members)
    for group in _object(data.get("groups"), f"{path}: groups", "group scores"):
        groups.setdefault(group, [])
    return groups


def _read_results_file(path: Path, date: str) -> tuple[list[TaskRun], dict]:
    data = _load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        held = f"its keys are {_short_list(list(data))}" if isinstance(data, dict) else \
            f"it holds {_kind(data)}"
        raise ValueError(f"{path}: not an lm-eval results file (no 'results' object; {held})")
    model = _model_name(data, path)
    groups = _groups(data, path)
    configs = _object(data.get("configs"), f"{path}: configs", "task configs")
    counts = _object(data.get("n-samples"), f"{path}: n-samples", "document counts")
    runs = []
    for task, entry in data["results"].items():
        entry = _object(entry, f"{path}: results.{task}", "'<metric>,<filter>' scores")
        if task in groups:
            continue
        scores = _scores(entry, f"{path}: results.{task}")
        where = f"{path}: configs.{task}"
        config = _object(configs.get(task), where, "the task's settings")
        filters = _filters(config, where)
        count = _object(counts.get(task), f"{path}: n-samples.{task}",
                        "'original' and 'effective' counts")
        runs.append(TaskRun(
            model=model, task=task, date=date, scores=scores,
            primary=_primary(config, filters, scores, where), filters=filters,
            n_original=_count(count.get("original"), f"{path}: n-samples.{task}.original"),
            n_effective=_count(count.get("effective"), f"{path}: n-samples.{task}.effective"),
            results_file=path,
        ))
    return runs, groups




def _files_under(folder: Path) -> list[Path]:
    """Every file below ``folder``, sorted; a sub-folder that cannot be listed is an error.

    ``Path.rglob`` skips a folder it may not list without a word, which
    would drop a model's runs from a leaderboard unnoticed.
    """
    def refuse(err: OSError):
        raise _cannot_read(err.filename or folder, err)

    found = []
    for root, _, files in os.walk(folder, onerror=refuse):
        found.extend(Path(root) / name for name in files)
    return sorted(found)


def read_lm_eval(paths: str | os.PathLike | Iterable) -> LmEvalRuns:
    """Read lm-eval output: folders (searched at any depth), results JSONs and sample logs.

    Each results file is one run of one model; its sample logs are the
    ``samples_<task>_<date>.jsonl`` with the same date in the same folder.
    When a model has several runs of a task, the latest counts and the
    earlier ones are reported in a warning. A sample log given on its own
    (no results file beside it) is a run of the model named by its folder.

    Raises
    ------
    FileNotFoundError
        If a path does not exist.
    ValueError
        If nothing lm-eval wrote is found, or a file is damaged.
    """
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    paths = [Path(p) for p in paths]
    results, samples = [], []
    for p in paths:
        if not p.exists():
            raise FileNotFoundError(f"{p}: no such file or folder of lm-eval output")
        found = _files_under(p) if p.is_dir() else [p]
        if (m := _SAMPLES.match(p.name)) and p.is_file():
            # A sample log given alone: its run's results file sits beside it.
            found += sorted(p.parent.glob(f"*_{m.group('date')}.json"))
        for f in found:
            if not f.is_file():
                continue
            if (m := _SAMPLES.match(f.name)):
                samples.append((f, m.group("task"), m.group("date")))
            elif (m := _RESULTS.match(f.name)):
                results.append((f, m.group("date")))
    results = list(dict.fromkeys(results))
    samples = list(dict.fromkeys(samples))
    source = ", ".join(str(p) for p in paths)
    out = LmEvalRuns(source=source)
    logs = {(f.parent, task, date): f for f, task, date in samples}
    all_runs = []
    for f, date in results:
        runs, groups = _read_results_file(f, date)
        out.groups.update(groups)
        for run in runs:
            run.samples_file = logs.pop((f.parent, run.task, date), None)
        all_runs.extend(runs)
    for (folder, task, date), f in logs.items():
        # A log whose results file is missing (or was not given): one run of the folder's model.
        all_runs.append(TaskRun(model=folder.name, task=task, date=date, scores={},
                                primary=None, filters=[], n_original=None, n_effective=None,
                                results_file=f, samples_file=f))
    if not all_runs:
        raise ValueError(
            f"{source}: no lm-eval output found (expected results_<date>.json and "
            "samples_<task>_<date>.jsonl files as lm_eval --output_path writes them); "
            "a score matrix is a file (CSV, TSV, Parquet, NPZ) or a bundled name"
        )
    for run in sorted(all_runs, key=lambda r: r.date):
        key = (run.model, run.task)
        out.runs[key] = run
        if not run.partial:
            out.full_runs[key] = run
    used = {id(r) for r in (*out.runs.values(), *out.full_runs.values())}
    out.superseded = [r for r in all_runs if id(r) not in used]
    if out.superseded:
        warnings.warn(
            f"{source}: {len(out.superseded)} earlier run(s) replaced by a later run of the "
            "same model and task: "
            + _short_list([f"{r.model}: {r.task} ({r.date})" for r in out.superseded]),
            DataWarning,
            stacklevel=2,
        )
    return out




"""Longest line of a sample log read (64 Mi characters); lm-eval's lines hold one
document each: kilobytes, megabytes for long-context tasks."""








def _sample_arrays(run: TaskRun, metric: str | None,
                   filter: str | None) -> tuple[np.ndarray, np.ndarray]:  # noqa: A002
    """(doc ids, scores) of one sample log as arrays: compact enough to gather thousands."""
    scores = read_sample_scores(run, metric=metric, filter=filter)
    return (np.fromiter(scores.keys(), dtype=np.int64, count=len(scores)),
            np.fromiter(scores.values(), dtype=np.float64, count=len(scores)))








# ------------------------------------------------------------------ options
def parse_per_task(text: str | None, flag: str) -> str | dict[str, str] | None:
    """``--lm-eval-metric`` / ``--lm-eval-filter``: one name for all tasks, or ``task=name,...``."""
    if text is None:
        return None
    if "=" not in text:
        return text.strip() or None
    out = {}
    for part in text.split(","):
        if not part.strip():
            continue
        task, sep, name = part.partition("=")
        if not sep or not task.strip() or not name.strip():
            raise ValueError(f"{flag}: {part!r} is not of the form 'task=name'")
        out[task.strip()] = name.strip()
    return out


# ------------------------------------------------------------------ writing
def write_samples(path: str | os.PathLike, selection: Mapping[str, Iterable[int]],
                  *, protect=None) -> dict:
    """Write ``{"<leaf task>": [sorted, unique doc ids]}`` for lm-eval's ``--samples``.

    Returns the written object. Doc ids must be non-negative integers.
    """
    out = {}
    for task, docs in selection.items():
        clean = set()
        for d in docs:
            if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 0:
                raise ValueError(f"doc id {d!r} of task {task!r} is not a non-negative integer")
            clean.add(int(d))
        out[str(task)] = sorted(clean)
    write_json_atomic(path, out, protect=protect)
    return out
