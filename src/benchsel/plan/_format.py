"""The plan file: versioned JSON, arrays inline, no pickles.

A plan is one JSON object. Arrays sit inline as
``{"shape": [...], "encoding": ..., "data": "<base64>"}``:
``bits`` (0/1 matrices, packed eight to a byte) or ``float64-zlib``
(little-endian float64, NaN for a missing cell, zlib-compressed), so that a
plan of a 500-question task stays a few kilobytes and the file is one thing to
ship. Loading checks the format name and version first, then the
fingerprint of every embedded source matrix, so a damaged or foreign file
fails with a message that says what is wrong.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import zlib
from pathlib import Path

import numpy as np

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "decode_array",
    "encode_array",
    "fingerprint",
    "read_plan_json",
]

FORMAT = "benchsel-plan"
FORMAT_VERSION = 1


def encode_array(values: np.ndarray) -> dict:
    """An array as a JSON object (see the module docstring)."""
    a = np.asarray(values, dtype=np.float64)
    shape = list(a.shape)
    if a.size and np.isin(a, (0.0, 1.0)).all():
        data = np.packbits(a.astype(np.uint8).reshape(-1)).tobytes()
        encoding = "bits"
    else:
        data = zlib.compress(a.astype("<f8").tobytes(), 6)
        encoding = "float64-zlib"
    return {"shape": shape, "encoding": encoding,
            "data": base64.b64encode(data).decode("ascii")}


def decode_array(obj, where: str) -> np.ndarray:
    """Inverse of :func:`encode_array`; ``where`` names the entry in messages."""
    if not isinstance(obj, dict) or not {"shape", "encoding", "data"} <= set(obj):
        raise ValueError(f"{where}: expected an encoded array with shape, encoding and data")
    shape = obj["shape"]
    if not (isinstance(shape, list) and all(isinstance(s, int) and s >= 0 for s in shape)):
        raise ValueError(f"{where}: shape {shape!r} is not a list of sizes")
    size = int(np.prod(shape)) if shape else 1
    try:
        raw = base64.b64decode(obj["data"], validate=True)
        if obj["encoding"] == "bits":
            flat = np.unpackbits(np.frombuffer(raw, np.uint8))[:size].astype(np.float64)
        elif obj["encoding"] == "float64-zlib":
            flat = np.frombuffer(zlib.decompress(raw), "<f8").astype(np.float64)
        else:
            raise ValueError(f"{where}: unknown array encoding {obj['encoding']!r}")
    except (ValueError, zlib.error, TypeError) as err:
        raise ValueError(f"{where}: the array data is damaged ({err})") from None
    if flat.size != size:
        raise ValueError(f"{where}: holds {flat.size} values; its shape {shape} needs {size}")
    return flat.reshape(shape)


def fingerprint(models, items, values: np.ndarray) -> str:
    """sha256 of a score matrix: names and values (NaN as one canonical pattern)."""
    h = hashlib.sha256()
    h.update(json.dumps([list(map(str, models)), list(map(str, items))]).encode())
    v = np.asarray(values, dtype="<f8") + 0.0  # a copy, with -0.0 as +0.0
    v[np.isnan(v)] = np.nan  # one bit pattern for every missing cell
    h.update(v.tobytes())
    return "sha256:" + h.hexdigest()


def read_plan_json(path: str | os.PathLike) -> dict:
    """The plan object of ``path``, with its format and version checked."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such plan file")
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(
            f"{path}: not a benchsel plan (not valid JSON: {err}); make one with "
            "'benchsel plan DATA -o PLAN.json'"
        ) from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        found = obj.get("format") if isinstance(obj, dict) else type(obj).__name__
        raise ValueError(
            f"{path}: not a benchsel plan (format {found!r}, expected {FORMAT!r}); "
            "make one with 'benchsel plan DATA -o PLAN.json'"
        )
    version = obj.get("format_version")
    if version != FORMAT_VERSION:
        raise ValueError(
            f"{path}: plan format version {version!r}; this benchsel reads version "
            f"{FORMAT_VERSION} (the plan was written by benchsel "
            f"{obj.get('benchsel_version', '?')}); make the plan again with this version"
        )
    return obj
