"""The plan file: versioned JSON, arrays inline, no pickles.

A plan is one JSON object. Arrays sit inline as
``{"shape": [...], "encoding": ..., "data": "<base64>"}``:
``bits`` (0/1 matrices, packed eight to a byte) or ``float64-zlib``
(little-endian float64, NaN for a missing cell, zlib-compressed), so that a
plan of a 500-question task stays a few kilobytes and the file is one thing to
ship. Loading reads the file with bounded size and nesting, its long base64
strings left on disk (:func:`benchsel._json.load_file_lazily`), checks the
format name and version, then the whole
file against the schema (:mod:`._schema`: keys, types, ranges, and every
array's declared size against a limit on the plan's decoded size), and only
then decodes: inflation stops at the declared size, and the fingerprint of
every embedded source matrix is checked. A damaged, foreign or hostile file
fails with a message that names the file and the JSON path.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import os
import zlib
from pathlib import Path

import numpy as np

from .._json import FileText, load_file_lazily
from ._schema import DecodeBudget, _short, validate_plan

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
    """Inverse of :func:`encode_array`; ``where`` names the entry in messages.

    Never decodes more than the declared shape holds: packed bits must be
    exactly as long as the shape needs, and zlib data is inflated at most to
    the shape's size (a stream that would inflate further is refused, not
    inflated), so memory stays within twice the declared array.
    """
    if not isinstance(obj, dict) or not {"shape", "encoding", "data"} <= set(obj):
        raise ValueError(f"{where}: expected an encoded array with shape, encoding and data")
    shape = obj["shape"]
    if not (isinstance(shape, list) and all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape)):
        raise ValueError(f"{where}: shape {shape!r} is not a list of sizes")
    if not isinstance(obj["data"], str | FileText):
        raise ValueError(f"{where}.data: expected base64 text")
    size = math.prod(shape)
    if obj["encoding"] == "bits":
        raw = _b64decode(obj["data"], where)
        if len(raw) != -(-size // 8):
            raise ValueError(f"{where}: holds {len(raw)} bytes of bits; its shape {shape} "
                             f"needs {-(-size // 8)}")
        flat = np.unpackbits(np.frombuffer(raw, np.uint8))[:size].astype(np.float64)
    elif obj["encoding"] == "float64-zlib":
        flat = _inflate(obj["data"], size, where, shape)
    else:
        raise ValueError(f"{where}: unknown array encoding {obj['encoding']!r}")
    return flat.reshape(shape)


_B64_CHUNK = 4 << 20  # characters decoded at a time (a multiple of 4)


def _b64decode(text: str | FileText, where: str) -> bytes:
    if isinstance(text, FileText):
        return b"".join(_b64decode(piece, where) for piece in text.pieces(_B64_CHUNK))
    try:
        return base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error) as err:
        raise ValueError(f"{where}: the array data is damaged ({err})") from None


def _pieces(text: str | FileText):
    """Base64 text in pieces of :data:`_B64_CHUNK` characters (a multiple of 4)."""
    if isinstance(text, FileText):
        yield from text.pieces(_B64_CHUNK)
    else:
        for start in range(0, len(text), _B64_CHUNK):
            yield text[start:start + _B64_CHUNK]


def _inflate(text: str | FileText, size: int, where: str, shape) -> np.ndarray:
    """``size`` float64 values from base64 zlib ``text``, decoded piece by piece into
    the array itself: never more than the declared size is inflated, and neither the
    whole compressed nor the whole inflated bytes are held beside the array."""
    out = np.empty(size, "<f8")
    target = memoryview(out).cast("B")
    nbytes, filled = 8 * size, 0
    stream = zlib.decompressobj()
    try:
        for piece in _pieces(text):
            raw = _b64decode(piece, where)
            piece = stream.decompress(raw, nbytes - filled + 1)
            if filled + len(piece) > nbytes:
                raise ValueError(f"{where}: the data inflates to more than the {size} values "
                                 f"of its shape {shape}; refused before inflating it further")
            target[filled:filled + len(piece)] = piece
            filled += len(piece)
        rest = stream.flush()
    except zlib.error as err:
        raise ValueError(f"{where}: the array data is damaged ({err})") from None
    if rest or filled != nbytes or not stream.eof:
        raise ValueError(f"{where}: holds {(filled + len(rest)) // 8} values; its shape {shape} "
                         f"needs {size}")
    return out.astype(np.float64, copy=False)


def fingerprint(models, items, values: np.ndarray) -> str:
    """sha256 of a score matrix: names and values (NaN as one canonical pattern)."""
    h = hashlib.sha256()
    h.update(json.dumps([list(map(str, models)), list(map(str, items))]).encode())
    v = np.asarray(values, dtype="<f8") + 0.0  # a copy, with -0.0 as +0.0
    v[np.isnan(v)] = np.nan  # one bit pattern for every missing cell
    h.update(v.tobytes())
    return "sha256:" + h.hexdigest()


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
