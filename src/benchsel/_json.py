"""JSON from files someone else wrote: bounded before it is parsed.

Python's ``json`` parser recurses once per nesting level (a file of
100,000 ``[`` ends in ``RecursionError``), turns a 400-digit number into an
``int`` that no float can hold, and reads a file of any size. Every JSON
input of benchsel (plans, lm-eval results and sample lines, ``--observed``
files, costs and orders) is read through :func:`loads` or :func:`load_file`,
which check the file's size, its count of values and its nesting depth
before parsing, refuse an object that names a key twice, and keep numbers
within float range.
"""

from __future__ import annotations

import json
import math
import os
import secrets
from contextlib import contextmanager
from pathlib import Path

import numpy as np

__all__ = ["MAX_DEPTH", "MAX_FILE_BYTES", "MAX_VALUES", "FileText", "JSONInputError", "load_file",
           "load_file_lazily", "loads", "nesting_depth"]

MAX_DEPTH = 64
"""Deepest nesting accepted; benchsel's own files and lm-eval's stay under 10."""

MAX_FILE_BYTES = 1 << 30
"""Largest JSON file read (1 GiB); override with ``BENCHSEL_MAX_JSON_BYTES``."""

MAX_VALUES = 10_000_000
"""Most objects, arrays and elements a JSON text may hold. Parsed, a value takes
25-80 times the bytes of its text (``{},`` is 3 bytes and an 80-byte dict), so
the file size alone does not bound memory; 10 million values stay under 1 GB.
benchsel's files and lm-eval's hold thousands."""

_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_SPECIAL = np.zeros(256, bool)
_SPECIAL[list(b'"\\[]{}')] = True
_OPEN = np.frombuffer(b"[{", np.uint8)
_CLOSE = np.frombuffer(b"]}", np.uint8)
_CHUNK = 1 << 20
_MAX_INT_DIGITS = 18  # below 2**63; longer integers are read as floats


class JSONInputError(ValueError):
    """A JSON input that is refused before or while parsing; the message names it."""


def max_file_bytes() -> int:
    """The size limit in force (``BENCHSEL_MAX_JSON_BYTES`` or :data:`MAX_FILE_BYTES`)."""
    text = os.environ.get("BENCHSEL_MAX_JSON_BYTES")
    if not text:
        return MAX_FILE_BYTES
    try:
        value = int(text)
    except ValueError:
        raise JSONInputError(f"BENCHSEL_MAX_JSON_BYTES={text!r}: expected a whole number "
                             "of bytes") from None
    return max(value, 1)


class _Scanner:
    """Feeds a JSON text chunk by chunk: its deepest nesting and, optionally, the spans of
    its long strings.

    Vectorised per chunk and without recursion, so it is safe and fast on any
    input: a quote ends or starts a string unless an odd run of backslashes
    precedes it.
    """

    def __init__(self, long_strings: int | None = None):
        self.deepest = self.depth = 0
        self.inside = False  # within a string at the next chunk's start
        self.opened = -1  # where that string's opening quote is
        self.backslashes = 0  # the run of backslashes that ends the previous chunk
        self.long_strings = long_strings
        self.spans: list[tuple[int, int]] = []  # (first, stop) of long strings' contents

    def feed(self, chunk: np.ndarray, offset: int) -> None:
        if not _SPECIAL[chunk].any():  # most of a plan: base64 inside one string
            self.backslashes = 0
            return
        is_backslash = chunk == _BACKSLASH
        positions = np.arange(chunk.size)
        last_other = np.maximum.accumulate(np.where(is_backslash, -1, positions))
        # Backslashes right before each position (the run may start in an earlier chunk).
        before = np.empty(chunk.size, np.int64)
        before[0] = self.backslashes
        run = positions[:-1] - last_other[:-1]
        before[1:] = np.where(last_other[:-1] < 0, run + self.backslashes, run)
        quote = (chunk == _QUOTE) & (before % 2 == 0)
        if self.long_strings is not None:
            self._strings(np.flatnonzero(quote) + offset)
        in_string = (np.cumsum(quote) + self.inside) % 2 == 1  # True on opening quotes too
        outside = ~in_string & ~quote
        step = (np.isin(chunk, _OPEN) & outside).astype(np.int64) - \
            (np.isin(chunk, _CLOSE) & outside)
        self.inside = bool(in_string[-1])
        self.backslashes = (int(before[-1]) + 1) if is_backslash[-1] else 0
        if step.any():
            running = self.depth + np.cumsum(step)
            self.deepest = max(self.deepest, int(running.max()))
            self.depth = int(running[-1])

    def _strings(self, quotes: np.ndarray) -> None:
        """Pair this chunk's quotes (and a string still open) into strings; keep long ones."""
        seq = np.concatenate([[self.opened], quotes]) if self.inside else quotes
        pairs = seq.size // 2
        opens, closes = seq[0:2 * pairs:2], seq[1:2 * pairs:2]
        for first, stop in zip(opens + 1, closes):
            if stop - first > self.long_strings:
                self.spans.append((int(first), int(stop)))
        self.opened = int(seq[-1]) if seq.size % 2 else -1


def nesting_depth(data: bytes) -> int:
    """Deepest ``[``/``{`` nesting of a JSON text, ignoring brackets inside strings.

    Exact for valid JSON (an invalid text may read deeper than it is, and is
    refused by the parser anyway).
    """
    view = np.frombuffer(data, np.uint8)
    scanner = _Scanner()
    for start in range(0, view.size, _CHUNK):
        scanner.feed(view[start:start + _CHUNK], start)
    return scanner.deepest


def _check_values(raw: bytes, where: str) -> None:
    """Refuse a text of more than :data:`MAX_VALUES` values, counted in C before parsing
    (every comma and opener, inside strings too: an upper bound)."""
    if len(raw) < MAX_VALUES:
        return  # fewer bytes than the limit: fewer values too
    count = raw.count(b",") + raw.count(b"[") + raw.count(b"{")
    if count > MAX_VALUES:
        raise JSONInputError(f"{where}: about {count:,} JSON values; at most {MAX_VALUES:,} "
                             "are read (parsed, they would take more memory than the file)")


def _openers_at_most(raw: bytes, limit: int) -> bool:
    """Whether ``raw`` has at most ``limit`` of ``[`` and ``{`` (so is no deeper).

    Counting is done in C and is ~100x faster than :func:`nesting_depth` on a
    short text: it decides for nearly every line of an lm-eval sample log,
    read one line at a time.
    """
    return raw.count(b"[") + raw.count(b"{") <= limit


def _number(text: str):
    """``parse_int``: an int that fits 64 bits, else a float (inf if out of range)."""
    digits = text.lstrip("-")
    return int(text) if len(digits) <= _MAX_INT_DIGITS else float(text)


def _no_constant(name: str):
    raise JSONInputError(f"{name} is not a JSON number (strict JSON expected)")


def loads(data: bytes | str, where: str, *, max_depth: int = MAX_DEPTH,
          strict: bool = False):
    """Parse a JSON text after checking its nesting depth.

    Parameters
    ----------
    data : bytes or str
    where : str
        Names the input in messages (a file, or ``file, line 3``).
    max_depth : int
        Deepest nesting accepted.
    strict : bool, default False
        Refuse ``NaN`` and ``Infinity`` (files benchsel writes never hold
        them); otherwise they are read as floats, for the caller to judge.

    Raises
    ------
    JSONInputError
        Too deep, not valid JSON, or (``strict``) a non-finite constant;
        the message starts with ``where``.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    _check_shape(raw, where, max_depth)
    return _parse(raw, where, strict)


def _check_shape(raw: bytes, where: str, max_depth: int) -> None:
    """Before parsing: at most :data:`MAX_VALUES` values, at most ``max_depth`` deep."""
    _check_values(raw, where)
    if _openers_at_most(raw, max_depth):
        return  # no deeper than it has openers: the scan is not needed
    depth = nesting_depth(raw)
    if depth > max_depth:
        raise JSONInputError(f"{where}: JSON nested {depth} levels deep; at most {max_depth} "
                             "are read")


def _unique_keys(pairs: list) -> dict:
    """``object_pairs_hook``: an object, refused if it names a key twice (``json`` would
    keep the last value without a word, so two files that read alike could differ)."""
    obj = dict(pairs)
    if len(obj) < len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise JSONInputError(f"the key {key!r} appears twice in one object")
            seen.add(key)
    return obj


def _parse(text: bytes | str, where: str, strict: bool):
    hooks = {"parse_int": _number, "object_pairs_hook": _unique_keys}
    if strict:
        hooks["parse_constant"] = _no_constant
    try:
        return json.loads(text, **hooks)
    except JSONInputError as err:
        raise JSONInputError(f"{where}: {err}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise JSONInputError(f"{where}: not valid JSON ({err})") from None
    except (RecursionError, ValueError) as err:  # belt and braces: the depth is checked
        raise JSONInputError(f"{where}: cannot be read as JSON ({err})") from None


def load_file(path: str | os.PathLike, *, max_bytes: int | None = None,
              max_depth: int = MAX_DEPTH, strict: bool = False):
    """Read and parse the JSON file ``path``, bounded in size and depth.

    Parameters
    ----------
    path : path-like
    max_bytes : int, optional
        Largest file read; :func:`max_file_bytes` by default.
    max_depth, strict
        As in :func:`loads`.

    Raises
    ------
    FileNotFoundError
        No such file.
    JSONInputError
        Too large (checked before reading), too deep or not valid JSON.
    """
    path = Path(path)
    limit = _checked_size(path, max_bytes)
    with _opened(path) as fh:
        try:
            raw = fh.read(limit + 1)  # a file that grew since stat() is still bounded
        except OSError as err:
            raise JSONInputError(f"{path}: cannot be read ({err.strerror or err})") from None
    if len(raw) > limit:
        raise JSONInputError(f"{path}: larger than the {_size(limit)} a JSON input may be")
    _check_shape(raw, str(path), max_depth)
    # Parse text, not bytes, and let the bytes go first: json would hold both.
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise JSONInputError(f"{path}: not valid JSON (not UTF-8 text: {err})") from None
    del raw
    return _parse(text, str(path), strict)


class FileText:
    """A long string of a JSON file left on disk (base64 text), read piece by piece.

    :func:`load_file_lazily` returns these for long strings, so that an
    array embedded in a plan is decoded straight from the file into the array,
    never held as text beside it.
    """

    __slots__ = ("path", "start", "stop")

    def __init__(self, path: Path, start: int, stop: int):
        self.path, self.start, self.stop = path, start, stop

    def __len__(self) -> int:
        return self.stop - self.start

    def __repr__(self) -> str:
        return f"<{len(self)} characters of {self.path} from byte {self.start}>"

    def pieces(self, size: int):
        """The text in pieces of ``size`` characters (the last may be shorter)."""
        with self.path.open("rb") as fh:
            fh.seek(self.start)
            left = len(self)
            while left > 0:
                data = fh.read(min(size, left))
                if not data:
                    raise JSONInputError(f"{self.path}: the file changed while it was read")
                left -= len(data)
                yield data.decode("ascii")


_BASE64 = np.zeros(256, bool)
_BASE64[list(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")] = True


def load_file_lazily(path: str | os.PathLike, *, long_strings: int = 1 << 16,
                     max_bytes: int | None = None, max_depth: int = MAX_DEPTH,
                     strict: bool = False):
    """:func:`load_file`, with long base64 strings left on disk as :class:`FileText`.

    The file is scanned in chunks (nesting depth, and where strings of more
    than ``long_strings`` characters lie); a long string of base64
    characters only is replaced by a :class:`FileText`, the rest is parsed
    as JSON. Memory stays at the size of what is not left on disk.
    """
    path = Path(path)
    limit = _checked_size(path, max_bytes)
    scanner = _Scanner(long_strings)
    with _opened(path) as fh:
        read = 0
        while True:
            data = fh.read(_CHUNK)
            if not data:
                break
            if read + len(data) > limit:
                raise JSONInputError(f"{path}: larger than the {_size(limit)} a JSON input "
                                     "may be")
            scanner.feed(np.frombuffer(data, np.uint8), read)
            read += len(data)
        if scanner.deepest > max_depth:
            raise JSONInputError(f"{path}: JSON nested {scanner.deepest} levels deep; at most "
                                 f"{max_depth} are read")
        lazy = [span for span in scanner.spans if _all_base64(fh, *span)]
        nonce = secrets.token_hex(8)
        parts, at, texts = [], 0, {}
        for i, (first, stop) in enumerate(lazy):
            fh.seek(at)
            parts.append(fh.read(first - at))
            marker = f"\\u0000{nonce}:{i}"
            parts.append(marker.encode("ascii"))
            texts[f"\x00{nonce}:{i}"] = FileText(path, first, stop)
            at = stop
        fh.seek(at)
        parts.append(fh.read(read - at))  # to the end, as scanned
    joined = b"".join(parts)
    del parts
    _check_values(joined, str(path))
    try:
        text = joined.decode("utf-8")
    except UnicodeDecodeError as err:
        raise JSONInputError(f"{path}: not valid JSON (not UTF-8 text: {err})") from None
    del joined
    obj = _parse(text, str(path), strict)
    return _put_back(obj, texts, path) if texts else obj


def _all_base64(fh, first: int, stop: int) -> bool:
    fh.seek(first)
    left = stop - first
    while left > 0:
        data = fh.read(min(_CHUNK, left))
        if not data or not _BASE64[np.frombuffer(data, np.uint8)].all():
            return False
        left -= len(data)
    return True


def _put_back(obj, texts: dict, path: Path):
    """``obj`` with each marker string replaced by its :class:`FileText`."""
    if isinstance(obj, str):
        return texts.get(obj, obj)
    if isinstance(obj, list):
        return [_put_back(v, texts, path) for v in obj]
    if isinstance(obj, dict):
        if any(key in texts for key in obj):
            raise JSONInputError(f"{path}: an object key of over 64 KiB of text")
        return {key: _put_back(v, texts, path) for key, v in obj.items()}
    return obj


def _checked_size(path: Path, max_bytes: int | None) -> int:
    """The size limit for ``path``, checked against its size before it is read."""
    limit = max_file_bytes() if max_bytes is None else max_bytes
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    if size > limit:
        raise JSONInputError(f"{path}: {_size(size)}, larger than the {_size(limit)} a JSON "
                             "input may be (set BENCHSEL_MAX_JSON_BYTES to read it)")
    return limit


@contextmanager
def _opened(path: Path):
    """``path`` open for binary reading; a folder or unreadable file is a named error."""
    try:
        fh = path.open("rb")
    except IsADirectoryError:
        raise JSONInputError(f"{path}: is a folder, not a JSON file") from None
    except OSError as err:
        raise JSONInputError(f"{path}: cannot be read ({err.strerror or err})") from None
    with fh:
        yield fh


def _size(n: int) -> str:
    """``n`` bytes in the largest unit that keeps it at least 1."""
    units = ("bytes", "KiB", "MiB", "GiB", "TiB")
    power = min(int(math.log(max(n, 1), 1024)), len(units) - 1)
    return f"{n} bytes" if power == 0 else f"{n / 1024 ** power:.1f} {units[power]}"
