"""What every question-level method shares: the method contract and small helpers.

A method is a class with a registry ``name`` and two calls:

``fit(source, n, rng) -> self``
    ``source`` is the source models' complete scores (M x N, float); ``n``
    the number of questions to pick; ``rng`` a :class:`numpy.random.Generator`
    for any randomness. Sets ``selected_``: the chosen question indices
    (ndarray of int, length ``n``, unique, in the order the predictor expects
    their scores).

``predict(x_selected) -> (mean, sd)``
    ``x_selected`` is target models' scores on ``selected_`` (R x n, columns
    in ``selected_`` order). Returns the predicted full-benchmark mean score
    of each model (R,) and its standard deviation (R,), or ``None`` for
    ``sd`` when the method has no error bar.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ALPHAS", "RandomQuestions", "check_n", "fpc"]

ALPHAS = np.logspace(-3, 3, 13)  # ridge penalties searched by leave-one-out


def fpc(n: int, total: int) -> float:
    """Finite-population correction of a standard error for ``n`` of ``total`` questions."""
    return np.sqrt((total - n) / (total - 1)) if total > 1 else 0.0


def check_n(n: int, total: int) -> None:
    """Raise unless ``1 <= n < total`` (a coreset is a strict subset)."""
    if not 1 <= n < total:
        raise ValueError(f"n must be in [1, {total - 1}]; got {n}")


class RandomQuestions:
    """Shared part of the methods that sample questions uniformly at random."""

    def fit(self, source: np.ndarray, n: int, rng) -> RandomQuestions:
        self.n_questions = source.shape[1]
        check_n(n, self.n_questions)
        self.selected_ = np.sort(rng.choice(self.n_questions, n, replace=False))
        self._fit(source)
        return self

    def _fit(self, source: np.ndarray) -> None:
        pass
