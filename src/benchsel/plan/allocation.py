"""Spreading a total question budget over tasks.

Each task's predicted score gets two sources of information: its own sampled
questions, and the other tasks' scores through how task scores co-vary
across models (the slides' "conditional variance tells you how many samples
a benchmark needs": a task well predicted by the others needs fewer
questions). With ``n`` random questions of a task of ``N``, the sample's
variance of the task score is

    V_t(n) = s_t^2 / n * (N - n) / (N - 1),

``s_t^2`` the average over source models of the variance of their per-question
scores. The other tasks alone leave the conditional variance ``c_t`` of the
task score given the others' (from the source models' task-score covariance).
Combined as two independent Gaussian measurements, the task score's variance
is ``1 / (1 / c_t + 1 / V_t(n))``. Questions go one at a time to the task
whose variance drops most (greedy on the sum of the tasks' variances), after
every task has its minimum.

The question-level predictors do better than the plain sample mean, roughly
by the same factor on every task, so the allocation carries over.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping

import numpy as np

__all__ = ["allocate_questions", "MIN_PER_TASK"]

#: Fewest questions a task gets: the predictors fit a handful of weights on them.
MIN_PER_TASK = 10


def _conditional_variances(task_scores: np.ndarray) -> np.ndarray:
    """Variance of each column given all others, from the (M, T) task-score matrix."""
    m, t = task_scores.shape
    var = task_scores.var(axis=0, ddof=1)
    if t == 1 or m <= t + 1:
        return var  # nothing (or too few models) to condition on
    cov = np.cov(task_scores, rowvar=False) + 1e-12 * np.eye(t)
    return np.maximum(1.0 / np.diag(np.linalg.inv(cov)), 1e-12)


def allocate_questions(sources: Mapping[str, np.ndarray], total: int,
                       *, minimum: int = MIN_PER_TASK) -> dict[str, int]:
    """Questions per task for a total budget.

    Parameters
    ----------
    sources : mapping task -> ndarray (M, N_t)
        Source models' complete per-question scores of each task, rows in the
        same model order for every task.
    total : int
        Questions to spend over all tasks.
    minimum : int, default :data:`MIN_PER_TASK`
        Fewest per task (capped at ``N_t - 1``).

    Returns
    -------
    dict task -> int
    """
    tasks = list(sources)
    sizes = {t: sources[t].shape[1] for t in tasks}
    floor = {t: min(minimum, sizes[t] - 1) for t in tasks}
    capacity = sum(sizes[t] - 1 for t in tasks)
    if total < sum(floor.values()) or total > capacity:
        raise ValueError(
            f"a total of {total} questions cannot be spread over {len(tasks)} task(s): "
            f"expected between {sum(floor.values())} ({minimum} per task) and {capacity} "
            "(each task keeps at least one question unrun)"
        )
    rows = {sources[t].shape[0] for t in tasks}
    if len(rows) != 1:
        raise ValueError("every task's source matrix must have the same models (rows)")
    task_scores = np.column_stack([sources[t].mean(axis=1) for t in tasks])
    cond = _conditional_variances(task_scores)
    s2 = {t: float(np.mean(sources[t].var(axis=1, ddof=1))) for t in tasks}

    def variance(i: int, n: int) -> float:
        t = tasks[i]
        big = sizes[t]
        sample = s2[t] / n * (big - n) / (big - 1) if big > 1 else 0.0
        if sample <= 0:
            return 0.0
        return 1.0 / (1.0 / cond[i] + 1.0 / sample)

    alloc = dict(floor)
    heap = []
    for i, t in enumerate(tasks):
        if alloc[t] < sizes[t] - 1:
            gain = variance(i, alloc[t]) - variance(i, alloc[t] + 1)
            heapq.heappush(heap, (-gain, i))
    for _ in range(total - sum(alloc.values())):
        _, i = heapq.heappop(heap)  # ties go to the earlier task
        t = tasks[i]
        alloc[t] += 1
        if alloc[t] < sizes[t] - 1:
            gain = variance(i, alloc[t]) - variance(i, alloc[t] + 1)
            heapq.heappush(heap, (-gain, i))
    return alloc
