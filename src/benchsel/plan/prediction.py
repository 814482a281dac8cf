"""Predicting from a plan: full-task scores from the planned questions, and a mixed
plan's leaderboard from full runs and sampled tasks.

:class:`~benchsel.plan.Plan`'s ``predict_*`` methods check what they were
given and call these; a benchmark-level plan predicts with its rebuilt
:class:`~benchsel.models.GaussianModel` directly.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np

from ..matrix import DataWarning, ScoreMatrix, _short_list
from ..models import Prediction
from .parts import TaskPlan, _ids

__all__ = ["method_label", "predict_mixed", "predict_task", "task_estimates"]


def predict_mixed(plan, full: ScoreMatrix | None,
                  questions: Mapping[str, Mapping[str, Mapping[int, float]]],
                  level: float):
    """:meth:`Plan.predict_mixed <benchsel.plan.Plan.predict_mixed>`: the task
    estimates enter the leaderboard's Gaussian as noisy scores."""
    if plan.level != "mixed":
        raise ValueError(f"this is a {plan.level}-level plan, not a mixed one")
    if full is not None:
        absent = [m for m in full.models if m not in questions]
        if absent:
            raise ValueError(
                f"{_short_list(absent)}: no run of the plan's sampled task(s) "
                f"{_short_list(plan.tasks)}; run lm-eval with the plan's --samples file")
        unknown = [c for c in full.items if c not in plan.benchmarks.source.items]
        if unknown:
            raise ValueError(f"full-task scores of {_short_list(unknown)}, which the plan's "
                             "leaderboard does not have")
    estimates = task_estimates(plan, questions, level)
    model = plan.benchmarks.model()
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
            col = items.index(plan.columns[task])
            x[i, col] = estimates.mean[i, j]
            noise[i, col] = estimates.std[i, j]
    pred = model.predict(ScoreMatrix(x, estimates.models, items), level=level,
                         observed_std=noise)
    for mine, theirs in zip(pred.extrapolation, estimates.extrapolation):
        mine["flag"] = bool(mine["flag"] or theirs["flag"])
        mine["reasons"] = list(mine.get("reasons", [])) + theirs["reasons"]
    return pred


def task_estimates(plan, observed, level: float):
    """Per model and task: the question-level estimate of the task score (a Prediction)."""
    from scipy.special import ndtri

    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level!r}")
    if not observed:
        raise ValueError("no per-question results of any new model were given")
    tasks = list(plan.tasks)
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
        unknown = [t for t in runs if t not in plan.tasks]
        if unknown:
            warnings.warn(f"{model}: ignoring task(s) not in the plan: "
                          f"{_short_list(unknown)}", DataWarning, stacklevel=2)
        reasons, flagged = [], []
        for j, task in enumerate(tasks):
            part = plan.tasks[task]
            mean[i, j], std[i, j], full[i, j] = predict_task(model, part, runs[task])
            lo, hi = part.source_range
            m = mean[i, j]
            if not full[i, j] and (m > hi or m < lo):
                flagged.append(task)
                side = "above the best" if m > hi else "below the weakest"
                reasons.append(f"{task}: predicted {m:.4g}, {side} source model "
                               f"({hi if m > hi else lo:.4g}); the interval is an "
                               "extrapolation")
        extrapolation.append({"flag": bool(flagged), "tasks": flagged, "reasons": reasons})
    low_bound, high_bound = np.array([plan.tasks[t].bounds for t in tasks]).T
    half = ndtri(0.5 + level / 2) * std
    # The interval is centred on the estimate brought inside the bounds, then cut
    # at them: an estimate past a bound (a model-based one can be) keeps an
    # interval of positive width instead of collapsing onto the bound.
    mean = np.clip(mean, low_bound, high_bound)
    return Prediction(models=models, items=tasks, mean=mean, item_kind="task",
                      std=std, low=np.clip(mean - half, low_bound, high_bound),
                      high=np.clip(mean + half, low_bound, high_bound), observed=full,
                      level=float(level), method=method_label(plan),
                      extrapolation=extrapolation)

def method_label(plan) -> str:
    names = sorted({p.method for p in plan.tasks.values()})
    return names[0] if len(names) == 1 else ",".join(names)


def predict_task(model: str, part: TaskPlan, scores: Mapping[int, float]):
    """(mean, std, full run?) of one model on one task from its per-question scores."""
    part.check_run(scores, f"{model}: task {part.task!r}")
    have = set(scores)
    planned = part.selected
    if have >= set(int(d) for d in part.doc_ids):
        # The whole task was run: its score is known, nothing to predict.
        return float(np.mean([scores[int(d)] for d in part.doc_ids])), 0.0, True
    extra = sorted(have - set(planned))
    if extra:
        warnings.warn(
            f"{model}: the run of {part.task!r} has {len(extra)} question(s) the plan did "
            f"not ask for (doc ids {_ids(extra)}); they are ignored",
            DataWarning, stacklevel=3)
    method = part.fitted()
    x = np.array([[scores[d] for d in planned]], dtype=float)
    m, s = method.predict(x)  # calibrated: every method has an error bar
    if not (np.isfinite(m[0]) and np.isfinite(s[0])):
        raise ValueError(f"{model}: task {part.task!r}: its per-question scores are too large "
                         f"to estimate from (estimate {m[0]!r}, standard error {s[0]!r})")
    return float(m[0]), float(s[0]), False
