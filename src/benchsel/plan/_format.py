"""The plan file: versioned JSON, arrays inline, no pickles.

A plan is one JSON object. Arrays sit inline (:mod:`benchsel._arrays`:
0/1 matrices packed eight to a byte, others zlib-compressed float64), so that
a plan of a 500-question task stays a few kilobytes and the file is one thing
to ship. Loading reads the file with bounded size and nesting, its long base64
strings left on disk (:func:`benchsel._json.load_file_lazily`), checks the
format name and version, then the whole
file against the schema (:mod:`._schema`: keys, types, ranges, and every
array's declared size against a limit on the plan's decoded size), and only
then decodes: inflation stops at the declared size, and the fingerprint of
every embedded source matrix is checked. A damaged, foreign or hostile file
fails with a message that names the file and the JSON path.
"""

from __future__ import annotations

import os
from pathlib import Path

from .._json import load_file_lazily
from ._schema import DecodeBudget, _short, validate_plan

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "read_plan_json",
]

FORMAT = "benchsel-plan"
FORMAT_VERSION = 1


def read_plan_json(path: str | os.PathLike, *, max_decoded_bytes: int | None = None) -> dict:
    """The plan object of ``path``: read bounded, its format, version and schema checked.

    Parameters
    ----------
    path : path-like
    max_decoded_bytes : int, optional
        Limit on the total size of the plan's arrays once decoded (1 GiB, or
        ``BENCHSEL_MAX_PLAN_BYTES``).
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path}: is a folder, not a plan file (benchsel plan ... -o PLAN.json)")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such plan file")
    try:
        # Long base64 strings (the embedded arrays) stay on disk until decoded.
        obj = load_file_lazily(path, strict=True)
    except ValueError as err:
        raise ValueError(f"{err}; not a benchsel plan? make one with "
                         "'benchsel plan DATA -o PLAN.json'") from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        found = obj.get("format") if isinstance(obj, dict) else type(obj).__name__
        raise ValueError(
            f"{path}: not a benchsel plan (format {_short(found)}, expected {FORMAT!r}); "
            "make one with 'benchsel plan DATA -o PLAN.json'"
        )
    version = obj.get("format_version")
    if isinstance(version, bool) or version != FORMAT_VERSION:
        raise ValueError(
            f"{path}: plan format version {_short(version)}; this benchsel reads version "
            f"{FORMAT_VERSION} (the plan was written by benchsel "
            f"{str(obj.get('benchsel_version', '?'))[:40]}); make the plan again with this "
            "version"
        )
    budget = None if max_decoded_bytes is None else DecodeBudget(max_decoded_bytes)
    validate_plan(obj, str(path), budget)
    return obj
