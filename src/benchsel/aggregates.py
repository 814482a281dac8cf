"""Columns that are aggregates of the others: nobody can run them, so they are not picked.

A leaderboard often carries a summary column -- HELM Lite's "Mean win rate",
an average, an overall rank -- computed from the other benchmarks. It is the
most "informative" column there is (it predicts everything, being made of
everything), so greedy selection picks it first; but it is no benchmark a
new model can be run on. A column is taken for an aggregate when its name
says so (:data:`AGGREGATE_NAME`) and, where the others' scores allow the
check, a linear fit on them predicts it almost exactly (leave-one-out R² at
least :data:`MIN_R2`). A plain name ("win_rate" of AlpacaEval, a real
benchmark's own metric) is never enough on its own.
"""

from __future__ import annotations

import re

import numpy as np

from ._ridge import ridge_loo

__all__ = ["AGGREGATE_NAME", "MIN_R2", "aggregate_columns"]

#: Names of summary columns: a mean, average, overall or total score, or a rank.
AGGREGATE_NAME = re.compile(
    r"(^|[^a-z])(mean|average|avg|overall|total|aggregate|rank|ranking)([^a-z]|$)",
    re.IGNORECASE)
#: Leave-one-out R² from the other columns above which a so-named column is an aggregate.
MIN_R2 = 0.9


def aggregate_columns(values: np.ndarray, items) -> dict[str, str]:
    """``{item: reason}`` for each column that is an aggregate of the others.

    Parameters
    ----------
    values : ndarray (M, N)
        Scores, NaN where missing.
    items : sequence of str
        Column names.
    """
    out = {}
    for j, name in enumerate(items):
        if not AGGREGATE_NAME.search(str(name)):
            continue
        r2 = _loo_r2(values, j)
        if np.isnan(r2):
            out[str(name)] = "its name says it summarises the others"
        elif r2 >= MIN_R2:
            out[str(name)] = (f"its name says it summarises the others, and they predict it "
                              f"with R² {r2:.3f}")
    return out


def _loo_r2(values: np.ndarray, j: int) -> float:
    """Leave-one-out R² of column ``j`` from a linear fit on the other columns, over the
    models that have every score; NaN when too few do."""
    others = np.delete(values, j, axis=1)
    rows = ~np.isnan(values[:, j]) & ~np.isnan(others).any(axis=1)
    n, p = int(rows.sum()), others.shape[1]
    if p == 0 or n < p + 3:
        return float("nan")
    y = values[rows, j]
    spread = float(np.sum((y - y.mean()) ** 2))
    if spread == 0:
        return float("nan")
    loo = ridge_loo(others[rows], y, [0.0]).loo_residuals  # least squares
    return 1.0 - float(np.sum(loo**2)) / spread
