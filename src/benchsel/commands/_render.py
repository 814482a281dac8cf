"""What the commands print: text tables, ``--json``, ``--format csv``, and
``-o FILE`` written atomically."""

from __future__ import annotations

import json
import sys

from ..outputs import write_text_atomic
from ._args import STDOUT, _inputs


def _emit(args, payload: dict, text: str) -> None:
    # allow_nan=False: a NaN that slipped through is an error, never invalid JSON.
    as_json = args.json or getattr(args, "format", None) == "json"
    _emit_text(args, json.dumps(payload, indent=2, allow_nan=False) + "\n" if as_json
               else text + "\n")


def _emit_text(args, text: str) -> None:
    if args.output and args.output != STDOUT:
        write_text_atomic(args.output, text, protect=_inputs(args))
    else:
        sys.stdout.write(text)


#: What a spreadsheet takes a cell starting with for a formula (OWASP's list).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_text(text: str) -> str:
    """A text cell no spreadsheet runs as a formula: one that would start one gets a
    leading ``'``, as OWASP advises against CSV injection. Numbers are written as
    numbers, never through this (``-0.5`` is a number, not a formula)."""
    return "'" + text if text.startswith(_FORMULA_START) else text


def _prediction_csv(pred) -> str:
    """The filled-in leaderboard: one row per model, each item's value and its std.

    Model and benchmark names go through :func:`spreadsheet_text`: a name
    such as ``=HYPERLINK(...)`` is shown, never run, when the file is opened
    in a spreadsheet (``--json`` keeps names exact). Every name is quoted,
    numbers are not: a name holding a carriage return would otherwise start
    a new row there, unquoted, and that row a formula.
    """
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    writer.writerow(["model", *[spreadsheet_text(c) for item in pred.items
                                for c in (item, f"{item} std")]])
    for i, name in enumerate(pred.models):
        cells = []
        for j in range(len(pred.items)):
            cells += [float(pred.mean[i, j]), float(pred.std[i, j])]  # written as repr()
        writer.writerow([spreadsheet_text(name), *cells])
    return buffer.getvalue()
