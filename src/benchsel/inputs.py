"""The small inputs beside a score matrix: item costs, the models' order (dates), question
counts and a new model's observed scores.

Each reader reports bad input with the file, the row, the value and what was
expected.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from . import _json
from .io import _csv_lines, read_scores
from .matrix import MAX_MAGNITUDE, ScoreMatrix

__all__ = [
    "read_costs",
    "read_model_order",
    "model_order_keys",
    "parse_observed",
    "read_question_counts",
]

def _json_object(path: Path, mapping: str) -> dict:
    # Bounded in size and depth before parsing; a JSONInputError (a ValueError) names path.
    raw = _json.load_file(path)
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a JSON object mapping {mapping}")
    return raw


def _read_mapping(path: Path, what: str, column: str, parse) -> dict:
    """``{name: parse(value)}`` from a JSON object or a two-column CSV ``name,<column>``.

    The CSV's first line is a header when its second field is ``column`` or
    its first is a word such as ``model`` or ``benchmark`` (:data:`_HEADER_NAMES`).

    ``parse(value)`` returns the parsed value, or None when ``value`` is not
    a valid ``what``; the error then names the file, the line and the value.
    """
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such {_FILE[what]} file")
    if path.suffix.lower() == ".json":
        raw = _json_object(path, f"names to {what}s")
        pairs = [(str(k), v, f"key {k!r}") for k, v in raw.items()]
    else:
        pairs = []
        for line, r in _csv_lines(path):
            if not pairs and (r[-1].lower() == column or r[0].lower() in _HEADER_NAMES):
                continue  # header line: "<name>,<column>", or "model,released" and the like
            if len(r) != 2:
                raise ValueError(f"{path}: line {line}: expected 'name,{column}'; got {r}")
            pairs.append((r[0], r[1], f"line {line}"))
    out: dict = {}
    for name, value, where in pairs:
        parsed = parse(value)
        if parsed is None:
            raise ValueError(f"{path}: {where}: {what} {value!r} for {name!r} is not "
                             f"{_EXPECTED[what]}")
        if name in out:
            raise ValueError(f"{path}: {where}: duplicate {what} for {name!r}")
        out[name] = parsed
    return out


#: First fields that make a mapping file's first line a header whatever its second.
_HEADER_NAMES = frozenset({"model", "name", "benchmark", "item", "task"})

_FILE = {"cost": "costs", "order": "model order", "question count": "question counts"}
_EXPECTED = {"cost": "a positive number",
             "order": "a number or a date (YYYY-MM-DD, optionally with a time)",
             "question count": "a positive whole number"}


def _positive(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if np.isfinite(number) and number > 0 else None


def _order_key(value) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) if np.isfinite(value) else None
    text = str(value).strip()
    try:
        number = float(text)
        return number if np.isfinite(number) else None
    except ValueError:
        pass
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp()


def read_costs(path: str | os.PathLike) -> dict[str, float]:
    """Per-item costs from a JSON object ``{name: cost}`` or a two-column CSV.

    The CSV may start with a header whose second field is ``cost`` (e.g.
    ``benchmark,cost``); every other line is ``name,cost`` with a positive
    number.
    """
    return _read_mapping(Path(path), "cost", "cost", _positive)


def read_question_counts(path: str | os.PathLike) -> dict[str, int]:
    """Questions per benchmark from a JSON object ``{name: count}`` or a two-column CSV
    (optionally headed ``benchmark,questions``)."""
    return _read_mapping(Path(path), "question count", "questions", _whole_count)


def _whole_count(value) -> int | None:
    number = _positive(value)
    return int(number) if number is not None and float(number).is_integer() else None


def read_model_order(path: str | os.PathLike) -> dict[str, float]:
    """A sort key per model (e.g. its release date) for ``audit --order``.

    A JSON object ``{model: key}`` or a two-column CSV ``model,order`` (the
    header optional); a key is a number or an ISO date (``2024-05-13``),
    returned as seconds since 1970 for dates.
    """
    return _read_mapping(Path(path), "order", "order", _order_key)


def model_order_keys(models, order, before, *, where: str = "order",
                     cut_name: str = "before") -> tuple[np.ndarray, float]:
    """Each model's sort key and the cut, as numbers: the input of a dated split.

    Parameters
    ----------
    models : sequence of str
        The models of the matrix, in its row order.
    order : mapping {model: key} or array-like (M,)
        When each model came out: a number or an ISO date (``2024-05-13``)
        per model (as :func:`read_model_order` reads them); an array is
        taken in the models' order.
    before : number or str
        The cut, a number or an ISO date; models with a key below it are
        the sources.
    where, cut_name : str
        What to call ``order`` and ``before`` in an error (a file name, a flag).

    Returns
    -------
    keys : ndarray (M,)
        Seconds since 1970 for dates.
    cut : float
    """
    cut = _order_key(before)
    if cut is None:
        raise ValueError(f"{cut_name} {before!r}: expected a date (YYYY-MM-DD) or a number")
    models = list(models)
    if isinstance(order, Mapping):
        missing = [m for m in models if m not in order]
        if missing:
            shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
            raise ValueError(f"{where}: no date for {len(missing)} model(s): {shown}")
        raw = [order[m] for m in models]
    else:
        raw = list(np.asarray(order, dtype=object).ravel())
        if len(raw) != len(models):
            raise ValueError(f"{where}: expected one key per model ({len(models)}); "
                             f"got {len(raw)}")
    keys = []
    for model, value in zip(models, raw):
        key = _order_key(value)
        if key is None:
            raise ValueError(f"{where}: model {model!r}: {value!r} is not a number or a date "
                             "(YYYY-MM-DD)")
        keys.append(key)
    return np.array(keys, dtype=float), cut


def parse_observed(spec: str) -> ScoreMatrix | dict[str, float]:
    """Observed scores of new model(s), from a file or an inline list.

    ``spec`` is either a path (a wide CSV/TSV/Parquet/NPZ of one or more new
    models, or a JSON object ``{"benchmark": score}``) or inline text
    ``"name=value,name=value"``.
    """
    path = Path(spec)
    if path.is_file():
        if path.suffix.lower() == ".json":
            return _as_scores(_json_object(path, "benchmarks to scores").items(), str(path))
        return read_scores(path, clean=False)
    if "=" not in spec:
        if path.suffix.lower() in (".csv", ".tsv", ".tab", ".txt", ".json", ".jsonl",
                                   ".parquet", ".pq", ".npz") or os.sep in spec:
            raise ValueError(f"observed {spec}: no such file")
        raise ValueError(
            f"observed scores {spec!r}: not a file and not of the form "
            "'name=value,name=value'"
        )
    pairs = []
    for part in spec.split(","):
        if not part.strip():
            continue
        name, sep, value = part.rpartition("=")
        if not sep or not name.strip():
            raise ValueError(f"observed scores: {part!r} is not of the form 'name=value'")
        pairs.append((name.strip(), value.strip()))
    return _as_scores(pairs, "observed scores")


def _as_scores(pairs, where: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, value in pairs:
        try:
            x = float(value)
        except (TypeError, ValueError):
            x = float("nan")
        if not np.isfinite(x):
            raise ValueError(f"{where}: value {value!r} for {name!r} is not a finite number")
        if abs(x) > MAX_MAGNITUDE:
            raise ValueError(f"{where}: value {value!r} for {name!r} exceeds "
                             f"{MAX_MAGNITUDE:g} in magnitude; scores are modelled up to it")
        if name in out:
            raise ValueError(f"{where}: {name!r} is given twice")
        out[name] = x
    if not out:
        raise ValueError(f"{where}: no scores given")
    return out
