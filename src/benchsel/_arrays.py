"""Arrays as JSON objects, and the fingerprint of a score matrix.

An array sits inline in a plan file or a cache entry as
``{"shape": [...], "encoding": ..., "data": "<base64>"}``: ``bits`` (0/1
matrices, packed eight to a byte) or ``float64-zlib`` (little-endian
float64, NaN for a missing cell, zlib-compressed). Decoding never inflates
more than the declared shape holds, and reads long base64 strings left on
disk (:class:`benchsel._json.FileText`) piece by piece.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import zlib

import numpy as np

from ._json import FileText

__all__ = ["decode_array", "encode_array", "fingerprint"]


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
