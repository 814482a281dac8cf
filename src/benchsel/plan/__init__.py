"""The plan: what to run on a new model, and everything needed to predict the rest.

``benchsel plan`` decides; a :class:`Plan` records the decision and is what
``benchsel predict --plan`` reads, at both levels:

* **benchmarks** -- the selected benchmarks of a leaderboard, and the Gaussian
  model that predicts the others;
* **questions** -- per lm-eval task, the questions to run (by ``doc_id``) and
  the question-level method that predicts the full-task score.

A plan is self-contained: it embeds the source score matrices it was fitted
on (with their sha256 fingerprints) and the options of the fit, and
prediction rebuilds the fitted predictor from them. Every fit in benchsel is
deterministic given its data, options and seed; a rebuilt predictor is
checked against the selection and the predictions the plan recorded when it
was made, so a plan that does not reproduce (another benchsel or numpy
version, a damaged file) fails loudly instead of predicting something else.
Refitting rather than serializing each predictor's internals keeps one
format for every method, and the embedded source is needed anyway: the
extrapolation check compares a new model with the models fitted on.
"""

from __future__ import annotations

import datetime as _dt
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..io import write_json_atomic
from ..matrix import DataWarning, ScoreMatrix, _short_list
from ..sources import TaskSources, as_scores, mixed_sources, task_sources
from ._format import FORMAT, FORMAT_VERSION, decode_array, encode_array, fingerprint
from ._format import read_plan_json as _read_plan_json
from ._schema import LEVELS
from .allocation import MIN_PER_TASK, allocate_questions, error_curve

__all__ = [
    "Plan",
    "BenchmarkPlan",
    "TaskPlan",
    "plan_benchmarks",
    "plan_questions",
    "plan_mixed",
    "allocate_questions",
    "error_curve",
    "MIN_PER_TASK",
]

_CHECK_ROWS = 20  # source models whose predictions a plan records to verify a rebuild
_RTOL, _ATOL = 1e-6, 1e-9


def _version() -> str:
    from .. import __version__

    return __version__


def _matrix_to_json(scores: ScoreMatrix) -> dict:
    return {
        "models": list(scores.models),
        "items": list(scores.items),
        "values": encode_array(scores.values),
        "fingerprint": fingerprint(scores.models, scores.items, scores.values),
    }


def _matrix_from_json(obj, where: str) -> ScoreMatrix:
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected an object with models, items and values")
    values = decode_array(obj.get("values"), f"{where}.values")
    models, items = obj.get("models"), obj.get("items")
    if not isinstance(models, list) or not isinstance(items, list) or \
            values.shape != (len(models), len(items)):
        raise ValueError(f"{where}: {len(models or [])} models and {len(items or [])} items "
                         f"do not match the values' shape {values.shape}")
    if fingerprint(models, items, values) != obj.get("fingerprint"):
        raise ValueError(f"{where}: the source matrix does not match its fingerprint; the "
                         "plan file is damaged or was edited")
    return ScoreMatrix(values, models, items)


def _check_rebuild(what: str, recorded, rebuilt) -> None:
    recorded = np.asarray(recorded, dtype=float)
    rebuilt = np.asarray(rebuilt, dtype=float)
    same = recorded.shape == rebuilt.shape and np.allclose(
        recorded, rebuilt, rtol=_RTOL, atol=_ATOL, equal_nan=True)
    if not same:
        raise ValueError(
            f"{what}: the predictor rebuilt from the plan does not reproduce the plan's "
            f"recorded predictions (this benchsel is {_version()}); make the plan again "
            "with this version"
        )


# ----------------------------------------------------------------- benchmarks
@dataclass
class BenchmarkPlan:
    """Benchmark level: the selection and the Gaussian model's fit options.

    Attributes
    ----------
    source : ScoreMatrix
        The leaderboard the model was fitted on (as cleaned for the fit).
    options : dict
        ``GaussianModel`` parameters (``covariance``, ``transform``, ``bounds``).
    selection : dict
        :meth:`benchsel.gaussian.Selection.to_dict` of the selection.
    check : ndarray
        Predicted means of the first source models from the selected
        benchmarks, recorded to verify the rebuilt model.
    auto : dict or None
        ``auto``'s decisions for a new model run on the selection
        (:meth:`benchsel.prediction.memo.AutoMemo.to_json`): made when the
        plan was, so that prediction only completes the new rows.
    """

    source: ScoreMatrix
    options: dict
    selection: dict
    check: np.ndarray
    auto: dict | None = None
    _model: object = field(default=None, repr=False)

    @property
    def selected(self) -> list[str]:
        return list(self.selection["selected"])

    def model(self):
        """The fitted :class:`~benchsel.gaussian.GaussianModel` (rebuilt once, verified)."""
        if self._model is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DataWarning)  # said once, when planning
                model = _fit_gaussian(self.source, self.options)
            _check_rebuild("benchmark plan", self.check, _benchmark_check(model, self.selected))
            if self.auto is not None:
                from ..prediction.memo import AutoMemo

                model.auto_memo = AutoMemo.from_json(self.auto, model.items_, "benchmarks.auto")
            self._model = model
        return self._model

    def to_json(self) -> dict:
        out = {"source": _matrix_to_json(self.source), "options": self.options,
               "selection": self.selection, "check": encode_array(self.check)}
        if self.auto is not None:
            out["auto"] = self.auto
        return out

    @classmethod
    def from_json(cls, obj: dict, where: str) -> BenchmarkPlan:
        try:
            part = cls(source=_matrix_from_json(obj["source"], f"{where}.source"),
                       options=dict(obj["options"]), selection=dict(obj["selection"]),
                       check=decode_array(obj["check"], f"{where}.check"),
                       auto=obj.get("auto"))
        except (KeyError, TypeError) as err:
            raise ValueError(f"{where}: missing or malformed entry {err}") from None
        unknown = [b for b in part.selected if b not in set(part.source.items)]
        if unknown:
            raise ValueError(f"{where}.selection.selected: {unknown[0]!r} is not a benchmark "
                             f"of the plan's source ({_short_list(part.source.items)})")
        if part.auto is not None:  # checked now, used when the model is rebuilt
            from ..prediction.memo import AutoMemo

            AutoMemo.from_json(part.auto, part.source.items, f"{where}.auto")
        return part


def _fit_gaussian(source: ScoreMatrix, options: dict):
    from ..gaussian import GaussianModel

    return GaussianModel(**options).fit(source)


def _benchmark_check(model, selected: list[str]) -> np.ndarray:
    rows = model.scores_.subset(models=np.arange(min(_CHECK_ROWS, model.scores_.n_models)))
    keep = rows.item_indices(selected, "benchmark")
    observed = rows.subset(items=keep)
    with warnings.catch_warnings():
        # Source models without the selected scores are part of the check.
        warnings.filterwarnings("ignore", "'.*no observed score", DataWarning)
        mean = model.predict(observed, method="gaussian").mean
    return np.where(np.isnan(mean), 0.0, mean)


def plan_benchmarks(
    data,
    k: int | None = None,
    *,
    objective: str = "mi",
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    costs: Mapping[str, float] | None = None,
    budget: float | None = None,
    target_residual: float | None = None,
    seed: int = 0,
    command: str | None = None,
    prepare_auto: bool = True,
    keep_aggregates: bool = False,
    **model_options,
) -> Plan:
    """Fit the Gaussian model, select benchmarks and record both in a plan.

    Parameters
    ----------
    data : ScoreMatrix, DataFrame, path or bundled dataset name
        The source leaderboard (see :func:`benchsel.sources.as_scores`).
    k, objective, include, exclude, costs, budget, target_residual, seed, keep_aggregates
        As in :meth:`benchsel.gaussian.GaussianModel.select`.
    command : str, optional
        Recorded in the plan: the command line that made it.
    prepare_auto : bool, default True
        Make the default predictor's (``auto``) decisions for the selection
        now and store them (:meth:`GaussianModel.prepare_auto`): planning
        takes longer (seconds to a minute on the largest bundled boards),
        every prediction from the plan is then as fast as a completion.
    model_options
        :class:`~benchsel.gaussian.GaussianModel` parameters.

    Returns
    -------
    Plan
        ``plan.run_in_full`` lists the benchmarks to run.
    """
    from ..gaussian import GaussianModel

    scores = as_scores(data)
    model = GaussianModel(**model_options).fit(scores)
    sel = model.select(k, objective=objective, include=include, exclude=exclude, costs=costs,
                       budget=budget, target_residual=target_residual, seed=seed,
                       keep_aggregates=keep_aggregates)
    options = _gaussian_options(model)
    auto = None
    if prepare_auto:
        model.prepare_auto(sel.items)
        auto = model.auto_memo.to_json(model.items_)
    part = BenchmarkPlan(source=model.scores_, options=options, selection=sel.to_dict(),
                         check=_benchmark_check(model, sel.items), auto=auto, _model=model)
    part.selection["options"] = {
        "k": k, "objective": objective, "include": list(include), "exclude": list(exclude),
        "costs": dict(costs) if costs else None, "budget": budget,
        "target_residual": target_residual, "keep_aggregates": keep_aggregates}
    return Plan(level="benchmarks", benchmarks=part, seed=seed, command=command,
                source_description=scores.source)


def _gaussian_options(model) -> dict:
    """The model's constructor parameters, checked to be plain JSON values."""
    options = model.get_params()
    for name, value in options.items():
        if not _jsonable(value):
            raise ValueError(
                f"a plan records the model's options as JSON; {name}={value!r} is not a plain "
                "JSON value (for bounds use text such as '0,100', '-inf,0' or 'none')")
    return options


def _jsonable(value) -> bool:
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return bool(np.isfinite(value))
    if isinstance(value, list | tuple):
        return all(_jsonable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _jsonable(v) for k, v in value.items())
    return False


# ------------------------------------------------------------------ questions
@dataclass
class TaskPlan:
    """Question level, one task: the questions to run and the method that predicts.

    Attributes
    ----------
    task : str
        lm-eval leaf task name.
    metric, filter : str or None
        The per-sample metric and filter the scores are of.
    doc_ids : ndarray of int
        Every question of the task (the source matrix's columns), ascending.
    source : ScoreMatrix
        Source models' complete per-question scores.
    method : str
        Registry name of the question-level method.
    n : int
        Questions to run.
    seed : int
        Seed of the method's random choices for this task.
    selected : list of int
        Doc ids to run, in the order the method takes their scores.
    check : ndarray
        The method's predictions for the first source models, recorded to
        verify the rebuilt method.
    """

    task: str
    metric: str | None
    filter: str | None
    doc_ids: np.ndarray
    source: ScoreMatrix
    method: str
    n: int
    seed: int
    selected: list
    check: np.ndarray
    _fitted: object = field(default=None, repr=False)

    @property
    def bounds(self) -> tuple[float, float]:
        """Range of the task score: [0, 1] for per-sample scores in [0, 1], else none."""
        v = self.source.values
        return (0.0, 1.0) if v.min() >= 0 and v.max() <= 1 else (-np.inf, np.inf)

    @property
    def source_range(self) -> tuple[float, float]:
        means = self.source.values.mean(axis=1)
        return float(means.min()), float(means.max())

    def fitted(self):
        """The fitted question-level method (rebuilt once, verified)."""
        if self._fitted is None:
            method = _fit_method(self.method, self.source.values, self.n, self.seed,
                                 calibrate=True)
            chosen = [int(self.doc_ids[j]) for j in method.selected_]
            if chosen != list(self.selected):
                raise ValueError(
                    f"task {self.task!r}: the method rebuilt from the plan chose other "
                    f"questions than the plan records (this benchsel is {_version()}); "
                    "make the plan again with this version"
                )
            _check_rebuild(f"task {self.task!r}", self.check, _task_check(method, self.source))
            self._fitted = method
        return self._fitted

    def to_json(self) -> dict:
        return {"metric": self.metric, "filter": self.filter,
                "doc_ids": [int(d) for d in self.doc_ids], "source": _matrix_to_json(self.source),
                "method": self.method, "n": self.n, "seed": self.seed,
                "selected": [int(d) for d in self.selected], "check": encode_array(self.check)}

    @classmethod
    def from_json(cls, task: str, obj: dict, where: str) -> TaskPlan:
        try:
            part = cls(task=task, metric=obj["metric"], filter=obj["filter"],
                       doc_ids=np.asarray(obj["doc_ids"], dtype=np.int64),
                       source=_matrix_from_json(obj["source"], f"{where}.source"),
                       method=str(obj["method"]), n=_whole(obj["n"], "n"),
                       seed=_whole(obj["seed"], "seed"),
                       selected=[int(d) for d in obj["selected"]],
                       check=decode_array(obj["check"], f"{where}.check"))
        except (KeyError, TypeError) as err:
            raise ValueError(f"{where}: missing or malformed entry {err}") from None
        if part.source.n_items != len(part.doc_ids):
            raise ValueError(f"{where}: {len(part.doc_ids)} doc ids for the source's "
                             f"{part.source.n_items} questions")
        if len(part.selected) != part.n:
            raise ValueError(f"{where}.selected: {len(part.selected)} doc ids; n is {part.n}")
        unknown = sorted(set(part.selected) - set(part.doc_ids.tolist()))
        if unknown:
            raise ValueError(f"{where}.selected: doc id {unknown[0]} is not one of the task's "
                             f"doc ids ({_ids(part.doc_ids)})")
        return part


_MIN_MODELS_FOR_TOTAL = 5  # three 75/25 splits need a few models on each side


def _for_task(task: str, func, *args, **kwargs):
    """``func(*args, **kwargs)``, its ValueError naming the task it was about."""
    try:
        return func(*args, **kwargs)
    except ValueError as err:
        raise ValueError(f"task {task!r}: {err}") from None


def _whole(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number; got {value!r}")
    return value


def _fit_method(name: str, values: np.ndarray, n: int, seed, *, calibrate: bool = False):
    """A fitted question-level method; ``seed`` is an int or a Generator.

    With ``calibrate`` its error bars are calibrated on the source models
    (:class:`~benchsel.coreset.calibrated.Calibrated`; the same questions and
    means).
    """
    from ..coreset.calibrated import Calibrated
    from ..coreset.methods import make_method

    rng = np.random.default_rng(seed)
    if calibrate:
        return Calibrated(lambda: make_method(name)).fit(values, n, rng)
    return make_method(name).fit(values, n, rng)


def _task_check(method, source: ScoreMatrix) -> np.ndarray:
    rows = source.values[:_CHECK_ROWS]
    mean, sd = method.predict(rows[:, method.selected_])
    return np.column_stack([mean, np.zeros_like(mean) if sd is None else sd])


def _ids(doc_ids, limit: int = 10) -> str:
    """Sorted doc ids for a message, the first ``limit`` of them."""
    doc_ids = sorted(doc_ids)
    more = f", ... ({len(doc_ids) - limit} more)" if len(doc_ids) > limit else ""
    return ", ".join(str(d) for d in doc_ids[:limit]) + more


def _doc_id(item: str, task: str) -> int:
    head, _, tail = item.rpartition("/")
    if head != task or not tail.isdigit():
        raise ValueError(f"question {item!r} is not named '{task}/<doc_id>'")
    return int(tail)


def plan_questions(
    data,
    tasks: Sequence[str] | str | None = None,
    *,
    n: int | str | Mapping[str, int | str] | None = None,
    total: int | None = None,
    method: str = "default",
    seed: int = 0,
    metric=None,
    filter=None,  # noqa: A002 - lm-eval's own word
    fan_out: Mapping | None = None,
    command: str | None = None,
) -> Plan:
    """Choose questions of one or more tasks and record the fitted methods in a plan.

    Parameters
    ----------
    data : mapping task -> scores, folder of lm-eval runs, or one task's matrix
        Source models' complete per-question scores
        (:func:`benchsel.sources.task_sources`): a mapping of each task's
        models x questions, a folder of lm-eval runs with sample logs (name
        the ``tasks``), or one task's matrix (a bundled per-question set,
        an NPZ/CSV file, a ScoreMatrix or DataFrame; columns are doc ids).
    tasks : str or sequence of str, optional
        Which tasks of lm-eval output to plan; the name of one task's matrix.
    n : int, str or mapping task -> int or str, optional
        Questions per task: a count, a percentage such as ``"5%"``, or one
        per task. Exactly one of ``n`` and ``total``.
    total : int, optional
        A question budget spread over the tasks where the method's measured
        error falls most (:mod:`benchsel.plan.allocation`).
    method : str, default "default"
        Question-level method (see :func:`benchsel.coreset.methods.make_method`).
    seed : int, default 0
        Task ``i`` (in the given order) uses seed ``seed + i``.
    metric, filter : str or mapping task -> str, optional
        Which per-sample score each task is about (lm-eval output: default
        the task's primary metric); recorded in the plan.
    fan_out : mapping, optional
        ``n_jobs``/``backend`` to read sample logs in parallel.
    command : str, optional
        Recorded in the plan.

    Returns
    -------
    Plan
        ``plan.questions`` maps each task to the doc ids to run.
    """
    sources = task_sources(data, tasks, metric=metric, filter=filter, fan_out=fan_out)
    parts = _task_parts(sources, n=n, total=total, method=method, seed=seed)
    return Plan(level="questions", tasks=parts, seed=seed, command=command,
                allocation="total" if total is not None else "per-task",
                source_description=", ".join(sorted({str(s.source)
                                                     for s in sources.scores.values()})))


def _task_parts(sources: TaskSources, *, n, total, method, seed) -> dict:
    from ..coreset.evaluate import resolve_n
    from ..coreset.methods import DEFAULT_METHOD

    tasks, metrics, filters = sources.scores, sources.metrics, sources.filters

    if not tasks:
        raise ValueError("a question-level plan needs at least one task")
    if (n is None) == (total is None):
        raise ValueError("give exactly one of n (per task) and total (spread over tasks)")
    for task, scores in tasks.items():
        missing = np.isnan(scores.values)
        if missing.any():
            i, j = np.argwhere(missing)[0]
            raise ValueError(
                f"task {task!r}: source scores must be complete to plan on them; model "
                f"{scores.models[i]!r} has no score for {scores.items[j]!r} "
                f"({int(missing.sum())} missing in all)")
    name = DEFAULT_METHOD if method == "default" else method
    if total is not None:
        small = [t for t, s in tasks.items() if s.n_models < _MIN_MODELS_FOR_TOTAL]
        if small:
            raise ValueError(
                f"--total measures each task's error on held-out source models and needs at "
                f"least {_MIN_MODELS_FOR_TOTAL}; task(s) {_short_list(small)} have fewer "
                "(give -n per task instead)")

        def fit_predict(train, test, size, rng):
            fitted = _fit_method(name, train, size, rng)
            return fitted.predict(test[:, fitted.selected_])[0]

        curves = {t: _for_task(t, error_curve, s.values, fit_predict, seed=seed)
                  for t, s in tasks.items()}
        sizes = allocate_questions(curves, {t: s.n_items for t, s in tasks.items()}, int(total))
    else:
        sizes = {t: _for_task(t, resolve_n, n[t] if isinstance(n, Mapping) else n, s.n_items)
                 for t, s in tasks.items()}
    parts = {}
    for i, (task, scores) in enumerate(tasks.items()):
        doc_ids = np.array([_doc_id(item, task) for item in scores.items], dtype=np.int64)
        order = np.argsort(doc_ids, kind="stable")
        scores = scores.subset(items=order)
        doc_ids = doc_ids[order]
        fitted = _for_task(task, _fit_method, name, scores.values, sizes[task], seed + i,
                           calibrate=True)
        parts[task] = TaskPlan(
            task=task, metric=(metrics or {}).get(task), filter=(filters or {}).get(task),
            doc_ids=doc_ids, source=scores, method=name, n=sizes[task], seed=seed + i,
            selected=[int(doc_ids[j]) for j in fitted.selected_],
            check=_task_check(fitted, scores), _fitted=fitted)
    return parts


def plan_mixed(
    data,
    tasks,
    columns: Mapping[str, str] | None = None,
    k: int | None = None,
    *,
    n=None,
    total: int | None = None,
    method: str = "default",
    seed: int = 0,
    metric=None,
    filter=None,  # noqa: A002 - lm-eval's own word
    fan_out: Mapping | None = None,
    command: str | None = None,
    **select_and_model_options,
) -> Plan:
    """Run ``k`` benchmarks in full and a sample of questions of ``tasks``; predict the rest.

    The question-level tasks' estimated scores enter the Gaussian model of
    the leaderboard as noisy measurements of their columns (their standard
    errors as measurement noise), so they inform every other prediction.
    The ``k`` full benchmarks are chosen by greedy selection with the task
    columns included first, as if their scores were known exactly: a small
    optimism, since a sampled score is known only to its standard error.

    Parameters
    ----------
    data : folder of lm-eval runs, or the leaderboard (any form of :func:`as_scores`)
        A folder of lm-eval runs gives both: full runs the leaderboard,
        sample logs the questions of ``tasks`` (a list of names), and the
        columns follow from the metrics.
    tasks : sequence of str, or mapping task -> per-question scores
        With a leaderboard: each task's source models x questions (see
        :func:`plan_questions`).
    columns : mapping task -> str, optional
        With a leaderboard: its column of each task's score (the mean of
        its per-question scores).
    k : int, optional
        Benchmarks to run in full, besides the question-level tasks.
    n, total, method, metric, filter, fan_out
        As in :func:`plan_questions`.
    select_and_model_options
        ``objective``, ``include`` (benchmarks to run in full), ``exclude``,
        ``costs``, ``budget``, ``target_residual`` of the selection and
        ``GaussianModel`` options, as in :func:`plan_benchmarks`.
    """
    if select_and_model_options.get("transform", "none") != "none":
        raise ValueError("a mixed plan conditions on sampled task scores with their standard "
                         "errors, which works on raw scores only: use no transform")
    if isinstance(tasks, Mapping):
        if columns is None:
            raise ValueError("give the leaderboard column of each task (columns={task: "
                             "column})")
        board = as_scores(data)
        sources = task_sources(tasks, metric=metric, filter=filter)
    else:
        if columns is not None:
            raise ValueError("columns are read from lm-eval output; give them only with a "
                             "leaderboard and a mapping of task matrices")
        board, sources, columns = mixed_sources(data, tasks, metric=metric, filter=filter,
                                                fan_out=fan_out)
    missing = [t for t in sources.scores if columns.get(t) not in board.items]
    if missing:
        raise ValueError(f"task(s) {_short_list(missing)} have no column in the leaderboard; "
                         f"columns are {_short_list(board.items, limit=30)}")
    sampled = [columns[t] for t in sources.scores]
    include = sampled + [b for b in select_and_model_options.pop("include", ()) if b not in sampled]
    # A mixed plan conditions on noisy task scores: the Gaussian predicts, never auto.
    bench = plan_benchmarks(board, None if k is None else k + len(sampled), include=include,
                            seed=seed, prepare_auto=False,
                            **select_and_model_options).benchmarks
    parts = _task_parts(sources, n=n, total=total, method=method, seed=seed)
    return Plan(level="mixed", benchmarks=bench, tasks=parts, seed=seed, command=command,
                allocation="total" if total is not None else "per-task",
                columns={t: columns[t] for t in sources.scores}, source_description=board.source)


# ----------------------------------------------------------------------- plan
@dataclass
class Plan:
    """A saved plan (see the module docstring).

    Attributes
    ----------
    level : {"benchmarks", "questions", "mixed"}
    benchmarks : BenchmarkPlan or None
    tasks : dict task -> TaskPlan
    columns : dict task -> str
        Mixed plans: the leaderboard column each question-level task estimates.
    seed : int
    command : str or None
        The command line that made the plan.
    allocation : str or None
        Questions: ``per-task`` or ``total``.
    source_description : str or None
        Where the source data came from.
    benchsel_version, created : str
    """

    level: str
    benchmarks: BenchmarkPlan | None = None
    tasks: dict = field(default_factory=dict)
    columns: dict = field(default_factory=dict)
    seed: int = 0
    command: str | None = None
    allocation: str | None = None
    source_description: str | None = None
    benchsel_version: str = field(default_factory=_version)
    created: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc)
                         .isoformat(timespec="seconds"))

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {', '.join(LEVELS)}; got {self.level!r}")
        if self.level in ("benchmarks", "mixed") and self.benchmarks is None:
            raise ValueError(f"a {self.level} plan needs its benchmark part")
        if self.level in ("questions", "mixed") and not self.tasks:
            raise ValueError(f"a {self.level} plan needs at least one task")
        if self.level == "mixed" and set(self.columns) != set(self.tasks):
            raise ValueError("a mixed plan needs the leaderboard column of every task")

    @property
    def run_in_full(self) -> list[str]:
        """Benchmarks to run in full (none for a question-level plan)."""
        if self.benchmarks is None:
            return []
        sampled = set(self.columns.values())
        return [b for b in self.benchmarks.selected if b not in sampled]

    @property
    def questions(self) -> dict[str, list[int]]:
        """``{task: sorted doc ids}`` to run (empty for a benchmark-level plan)."""
        return self.lm_eval_samples()

    def lm_eval_samples(self) -> dict[str, list[int]]:
        """``{task: sorted doc ids}``: lm-eval's ``--samples`` for a question-level plan."""
        return {task: sorted(part.selected) for task, part in self.tasks.items()}

    def summary(self) -> dict:
        """What the plan asks to run, as JSON (no arrays)."""
        out = {"level": self.level, "benchsel_version": self.benchsel_version,
               "created": self.created, "seed": self.seed}
        if self.benchmarks is not None:
            out["run_in_full"] = self.run_in_full
            out["selection"] = self.benchmarks.selection
            out["options"] = self.benchmarks.options
            out["source"] = {"models": self.benchmarks.source.n_models,
                             "benchmarks": self.benchmarks.source.n_items}
        if self.tasks:
            out["allocation"] = self.allocation
            out["tasks"] = {
                t: {"method": p.method, "n": p.n, "questions": len(p.doc_ids),
                    "source_models": p.source.n_models, "metric": p.metric,
                    "filter": p.filter, "doc_ids": sorted(p.selected)}
                for t, p in self.tasks.items()}
        return out

    # ----------------------------------------------------------------- file
    def to_json(self) -> dict:
        out = {"format": FORMAT, "format_version": FORMAT_VERSION,
               "benchsel_version": self.benchsel_version, "created": self.created,
               "command": self.command, "seed": self.seed, "level": self.level,
               "source": self.source_description}
        if self.benchmarks is not None:
            out["benchmarks"] = self.benchmarks.to_json()
        if self.tasks:
            out["allocation"] = self.allocation
            out["tasks"] = {t: p.to_json() for t, p in self.tasks.items()}
        if self.columns:
            out["columns"] = self.columns
        return out

    def save(self, path: str | os.PathLike, *, protect=None) -> None:
        """Write the plan as JSON, atomically (never over a file in ``protect``)."""
        write_json_atomic(path, self.to_json(), protect=protect, allow_nan=False)

    @classmethod
    def load(cls, path: str | os.PathLike, *, max_decoded_bytes: int | None = None) -> Plan:
        """Read a plan, checking its schema, format, version and source fingerprints.

        Parameters
        ----------
        path : path-like
        max_decoded_bytes : int, optional
            Largest total size of the plan's arrays once decoded: 1 GiB, or the
            environment's ``BENCHSEL_MAX_PLAN_BYTES``. A plan from someone else
            is checked against it before anything is inflated.
        """
        obj = _read_plan_json(path, max_decoded_bytes=max_decoded_bytes)
        try:
            return cls._from_json(obj, str(path))
        except (ValueError, TypeError, AttributeError) as err:
            text = str(err)
            raise ValueError(text if text.startswith(str(path)) else f"{path}: {text}") from None

    @classmethod
    def _from_json(cls, obj: dict, where: str) -> Plan:
        for key, kind in (("tasks", dict), ("columns", dict), ("seed", int)):
            if key in obj and not isinstance(obj[key], kind):
                raise ValueError(f"{where}: {key!r} must be a JSON {kind.__name__}")
        level = obj.get("level")
        if level not in LEVELS:
            raise ValueError(f"{where}: level {level!r}; expected one of {', '.join(LEVELS)}")
        bench = obj.get("benchmarks")
        tasks = obj.get("tasks") or {}
        columns = obj.get("columns") or {}
        if bench is not None:
            items = set(bench["source"]["items"])
            for task, column in columns.items():
                if column not in items:
                    raise ValueError(f"{where}: columns.{task}: {column!r} is not a benchmark "
                                     "of the plan's source")
        return cls(
            level=level,
            benchmarks=None if bench is None else BenchmarkPlan.from_json(
                bench, f"{where}: benchmarks"),
            tasks={t: TaskPlan.from_json(t, p, f"{where}: tasks.{t}") for t, p in tasks.items()},
            columns=dict(obj.get("columns") or {}),
            seed=int(obj.get("seed", 0)), command=obj.get("command"),
            allocation=obj.get("allocation"), source_description=obj.get("source"),
            benchsel_version=str(obj.get("benchsel_version")), created=str(obj.get("created")))

    # -------------------------------------------------------------- predict
    def predict(self, observations, *, coverage: float = 0.9, method: str | None = None,
                observed_std=None):
        """Predict what new model(s) were not run on, for every kind of plan.

        Parameters
        ----------
        observations : Observations, or anything :func:`benchsel.observe` reads
            The new model's results: an lm-eval output folder, a mapping
            ``{benchmark: score}`` or ``{task: {doc_id: score}}``, a file...
        coverage : float in (0, 1), default 0.9
            Coverage of the central interval ``[low, high]``.
        method : str, optional
            Benchmark-level plans: the predictor (default
            :data:`benchsel.names.DEFAULT_PREDICTOR`, as ``benchsel predict``).
            Question-level and mixed plans predict with the methods they were
            made with.
        observed_std : ndarray, optional
            Benchmark-level plans: the observed scores' standard errors over the
            plan's benchmarks (``GaussianModel.predict``): the Gaussian conditions
            on them with that noise.

        Returns
        -------
        benchsel.gaussian.Prediction
            ``.to_frame()``: one row per benchmark (or task), columns
            ``mean, std, low, high, observed``; ``.to_dict()``: the JSON of
            ``benchsel predict --json``.
        """
        from ..observations import Observations, observe

        obs = observations if isinstance(observations, Observations) else \
            observe(self, observations)
        if self.level == "benchmarks":
            if obs.benchmarks is None:
                raise ValueError("no benchmark score of any new model was given")
            return self.predict_benchmarks(obs.benchmarks, level=coverage, method=method,
                                           observed_std=observed_std)
        if method is not None:
            raise ValueError(f"method applies to benchmark-level prediction; a {self.level} "
                             "plan predicts with the methods it was made with")
        if observed_std is not None:
            raise ValueError(f"observed_std applies to benchmark scores; a {self.level} plan "
                             "knows the questions each task score comes from")
        if self.level == "questions":
            return self.predict_questions(obs.questions, level=coverage)
        return self.predict_mixed(obs.benchmarks, obs.questions, level=coverage)

    def predict_benchmarks(self, observed, *, level: float = 0.9, method: str | None = None,
                           observed_std=None):
        """Predict the unrun benchmarks of new model(s) (see ``GaussianModel.predict``)."""
        if self.level != "benchmarks":
            raise ValueError(f"this is a {self.level}-level plan: give per-question results "
                             "(an lm-eval output folder or sample logs)")
        return self.benchmarks.model().predict(observed, level=level, method=method,
                                               observed_std=observed_std)

    def predict_questions(self, observed: Mapping[str, Mapping[str, Mapping[int, float]]],
                          *, level: float = 0.9):
        """Predict full-task scores from the planned questions' scores.

        Parameters
        ----------
        observed : mapping model -> task -> {doc_id: score}
            Per-question scores of each new model, matched to the plan by
            doc id. A model must cover every planned question of every task
            of the plan; extra questions of a partial run are ignored with a
            warning; a full run of a task is reported as observed (its score
            is known).
        level : float, default 0.9

        Returns
        -------
        benchsel.gaussian.Prediction
            Items are the plan's tasks.
        """
        if self.level != "questions":
            raise ValueError(f"this is a {self.level}-level plan: "
                             + ("give benchmark scores" if self.level == "benchmarks" else
                                "use predict_mixed"))
        return self._task_estimates(observed, level)

    def predict_mixed(self, full: ScoreMatrix | None,
                      questions: Mapping[str, Mapping[str, Mapping[int, float]]],
                      *, level: float = 0.9):
        """Predict every benchmark from full runs and the planned questions.

        Parameters
        ----------
        full : ScoreMatrix or None
            Full-task scores of the new models (columns named as the
            leaderboard's, e.g. the benchmarks the plan runs in full).
        questions : mapping model -> task -> {doc_id: score}
            As in :meth:`predict_questions`.
        level : float, default 0.9

        Returns
        -------
        benchsel.gaussian.Prediction
            Over the leaderboard's benchmarks; the sampled tasks are
            predicted too (their sample estimate combined with the rest).
        """
        if self.level != "mixed":
            raise ValueError(f"this is a {self.level}-level plan, not a mixed one")
        if full is not None:
            absent = [m for m in full.models if m not in questions]
            if absent:
                raise ValueError(
                    f"{_short_list(absent)}: no run of the plan's sampled task(s) "
                    f"{_short_list(self.tasks)}; run lm-eval with the plan's --samples file")
            unknown = [c for c in full.items if c not in self.benchmarks.source.items]
            if unknown:
                raise ValueError(f"full-task scores of {_short_list(unknown)}, which the plan's "
                                 "leaderboard does not have")
        estimates = self._task_estimates(questions, level)
        model = self.benchmarks.model()
        items = list(model.items_)
        x = np.full((len(estimates.models), len(items)), np.nan)
        noise = np.zeros_like(x)
        for i, name in enumerate(estimates.models):
            if full is not None and name in full.models:
                row = full.values[full.models.index(name)]
                for j, item in enumerate(full.items):
                    if not np.isnan(row[j]):
                        x[i, items.index(item)] = row[j]
            for j, task in enumerate(estimates.items):
                col = items.index(self.columns[task])
                x[i, col] = estimates.mean[i, j]
                noise[i, col] = estimates.std[i, j]
        pred = model.predict(ScoreMatrix(x, estimates.models, items), level=level,
                             observed_std=noise)
        for mine, theirs in zip(pred.extrapolation, estimates.extrapolation):
            mine["flag"] = bool(mine["flag"] or theirs["flag"])
            mine["reasons"] = list(mine.get("reasons", [])) + theirs["reasons"]
        return pred

    def _task_estimates(self, observed, level: float):
        """Per model and task: the question-level estimate of the task score (a Prediction)."""
        from scipy.special import ndtri

        from ..gaussian import Prediction

        if not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1); got {level!r}")
        if not observed:
            raise ValueError("no per-question results of any new model were given")
        tasks = list(self.tasks)
        models = list(observed)
        shape = (len(models), len(tasks))
        mean, std = np.zeros(shape), np.zeros(shape)
        full = np.zeros(shape, dtype=bool)
        extrapolation = []
        for i, model in enumerate(models):
            runs = observed[model]
            absent = [t for t in tasks if t not in runs]
            if absent:
                raise ValueError(f"{model}: no run of the plan's task(s) {_short_list(absent)}; "
                                 "run lm-eval with the plan's --samples file")
            unknown = [t for t in runs if t not in self.tasks]
            if unknown:
                warnings.warn(f"{model}: ignoring task(s) not in the plan: "
                              f"{_short_list(unknown)}", DataWarning, stacklevel=2)
            reasons, flagged = [], []
            for j, task in enumerate(tasks):
                part = self.tasks[task]
                mean[i, j], std[i, j], full[i, j] = self._predict_task(model, part, runs[task])
                lo, hi = part.source_range
                m = mean[i, j]
                if not full[i, j] and (m > hi or m < lo):
                    flagged.append(task)
                    side = "above the best" if m > hi else "below the weakest"
                    reasons.append(f"{task}: predicted {m:.4g}, {side} source model "
                                   f"({hi if m > hi else lo:.4g}); the interval is an "
                                   "extrapolation")
            extrapolation.append({"flag": bool(flagged), "tasks": flagged, "reasons": reasons})
        low_bound, high_bound = np.array([self.tasks[t].bounds for t in tasks]).T
        half = ndtri(0.5 + level / 2) * std
        # The interval is centred on the estimate brought inside the bounds, then cut
        # at them: an estimate past a bound (a model-based one can be) keeps an
        # interval of positive width instead of collapsing onto the bound.
        mean = np.clip(mean, low_bound, high_bound)
        return Prediction(models=models, items=tasks, mean=mean, item_kind="task",
                          std=std, low=np.clip(mean - half, low_bound, high_bound),
                          high=np.clip(mean + half, low_bound, high_bound), observed=full,
                          level=float(level), method=self._method_label(),
                          extrapolation=extrapolation)

    def _method_label(self) -> str:
        names = sorted({p.method for p in self.tasks.values()})
        return names[0] if len(names) == 1 else ",".join(names)

    @staticmethod
    def _predict_task(model: str, part: TaskPlan, scores: Mapping[int, float]):
        """(mean, std, full run?) of one model on one task from its per-question scores."""
        have = set(scores)
        planned = part.selected
        if have >= set(int(d) for d in part.doc_ids):
            # The whole task was run: its score is known, nothing to predict.
            return float(np.mean([scores[int(d)] for d in part.doc_ids])), 0.0, True
        missing = [d for d in planned if d not in have]
        if missing:
            raise ValueError(
                f"{model}: the run of {part.task!r} lacks {len(missing)} of the "
                f"{len(planned)} planned questions (doc ids {_ids(missing)}); "
                "run lm-eval with the plan's --samples file"
            )
        extra = sorted(have - set(planned))
        if extra:
            warnings.warn(
                f"{model}: the run of {part.task!r} has {len(extra)} question(s) the plan did "
                f"not ask for (doc ids {_ids(extra)}); they are ignored",
                DataWarning, stacklevel=3)
        method = part.fitted()
        x = np.array([[scores[d] for d in planned]], dtype=float)
        m, s = method.predict(x)  # calibrated: every method has an error bar
        return float(m[0]), float(s[0]), False


def load_plan(path: str | os.PathLike, *, max_decoded_bytes: int | None = None) -> Plan:
    """Read a plan file, checked before use (see :meth:`Plan.load`)."""
    return Plan.load(path, max_decoded_bytes=max_decoded_bytes)


__all__.append("load_plan")
