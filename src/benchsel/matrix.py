"""The score matrix: models (rows) x items (columns) with an observed mask.

Items are whole benchmarks (a leaderboard) or single questions (one
benchmark's per-sample results); nothing in this module cares which.
A missing cell is stored as NaN in :attr:`ScoreMatrix.values`; the observed
mask is derived from it, so the two can never disagree.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["ScoreMatrix", "Standardizer", "DataWarning", "MIN_MODELS", "model_strength"]

#: A covariance needs at least this many models (rows) to mean anything.
MIN_MODELS = 3


#: Largest score magnitude accepted: sums of larger ones (a column mean) overflow
#: float64 on the way to a covariance.
MAX_MAGNITUDE = 1e300


class DataWarning(UserWarning):
    """A recoverable problem in the input data (dropped rows, constant columns)."""


def _duplicates(names: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    dup: list[str] = []
    for name in names:
        if name in seen and name not in dup:
            dup.append(name)
        seen.add(name)
    return dup


#: Fewer source models than this: an item's variance and correlations come from a
#: handful of scores, so how novel or informative it looks may only reflect missing
#: data (marked by discover and the report, warned of when selected).
FEW_MODELS = 10


def _short_list(names: Iterable[str], limit: int = 10) -> str:
    names = list(names)
    shown = ", ".join(repr(str(n)) for n in names[:limit])
    if len(names) > limit:
        shown += f", ... ({len(names) - limit} more)"
    return shown


def closest_names(wanted: str, names: Iterable[str], limit: int = 3) -> list[str]:
    """The valid names most like ``wanted``: the same but for case, then those that
    start with it (``GPT-4`` for ``GPT-4 (0613)``: leaderboards add versions), then
    close spellings."""
    import difflib

    names = [str(n) for n in names]
    lower = {n.lower(): n for n in names}
    key = wanted.lower().strip()
    exact = [lower[key]] if key in lower else []
    prefixed = [n for low, n in lower.items() if key and low.startswith(key) and low != key]
    close = difflib.get_close_matches(key, list(lower), n=limit, cutoff=0.6)
    return list(dict.fromkeys(exact + prefixed + [lower[c] for c in close]))[:limit]


def did_you_mean(unknown: Sequence[str], names: Iterable[str]) -> str:
    """`` (did you mean 'X'?)`` for the first unknown name with a close valid one, else ''."""
    names = list(names)
    for name in unknown:
        close = closest_names(str(name), names)
        if close:
            return f" (did you mean {' or '.join(repr(c) for c in close)} for {str(name)!r}?)"
    return ""


@dataclass(frozen=True, eq=False)
class ScoreMatrix:
    """Scores of ``M`` models on ``N`` items, some of them missing.

    Parameters
    ----------
    values : array-like of shape (M, N)
        Scores; NaN marks a cell that was not observed. Infinite values are
        rejected.
    models : sequence of str, length M
        Unique model names (row labels).
    items : sequence of str, length N
        Unique item names (column labels): benchmarks or questions.
    costs : array-like of shape (N,), optional
        Cost of running each item (GPU hours, dollars, questions...). Must be
        positive and finite.
    source : str, optional
        Where the matrix came from (a path or a bundled dataset name); used in
        error messages.

    Attributes
    ----------
    observed : ndarray of bool, shape (M, N)
        True where a score was observed.
    """

    values: np.ndarray
    models: tuple[str, ...]
    items: tuple[str, ...]
    costs: np.ndarray | None = None
    source: str | None = None
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        values = np.array(self.values, dtype=np.float64, copy=True)
        if values.ndim != 2:
            raise ValueError(
                f"{self._where()}scores must be a 2-D (models x items) array; got "
                f"an array with {values.ndim} dimension(s)"
            )
        if np.isinf(values).any():
            r, c = np.argwhere(np.isinf(values))[0]
            raise ValueError(
                f"{self._where()}score for model {r} column {c} is {values[r, c]}; "
                "expected a finite number or NaN for a missing cell"
            )
        models = tuple(str(m) for m in self.models)
        items = tuple(str(i) for i in self.items)
        if len(models) != values.shape[0]:
            raise ValueError(
                f"{self._where()}got {len(models)} model names for "
                f"{values.shape[0]} rows"
            )
        if len(items) != values.shape[1]:
            raise ValueError(
                f"{self._where()}got {len(items)} item names for "
                f"{values.shape[1]} columns"
            )
        huge = np.abs(np.nan_to_num(values)) > MAX_MAGNITUDE
        if huge.any():
            r, c = np.argwhere(huge)[0]
            raise ValueError(
                f"{self._where()}score of model {models[r]!r} on {items[c]!r} is "
                f"{values[r, c]:g}; benchsel models scores up to {MAX_MAGNITUDE:g} in "
                "magnitude: rescale the column (e.g. to thousands or a log scale)"
            )
        for kind, names in (("model", models), ("item", items)):
            dup = _duplicates(names)
            if dup:
                raise ValueError(
                    f"{self._where()}duplicate {kind} name(s): {_short_list(dup)}; "
                    f"each {kind} must appear once"
                )
        costs = None
        if self.costs is not None:
            costs = np.array(self.costs, dtype=np.float64, copy=True).reshape(-1)
            if costs.shape != (values.shape[1],):
                raise ValueError(
                    f"{self._where()}got {costs.size} costs for {values.shape[1]} items"
                )
            bad = ~(np.isfinite(costs) & (costs > 0))
            if bad.any():
                j = int(np.argmax(bad))
                raise ValueError(
                    f"{self._where()}cost of item {items[j]!r} is {costs[j]}; "
                    "expected a positive finite number"
                )
            costs.setflags(write=False)
        values.setflags(write=False)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "models", models)
        object.__setattr__(self, "items", items)
        object.__setattr__(self, "costs", costs)
        object.__setattr__(self, "_index", {name: j for j, name in enumerate(items)})

    def _where(self) -> str:
        return f"{self.source}: " if self.source else ""

    # ------------------------------------------------------------------ shape
    @property
    def observed(self) -> np.ndarray:
        return ~np.isnan(self.values)

    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape

    @property
    def n_models(self) -> int:
        return self.values.shape[0]

    @property
    def n_items(self) -> int:
        return self.values.shape[1]

    @property
    def observed_fraction(self) -> float:
        return float(self.observed.mean()) if self.values.size else 0.0

    def __repr__(self) -> str:
        src = f", source={self.source!r}" if self.source else ""
        return (
            f"ScoreMatrix({self.n_models} models x {self.n_items} items, "
            f"{100 * self.observed_fraction:.1f}% observed{src})"
        )

    # ------------------------------------------------------------ item lookup
    def item_indices(self, names: Iterable[str], what: str = "item") -> np.ndarray:
        """Column indices of ``names``; an unknown name is an error listing valid ones."""
        names = list(names)
        unknown = [n for n in names if n not in self._index]
        if unknown:
            raise ValueError(
                f"{self._where()}unknown {what} name(s): {_short_list(unknown)}"
                f"{did_you_mean(unknown, self.items)}; valid names are: "
                f"{_short_list(self.items, limit=60)}"
            )
        return np.array([self._index[n] for n in names], dtype=np.intp)

    # ---------------------------------------------------------- new matrices
    def _replace(self, **changes) -> ScoreMatrix:
        kwargs = dict(
            values=self.values,
            models=self.models,
            items=self.items,
            costs=self.costs,
            source=self.source,
        )
        kwargs.update(changes)
        return ScoreMatrix(**kwargs)

    def subset(
        self,
        models: Sequence[int] | np.ndarray | None = None,
        items: Sequence[int] | np.ndarray | None = None,
    ) -> ScoreMatrix:
        """Rows and/or columns by integer index or boolean mask (order kept as given)."""
        rows = np.arange(self.n_models) if models is None else np.asarray(models)
        cols = np.arange(self.n_items) if items is None else np.asarray(items)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        if cols.dtype == bool:
            cols = np.flatnonzero(cols)
        return self._replace(
            values=self.values[np.ix_(rows, cols)],
            models=[self.models[i] for i in rows],
            items=[self.items[j] for j in cols],
            costs=None if self.costs is None else self.costs[cols],
        )

    def with_costs(self, costs: np.ndarray | dict[str, float] | None) -> ScoreMatrix:
        """A copy with per-item costs (an array in item order, or a name -> cost map)."""
        if isinstance(costs, dict):
            missing = [name for name in self.items if name not in costs]
            if missing:
                raise ValueError(
                    f"no cost given for item(s) {_short_list(missing)}; "
                    "every item needs a cost when a budget is used"
                )
            self.item_indices(costs.keys())  # unknown names are errors too
            costs = np.array([costs[name] for name in self.items], dtype=float)
        return self._replace(costs=costs)

    def transpose(self) -> ScoreMatrix:
        """Items become rows and models columns (to select reference models)."""
        return ScoreMatrix(
            values=self.values.T,
            models=self.items,
            items=self.models,
            source=self.source,
        )

    @property
    def T(self) -> ScoreMatrix:  # noqa: N802 - numpy's name for the same thing
        return self.transpose()

    def to_frame(self):
        """The matrix as a :class:`pandas.DataFrame` (models as index)."""
        import pandas as pd

        frame = pd.DataFrame(self.values, index=list(self.models), columns=list(self.items))
        frame.index.name = "model"
        return frame

    # -------------------------------------------------------- validation
    def cleaned(self, min_models: int = MIN_MODELS) -> ScoreMatrix:
        """Drop all-missing rows and columns, warning with their names.

        Raises
        ------
        ValueError
            If fewer than ``min_models`` models remain or no column does.
        """
        obs = self.observed
        empty_rows = ~obs.any(axis=1)
        empty_cols = ~obs.any(axis=0)
        if empty_rows.any():
            warnings.warn(
                f"{self._where()}dropping {int(empty_rows.sum())} model(s) with no "
                f"observed score: {_short_list(np.array(self.models)[empty_rows])}",
                DataWarning,
                stacklevel=2,
            )
        if empty_cols.any():
            warnings.warn(
                f"{self._where()}dropping {int(empty_cols.sum())} item(s) with no "
                f"observed score: {_short_list(np.array(self.items)[empty_cols])}",
                DataWarning,
                stacklevel=2,
            )
        out = self.subset(np.flatnonzero(~empty_rows), np.flatnonzero(~empty_cols))
        if out.n_items == 0:
            raise ValueError(f"{self._where()}no item has an observed score")
        if out.n_models < min_models:
            raise ValueError(
                f"{self._where()}found {out.n_models} model(s) with observed scores; "
                f"at least {min_models} are needed to estimate a covariance"
            )
        return out


@dataclass(frozen=True)
class Standardizer:
    """Per-column centring and scaling, with its inverse.

    Columns are standardized to zero mean and unit variance so that no
    benchmark dominates the covariance by its scale (Smola 2026, App. G);
    predictions are mapped back to each benchmark's own units.

    Attributes
    ----------
    mean : ndarray of shape (N,)
    scale : ndarray of shape (N,)
        Sample standard deviation (ddof=1) of the observed scores; 1 for a
        column whose spread is zero or undefined, which ``constant`` flags.
    constant : ndarray of bool, shape (N,)
        Columns with fewer than two observed values or no spread (with a
        ``scale_floor``, only columns with no observed value). They cannot
        be standardized and are left out of selection.
    """

    mean: np.ndarray
    scale: np.ndarray
    constant: np.ndarray

    @classmethod
    def fit(cls, values: np.ndarray, *, scale_floor: float = 0.0) -> Standardizer:
        """Column statistics of ``values`` (NaN = missing).

        Parameters
        ----------
        values : ndarray of shape (M, N)
        scale_floor : float, default 0
            When positive, every scale is at least ``scale_floor * (|mean| + 1)``
            (the published code of Smola 2026 uses 0.01), so a column with one
            observed value or no spread is standardized rather than left out.
        """
        if not (np.isfinite(scale_floor) and scale_floor >= 0):
            raise ValueError(f"scale_floor must be a non-negative number; got {scale_floor!r}")
        count, mean, spread = column_moments(values)
        # A spread below 1e-12 of the column's magnitude is rounding, not signal.
        tiny = 1e-12 * np.maximum(np.abs(mean), 1.0)
        if scale_floor > 0:
            constant = count < 1
            floored = np.maximum(spread, scale_floor * (np.abs(mean) + 1.0))
            return cls(mean=mean, scale=np.where(constant, 1.0, floored), constant=constant)
        constant = (count < 2) | (spread <= tiny)
        scale = np.where(constant, 1.0, spread)
        return cls(mean=mean, scale=scale, constant=constant)

    def transform(self, values: np.ndarray, columns: np.ndarray | None = None) -> np.ndarray:
        """Standardize ``values`` (optionally only the given columns)."""
        sl = slice(None) if columns is None else columns
        return (values - self.mean[sl]) / self.scale[sl]

    def inverse(self, z: np.ndarray, columns: np.ndarray | None = None) -> np.ndarray:
        """Map standardized values back to original units."""
        sl = slice(None) if columns is None else columns
        return z * self.scale[sl] + self.mean[sl]


def column_moments(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Observed count, mean and sample standard deviation of each column, NaN = missing.

    The standard deviation (ddof 1) is 0 for a column with fewer than two
    observed values, and so is the mean of a column with none. Residuals are
    scaled by the column's largest before squaring, so that scores up to
    :data:`MAX_MAGNITUDE` cannot overflow to an infinite spread.
    """
    obs = ~np.isnan(values)
    count = obs.sum(axis=0)
    mean = np.where(obs, values, 0.0).sum(axis=0) / np.maximum(count, 1)
    resid = np.where(obs, values - mean, 0.0)
    big = np.abs(resid).max(axis=0, initial=0.0)
    unit = np.where(big > 0, big, 1.0)
    spread = unit * np.sqrt(((resid / unit) ** 2).sum(axis=0) / np.maximum(count - 1, 1))
    return count, mean, spread


def model_strength(values: np.ndarray, standardizer: Standardizer | None = None) -> np.ndarray:
    """Mean standardized observed score of each model (NaN = missing).

    Columns are standardized with ``standardizer`` (by default, their own
    observed mean and standard deviation), so a model's strength compares it
    with the others on the items it was run on. A row with no observed score
    has no strength and is an error.
    """
    std = Standardizer.fit(values) if standardizer is None else standardizer
    z = std.transform(values)
    observed = ~np.isnan(z)
    count = observed.sum(axis=1)
    if np.any(count == 0):
        raise ValueError("a model has no observed score; its strength is undefined")
    return np.where(observed, z, 0.0).sum(axis=1) / count
