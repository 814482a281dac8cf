"""lm-evaluation-harness's sample logs (``samples_<task>_<date>.jsonl``): one task run's
per-question scores, read line by line with a cap on a line's length, and the checks
of a score's value that the results reader (:mod:`benchsel.lmeval`) shares."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ._json import loads

if TYPE_CHECKING:
    from .lmeval import TaskRun

__all__ = ["MAX_SAMPLE_LINE", "is_unit_metric", "read_sample_scores"]

# Keys of a sample line that are never per-sample metrics.
_NOT_METRICS = frozenset({
    "doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics",
    "doc_hash", "prompt_hash", "target_hash",
})
#: Keys of a sample line kept besides its metrics.
_KEPT = frozenset({"doc_id", "filter", "metrics"})


# 0/1 metrics: lm-eval's per-sample acc, acc_norm, acc_mutual_info, exact_match and
# ifeval's *_acc are 0 or 1 per document, so their values and means lie in [0, 1].
_UNIT_METRIC = re.compile(r"(?:^|_)(?:acc|exact_match)(?:_|$)")


def is_unit_metric(name: str) -> bool:
    """Whether the lm-eval metric ``name`` is a 0/1 score per document.

    ``acc``, ``acc_norm``, ``acc_mutual_info``, ``exact_match`` and names
    with ``acc`` or ``exact_match`` as an ``_``-separated part (ifeval's
    ``prompt_level_strict_acc``): their per-sample values and their means
    lie in [0, 1]. Other metrics (``f1``, ``bleu``, ``perplexity``,
    ``bits_per_byte`` ...) need only be finite.
    """
    return bool(_UNIT_METRIC.search(name))


def _kind(value) -> str:
    """The JSON type of ``value``, for messages."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), "null")


def _show(value) -> str:
    """``value`` as the file writes it (JSON), cut to a readable length."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _score(value, where: str, metric: str) -> float:
    """A checked score: a finite number, in [0, 1] for a 0/1 metric."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where} is {_show(value)} ({_kind(value)}); expected a number")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{where} is {_show(number)}; expected a finite number")
    if is_unit_metric(metric) and not 0.0 <= number <= 1.0:
        raise ValueError(f"{where} is {_show(value)}; expected a score in [0, 1] "
                         f"({metric!r} is a 0/1 metric)")
    return number


def _cannot_read(path, err: OSError) -> ValueError:
    """The one error of a folder or file that cannot be read."""
    return ValueError(f"{path}: cannot be read ({err.strerror or err})")


def _slim(obj: dict) -> dict:
    """What benchsel reads of a sample line: its ids and metric values, not its prompt."""
    return {k: v for k, v in obj.items()
            if k in _KEPT or (k not in _NOT_METRICS and not isinstance(v, list | dict)
                              and not (isinstance(v, str) and len(v) > 32))}


MAX_SAMPLE_LINE = 1 << 26


def _read_jsonl(path: Path, stop_after: int | None = None) -> list[tuple[int, dict]]:
    """``(line number, slimmed object)`` of every non-blank line, streamed.

    Lines are parsed one at a time (each bounded in nesting depth by
    :func:`benchsel._json.loads`) and only their ids and metrics kept
    (:func:`_slim`), so memory follows the number of documents, not the size
    of the prompts and responses a log holds. ``stop_after`` stops after
    that many objects (the first line is enough for a message).
    """
    rows = []
    line_no = 0
    try:
        with path.open(encoding="utf-8") as fh:
            # Read with a cap: one unbroken line would otherwise be held whole, however long.
            while line := fh.readline(MAX_SAMPLE_LINE + 1):
                line_no += 1
                if len(line) > MAX_SAMPLE_LINE:
                    raise ValueError(
                        f"{path}: line {line_no}: longer than {MAX_SAMPLE_LINE:,} characters; "
                        "a sample line holds one document's prompt, responses and scores")
                if not line.strip():
                    continue
                obj = loads(line, f"{path}, line {line_no}")
                if not isinstance(obj, dict):
                    raise ValueError(f"{path}: line {line_no}: expected a JSON object per line; "
                                     f"it holds {_kind(obj)}")
                rows.append((line_no, _slim(obj)))
                if stop_after is not None and len(rows) >= stop_after:
                    break
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: after line {line_no}: not UTF-8 text ({err.reason})") from None
    except IsADirectoryError:
        raise ValueError(f"{path}: is a folder, not a sample log") from None
    except OSError as err:
        raise _cannot_read(path, err) from None
    return rows


def _doc_id(obj: dict, path: Path, line: int) -> int:
    if "doc_id" not in obj:
        raise ValueError(f"{path}: line {line}: no 'doc_id'")
    doc = obj["doc_id"]
    if isinstance(doc, bool) or not isinstance(doc, int) or doc < 0:
        raise ValueError(f"{path}: line {line}: doc_id {doc!r} is not a non-negative integer")
    return doc


def _line_filters(rows: list[tuple[int, dict]], run: TaskRun) -> list[str]:
    """The filter of every line: its ``filter`` key, else its position among the doc's lines."""
    if all("filter" in obj for _, obj in rows):
        for line, obj in rows:
            if not isinstance(obj["filter"], str):
                raise ValueError(f"{run.samples_file}: line {line}: 'filter' is "
                                 f"{_show(obj['filter'])}; expected a filter name")
        return [obj["filter"] for _, obj in rows]
    seen: dict[int, int] = {}
    names = run.filters or ["none"]
    out = []
    for line, obj in rows:
        doc = _doc_id(obj, run.samples_file, line)
        k = seen.get(doc, 0)
        seen[doc] = k + 1
        if k >= len(names):
            raise ValueError(
                f"{run.samples_file}: line {line}: doc_id {doc} has more lines than the task "
                f"has filters ({names}); expected one line per document and filter"
            )
        out.append(names[k])
    return out


def read_sample_scores(
    run: TaskRun, *, metric: str | None = None, filter: str | None = None  # noqa: A002
) -> dict[int, float]:
    """``doc_id -> score`` of one run's sample log.

    The metric and filter default to the task's primary ones (from the
    results file), else to the only ones the log has.
    """
    path = run.samples_file
    rows = _read_jsonl(path)
    filters = _line_filters(rows, run)
    available = list(dict.fromkeys(filters))
    default_metric, _, default_filter = (run.primary or ",").partition(",")
    chosen = filter or (default_filter if default_filter in available else None)
    if chosen is None:
        if len(available) > 1:
            raise ValueError(
                f"{path}: the log has several filters {available}; choose one with "
                "filter= (--lm-eval-filter on the command line)"
            )
        chosen = available[0] if available else "none"
    elif chosen not in available:
        raise ValueError(
            f"{path}: no lines for filter {chosen!r} (--lm-eval-filter); filters are {available}"
        )
    scores: dict[int, float] = {}
    first = None  # (line, value) of the metric's first value: a log writes one kind
    for (line, obj), f in zip(rows, filters):
        if f != chosen:
            continue
        doc = _doc_id(obj, path, line)
        name = metric or default_metric or _only_metric(obj, path, line)
        if name not in obj:
            have = sorted(k for k in obj if k not in _NOT_METRICS)
            raise ValueError(
                f"{path}: line {line}: no metric {name!r} (--lm-eval-metric); the line has "
                f"{have}"
            )
        if doc in scores:
            raise ValueError(f"{path}: line {line}: doc_id {doc} appears twice for filter "
                             f"{chosen!r}")
        value = obj[name]
        first = first or (line, value)
        if isinstance(value, bool) != isinstance(first[1], bool):
            raise ValueError(
                f"{path}: line {line}: metric {name!r} is {_show(value)} ({_kind(value)}) but "
                f"line {first[0]} has {_show(first[1])} ({_kind(first[1])}); a log writes one "
                "kind of value per metric"
            )
        scores[doc] = _sample_score(value, f"{path}: line {line}: metric {name!r}", name)
    return scores


def _only_metric(obj: dict, path: Path, line: int) -> str:
    """The one metric a line holds (its ``metrics`` list, else its metric keys)."""
    names = obj.get("metrics")
    if names is None:
        names = [k for k in obj if k not in _NOT_METRICS]
    elif not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{path}: line {line}: 'metrics' is {_show(names)}; expected a list "
                         "of metric names")
    if len(names) != 1:
        raise ValueError(
            f"{path}: line {line}: cannot tell the metric among {sorted(names)}; "
            "choose one with --lm-eval-metric"
        )
    return names[0]


def _sample_score(value, where: str, metric: str) -> float:
    """One document's score: a finite number, in [0, 1] for a 0/1 metric.

    A boolean is that 0/1 score for a 0/1 metric (ifeval's
    ``prompt_level_strict_acc`` is one); the caller checks that the whole
    log writes the metric so.
    """
    if isinstance(value, bool):
        if not is_unit_metric(metric):
            raise ValueError(f"{where} is {_show(value)} (a boolean); expected a number "
                             f"(booleans are read as 0/1 only for 0/1 metrics like acc)")
        return float(value)
    return _score(value, where, metric)
