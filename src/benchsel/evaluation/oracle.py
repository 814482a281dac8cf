"""Oracle subsets: the best k items by exhaustive search under the CV protocol.

For each ``k`` every subset of ``k`` items is scored by its mean R^2 over the
same folds, covariances and scoring rules as :func:`cross_validate`; the best
one is an upper bound that no selection rule can beat on these folds (it is
chosen with the validation models' scores, which a real selection never
sees). The gap between greedy and oracle measures what greedy leaves on the
table.
"""

from __future__ import annotations

import itertools
import time
import warnings
from dataclasses import dataclass
from math import comb

import numpy as np

from .._frames import rows_frame
from .._parallel import one_blas_thread
from ..exceptions import ConvergenceWarning
from ..gaussian.covariance import estimate_covariance, fit_standardizer
from ..matrix import ScoreMatrix
from ..names import ORACLE_K_MAX
from ..splits import kfold_with_holdout
from .cv import _check_common, cross_validate
from .metrics import json_record

__all__ = ["OracleRow", "OracleResult", "oracle_subsets"]


@dataclass(frozen=True)
class OracleRow:
    """Best subset of size ``k`` beside the greedy selections' R^2."""

    k: int
    subsets: int
    best: list
    r2_oracle: float
    r2_greedy: dict

    def to_dict(self) -> dict:
        out = json_record(self)
        del out["r2_greedy"]
        out.update(
            {f"r2_{obj}": v if np.isfinite(v) else None for obj, v in self.r2_greedy.items()}
        )
        return out


@dataclass(frozen=True)
class OracleResult:
    dataset: str
    folds: int
    holdout: float
    seconds: float
    rows: list

    def to_frame(self):
        """The table the command prints as a :class:`pandas.DataFrame`: one row per subset size
        (greedy's R² per objective in the columns ``r2_<objective>``)."""
        frame = rows_frame(self.rows, "k", OracleRow)
        greedy = frame.pop("r2_greedy")
        for objective in (greedy.iloc[0] if len(frame) else {}):
            frame[f"r2_{objective}"] = [by[objective] for by in greedy]
        return frame

    def to_dict(self) -> dict:
        return {
            "protocol": "oracle",
            "dataset": self.dataset,
            "folds": self.folds,
            "holdout": self.holdout,
            "seconds": self.seconds,
            "results": [r.to_dict() for r in self.rows],
        }


class _FoldScorer:
    """R^2 of any subset on one fold, conditioning each row on the part of the subset it has."""

    def __init__(self, values, fold, covariance, ridge, clip):
        std = fit_standardizer(values[fold.train], covariance)
        self.cols = np.flatnonzero(~std.constant)
        z_train = std.transform(values[np.ix_(fold.train, self.cols)], self.cols)
        z_val = std.transform(values[np.ix_(fold.validation, self.cols)], self.cols)
        self.z = np.clip(z_val, -clip, clip)
        self.obs = ~np.isnan(self.z)
        self.zf = np.where(self.obs, self.z, 0.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est = estimate_covariance(z_train, covariance)
        self.sigma, self.mean = est.covariance, est.mean
        self.ridge = ridge
        self.index = {int(c): i for i, c in enumerate(self.cols)}

    def r2(self, subset: tuple[int, ...]) -> float:
        """R^2 of predicting the observed, unselected cells from ``subset`` (matrix columns)."""
        a = [self.index[c] for c in subset if c in self.index]
        if not a:
            return float("nan")
        a = np.array(a)
        pred = np.broadcast_to(self.mean, self.z.shape).copy()
        has = self.obs[:, a]
        for bits in {tuple(row) for row in has}:
            rows = np.flatnonzero((has == bits).all(axis=1))
            p = a[np.array(bits, dtype=bool)]
            if p.size == 0:
                continue
            s_pp = self.sigma[np.ix_(p, p)] + self.ridge * np.eye(p.size)
            weights = np.linalg.solve(s_pp, self.sigma[p])  # (|p|, N)
            pred[rows] = self.mean + (self.zf[np.ix_(rows, p)] - self.mean[p]) @ weights
        scored = self.obs.copy()
        scored[:, a] = False
        y = self.z[scored]
        if y.size == 0 or not np.any(y):
            return float("nan")
        return 1.0 - float(np.sum((y - pred[scored]) ** 2) / np.sum(y**2))


def _greedy_r2(result, objective: str, k: int) -> float:
    try:
        return result.row(objective, k).r2_mean
    except KeyError:  # no fold could select k items
        return float("nan")


def oracle_subsets(
    scores: ScoreMatrix,
    *,
    k_max: int = ORACLE_K_MAX,
    folds: int = 10,
    holdout: float = 0.1,
    covariance: str = "auto",
    ridge: float = 1e-2,
    clip: float = 10.0,
    seed: int = 0,
    max_subsets: int = 50_000,
    objectives: tuple[str, ...] = ("mi", "entropy", "random"),
    progress=None,
) -> OracleResult:
    """Exhaustive best subsets for ``k = 1..k_max`` next to greedy's CV R^2.

    Parameters
    ----------
    k_max : int, default 3
    max_subsets : int, default 50000
        Refuse a ``k`` whose number of subsets exceeds this (MERGED has
        237,336 triples, about four minutes here); raise it to insist.
    progress : callable, optional
        Called as ``progress(done, total)`` after each subset.

    Other parameters are those of :func:`cross_validate`; the folds are the
    same for the same ``seed``.
    """
    scores = _check_common(scores, objectives, k_max)
    n = scores.n_items
    if k_max >= n:
        raise ValueError(
            f"k_max={k_max} leaves nothing to predict among {n} items; use k_max < {n}"
        )
    for k in range(1, k_max + 1):
        if comb(n, k) > max_subsets:
            raise ValueError(
                f"{comb(n, k):,} subsets of {k} items out of {n} exceed max_subsets="
                f"{max_subsets:,}; lower k_max or raise max_subsets"
            )
    start = time.perf_counter()
    splits = kfold_with_holdout(scores.n_models, folds, holdout, seed)
    greedy = cross_validate(scores, objectives=objectives, k_max=k_max, folds=folds,
                            holdout=holdout, covariance=covariance, ridge=ridge, clip=clip,
                            seed=seed, predictor="gaussian",  # as its subsets are scored
                            keep_aggregates=True)  # from every column, as its subsets are
    total = sum(comb(n, k) for k in range(1, k_max + 1))
    done = 0
    rows = []
    with one_blas_thread():
        scorers = [_FoldScorer(scores.values, f, covariance, ridge, clip) for f in splits]
        for k in range(1, k_max + 1):
            best, best_r2 = None, -np.inf
            for subset in itertools.combinations(range(n), k):
                values = [s.r2(subset) for s in scorers]
                values = [v for v in values if not np.isnan(v)]
                r2 = float(np.mean(values)) if values else -np.inf
                if r2 > best_r2:
                    best, best_r2 = subset, r2
                done += 1
                if progress is not None:
                    progress(done, total)
            rows.append(
                OracleRow(
                    k=k,
                    subsets=comb(n, k),
                    best=[] if best is None else [scores.items[j] for j in best],
                    r2_oracle=best_r2 if best is not None else float("nan"),
                    r2_greedy={obj: _greedy_r2(greedy, obj, k) for obj in objectives},
                )
            )
    return OracleResult(
        dataset=scores.source or "",
        folds=folds,
        holdout=holdout,
        seconds=time.perf_counter() - start,
        rows=rows,
    )
