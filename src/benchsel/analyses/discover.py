"""``discover``: which benchmarks carry information the others do not, and which
carry the most about the others (Smola 2026, slides "Discovering New Benchmarks").

Two numbers per benchmark, on the correlation scale (the covariance of
standardized scores rescaled to unit diagonal), answering two questions:

* **novelty** -- its conditional variance given every other benchmark,
  ``1 / (R^{-1})_{jj}``: 1 for a benchmark nothing else predicts, 0 for a
  copy of the others. Ranked 1 = most novel; beside it the benchmark's
  position in the greedy entropy order on ``R``, which is how the slides
  rank ProactBench's Recovery #2. (On a correlation matrix every first
  entropy pick ties at variance 1, so the novelty rank, not the entropy
  order, is the ranking.)
* **information** -- its mutual information with all the others,
  ``-1/2 log(novelty)`` nats for a Gaussian, and its position in the greedy
  mutual-information order (1 = picked first, the most informative about the
  rest) for as long as the picks add information (at least 1% of the first
  pick's gain); the benchmarks after that follow by their own information.
  An independent benchmark is novel and carries no information at once:
  first by novelty, last by information.

With ``bootstrap`` resamples of the models (with replacement; the estimator
refitted on each), every benchmark's novelty rank gets a percentile interval
and the share of resamples in which it ranks in the top 3.

A benchmark few models were run on looks novel for want of data: its
correlations with the others are estimated from few pairs and shrunk toward
0. ``observed_models`` says how many models it has (on MERGED the five
MT-Bench columns, 5 models each, top the novelty ranking for that reason).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from .._frames import rows_frame
from .._linalg import inverse_diagonal
from ..evaluation.metrics import json_record
from ..exceptions import ConvergenceWarning
from ..gaussian.covariance import estimate_covariance, fit_standardizer
from ..matrix import FEW_MODELS, DataWarning, ScoreMatrix
from ..selection.greedy import run_greedy
from ..sources import as_scores

__all__ = ["FEW_MODELS", "DiscoverRow", "DiscoverResult", "discover", "novelty",
           "read_correlation"]

#: Eigenvalue floor for the precision diagonal of a (near-)singular correlation matrix.
_FLOOR = 1e-10
#: A greedy MI pick adding less than this share of the first pick's gain adds nothing.
_MI_TOLERANCE = 0.01


@dataclass(frozen=True)
class DiscoverRow:
    benchmark: str
    novelty: float
    novelty_rank: int
    rank_low: int | None
    rank_high: int | None
    top3_share: float | None
    entropy_rank: int
    information: float
    mi_rank: int
    new: bool = False
    observed_models: int | None = None

    @property
    def few_models(self) -> bool:
        """Run on fewer than :data:`FEW_MODELS` models: its novelty may only reflect
        missing data."""
        return self.observed_models is not None and self.observed_models < FEW_MODELS

    def to_dict(self) -> dict:
        return json_record(self)


@dataclass(frozen=True)
class DiscoverResult:
    """Rows sorted by ``novelty_rank``; ``bootstrap`` resamples behind the intervals."""

    dataset: str
    rows: list
    bootstrap: int
    level: float
    covariance: str
    seconds: float
    skipped: int = 0
    correlation: np.ndarray = field(default=None, repr=False)

    def row(self, benchmark: str) -> DiscoverRow:
        return next(r for r in self.rows if r.benchmark == benchmark)

    def to_frame(self):
        """The table the command prints as a :class:`pandas.DataFrame`: one row per benchmark."""
        return rows_frame(self.rows, "benchmark", DiscoverRow)

    def to_dict(self) -> dict:
        return {
            "dataset": self.dataset,
            "covariance": self.covariance,
            "bootstrap": self.bootstrap,
            "level": self.level if self.bootstrap else None,
            "skipped_resamples": self.skipped,
            "seconds": self.seconds,
            "benchmarks": [r.to_dict() for r in self.rows],
        }


def novelty(correlation: np.ndarray) -> np.ndarray:
    """Conditional variance of each benchmark given all others, ``1 / (R^{-1})_jj``, in [0, 1]."""
    r = np.asarray(correlation, dtype=float)
    if r.shape[0] == 1:
        return np.ones(1)
    diag, _ = inverse_diagonal(r, _FLOOR)
    return np.clip(1.0 / diag, 0.0, 1.0)


def _ranks(values: np.ndarray) -> np.ndarray:
    """1 = largest; ties broken by column order."""
    order = np.argsort(-values, kind="stable")
    ranks = np.empty(len(values), dtype=int)
    ranks[order] = np.arange(1, len(values) + 1)
    return ranks


def _correlation(values: np.ndarray, covariance: str) -> tuple[np.ndarray, np.ndarray]:
    """Correlation of the standardizable columns, and which columns those are."""
    std = fit_standardizer(values, covariance)
    cols = np.flatnonzero(~std.constant)
    z = std.transform(values[:, cols], cols)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cov = estimate_covariance(z, covariance).covariance
    d = np.sqrt(np.diag(cov))
    return cov / np.outer(d, d), cols


def read_correlation(path) -> tuple[list[str], np.ndarray]:
    """A published correlation matrix: CSV, first column and header the benchmark names.

    Checked to be square with matching names, finite, in [-1, 1], symmetric
    (to 1e-6) with a unit diagonal, and positive semidefinite (to -1e-8).
    Every error names the file and the offending cell.
    """
    import pandas as pd

    frame = pd.read_csv(path, index_col=0)
    rows, cols = [str(x) for x in frame.index], [str(x) for x in frame.columns]
    if rows != cols:
        raise ValueError(f"{path}: a correlation matrix needs the same benchmark names, in the "
                         f"same order, as rows and columns; rows {rows[:5]}..., columns "
                         f"{cols[:5]}...")
    try:
        r = frame.to_numpy(dtype=float)
    except ValueError as err:
        raise ValueError(f"{path}: correlations must be numbers ({err})") from None
    bad = np.argwhere(~np.isfinite(r) | (np.abs(r) > 1 + 1e-9))
    if bad.size:
        i, j = bad[0]
        raise ValueError(f"{path}: row {rows[i]!r}, column {cols[j]!r}: {r[i, j]!r} is not a "
                         "correlation in [-1, 1]")
    asym = np.argwhere(np.abs(r - r.T) > 1e-6)
    if asym.size:
        i, j = asym[0]
        raise ValueError(f"{path}: not symmetric: ({rows[i]}, {cols[j]}) = {r[i, j]:g} but "
                         f"({rows[j]}, {cols[i]}) = {r[j, i]:g}")
    off = np.flatnonzero(np.abs(np.diag(r) - 1) > 1e-6)
    if off.size:
        j = off[0]
        raise ValueError(f"{path}: the diagonal must be 1; {rows[j]!r} has {r[j, j]:g}")
    low = float(np.linalg.eigvalsh(0.5 * (r + r.T)).min())
    if low < -1e-8:
        raise ValueError(f"{path}: not a correlation matrix of any data (smallest eigenvalue "
                         f"{low:.3g} < 0)")
    return rows, 0.5 * (r + r.T)


def discover(
    scores: ScoreMatrix | None = None,
    *,
    correlation: tuple[list[str], np.ndarray] | None = None,
    new=(),
    bootstrap: int = 0,
    level: float = 0.95,
    covariance: str = "auto",
    seed: int = 0,
    progress=None,
) -> DiscoverResult:
    """Rank benchmarks by novelty and by information about the rest (module docstring).

    Parameters
    ----------
    scores : ScoreMatrix, optional
        Models x benchmarks; the correlation is estimated with
        ``covariance`` (as :class:`~benchsel.models.GaussianModel` does).
    correlation : (names, ndarray), optional
        A correlation matrix instead of scores (e.g. from
        :func:`read_correlation`); no bootstrap then.
    new : sequence of str
        Benchmarks to mark as new in the output.
    bootstrap : int, default 0
        Resamples of the models for the novelty-rank intervals.
    level : float, default 0.95
        Coverage of the percentile interval of the rank.
    covariance : str, default "auto"
    seed : int, default 0
    progress : callable(done, total), optional
    """
    if (scores is None) == (correlation is None):
        raise ValueError("give scores or a correlation matrix, exactly one")
    if not (isinstance(bootstrap, int | np.integer) and bootstrap >= 0):
        raise ValueError(f"bootstrap must be a whole number >= 0; got {bootstrap!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level!r}")
    start = time.perf_counter()
    if correlation is not None:
        if bootstrap:
            raise ValueError("a correlation matrix has no models to resample; bootstrap "
                             "needs the scores")
        names, r = list(correlation[0]), np.asarray(correlation[1], dtype=float)
        values, source = None, ""
        counts = [None] * len(names)
    else:
        scores = as_scores(scores).cleaned()
        r, cols = _correlation(scores.values, covariance)
        names = [scores.items[j] for j in cols]
        values, source = scores.values[:, cols], scores.source or ""
        counts = [int(c) for c in (~np.isnan(values)).sum(axis=0)]
    if len(names) < 2:
        raise ValueError(f"discover needs at least 2 benchmarks; got {len(names)}")
    unknown = [n for n in new if n not in names]
    if unknown:
        raise ValueError(f"new names unknown benchmark(s) {unknown}; benchmarks: "
                         f"{', '.join(names[:20])}{' ...' if len(names) > 20 else ''}")
    nov = novelty(r)
    info = -0.5 * np.log(np.maximum(nov, _FLOOR))
    n = len(names)
    entropy_order = run_greedy(r, n, objective="entropy").indices
    mi_order = _information_order(r, info)
    position = np.empty(n, dtype=int)
    position[entropy_order] = np.arange(1, n + 1)
    entropy_rank = position.copy()
    position[mi_order] = np.arange(1, n + 1)
    mi_rank = position.copy()
    rank_low = rank_high = top3 = [None] * n
    skipped = 0
    if bootstrap:
        boot, skipped = _bootstrap_ranks(values, bootstrap, covariance, seed, progress)
        tail = 100 * (1 - level) / 2
        # A benchmark that no resample could rank (too few of its models drawn) has no
        # interval: it is left empty and named, rather than asking numpy for the
        # percentile of nothing (whose "All-NaN slice" warning names no benchmark).
        ranked = ~np.isnan(boot).all(axis=0)
        rank_low, rank_high, top3 = [None] * n, [None] * n, [None] * n
        if ranked.any():
            seen = boot[:, ranked]
            # Ranks are whole numbers: the interval ends are ranks that occurred.
            low = np.nanpercentile(seen, tail, axis=0, method="lower")
            high = np.nanpercentile(seen, 100 - tail, axis=0, method="higher")
            share = np.nanmean(np.where(np.isnan(seen), np.nan, seen <= 3), axis=0)
            for j, lo, hi, sh in zip(np.flatnonzero(ranked), low, high, share):
                rank_low[j], rank_high[j], top3[j] = float(lo), float(hi), float(sh)
        if not ranked.all():
            missed = [names[j] for j in np.flatnonzero(~ranked)]
            warnings.warn(f"no bootstrap resample of {bootstrap} could rank "
                          f"{', '.join(map(repr, missed[:10]))}"
                          f"{' ...' if len(missed) > 10 else ''} (too few of its models "
                          "drawn); its rank interval and top-3 share are left empty",
                          DataWarning, stacklevel=2)
    ranks = _ranks(nov)
    def whole(v):
        return None if v is None or not np.isfinite(v) else int(v)

    rows = [DiscoverRow(benchmark=names[j], novelty=float(nov[j]), novelty_rank=int(ranks[j]),
                        rank_low=whole(rank_low[j]), rank_high=whole(rank_high[j]),
                        top3_share=top3[j],
                        entropy_rank=int(entropy_rank[j]), information=float(info[j]),
                        mi_rank=int(mi_rank[j]), new=names[j] in new,
                        observed_models=counts[j])
            for j in np.argsort(ranks)]
    return DiscoverResult(dataset=source, rows=rows, bootstrap=int(bootstrap), level=level,
                          covariance=covariance if correlation is None else "given",
                          seconds=time.perf_counter() - start, skipped=skipped,
                          correlation=r)


def _information_order(r: np.ndarray, info: np.ndarray) -> np.ndarray:
    """Greedy MI order while picks add information, then by single-item information.

    MI with the complement is not monotone: once the selected benchmarks
    explain most of the rest, every further pick lowers it, and the greedy
    then picks whatever lowers it least -- an independent benchmark, whose
    gain is about 0. Picks that add less than :data:`_MI_TOLERANCE` of the
    first pick's gain end the greedy part; the others follow by their own
    information about the rest.
    """
    greedy = run_greedy(r, len(info), objective="mi")
    gains = np.asarray(greedy.gains)
    weak = np.flatnonzero(gains < _MI_TOLERANCE * max(gains[0], 0.0))
    cut = int(weak[0]) if weak.size else len(gains)
    head = list(greedy.indices[:cut])
    rest = [j for j in np.argsort(-info, kind="stable") if j not in set(head)]
    return np.array(head + rest, dtype=int)


def _bootstrap_ranks(values, bootstrap, covariance, seed, progress):
    """Novelty ranks per resample (NaN where a benchmark could not be modelled)."""
    rng = np.random.default_rng(seed)
    m, n = values.shape
    out = np.full((bootstrap, n), np.nan)
    skipped = 0
    for b in range(bootstrap):
        rows = rng.integers(m, size=m)
        try:
            r, cols = _correlation(values[rows], covariance)
        except ValueError:
            skipped += 1
            continue
        if cols.size >= 2:
            out[b, cols] = _ranks(novelty(r))
        else:
            skipped += 1
        if progress is not None:
            progress(b + 1, bootstrap)
    return out, skipped
