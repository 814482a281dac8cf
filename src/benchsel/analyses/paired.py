"""Two models on the same questions: the paired difference and its error bar.

When two models answered the same questions, their difference is measured far
more precisely than either score: a question both get right (or both wrong)
adds nothing to the noise of ``B - A``. The error bar of the mean difference
is the standard error of the per-question differences ``d_i = b_i - a_i``,
``sd(d) / sqrt(n)``, with a Student-t interval; for 0/1 scores the exact
McNemar test on the discordant questions says whether the difference could be
chance. The interval is about the population the questions were drawn from
(the whole task, when they are a sample of it); on a full task it says how
much the difference would move on another draw of questions like these.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..evaluation.metrics import json_record
from ..matrix import ScoreMatrix
from ..sources import as_scores

__all__ = ["PairedDifference", "paired_difference"]


@dataclass(frozen=True)
class PairedDifference:
    """``B - A`` over the questions both models answered.

    Attributes
    ----------
    questions : int
        Questions both answered.
    mean_a, mean_b : float
        Each model's mean score on them.
    difference, std, low, high : float
        Mean ``B - A``, its standard error and the central interval at ``level``.
    p_b_better : float
        ``P(B > A)`` on the population of questions (normal approximation of
        the t posterior with a flat prior).
    a_only, b_only : int or None
        For 0/1 scores: questions only A (only B) got right.
    mcnemar_p : float or None
        For 0/1 scores: the exact two-sided McNemar p-value.
    """

    model_a: str
    model_b: str
    questions: int
    mean_a: float
    mean_b: float
    difference: float
    std: float
    low: float
    high: float
    p_b_better: float
    level: float
    a_only: int | None = None
    b_only: int | None = None
    mcnemar_p: float | None = None

    def to_dict(self) -> dict:
        return json_record(self)

    def to_frame(self):
        """The comparison ``compare --paired`` prints, as a one-row
        :class:`pandas.DataFrame` indexed by the two models."""
        import pandas as pd

        return pd.DataFrame([self.to_dict()]).set_index(["model_a", "model_b"])


def paired_difference(scores: ScoreMatrix, a: str, b: str, *,
                      level: float = 0.9) -> PairedDifference:
    """The paired difference of models ``a`` and ``b`` of a models x questions matrix.

    Parameters
    ----------
    scores : ScoreMatrix
        Models x questions (any per-question score; 0/1 gets McNemar too).
    a, b : str
        Two model names of ``scores``; ``B - A`` is reported.
    level : float, default 0.9
        Coverage of the interval.

    Raises
    ------
    ValueError
        If a name is unknown or the two share fewer than two questions.
    """
    from scipy import stats

    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level!r}")
    scores = as_scores(scores)
    rows = []
    for name in (a, b):
        if name not in scores.models:
            raise ValueError(f"{name!r} is not a model of the data")
        rows.append(scores.values[scores.models.index(name)])
    shared = ~np.isnan(rows[0]) & ~np.isnan(rows[1])
    n = int(shared.sum())
    if n < 2:
        raise ValueError(f"{a!r} and {b!r} share {n} question(s); a paired difference needs "
                         "at least two")
    va, vb = rows[0][shared], rows[1][shared]
    d = vb - va
    diff = float(d.mean())
    std = float(d.std(ddof=1) / np.sqrt(n))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * std
    if std > 0:
        p_better = float(stats.norm.cdf(diff / std))
    else:  # every question gave the same difference: it is known exactly
        p_better = 1.0 if diff > 0 else 0.0 if diff < 0 else 0.5
    binary = bool(np.isin(va, (0.0, 1.0)).all() and np.isin(vb, (0.0, 1.0)).all())
    a_only = b_only = mcnemar = None
    if binary:
        a_only, b_only = int(np.sum(va > vb)), int(np.sum(vb > va))
        discordant = a_only + b_only
        mcnemar = (float(stats.binomtest(b_only, discordant, 0.5).pvalue) if discordant
                   else 1.0)
    return PairedDifference(a, b, n, float(va.mean()), float(vb.mean()), diff, std,
                            diff - half, diff + half, p_better, level, a_only, b_only, mcnemar)
