"""``budget``: how many questions each selected benchmark needs (Smola 2026, slides
"Calibrate data per benchmark").

A selected benchmark is run to inform the prediction of the rest; a score
estimated from ``n`` of its questions carries sampling noise ``p (1 - p) / n``
(fraction scale; times 100^2 in percent, with the finite-population
correction when the benchmark's question count is known). What it adds
beyond the other selected benchmarks is its conditional variance given
them, ``sigma^2(j | A \\ j)``: a benchmark the others already explain has a
small one, and a noisy estimate of it costs little. So each selected
benchmark needs ``n_j = p_j (1 - p_j) / (f sigma^2(j | A \\ j))`` questions for
its noise to stay below a fraction ``f`` of that variance (capped at its
question count).

With a total budget ``T``, questions are spread greedily in chunks: each
chunk goes to the benchmark whose extra questions most lower the total
predictive variance of every unselected benchmark, the selected scores
entering as noisy measurements (the mixed plan's model, see
:meth:`benchsel.models.GaussianModel.predict` ``observed_std``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .._frames import rows_frame
from ..bounds import column_scale
from ..evaluation.metrics import json_record
from ..gaussian.conditional import conditional_moments

__all__ = ["MAX_TOTAL_QUESTIONS", "BudgetRow", "BudgetResult", "question_budget",
           "rest_variance"]


#: Names of scores that are not a mean over questions (a correlation, a clustering
#: measure, a rating): no count of questions gives their noise. Matched case-blind.
NOT_A_QUESTION_MEAN = re.compile(
    r"clustering|(^|[^a-z])sts($|[^a-z])|sts\d|stsbenchmark|sick-r|biosses|summeval|"
    r"spearman|pearson|v.?measure|(^|[^a-z])elo($|[^a-z])|win.?rate|rating", re.IGNORECASE)


def is_question_mean(name: str) -> bool:
    """False where a benchmark's name says its score is not a mean over questions."""
    return NOT_A_QUESTION_MEAN.search(name) is None


@dataclass(frozen=True)
class BudgetRow:
    benchmark: str
    score: float
    conditional_variance: float | None
    questions_needed: int | None
    questions_available: int | None
    allocated: int | None
    reason: str | None = None

    def to_dict(self) -> dict:
        return json_record(self)


@dataclass(frozen=True)
class BudgetResult:
    fraction: float
    total: int | None
    rows: list
    rest_variance: float | None

    def to_frame(self):
        """The table the command prints as a :class:`pandas.DataFrame`: one row per benchmark."""
        return rows_frame(self.rows, "benchmark", BudgetRow)

    def to_dict(self) -> dict:
        return {"fraction": self.fraction, "total": self.total,
                "rest_variance": self.rest_variance,
                "benchmarks": [r.to_dict() for r in self.rows]}


#: Largest ``total`` accepted: ten million questions, more than every benchmark
#: of the bundled leaderboards together; a larger total is refused before any work.
MAX_TOTAL_QUESTIONS = 10_000_000

#: Greedy steps of the allocation at most: beyond ``chunk`` x this many questions the
#: chunks grow, so a total of millions takes about as long as one of ten thousand.
_MAX_STEPS = 1000


def _noise_variance(p: float, n: int, total: int | None, unit: float) -> float:
    """Sampling variance of a score from n of ``total`` questions, in score units."""
    fpc = (total - n) / (total - 1) if total and total > 1 else 1.0
    return unit**2 * p * (1 - p) / n * max(fpc, 0.0)


def _units(model) -> tuple[np.ndarray, np.ndarray]:
    """The model's covariance in standardized units and each item's scale.

    ``covariance_`` is ``sigma_z * outer(scale, scale)``, which overflows for
    scores near 1e154 and beyond; every variance here is computed on
    ``sigma_z`` and multiplied by its item's ``scale**2`` only at the end.
    """
    return model.estimate_.covariance, np.asarray(model.standardizer_.scale, dtype=float)


def _in_score_units(variance_z: float, scale: float) -> float:
    """``variance_z * scale**2``, or inf where that is beyond float64's range."""
    with np.errstate(over="ignore"):
        return float(variance_z * scale * scale)


def question_budget(model, selected, *, fraction: float = 0.1, questions=None,
                    total: int | None = None, chunk: int = 10,
                    per_question=()) -> BudgetResult:
    """Questions per selected benchmark, and a total budget's allocation (module docstring).

    Parameters
    ----------
    model : GaussianModel
        Fitted on the leaderboard.
    selected : sequence of str
        The benchmarks to run.
    fraction : float in (0, 1], default 0.1
        ``f``: the noise may be this share of a benchmark's conditional
        variance given the other selected ones.
    questions : mapping {benchmark: question count}, optional
        Caps ``n`` and enables the finite-population correction.
    total : int, optional
        A total number of questions to spread over the selected benchmarks,
        at most :data:`MAX_TOTAL_QUESTIONS`.
    chunk : int, default 10
        Questions per greedy step of the allocation (more when ``total``
        needs over 1,000 steps).
    per_question : iterable of str, optional
        Benchmarks to budget although their name says their score is not a
        mean over questions (:data:`NOT_A_QUESTION_MEAN`: STS, clustering,
        ratings); the others are reported without a question count.

    Notes
    -----
    A variance beyond float64's range (scores near 1e154 or more) is
    reported as None, with the reason; the budget of the fraction and
    percent benchmarks is unaffected.
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1]; got {fraction!r}")
    if total is not None and not 1 <= total <= MAX_TOTAL_QUESTIONS:
        raise ValueError(f"total must be a whole number of questions from 1 to "
                         f"{MAX_TOTAL_QUESTIONS:,}; got {total!r}")
    questions = dict(questions or {})
    items = list(model.items_)
    unknown = [s for s in list(selected) + list(questions) if s not in items]
    if unknown:
        raise ValueError(f"unknown benchmark(s) {unknown[:5]}; the model has {items[:10]}...")
    idx = [items.index(s) for s in selected]
    if len(idx) < 1:
        raise ValueError("budget needs at least one selected benchmark")
    kind = column_scale(model.scores_.values)
    sigma, scale = _units(model)
    mean = model.mean_
    rows, plan = [], []
    for j in idx:
        others = [i for i in idx if i != j]
        if others:
            w = np.linalg.solve(sigma[np.ix_(others, others)], sigma[others, j])
            cond_z = float(sigma[j, j] - sigma[j, others] @ w)
        else:
            cond_z = float(sigma[j, j])
        cond = _in_score_units(cond_z, scale[j])
        cap = questions.get(items[j])
        unit = {"fraction": 1.0, "percent": 100.0}.get(str(kind[j]))
        named = not is_question_mean(items[j]) and items[j] not in set(per_question)
        if unit is None or named:
            reason = ("not a fraction or percent score: no binomial noise model"
                      if unit is None else
                      "its name says it is not a mean over questions (a correlation, "
                      "clustering or rating score): no question count gives its noise "
                      "(per_question=, --per-question, to budget it anyway)")
            if not np.isfinite(cond):
                reason += (f"; its conditional variance ({cond_z:.3g} x {scale[j]:.3g}^2) is "
                           "beyond float64's range")
            rows.append(BudgetRow(items[j], float(mean[j]),
                                  cond if np.isfinite(cond) else None, None, cap, None,
                                  reason))
            plan.append(None)
            continue
        p = float(np.clip(mean[j] / unit, 1e-3, 1 - 1e-3))
        need = int(np.ceil(unit**2 * p * (1 - p) / (fraction * max(cond, 1e-12))))
        if cap is not None:
            need = min(need, int(cap))
        rows.append(BudgetRow(items[j], float(mean[j]), cond, need, cap, None))
        plan.append((p, unit, cap))
    rest = None
    if total is not None:
        alloc, rest = _allocate(model, idx, plan, int(total), chunk)
        rows = [BudgetRow(**{**r.__dict__, "allocated": a}) for r, a in zip(rows, alloc)]
        rest = rest if np.isfinite(rest) else None
    return BudgetResult(fraction=float(fraction), total=total, rows=rows,
                        rest_variance=rest)


def _rest_variance_z(model, idx, plan, counts: dict) -> tuple[float, float]:
    """``(v, s2)``: the unselected items' total predictive variance is ``v * s2``.

    Computed in standardized units, each item's variance weighted by its
    ``(scale / largest scale)**2``, so that ``v`` stays finite whatever the
    scores' magnitude; ``s2`` is the largest scale squared (possibly inf).
    """
    sigma, scale = _units(model)
    n_items = len(model.items_)
    x = np.full((1, n_items), np.nan)
    noise = np.zeros((1, n_items))
    # A selected benchmark without a question noise model is still run: an exact score.
    x[0, [i for k, i in enumerate(idx) if plan[k] is None]] = 0.0
    for k, count in counts.items():
        p, unit, cap = plan[k]
        x[0, idx[k]] = 0.0
        # The sampling noise in standardized units (a fraction or percent score's
        # scale is at most about 100, so this neither overflows nor vanishes).
        noise[0, idx[k]] = max(_noise_variance(p, count, cap, unit), 1e-12) / scale[idx[k]]**2
    _, var = conditional_moments(x, np.zeros(n_items), sigma, noise=noise)
    rest = np.setdiff1d(np.arange(n_items), idx)
    which = rest if rest.size else np.asarray(idx)
    largest = float(scale[which].max())
    weights = (scale[which] / largest) ** 2
    return float(var[0, which] @ weights), largest


def rest_variance(model, idx, plan, counts: dict) -> float:
    """Total predictive variance of the unselected items when selected item ``idx[k]`` is
    measured from ``counts[k]`` questions (``plan[k] = (p, unit, question count)``).

    inf where it is beyond float64's range (scores near 1e154 or more).
    """
    value, largest = _rest_variance_z(model, idx, plan, counts)
    return _in_score_units(value, largest)


def _allocate(model, idx, plan, total, chunk):
    """Greedy chunks to the benchmark that most lowers the unselected items' total variance."""
    usable = [k for k, p in enumerate(plan) if p is not None]
    if total < len(usable):
        raise ValueError(f"a total of {total} questions cannot give one to each of the "
                         f"{len(usable)} benchmarks with a noise model")
    n = {k: 1 for k in usable}

    def rest_var(counts):
        # Compared in standardized units: the same order as in score units, never inf.
        return _rest_variance_z(model, idx, plan, counts)[0]

    left = total - len(usable)
    # At most about _MAX_STEPS greedy steps, whatever the total.
    requested, chunk = chunk, max(chunk, -(-left // _MAX_STEPS))
    while left > 0:
        step = min(chunk, left)
        best, best_value, best_step = None, np.inf, 0
        for k in usable:
            cap = plan[k][2]
            # A benchmark near its question count gets what is left of it (with chunks
            # of thousands, skipping it would leave those questions unspent).
            give = step if cap is None else min(step, int(cap) - n[k])
            if give <= 0 or (give < step and chunk == requested):
                continue  # chunks as asked: only whole ones, as before
            trial = dict(n)
            trial[k] += give
            v = rest_var(trial)
            if v < best_value:
                best, best_value, best_step = k, v, give
        if best is None:
            break  # every benchmark is at its question count
        n[best] += best_step
        left -= best_step
    alloc = [n.get(k) for k in range(len(plan))]
    return alloc, rest_variance(model, idx, plan, n)
