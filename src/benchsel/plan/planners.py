"""Making a plan: which benchmarks, which questions, or both, to run on a new model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..matrix import _short_list
from ..models import GaussianModel
from ..names import DEFAULT_QUESTIONS
from ..sources import TaskSources, as_scores, mixed_sources, task_sources
from ._plan import Plan
from .allocation import allocate_questions, error_curve
from .parts import (
    BenchmarkPlan,
    TaskPlan,
    _benchmark_check,
    _fit_method,
    _gaussian_options,
    _task_check,
)

__all__ = ["plan_benchmarks", "plan_mixed", "plan_questions"]

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
        As in :meth:`benchsel.models.GaussianModel.select`.
    command : str, optional
        Recorded in the plan: the command line that made it.
    prepare_auto : bool, default True
        Make the default predictor's (``auto``) decisions for the selection
        now and store them (:meth:`GaussianModel.prepare_auto`): planning
        takes longer (seconds to a minute on the largest bundled boards),
        every prediction from the plan is then as fast as a completion.
    model_options
        :class:`~benchsel.models.GaussianModel` parameters.

    Returns
    -------
    Plan
        ``plan.run_in_full`` lists the benchmarks to run.
    """
    scores = as_scores(data)
    model = GaussianModel(**model_options).fit(scores)
    sel = model.select(k, objective=objective, include=include, exclude=exclude, costs=costs,
                       budget=budget, target_residual=target_residual, seed=seed,
                       keep_aggregates=keep_aggregates)
    options = _gaussian_options(model)
    auto = None
    if prepare_auto:
        model.prepare_auto(sel.items)
    # The check's predictions calibrate the source rows' own patterns: with auto's
    # decisions kept, their residuals are stored too, and a rebuild refits nothing more.
    check = _benchmark_check(model, sel.items)
    if prepare_auto:
        auto = model.auto_memo.to_json(model.items_)
    part = BenchmarkPlan(source=model.scores_, options=options, selection=sel.to_dict(),
                         check=check, auto=auto, _model=model)
    part.selection["options"] = {
        "k": k, "objective": objective, "include": list(include), "exclude": list(exclude),
        "costs": dict(costs) if costs else None, "budget": budget,
        "target_residual": target_residual, "keep_aggregates": keep_aggregates}
    return Plan(level="benchmarks", benchmarks=part, seed=seed, command=command,
                source_description=scores.source)


_MIN_MODELS_FOR_TOTAL = 5  # three 75/25 splits need a few models on each side


def _for_task(task: str, func, *args, **kwargs):
    """``func(*args, **kwargs)``, its ValueError naming the task it was about."""
    try:
        return func(*args, **kwargs)
    except ValueError as err:
        raise ValueError(f"task {task!r}: {err}") from None


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
        per task. At most one of ``n`` and ``total``; without either, ``n``
        is :data:`benchsel.names.DEFAULT_QUESTIONS` (50), as ``benchsel plan
        --kind questions``.
    total : int, optional
        A question budget spread over the tasks where the method's measured
        error falls most (:mod:`benchsel.plan.allocation`).
    method : str, default "default"
        Question-level method (see :func:`benchsel.coreset.registry.make_method`).
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
    # Here: scikit-learn (about a second) only for question-level plans.
    from ..coreset._base import resolve_n
    from ..coreset.registry import DEFAULT_METHOD

    tasks, metrics, filters = sources.scores, sources.metrics, sources.filters

    if not tasks:
        raise ValueError("a question-level plan needs at least one task")
    if n is not None and total is not None:
        raise ValueError("give one of n (per task) and total (spread over tasks), not both")
    if n is None and total is None:
        n = DEFAULT_QUESTIONS  # as the CLI's -n
    for task, scores in tasks.items():
        missing = np.isnan(scores.values)
        if missing.any():
            i, j = np.argwhere(missing)[0]
            # Which runs have the question says where it came from: a doc id only one
            # model's sample log has points at that log.
            have = [m for m, gap in zip(scores.models, missing[:, j]) if not gap]
            raise ValueError(
                f"task {task!r}: source scores must be complete to plan on them; model "
                f"{scores.models[i]!r} has no score for {scores.items[j]!r}, which "
                f"{len(have)} of the {scores.n_models} source models have "
                f"({_short_list(have)}); {int(missing.sum())} missing in all")
    name = DEFAULT_METHOD if method == "default" else method
    if total is not None:
        small = [t for t, s in tasks.items() if s.n_models < _MIN_MODELS_FOR_TOTAL]
        if small:
            raise ValueError(
                f"total measures each task's error on held-out source models and needs at "
                f"least {_MIN_MODELS_FOR_TOTAL}; task(s) {_short_list(small)} have fewer "
                "(give a number of questions per task instead)")

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
