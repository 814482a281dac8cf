"""Reading score matrices and writing results.

Every reader returns a :class:`~benchsel.matrix.ScoreMatrix` and reports bad
input with the file, the line/row and column, the offending value and what
was expected. Writers replace their target atomically (write a temporary file
beside it, then rename), so an interrupted run never leaves half a file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from .matrix import ScoreMatrix

__all__ = [
    "read_scores",
    "read_costs",
    "parse_observed",
    "write_text_atomic",
    "write_json_atomic",
    "MISSING_TOKENS",
]

#: Cell texts read as "not observed" (compared case-insensitively after strip).
MISSING_TOKENS = frozenset({"", "na", "nan", "n/a", "null", "none"})

_FORMATS = ("wide", "long", "npz", "parquet")


def _infer_format(path: Path, fmt: str | None) -> str:
    if fmt is not None:
        if fmt not in _FORMATS:
            raise ValueError(f"format must be one of {', '.join(_FORMATS)}; got {fmt!r}")
        return fmt
    suffix = path.suffix.lower()
    if suffix == ".npz":
        return "npz"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    return "wide"


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
        Inferred from the extension when omitted: ``.npz`` -> npz,
        ``.parquet``/``.pq`` -> parquet, anything else -> wide CSV/TSV.
        Parquet files are read as wide tables unless ``format="long"``
        cannot apply; pass ``format="long"`` for long CSVs.
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
    fmt = _infer_format(path, format)
    if fmt == "npz":
        scores = _read_npz(path)
    elif fmt == "parquet":
        frame = _read_parquet(path)
        if format == "long":
            scores = _from_long_frame(frame, path, model_column or "model", item_column,
                                      score_column, first_line=1)
        else:
            scores = _from_wide_frame(frame, path, model_column, first_line=1)
    else:
        frame = _read_text_table(path, _infer_sep(path, sep))
        if fmt == "long":
            scores = _from_long_frame(frame, path, model_column or "model", item_column,
                                      score_column, first_line=2)
        else:
            scores = _from_wide_frame(frame, path, model_column, first_line=2)
    return scores.cleaned() if clean else scores


# ---------------------------------------------------------------- text tables
def _read_text_table(path: Path, sep: str):
    import pandas as pd

    try:
        frame = pd.read_csv(
            path, sep=sep, dtype=str, keep_default_na=False, na_filter=False,
            skipinitialspace=True,
        )
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path}: the file is empty; expected a header line") from None
    except pd.errors.ParserError as err:
        raise ValueError(f"{path}: cannot parse as a {sep!r}-separated table: {err}") from None
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not a UTF-8 text file ({err.reason})") from None
    return frame


def _read_parquet(path: Path):
    import pandas as pd

    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise ValueError(
            f"{path}: reading Parquet needs pyarrow; install it with "
            "'pip install benchsel[parquet]'"
        ) from None
    frame = pd.read_parquet(path)
    if frame.index.name is not None or not isinstance(frame.index, pd.RangeIndex):
        frame = frame.reset_index()
    return frame.astype(object)


def _numeric(series, path: Path, column: str, first_line: int) -> np.ndarray:
    """Parse one column of cells to float; missing tokens become NaN."""
    import pandas as pd

    raw = series.to_numpy(dtype=object)
    text = np.array(["" if v is None else str(v).strip() for v in raw], dtype=object)
    lowered = np.array([t.lower() for t in text], dtype=object)
    missing = np.isin(lowered, list(MISSING_TOKENS)) | pd.isna(series).to_numpy()
    values = pd.to_numeric(pd.Series(np.where(missing, "nan", text)), errors="coerce")
    values = values.to_numpy(dtype=np.float64)
    bad = (np.isnan(values) & ~missing) | np.isinf(values)
    if bad.any():
        i = int(np.argmax(bad))
        where = "line" if first_line == 2 else "row"
        raise ValueError(
            f"{path}: {where} {i + first_line}, column {column!r}: value {text[i]!r} is "
            "not a finite number; expected a number or an empty cell for a missing score"
        )
    return values


def _names(series, path: Path, column: str, first_line: int, what: str) -> list[str]:
    names = ["" if v is None else str(v).strip() for v in series.to_numpy(dtype=object)]
    where = "line" if first_line == 2 else "row"
    for i, name in enumerate(names):
        if name == "" or name.lower() == "nan":
            raise ValueError(
                f"{path}: {where} {i + first_line}, column {column!r}: empty {what} name"
            )
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise ValueError(
                f"{path}: duplicate {what} name {name!r} at {where}s "
                f"{seen[name] + first_line} and {i + first_line}; each {what} must "
                "appear once"
            )
        seen[name] = i
    return names


def _from_wide_frame(frame, path: Path, model_column: str | None, first_line: int) -> ScoreMatrix:
    columns = [str(c) for c in frame.columns]
    if not columns:
        raise ValueError(f"{path}: no columns; expected a model column and score columns")
    if model_column is None:
        model_column = columns[0]
    elif model_column not in columns:
        raise ValueError(
            f"{path}: no column named {model_column!r}; columns are {columns}"
        )
    dup = sorted({c for c in columns if columns.count(c) > 1})
    if dup:
        raise ValueError(f"{path}: duplicate benchmark column name(s) {dup}; each must appear once")
    items = [c for c in columns if c != model_column]
    if not items:
        raise ValueError(
            f"{path}: no score columns; expected the model column {model_column!r} "
            "followed by one numeric column per benchmark"
        )
    frame.columns = columns
    models = _names(frame[model_column], path, model_column, first_line, "model")
    text_columns = []
    for c in items:
        cells = [str(v).strip() for v in frame[c].to_numpy(dtype=object)]
        if cells and not any(_looks_numeric(t) for t in cells):
            if any(t.lower() not in MISSING_TOKENS for t in cells):
                text_columns.append(c)
    if len(text_columns) == len(items):
        raise ValueError(
            f"{path}: no numeric columns; every column besides {model_column!r} holds "
            f"text (e.g. {text_columns[:3]}); expected one numeric column per benchmark"
        )
    values = np.column_stack([_numeric(frame[c], path, c, first_line) for c in items])
    return ScoreMatrix(values.reshape(len(models), len(items)), models, items, source=str(path))


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _from_long_frame(
    frame, path: Path, model_column: str, item_column: str, score_column: str, first_line: int
) -> ScoreMatrix:
    columns = [str(c) for c in frame.columns]
    frame.columns = columns
    for role, name in (("model", model_column), ("item", item_column), ("score", score_column)):
        if name not in columns:
            raise ValueError(
                f"{path}: no {role} column named {name!r}; columns are {columns} "
                f"(set it with the {role}_column option)"
            )
    where = "line" if first_line == 2 else "row"
    models = [str(v).strip() for v in frame[model_column].to_numpy(dtype=object)]
    items = [str(v).strip() for v in frame[item_column].to_numpy(dtype=object)]
    for col, names in ((model_column, models), (item_column, items)):
        for i, name in enumerate(names):
            if name == "" or name.lower() == "nan":
                raise ValueError(f"{path}: {where} {i + first_line}, column {col!r}: empty name")
    scores = _numeric(frame[score_column], path, score_column, first_line)
    model_names = list(dict.fromkeys(models))
    item_names = list(dict.fromkeys(items))
    if len(model_names) == 0:
        raise ValueError(f"{path}: no rows; expected one row per (model, benchmark) score")
    row = {m: i for i, m in enumerate(model_names)}
    col = {b: j for j, b in enumerate(item_names)}
    values = np.full((len(model_names), len(item_names)), np.nan)
    first_seen: dict[tuple[int, int], int] = {}
    for line, (m, b, s) in enumerate(zip(models, items, scores)):
        key = (row[m], col[b])
        if key in first_seen:
            raise ValueError(
                f"{path}: model {m!r} has two scores for {b!r}, at {where}s "
                f"{first_seen[key] + first_line} and {line + first_line}; expected one"
            )
        first_seen[key] = line
        values[key] = s
    return ScoreMatrix(values, model_names, item_names, source=str(path))


# ----------------------------------------------------------------------- NPZ
def _read_npz(path: Path) -> ScoreMatrix:
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as err:
        raise ValueError(f"{path}: not a readable NPZ archive ({err})") from None
    with archive:
        keys = set(archive.files)

        def get(*names):
            for name in names:
                if name in keys:
                    try:
                        return archive[name]
                    except ValueError:
                        raise ValueError(
                            f"{path}: array {name!r} holds Python objects; benchsel "
                            "reads only plain arrays (no pickles)"
                        ) from None
            return None

        values = get("B", "scores")
        if values is None:
            raise ValueError(
                f"{path}: no score array; expected an array named 'B' (with optional "
                f"mask 'O') or 'scores'; found {sorted(keys)}"
            )
        if values.ndim != 2:
            raise ValueError(f"{path}: score array has shape {values.shape}; expected 2-D")
        if not np.issubdtype(values.dtype, np.number) and values.dtype != bool:
            raise ValueError(f"{path}: score array has dtype {values.dtype}; expected numbers")
        values = values.astype(np.float64)
        mask = get("O", "observed", "mask")
        if mask is not None:
            if mask.shape != values.shape:
                raise ValueError(
                    f"{path}: mask 'O' has shape {mask.shape}; expected {values.shape}"
                )
            values = np.where(mask.astype(bool), values, np.nan)
        models = get("models", "model_names")
        items = get("benchmarks", "items", "names", "questions", "columns")
    m, n = values.shape
    models = _labels(models, m, "model", path)
    items = _labels(items, n, "item", path)
    return ScoreMatrix(values, models, items, source=str(path))


def _labels(array, count: int, what: str, path: Path) -> list[str]:
    if array is None or array.size == 0:
        return [f"{what}_{i}" for i in range(count)]
    labels = [str(x) for x in np.asarray(array).reshape(-1)]
    if len(labels) != count:
        raise ValueError(f"{path}: {len(labels)} {what} names for {count} {what}s")
    return labels


# ------------------------------------------------------------- small inputs
def read_costs(path: str | os.PathLike) -> dict[str, float]:
    """Per-item costs from a JSON object ``{name: cost}`` or a two-column CSV.

    The CSV may have a header (``benchmark,cost``); each cost must be a
    positive number.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such costs file")
    if path.suffix.lower() == ".json":
        try:
            raw = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: invalid JSON ({err})") from None
        if not isinstance(raw, dict):
            raise ValueError(f"{path}: expected a JSON object mapping names to costs")
        pairs = [(str(k), v, f"key {k!r}") for k, v in raw.items()]
    else:
        import csv

        with path.open(newline="") as fh:
            rows = [r for r in csv.reader(fh) if r and any(c.strip() for c in r)]
        if rows and not _looks_numeric(rows[0][-1].strip()):
            rows = [None] + rows[1:]  # header line
        pairs = []
        for line, r in enumerate(rows, start=1):
            if r is None:
                continue
            if len(r) != 2:
                raise ValueError(f"{path}: line {line}: expected 'name,cost'; got {r}")
            pairs.append((r[0].strip(), r[1].strip(), f"line {line}"))
    costs: dict[str, float] = {}
    for name, value, where in pairs:
        try:
            cost = float(value)
        except (TypeError, ValueError):
            cost = float("nan")
        if not (np.isfinite(cost) and cost > 0):
            raise ValueError(
                f"{path}: {where}: cost {value!r} for {name!r} is not a positive number"
            )
        if name in costs:
            raise ValueError(f"{path}: {where}: duplicate cost for {name!r}")
        costs[name] = cost
    return costs


def parse_observed(spec: str) -> ScoreMatrix | dict[str, float]:
    """Observed scores of new model(s), from a file or an inline list.

    ``spec`` is either a path (a wide CSV/TSV/Parquet/NPZ of one or more new
    models, or a JSON object ``{"benchmark": score}``) or inline text
    ``"name=value,name=value"``.
    """
    path = Path(spec)
    if path.is_file():
        if path.suffix.lower() == ".json":
            try:
                raw = json.loads(path.read_text())
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}: invalid JSON ({err})") from None
            if not isinstance(raw, dict):
                raise ValueError(f"{path}: expected a JSON object mapping benchmarks to scores")
            return _as_scores(raw.items(), str(path))
        return read_scores(path, clean=False)
    if "=" not in spec:
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
        if name in out:
            raise ValueError(f"{where}: {name!r} is given twice")
        out[name] = x
    if not out:
        raise ValueError(f"{where}: no scores given")
    return out


# ------------------------------------------------------------------ writers
def write_text_atomic(
    path: str | os.PathLike, text: str, *, protect: Iterable | None = None
) -> None:
    """Write ``text`` to ``path`` atomically.

    Parameters
    ----------
    protect : iterable of path-like, optional
        Input files that must never be overwritten; writing to one of them
        is an error.
    """
    path = Path(path)
    for other in protect or ():
        if other is not None and Path(other).exists() and path.exists() and path.samefile(other):
            raise ValueError(f"{path}: refusing to overwrite an input file")
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | os.PathLike, obj, *, protect=None) -> None:
    """Write ``obj`` as indented JSON to ``path`` atomically."""
    write_text_atomic(path, json.dumps(obj, indent=2) + "\n", protect=protect)
