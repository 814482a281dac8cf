"""The command line's argument types: each checks one flag's text at parse time and says
what it expected (argparse names a bare type function by its own name otherwise)."""

from __future__ import annotations

import argparse
import os

from ._memory import parse_size


def _bounds(text: str) -> str:
    """``--bounds``: checked here, passed on as text (it is what a plan records)."""
    if text.strip().lower() in ("infer", "none"):
        return text.strip().lower()
    try:
        from .bounds import parse_bounds  # here: bounds needs numpy, which --help does not

        parse_bounds(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def _k_value(text: str):
    """-k: a positive integer or 'auto'."""
    if text == "auto":
        return "auto"
    try:
        return _positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected a number of benchmarks (a positive whole number) or 'auto'; got "
            f"{text!r}") from None


def _memory_size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _positive_int(text: str) -> int:
    # argparse names a type function that raises ValueError by its own name
    # ("invalid _positive_int value"): say what is expected instead.
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number; got {text!r}")
    return value


def _questions(text: str) -> str:
    """``--questions``: a file, ``N`` or ``NAME=N,...`` with positive whole counts; checked
    here (the names against the board later, by the library)."""
    if os.path.isfile(text):
        return text
    # As benchsel.observations.question_counts reads it: one count, or NAME=N pairs.
    parts = filter(None, (t.strip() for t in text.split(","))) if "=" in text else [text]
    for part in parts:
        name, _, value = part.rpartition("=")
        try:
            n = int(value.strip())
        except ValueError:
            n = 0
        if n < 1:
            raise argparse.ArgumentTypeError(
                f"{value.strip()!r} is not a positive whole number"
                + (f" (the questions of {name.strip()!r})" if name else ""))
    return text


def _whole_in(low: int, high: int, why: str = ""):
    """An argparse type: a whole number in [low, high], checked before any work."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number; got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"must be from {low:,} to {high:,}{why}; got {text}")
        return value
    parse.__name__ = "whole number"  # argparse names the type in its messages
    return parse


def _jobs(text: str) -> int:
    """--jobs: -1 (every core) or 1 to 4096."""
    value = _whole_in(-1, 4096)(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be -1 (every core) or a positive number; got 0")
    return value


def _coreset_size(text: str) -> str:
    """A count or a percentage; checked against the question count once data is loaded."""
    body = text[:-1] if text.endswith("%") else text
    try:
        value = float(body) if text.endswith("%") else int(body)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a count or a percentage such as 5%; got {text}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive; got {text}")
    return text


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1); got {text!r}")
    return value
