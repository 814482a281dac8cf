"""Spreading a total question budget over tasks.

The aim is the smallest total squared error of the predicted task scores.
How that error falls with the number of questions ``n`` depends on the task
and on the method that predicts it (a task whose questions the method
predicts well from a few needs fewer), so it is measured, not assumed: for
each task the plan's own method is fitted on three random 75% splits of the
source models at ``n`` in ``10, 20, 40, 80`` (those below the task's size),
its squared error on the other 25% recorded, and the curve

    V_t(n) = a_t + b_t / n         (a_t, b_t >= 0, least squares)

fitted to those errors (``b_t / n``: the sampling error of ``n`` questions;
``a_t``: what more questions do not remove). Questions then go one at a time
to the task whose ``V_t`` drops most, after every task has its minimum; with
``V_t`` convex in ``n`` this greedy allocation minimizes ``sum_t V_t(n_t)``.

Measured on the four HELM Lite tasks (``benchmarks/allocation.py``, 120
questions, default method) the allocation comes out close to an equal split
(about 30 per task), and its error is the equal split's within the noise of
which random questions a plan draws (docs/experiments/question-level.md). An allocation
by the tasks' per-question variances alone, or one that also credits a task
for being predictable from the other tasks' scores (which a question-level
plan does not use), did worse there than the equal split.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping

import numpy as np

from ..splits import random_split

__all__ = ["allocate_questions", "error_curve", "MIN_PER_TASK"]

#: Fewest questions a task gets: the predictors fit a handful of weights on them.
MIN_PER_TASK = 10
_GRID = (10, 20, 40, 80)
_SPLITS = 3


def error_curve(source: np.ndarray, fit_predict: Callable, *, seed: int = 0
                ) -> tuple[float, float]:
    """``(a, b)`` of ``V(n) = a + b / n``, the method's squared error with ``n`` questions.

    Parameters
    ----------
    source : ndarray (M, N)
        Source models' complete per-question scores of one task.
    fit_predict : callable ``(train, test, n, rng) -> predicted means of test``
        Fits the method on ``train`` rows with ``n`` questions and predicts
        the full-task score of the ``test`` rows.
    seed : int
        Seed of the splits.
    """
    from scipy.optimize import nnls

    m, total = source.shape
    grid = [n for n in _GRID if n < total] or [max(1, total - 1)]
    design, errors = [], []
    for n in grid:
        for split in range(_SPLITS):
            rng = np.random.default_rng([seed, split])
            fold = random_split(m, rng, min_train=2)
            train, test = source[fold.train], source[fold.validation]
            if len(test) == 0:
                continue
            predicted = fit_predict(train, test, n, rng)
            errors.append(float(np.mean((predicted - test.mean(axis=1)) ** 2)))
            design.append([1.0, 1.0 / n])
    coef, _ = nnls(np.array(design), np.array(errors))
    return float(coef[0]), float(coef[1])


def allocate_questions(curves: Mapping[str, tuple[float, float]], sizes: Mapping[str, int],
                       total: int, *, minimum: int = MIN_PER_TASK) -> dict[str, int]:
    """Questions per task for a total budget, greedy on ``sum_t a_t + b_t / n_t``.

    Parameters
    ----------
    curves : mapping task -> (a, b)
        Each task's error curve (:func:`error_curve`).
    sizes : mapping task -> int
        Questions in each task; a task keeps at least one unrun.
    total : int
        Questions to spend over all tasks.
    minimum : int, default :data:`MIN_PER_TASK`
        Fewest per task (capped at ``N_t - 1``).

    Returns
    -------
    dict task -> int
    """
    tasks = list(curves)
    floor = {t: min(minimum, sizes[t] - 1) for t in tasks}
    capacity = sum(sizes[t] - 1 for t in tasks)
    if total < sum(floor.values()) or total > capacity:
        raise ValueError(
            f"a total of {total} questions cannot be spread over {len(tasks)} task(s): "
            f"expected between {sum(floor.values())} ({minimum} per task) and {capacity} "
            "(each task keeps at least one question unrun)"
        )

    def gain(t: str, n: int) -> float:  # V_t(n) - V_t(n + 1)
        return curves[t][1] * (1.0 / n - 1.0 / (n + 1))

    alloc = dict(floor)
    heap = [(-gain(t, alloc[t]), i, t) for i, t in enumerate(tasks) if alloc[t] < sizes[t] - 1]
    heapq.heapify(heap)
    for _ in range(total - sum(alloc.values())):
        _, i, t = heapq.heappop(heap)  # ties go to the earlier task
        alloc[t] += 1
        if alloc[t] < sizes[t] - 1:
            heapq.heappush(heap, (-gain(t, alloc[t]), i, t))
    return alloc
