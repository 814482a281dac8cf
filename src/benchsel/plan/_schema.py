"""The plan file's schema, checked before anything in it is decoded or fitted.

A plan is shipped with a model and opened by someone else, so every key,
type, range and size of the file is checked here first, in one pass over the
parsed JSON: unknown keys are refused by name, booleans are not numbers,
encoded arrays are checked against their declared shape (and the declared
shapes against a limit on the plan's decoded size) before a byte is
inflated. Errors name the file and the JSON path
(``plan.json: tasks.glue_rte.doc_ids[0]: ...``).

The schema is versioned with the format (:data:`FORMAT_VERSION`); a new
field means a new version.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from .._json import FileText
from ..names import (
    CALIBRATIONS,
    CHOICE_SPLITS,
    CORESET_METHODS,
    COVARIANCE_METHODS,
    FORMER_CHOICE_SPLITS,
    OBJECTIVES,
    TRANSFORMS,
)

__all__ = ["LEVELS", "MAX_DECODED_BYTES", "DecodeBudget", "validate_plan"]

LEVELS = ("benchmarks", "questions", "mixed")
"""The kinds of plan: which part a plan has."""

MAX_DECODED_BYTES = 1 << 30
"""Largest total size of a plan's decoded arrays (1 GiB); override with
``BENCHSEL_MAX_PLAN_BYTES`` or ``load_plan(..., max_decoded_bytes=)``."""

_MAX_SIZE = 1 << 40  # largest declared array dimension (the total is what binds)
_MAX_NAME = 10_000  # characters in a model, benchmark, task or method name
_MAX_TEXT = 1_000_000  # characters in free text (the command line, a reason)
_MAX_LIST = 10_000_000  # entries in a list of names or doc ids
_MAX_SEED = 2 ** 63 - 1
_MAX_DOC_ID = 2 ** 53  # exact in a float64, as lm-eval's doc ids are
ENCODINGS = ("bits", "float64-zlib")


class PlanSchemaError(ValueError):
    """A plan file that does not follow the schema; the message names the JSON path."""


def _path(parent: str, key) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_\-]*", key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{_short(key)}]"


def _short(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _kind(value) -> str:
    """The JSON name of a value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, FileText):  # only an array's data may be this long
        return f"a string of {len(value)} characters"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


@dataclass
class DecodeBudget:
    """Bytes the plan's arrays may decode to in all; each declared array takes its share."""

    limit: int

    @classmethod
    def default(cls) -> DecodeBudget:
        text = os.environ.get("BENCHSEL_MAX_PLAN_BYTES")
        if not text:
            return cls(MAX_DECODED_BYTES)
        try:
            return cls(max(int(text), 0))
        except ValueError:
            raise PlanSchemaError(f"BENCHSEL_MAX_PLAN_BYTES={text!r}: expected a whole number "
                                  "of bytes") from None

    used: int = 0

    def take(self, nbytes: int, where: str) -> None:
        if self.used + nbytes > self.limit:
            raise PlanSchemaError(
                f"{where}: its declared shape decodes to {nbytes} bytes, past the plan's "
                f"limit of {self.limit} bytes of arrays in all (set BENCHSEL_MAX_PLAN_BYTES "
                "or load_plan(max_decoded_bytes=) to read a larger plan)")
        self.used += nbytes


# ------------------------------------------------------------------- specs
Check = Callable[[object, str, DecodeBudget], None]


def _fail(where: str, message: str):
    raise PlanSchemaError(f"{where}: {message}" if where else message)


def text(*, choices: Sequence[str] | None = None, max_len: int = _MAX_NAME,
         nonempty: bool = False) -> Check:
    def check(value, where, budget):
        if not isinstance(value, str):
            _fail(where, f"expected a string; got {_kind(value)}")
        if len(value) > max_len:
            _fail(where, f"a string of {len(value)} characters; at most {max_len}")
        if nonempty and not value:
            _fail(where, "expected a non-empty string")
        if choices is not None and value not in choices:
            _fail(where, f"{_short(value)}; expected one of {', '.join(choices)}")
    return check


def whole(low: int, high: int) -> Check:
    def check(value, where, budget):
        if isinstance(value, bool) or not isinstance(value, int):
            _fail(where, f"expected a whole number; got {_kind(value)} {_short(value)}")
        if not low <= value <= high:
            _fail(where, f"{value} is outside [{low}, {high}]")
    return check


def number(low: float = -math.inf, high: float = math.inf, *, open_low: bool = False) -> Check:
    def check(value, where, budget):
        if isinstance(value, bool) or not isinstance(value, int | float):
            _fail(where, f"expected a number; got {_kind(value)} {_short(value)}")
        if not math.isfinite(value):
            _fail(where, f"{value} is not a finite number")
        if value < low or value > high or (open_low and value == low):
            bracket = "(" if open_low else "["
            _fail(where, f"{value} is outside {bracket}{low}, {high}]")
    return check


def boolean(value, where, budget):
    if not isinstance(value, bool):
        _fail(where, f"expected true or false; got {_kind(value)}")


def null(value, where, budget):
    if value is not None:
        _fail(where, f"expected null; got {_kind(value)}")


def either(*checks: Check, what: str) -> Check:
    """The first check that accepts the value; ``what`` says what was expected."""
    def check(value, where, budget):
        for one in checks:
            try:
                one(value, where, budget)
                return
            except PlanSchemaError:
                continue
        _fail(where, f"expected {what}; got {_kind(value)} {_short(value)}")
    return check


def optional(inner: Check) -> Check:
    def check(value, where, budget):
        if value is not None:
            inner(value, where, budget)
    return check


def items(inner: Check, *, max_len: int = _MAX_LIST, min_len: int = 0,
          unique: bool = False) -> Check:
    def check(value, where, budget):
        if not isinstance(value, list):
            _fail(where, f"expected a list; got {_kind(value)}")
        if not min_len <= len(value) <= max_len:
            wanted = str(min_len) if min_len == max_len else f"{min_len} to {max_len}"
            _fail(where, f"a list of {len(value)} entries; expected {wanted}")
        for i, entry in enumerate(value):
            inner(entry, _path(where, i), budget)
        if unique and len(set(value)) != len(value):
            seen = set()
            first = next(v for v in value if v in seen or seen.add(v))
            _fail(where, f"{_short(first)} appears more than once")
    return check


def mapping(inner: Check, *, max_len: int = 100_000, key: Check | None = None) -> Check:
    def check(value, where, budget):
        if not isinstance(value, dict):
            _fail(where, f"expected an object; got {_kind(value)}")
        if len(value) > max_len:
            _fail(where, f"an object of {len(value)} entries; at most {max_len}")
        for name, entry in value.items():
            at = _path(where, name)
            (key or text(nonempty=True))(name, at, budget)
            inner(entry, at, budget)
    return check


@dataclass
class Record:
    """An object with known keys: ``required`` must be there, nothing else may be."""

    required: Mapping[str, Check] = field(default_factory=dict)
    optional: Mapping[str, Check] = field(default_factory=dict)

    def __call__(self, value, where, budget) -> None:
        if not isinstance(value, dict):
            _fail(where, f"expected an object; got {_kind(value)}")
        missing = [k for k in self.required if k not in value]
        if missing:
            _fail(where, f"missing {', '.join(map(repr, missing))}")
        known = {**self.required, **self.optional}
        unknown = [k for k in value if k not in known]
        if unknown:
            _fail(_path(where, unknown[0]),
                  f"unknown key (this plan format has {', '.join(sorted(known))})")
        for name, entry in value.items():
            known[name](entry, _path(where, name), budget)


def base64_text(value, where, budget):
    """Text, or a long base64 string left on disk by the reader (:class:`FileText`)."""
    if not isinstance(value, str | FileText):
        _fail(where, f"expected base64 text; got {_kind(value)}")


def encoded_array(ndim: int) -> Check:
    """An array from :func:`benchsel._arrays.encode_array`, sized before decoding."""
    def check(value, where, budget):
        Record({"shape": items(whole(0, _MAX_SIZE), min_len=ndim, max_len=ndim),
                "encoding": text(choices=ENCODINGS), "data": base64_text})(value, where, budget)
        size = math.prod(value["shape"])
        budget.take(8 * size, where)
        stored = len(value["data"])
        if value["encoding"] == "bits":
            longest = 4 * math.ceil(math.ceil(size / 8) / 3)
        else:  # zlib never grows data by more than its worst-case bound
            raw = 8 * size
            longest = 4 * math.ceil((raw + (raw >> 12) + (raw >> 14) + (raw >> 25) + 64) / 3)
        if stored > longest:
            _fail(_path(where, "data"), f"{stored} characters, more than an array of shape "
                  f"{value['shape']} can take ({longest})")
    return check


# ------------------------------------------------------------------ schema
_NAMES = items(text())
_NUMBER_OR_NULL = optional(number())

MATRIX = Record({"models": items(text(), unique=True), "items": items(text(), unique=True),
                 "values": encoded_array(2), "fingerprint": text(max_len=100)})

GAUSSIAN_OPTIONS = Record(optional={
    "covariance": text(choices=COVARIANCE_METHODS),
    "shrinkage": either(text(choices=("auto",)), number(0.0, 1.0),
                        what="'auto' or a number in [0, 1]"),
    "floor": number(0.0, 1e6, open_low=True),
    "max_iter": whole(1, 10_000),  # the default is 300; more is a plan made to hang
    "tol": number(0.0, 1.0, open_low=True),
    "ridge": number(0.0, 1e12),
    "transform": text(choices=TRANSFORMS),
    "bounds": either(null, text(max_len=1000), items(number(), min_len=2, max_len=2),
                     mapping(either(text(max_len=1000), items(number(), min_len=2, max_len=2),
                                    what="'LOW,HIGH' or [low, high]")),
                     what="null, 'infer', 'none', 'LOW,HIGH', [low, high] or "
                          "benchmark -> bounds"),
    "calibration": text(choices=CALIBRATIONS),
})

_SCALAR = either(null, boolean, number(), text(max_len=_MAX_TEXT),
                 items(either(text(), number(), what="a name or a number")),
                 what="a number, text, true/false, null or a list")

SELECTION = Record(
    {"selected": items(text(), min_len=1, unique=True)},
    {"gains": items(number()), "residual_variance": items(number()),
     "objective": text(choices=OBJECTIVES), "covariance": text(), "strategy": text(),
     "stopped_by": optional(text()), "certificate": mapping(_SCALAR, max_len=100),
     "aggregates_left_out": mapping(text(max_len=_MAX_TEXT)), "cost": number(),
     "options": Record(optional={
         "k": optional(whole(0, _MAX_LIST)), "objective": text(choices=OBJECTIVES),
         "include": _NAMES, "exclude": _NAMES, "costs": optional(mapping(number())),
         "budget": _NUMBER_OR_NULL, "target_residual": _NUMBER_OR_NULL,
         "keep_aggregates": boolean})})

_COMPLETER = text()  # checked against the registry by AutoMemo.from_json
_FIGURES = mapping(_NUMBER_OR_NULL, max_len=100)
AUTO = Record(optional={
    "choices": items(Record({
        "given": items(text(), min_len=1),
        "split": text(choices=(*CHOICE_SPLITS, *FORMER_CHOICE_SPLITS)),
        "method": _COMPLETER, "fallbacks": items(_COMPLETER, max_len=100),
        "cells": whole(0, _MAX_SIZE), "medape": _FIGURES, "coverage": _FIGURES},
        {"margin": _NUMBER_OR_NULL}), max_len=10_000),
    "residuals": items(Record({
        "given": items(text(), min_len=1), "method": _COMPLETER,
        "residual": encoded_array(1), "std": encoded_array(1), "excess": encoded_array(1)}),
        max_len=10_000),
    "shifts": items(Record({
        "given": items(text(), min_len=1), "method": _COMPLETER, "shift": encoded_array(1)}),
        max_len=10_000),
})

BENCHMARKS = Record({"source": MATRIX, "options": GAUSSIAN_OPTIONS, "selection": SELECTION,
                     "check": encoded_array(2)}, {"auto": AUTO})

def coreset_method(value, where, budget):
    """A registry name of :mod:`benchsel.coreset.registry`, refits (``+``, ``++``) included."""
    text(nonempty=True)(value, where, budget)
    base = value.rstrip("+")
    if base not in CORESET_METHODS or len(value) - len(base) > 2:
        _fail(where, f"{_short(value)} is not a question-level method; methods: "
              f"{', '.join(CORESET_METHODS)} (with + or ++ for a refit)")


_DOC_IDS = items(whole(0, _MAX_DOC_ID), unique=True)
TASK = Record({
    "metric": optional(text()), "filter": optional(text()), "doc_ids": _DOC_IDS,
    "source": MATRIX, "method": coreset_method, "n": whole(1, _MAX_LIST),
    "seed": whole(0, _MAX_SEED), "selected": _DOC_IDS, "check": encoded_array(2)})

PLAN = Record(
    {"format": text(), "format_version": whole(0, 1 << 31), "level": text(choices=LEVELS),
     "benchsel_version": text(max_len=100), "created": text(max_len=100)},
    {"command": optional(text(max_len=_MAX_TEXT)), "seed": whole(0, _MAX_SEED),
     "source": optional(text(max_len=_MAX_TEXT)), "benchmarks": BENCHMARKS,
     "allocation": optional(text(choices=("per-task", "total"))),
     "tasks": mapping(TASK, max_len=10_000), "columns": mapping(text(), max_len=10_000)})


def validate_plan(obj, where: str, budget: DecodeBudget | None = None) -> DecodeBudget:
    """Check a parsed plan against the schema; the budget it returns has the arrays' share.

    Raises
    ------
    PlanSchemaError
        The first entry that breaks the schema, as ``"{where}: {json path}: ..."``.
    """
    budget = DecodeBudget.default() if budget is None else budget
    try:
        PLAN(obj, "", budget)
    except PlanSchemaError as err:
        raise PlanSchemaError(f"{where}: {err}") from None
    return budget
