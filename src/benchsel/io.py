"""Reading score matrices: CSV/TSV (wide or long), Parquet, NPZ.

Every reader returns a :class:`~benchsel.matrix.ScoreMatrix` and reports bad
input with the file, the line/row and column, the offending value and what
was expected. The small inputs beside a matrix (costs, model order, question
counts, observed scores) are :mod:`benchsel.inputs`; writing results is
:mod:`benchsel.outputs`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import names
from ._npz import DAMAGED
from .matrix import DataWarning, ScoreMatrix

__all__ = [
    "read_scores",
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
