"""Reading score matrices and writing results.

Every reader returns a :class:`~benchsel.matrix.ScoreMatrix` and reports bad
input with the file, the line/row and column, the offending value and what
was expected. Writers replace their target atomically (write a temporary file
beside it, then rename), so an interrupted run never leaves half a file.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import _json, names
from ._npz import DAMAGED
from .matrix import MAX_MAGNITUDE, DataWarning, ScoreMatrix

__all__ = [
    "read_scores",
    "read_costs",
    "read_model_order",
    "model_order_keys",
    "parse_observed",
    "read_question_counts",
    "write_text_atomic",
    "write_json_atomic",
    "check_output_path",
    "check_output_folder",
    "MISSING_TOKENS",
]

#: Cell texts read as "not observed" (compared case-insensitively after strip).
MISSING_TOKENS = frozenset({"", "na", "nan", "n/a", "null", "none"})

_FORMATS = names.INPUT_FORMATS


@dataclass
class _Table:
    """Cells of a tabular file as text, with where each row came from."""

    path: Path
    columns: list[str]
    cells: dict[str, list]  # column -> one cell per row
    where: list[str]  # "line 4" (text files) or "row 3" (Parquet), one per row

    def column(self, name: str) -> list:
        return self.cells[name]


def _file_kind(path: Path, fmt: str | None) -> str:
    """``npz``, ``parquet`` or ``text``: from ``format`` when it names one, else the extension."""
    if fmt is not None and fmt not in _FORMATS:
        raise ValueError(f"format must be one of {', '.join(_FORMATS)}; got {fmt!r}")
    if fmt in ("npz", "parquet"):
        return fmt
    suffix = path.suffix.lower()
    if suffix == ".npz":
        return "npz"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    return "text"


def _infer_sep(path: Path, sep: str | None) -> str:
    if sep is not None:
        return sep
    return "\t" if path.suffix.lower() in (".tsv", ".tab") else ","


def read_scores(
    path: str | os.PathLike,
    *,
    format: str | None = None,  # noqa: A002 - the natural name for users
    sep: str | None = None,
    model_column: str | None = None,
    item_column: str = "benchmark",
    score_column: str = "score",
    clean: bool = True,
) -> ScoreMatrix:
    """Read a models x items score matrix from a file.

    Parameters
    ----------
    path : path-like
        The file to read.
    format : {"wide", "long", "npz", "parquet"}, optional
        ``wide`` (one row per model, one column per item) or ``long`` (one
        row per score) for CSV/TSV and Parquet files, whose kind comes from
        the extension (``.parquet``/``.pq`` -> Parquet, else text);
        ``npz``/``parquet`` force the file kind. Default: from the
        extension, wide.
    sep : str, optional
        Field separator for text files; tab for ``.tsv``/``.tab``, else comma.
    model_column : str, optional
        Column holding model names. Wide files default to the first column,
        long files to ``"model"``.
    item_column, score_column : str
        Columns of a long file holding the item (benchmark) name and the score.
    clean : bool, default True
        Drop all-missing rows/columns with a warning and require at least
        three models (see :meth:`ScoreMatrix.cleaned`).

    Returns
    -------
    ScoreMatrix

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        For malformed content; the message names the file, the position, the
        value and what was expected.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    kind = _file_kind(path, format)
    if kind == "npz":
        scores = _read_npz(path)
    else:
        if kind == "parquet":
            table = _read_parquet(path)
        else:
            _refuse_json(path)
            table = _read_text(path, _infer_sep(path, sep))
        if format == "long":
            scores = _from_long(table, model_column or "model", item_column, score_column)
        else:
            scores = _from_wide(table, model_column)
    return scores.cleaned() if clean else scores


# ---------------------------------------------------------------- text tables
def _refuse_json(path: Path) -> None:
    """A JSON file given where a table is read: say what it is, not which line has
    too many fields. A saved plan is pointed to ``--plan``."""
    try:
        with path.open("rb") as fh:
            head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return  # the table reader names the error
    if not head.startswith((b"{", b"[")):
        return
    if re.search(rb'"format"\s*:\s*"benchsel-plan"', head):
        raise ValueError(f"{path}: is a benchsel plan, not a table of scores; give it with "
                         f"--plan (benchsel predict --plan {path} --observed ...)")
    raise ValueError(f"{path}: is JSON, not a table of scores; expected a CSV or TSV "
                     "file (one row per model), NPZ or Parquet")


#: The longest line a delimited file may have: a header of a million benchmark names
#: is about 17 MB; a 500 MB file with no line break was a MemoryError in the parser.
MAX_LINE_BYTES = 64 * 2**20


def _check_line_lengths(path: Path, limit: int = MAX_LINE_BYTES,
                        chunk_size: int = 2**20) -> None:
    """Refuse a file with a line longer than ``limit`` bytes before parsing it.

    One pass in chunks no longer than ``limit`` (so only a stretch across
    chunk ends can exceed it), counting line breaks in C.
    """
    chunk_size = min(chunk_size, limit)
    line, run = 1, 0  # the line being read, and its bytes so far
    with path.open("rb") as fh:
        while chunk := fh.read(chunk_size):
            first = chunk.find(b"\n")
            if first == -1:
                run += len(chunk)
            else:
                if run + first > limit:
                    break
                line += chunk.count(b"\n")
                run = len(chunk) - chunk.rfind(b"\n") - 1
            if run > limit:
                break
        else:
            return
    raise ValueError(
        f"{path}: line {line} is longer than {limit // 2**20} MiB; a table of scores has one "
        "model (or one score) per line: is this file missing its line breaks, or not a "
        "table?")


def _csv_lines(path: Path, sep: str = ",") -> list[tuple[int, list[str]]]:
    """Non-blank records of a delimited UTF-8 file as ``(line number, stripped fields)``."""
    import csv

    if len(sep) != 1:
        raise ValueError(f"separator must be a single character; got {sep!r}")
    try:
        _check_line_lengths(path, MAX_LINE_BYTES)
        with path.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh, delimiter=sep, strict=True)
            return [
                (reader.line_num, [f.strip() for f in fields])
                for fields in reader
                if any(f.strip() for f in fields)
            ]
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not a UTF-8 text file ({err.reason})") from None
    except csv.Error as err:
        raise ValueError(f"{path}: cannot parse as a {sep!r}-separated table: {err}") from None
    except OSError as err:
        if err.filename is not None:
            raise
        # An error while reading (not opening) names no file: say which one it was.
        raise type(err)(f"{path}: cannot be read ({err.strerror or err})") from None


def _read_text(path: Path, sep: str) -> _Table:
    """Parse a delimited text file, keeping true line numbers.

    Blank lines are skipped; every other line must have as many fields as
    the header.
    """
    rows = _csv_lines(path, sep)
    if not rows:
        raise ValueError(f"{path}: the file is empty; expected a header line")
    (_, header), body = rows[0], rows[1:]
    if len(header) == 1 and sep == ",":
        other = next((c for c in ";\t|" if c in header[0]), None)
        if other is not None:
            raise ValueError(f"{path}: the header is one column {header[0][:60]!r}; the file "
                             f"looks {other!r}-separated: give sep={other!r} "
                             f"(--sep {other!r})")
    if header and not header[0] and all(header[1:]):
        # pandas' DataFrame.to_csv writes its index under an empty name.
        header, body = _pandas_index(header, body)
    for line, fields in body:
        if len(fields) != len(header):
            raise ValueError(
                f"{path}: line {line} has {len(fields)} fields; the header has "
                f"{len(header)} (expected one field per column, separator {sep!r})"
            )
    _check_header(path, header)
    cells = {name: [fields[j] for _, fields in body] for j, name in enumerate(header)}
    return _Table(path, header, cells, [f"line {line}" for line, _ in body])


def _pandas_index(header: list[str], body: list) -> tuple[list[str], list]:
    """A first column with no name (pandas' index): the model names, unless it only
    counts rows 0, 1, 2, ... (a default index), which is dropped."""
    first = [fields[0] if fields else "" for _, fields in body]
    if first == [str(i) for i in range(len(body))]:
        return header[1:], [(line, fields[1:]) for line, fields in body]
    name = "model" if "model" not in header else "index"
    return [name, *header[1:]], body


def _check_header(path: Path, header: list[str]) -> None:
    from collections import Counter

    for j, name in enumerate(header):
        if not name:
            raise ValueError(f"{path}: column {j + 1} of the header has no name")
    # Counted by hashing: list.count per column made 50,000 columns take a minute.
    dup = sorted(name for name, n in Counter(header).items() if n > 1)
    if dup:
        raise ValueError(f"{path}: duplicate column name(s) {dup}; each must appear once")


def _read_parquet(path: Path) -> _Table:
    import pandas as pd

    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise ValueError(
            f"{path}: reading Parquet needs pyarrow; install it with "
            "'pip install benchsel[parquet]'"
        ) from None
    frame = pd.read_parquet(path)
    # A named index, or one of labels, holds the model names; an unnamed
    # integer index is only pandas' row numbering and is dropped.
    index_is_labels = frame.index.name is not None or not pd.api.types.is_integer_dtype(
        frame.index.dtype
    )
    frame = frame.reset_index(drop=not index_is_labels)
    header = [str(c) for c in frame.columns]
    _check_header(path, header)
    def text(value, i: int, name: str) -> str:
        if np.ndim(value) or isinstance(value, dict):  # a list, array or struct cell
            raise ValueError(f"{path}: row {i + 1}, column {name!r}: holds a list of "
                             "values, not a score")
        return "" if pd.isna(value) else str(value)

    cells = {
        name: [text(v, i, name) for i, v in enumerate(frame.iloc[:, j].tolist())]
        for j, name in enumerate(header)
    }
    return _Table(path, header, cells, [f"row {i + 1}" for i in range(len(frame))])


def _numeric(table: _Table, column: str) -> np.ndarray:
    """Parse one column of cells to float; missing tokens become NaN."""
    out = np.empty(len(table.where))
    for i, text in enumerate(table.column(column)):
        if text.lower() in MISSING_TOKENS:
            out[i] = np.nan
            continue
        try:
            value = float(text)
        except ValueError:
            value = np.nan
        if not np.isfinite(value):
            raise ValueError(
                f"{table.path}: {table.where[i]}, column {column!r}: value {text!r} is not a "
                "finite number; expected a number or an empty cell for a missing score"
                + _number_hint(text)
            )
        out[i] = value
    return out


def _names(table: _Table, column: str, what: str, unique: bool) -> list[str]:
    names = table.column(column)
    for i, name in enumerate(names):
        if name == "" or name.lower() == "nan":
            raise ValueError(
                f"{table.path}: {table.where[i]}, column {column!r}: empty {what} name"
            )
    if unique:
        seen: dict[str, int] = {}
        for i, name in enumerate(names):
            if name in seen:
                raise ValueError(
                    f"{table.path}: duplicate {what} name {name!r} at {table.where[seen[name]]} "
                    f"and {table.where[i]}; each {what} must appear once"
                )
            seen[name] = i
    return list(names)


def _number_hint(text: str) -> str:
    """What to change in a cell that is almost a number (empty when nothing fits)."""
    text = text.strip()
    if text.endswith("%") and _looks_numeric(text[:-1]):
        return f" (it has a percent sign: write {text[:-1].strip()} for {text})"
    if re.fullmatch(r"[+-]?\d+,\d+", text):
        return f" (it has a decimal comma: write {text.replace(',', '.')} for {text})"
    return ""


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


#: First headers of a file that has one row per benchmark (a transposed leaderboard).
_ITEM_HEADERS = {"benchmark", "benchmarks", "task", "tasks", "item", "items", "dataset",
                 "datasets"}


def _from_wide(table: _Table, model_column: str | None) -> ScoreMatrix:
    path, columns = table.path, table.columns
    if model_column is None:
        model_column = columns[0]
        lower = {c.lower() for c in columns}
        if model_column.lower() in _ITEM_HEADERS and not lower & {"model", "score", "value"}:
            # Models as columns, benchmarks as rows: read as it stands, the models
            # would be "selected" as benchmarks without a word.
            raise ValueError(
                f"{path}: its first column is {model_column!r}, so its rows look like "
                "benchmarks and its other columns like models; benchsel reads one row per "
                "model and one column per benchmark. Transpose the file (pandas: "
                "read_csv(path, index_col=0).T.to_csv(...)), or give the model column "
                "with --model-column if this one really holds models")
    elif model_column not in columns:
        raise ValueError(f"{path}: no column named {model_column!r}; columns are {columns}")
    items = [c for c in columns if c != model_column]
    if not items:
        raise ValueError(
            f"{path}: no score columns; expected the model column {model_column!r} "
            "followed by one numeric column per benchmark"
        )
    try:
        models = _names(table, model_column, "model", unique=True)
    except ValueError as err:
        long_like = {"benchmark", "score", "task", "metric", "value"} & \
            {c.lower() for c in columns}
        if "duplicate" in str(err) and (long_like or len(columns) == 3):
            raise ValueError(f"{err}. It looks like a long file (one row per model and "
                             f"benchmark): read it with --input-format long (and "
                             f"--item-column/--score-column if its columns are not named "
                             f"'benchmark' and 'score')") from None
        raise

    def is_text(c: str) -> bool:
        cells = [t for t in table.column(c) if t.lower() not in MISSING_TOKENS]
        return bool(cells) and not any(_looks_numeric(t) for t in cells)

    if all(is_text(c) for c in items):
        hints = ((c, i, _number_hint(t)) for c in items
                 for i, t in enumerate(table.column(c)) if _number_hint(t))
        first = next(hints, None)
        detail = (f"; column {first[0]!r}, {table.where[first[1]]}: value "
                  f"{table.column(first[0])[first[1]]!r} is not a number{first[2]}"
                  if first else "")
        raise ValueError(
            f"{path}: no numeric columns; every column besides {model_column!r} holds "
            f"text (e.g. {items[:3]}); expected one numeric column per benchmark{detail}"
        )
    values = np.column_stack([_numeric(table, c) for c in items])
    return ScoreMatrix(values.reshape(len(models), len(items)), models, items, source=str(path))


def _from_long(
    table: _Table, model_column: str, item_column: str, score_column: str
) -> ScoreMatrix:
    path = table.path
    for role, name in (("model", model_column), ("item", item_column), ("score", score_column)):
        if name not in table.columns:
            raise ValueError(
                f"{path}: no {role} column named {name!r}; columns are {table.columns} "
                f"(set it with the {role}_column option)"
            )
    models = _names(table, model_column, "model", unique=False)
    items = _names(table, item_column, "item", unique=False)
    scores = _numeric(table, score_column)
    if not models:
        raise ValueError(f"{path}: no rows; expected one row per (model, benchmark) score")
    model_names = list(dict.fromkeys(models))
    item_names = list(dict.fromkeys(items))
    row = {m: i for i, m in enumerate(model_names)}
    col = {b: j for j, b in enumerate(item_names)}
    values = np.full((len(model_names), len(item_names)), np.nan)
    first_seen: dict[tuple[int, int], int] = {}
    for i, (m, b, s) in enumerate(zip(models, items, scores)):
        key = (row[m], col[b])
        if key in first_seen:
            raise ValueError(
                f"{path}: model {m!r} has two scores for {b!r}, at "
                f"{table.where[first_seen[key]]} and {table.where[i]}; expected one"
            )
        first_seen[key] = i
        values[key] = s
    return ScoreMatrix(values, model_names, item_names, source=str(path))


# ----------------------------------------------------------------------- NPZ
def _read_npz(path: Path) -> ScoreMatrix:
    import tokenize

    damaged = (*DAMAGED, tokenize.TokenError)
    try:
        arrays = _npz_arrays(path)
    except damaged as err:
        raise ValueError(f"{path}: not a readable NPZ archive, damaged or truncated "
                         f"({type(err).__name__}: {err})") from None
    values = arrays.get("values")
    if values is None:
        raise ValueError(
            f"{path}: no score array; expected an array named 'B' (with optional "
            f"mask 'O') or 'scores'; found {arrays['keys']}"
        )
    if values.ndim != 2:
        raise ValueError(f"{path}: score array has shape {values.shape}; expected 2-D")
    if not np.issubdtype(values.dtype, np.number) and values.dtype != bool:
        raise ValueError(f"{path}: score array has dtype {values.dtype}; expected numbers")
    values = values.astype(np.float64)
    mask = arrays.get("mask")
    if mask is not None:
        if mask.shape != values.shape:
            raise ValueError(f"{path}: mask 'O' has shape {mask.shape}; expected {values.shape}")
        values = np.where(mask.astype(bool), values, np.nan)
    m, n = values.shape
    models = _dedupe(_labels(arrays.get("models"), m, "model", path), "model", path)
    items = _labels(arrays.get("items"), n, "item", path)
    return ScoreMatrix(values, models, items, source=str(path))


def _npz_arrays(path: Path) -> dict:
    """The arrays benchsel reads from an NPZ archive, by role; ``keys`` lists them all."""
    try:
        archive = np.load(path, allow_pickle=False)
    except ValueError as err:
        raise ValueError(f"{path}: not a readable NPZ archive ({err})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError(f"{path}: holds a single .npy array, not an NPZ archive of named arrays")
    roles = {"values": ("B", "scores"), "mask": ("O", "observed", "mask"),
             "models": ("models", "model_names"),
             "items": ("benchmarks", "items", "names", "questions", "columns")}
    with archive:
        keys = sorted(archive.files)
        out: dict = {"keys": keys}
        for role, names in roles.items():
            name = next((n for n in names if n in keys), None)
            if name is None:
                continue
            try:
                out[role] = archive[name]
            except ValueError as err:
                if "allow_pickle" in str(err):
                    raise ValueError(f"{path}: array {name!r} holds Python objects; benchsel "
                                     "reads only plain arrays (no pickles)") from None
                raise ValueError(f"{path}: array {name!r} cannot be read ({err})") from None
    return out


def _dedupe(names: list[str], what: str, path: Path) -> list[str]:
    """Number repeated names ``name#2``, ``name#3``... with a warning.

    Released per-question archives repeat some model names (separate runs of
    the same model); their rows are distinct data, so they are kept apart
    rather than rejected as a hand-written CSV would be.
    """
    import warnings

    seen: dict[str, int] = {}
    out, repeated = [], []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        if seen[name] == 1:
            out.append(name)
        else:
            out.append(f"{name}#{seen[name]}")
            repeated.append(name)
    if repeated:
        warnings.warn(
            f"{path}: {len(repeated)} repeated {what} name(s) numbered name#2, name#3, ...: "
            f"{', '.join(repr(r) for r in sorted(set(repeated))[:5])}",
            DataWarning,
            stacklevel=3,
        )
    return out


def _labels(array, count: int, what: str, path: Path) -> list[str]:
    if array is None or array.size == 0:
        return [f"{what}_{i}" for i in range(count)]
    labels = [
        x.decode() if isinstance(x, bytes) else str(x) for x in np.asarray(array).reshape(-1)
    ]
    if len(labels) != count:
        raise ValueError(f"{path}: {len(labels)} {what} names for {count} {what}s")
    return labels


# ------------------------------------------------------------- small inputs
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


# ------------------------------------------------------------------ writers
def _resolve_link(path: Path) -> Path:
    """The file a symbolic link points to (followed to its end), or an error naming ``path``."""
    try:
        return path.resolve()
    except (RuntimeError, OSError) as err:  # RuntimeError up to Python 3.12, OSError after
        raise ValueError(f"{path}: is a symbolic link that leads back to itself (a loop); "
                         "remove it or choose another path") from err


def _read_only(path: Path) -> bool:
    """No write permission: for this user, or (as root, who may write anyway) for anyone."""
    return not os.access(path, os.W_OK) or not path.stat().st_mode & 0o222


def _refuse_inputs(target: Path, shown: str, protect: Iterable | None, same: str) -> None:
    """An error (``"{shown}: {same}"``) where ``target`` is one of the ``protect`` files,
    or lies inside one of its folders."""
    for other in protect or ():
        if other is None or not Path(other).exists():
            continue
        other = Path(other)
        if target.exists() and target.samefile(other):
            raise ValueError(f"{shown}: {same}")
        if other.is_dir() and _resolve_link(target).is_relative_to(other.resolve()):
            raise ValueError(f"{shown}: refusing to write inside the input folder {other}")


def check_output_path(path: str | os.PathLike, *, protect: Iterable | None = None,
                      flag: str | None = None) -> Path:
    """Refuse an output file that cannot or must not be written; return the path to write.

    The rules of :func:`write_text_atomic`, checked on their own so that the
    command line can refuse a bad target before any work.

    Parameters
    ----------
    path : path-like
        The file the user named.
    protect : iterable of path-like, optional
        Input files that must never be overwritten, and input folders that
        must not be written into.
    flag : str, optional
        The option that named ``path`` (``-o``), for the empty-name error.

    Returns
    -------
    Path
        Where to write: ``path``, or the file a symbolic link points to
        (written through, the link kept).

    Raises
    ------
    ValueError
        An empty name, a symbolic link loop, a folder, a read-only file, an
        input file or a path inside an input folder; the message names ``path``.
    FileNotFoundError
        The folder the file would go in does not exist.
    """
    if str(path) == "":
        raise ValueError(f"{flag + ': ' if flag else ''}an empty file name; give the name "
                         "of a file to write")
    named = Path(path)
    target = _resolve_link(named) if named.is_symlink() else named
    shown = str(named) if target == named else f"{named} (a link to {target})"
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise FileNotFoundError(f"{shown}: cannot write it, the folder {directory} does not "
                                "exist; create it first or choose another path")
    _refuse_inputs(target, shown, protect, "refusing to overwrite an input file")
    if target.is_dir():
        raise ValueError(f"{shown}: is a folder; give the name of a file to write")
    if target.is_file() and _read_only(target):
        # As the shell's '>' does: a file without write permission is not replaced.
        raise PermissionError(f"{shown}: is read-only; make it writable or choose another "
                              "path")
    if not target.exists() and not os.access(directory, os.W_OK | os.X_OK):
        raise PermissionError(f"{shown}: cannot write it, the folder {directory} is not "
                              "writable")
    return target


def check_output_folder(path: str | os.PathLike, *, protect: Iterable | None = None,
                        flag: str | None = None) -> Path:
    """Refuse a folder to write files into that cannot or must not be used.

    The folder may be missing (it is then created, with its parents); an
    existing one must be a writable folder, not a file, and neither an
    input nor inside an input folder. Errors name ``path``.
    """
    if str(path) == "":
        raise ValueError(f"{flag + ': ' if flag else ''}an empty folder name; give the "
                         "folder to write the files into")
    named = Path(path)
    target = _resolve_link(named) if named.is_symlink() else named
    _refuse_inputs(target, str(named), protect, "is an input; refusing to write files into it")
    existing = target
    while not existing.exists() and not existing.is_symlink():
        if existing.parent == existing:
            break
        existing = existing.parent
    if existing.is_symlink() and not existing.exists():
        raise ValueError(f"{named}: {existing} is a dangling symbolic link; cannot create "
                         "the folder through it")
    if not existing.is_dir():
        what = "exists and is not a folder" if existing == target else \
            f"cannot be created: {existing} is a file, not a folder"
        raise ValueError(f"{named}: {what}; give a folder for the files")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PermissionError(f"{named}: the folder {existing} is not writable")
    return target


def write_text_atomic(
    path: str | os.PathLike, text: str | bytes, *, protect: Iterable | None = None
) -> None:
    """Write ``text`` (or ``bytes``) to ``path`` atomically.

    Parameters
    ----------
    protect : iterable of path-like, optional
        Input files that must never be overwritten, and input folders that
        must not be written into; either is an error. A target that exists
        and is not a regular file (``/dev/null``, a FIFO) is written to, not
        replaced; a symbolic link is written through (the file it points to
        is replaced atomically, the link kept); a folder, a read-only file,
        a symbolic link loop, an empty name, or a path in a missing folder
        is an error that says so (:func:`check_output_path`). Any error
        names ``path``, never the temporary file.
    """
    mode = "wb" if isinstance(text, bytes) else "w"
    target = check_output_path(path, protect=protect)
    try:
        if target.exists() and not target.is_file():
            # A device or pipe the user named (/dev/null, /dev/stdout, a FIFO): write to
            # it, never replace it.
            with target.open(mode) as fh:
                fh.write(text)
            return
        _replace(target, text, mode)
    except OSError as err:
        # The temporary file's name means nothing to the user: say which of theirs failed.
        # Same class (a BrokenPipeError stays one), the user's path in the message.
        reason = err.strerror or str(err)
        raise type(err)(f"{path}: cannot write it ({reason})") from None


def _replace(path: Path, text: str | bytes, mode: str) -> None:
    """Write a temporary file beside ``path``, then rename it over ``path``."""
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, mode) as fh:
            fh.write(text)
        # mkstemp creates 0600; give the file the mode a plain open() would
        # (or keep the mode of the file it replaces).
        if path.exists():
            permissions = path.stat().st_mode & 0o777
        else:
            umask = os.umask(0)
            os.umask(umask)
            permissions = 0o666 & ~umask
        os.chmod(tmp, permissions)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | os.PathLike, obj, *, protect=None,
                      allow_nan: bool = True) -> None:
    """Write ``obj`` as indented JSON to ``path`` atomically.

    ``allow_nan=False`` refuses NaN and infinities (strict JSON) instead of
    writing them as ``NaN``/``Infinity``.
    """
    write_text_atomic(path, json.dumps(obj, indent=2, allow_nan=allow_nan) + "\n",
                      protect=protect)
