"""The memory a computation may take, decided before it allocates.

A large allocation is planned, not discovered: its estimated peak is
compared with a budget first, and the caller switches to a method that fits
or refuses by name (:class:`MemoryBudgetError`), never a ``MemoryError``
traceback halfway through. The budget is the environment variable
``BENCHSEL_MEMORY_BUDGET`` (``4G``, ``500M``, or bytes; every command's
``--memory-budget`` sets it), else half of the machine's physical memory.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager

__all__ = ["BUDGET_ENV", "MemoryBudgetError", "budget", "check_memory", "memory_budget",
           "parse_size"]

#: The environment variable holding the budget (read at each check).
BUDGET_ENV = "BENCHSEL_MEMORY_BUDGET"
#: Share of physical memory a run may plan to use when no budget is given.
DEFAULT_SHARE = 0.5
#: The budget when the machine does not say how much memory it has.
FALLBACK_BYTES = 4 * 2**30

_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


class MemoryBudgetError(ValueError):
    """A computation would need more memory than the budget allows (nothing was allocated)."""


def parse_size(text: str) -> int:
    """Bytes in ``text``: a number with an optional unit ``K``, ``M``, ``G`` or ``T``
    (powers of 1024; ``B``/``iB`` suffixes allowed), e.g. ``"4G"``, ``"512MiB"``."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", str(text), re.IGNORECASE)
    if match is None or float(match.group(1)) <= 0:
        raise ValueError(f"a memory size must be a positive number with an optional unit "
                         f"K, M, G or T (e.g. 4G, 500M); got {text!r}")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def _physical_memory() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # not a POSIX system
        return None


def memory_budget() -> int:
    """The budget in bytes: ``BENCHSEL_MEMORY_BUDGET``, else half the physical memory."""
    given = os.environ.get(BUDGET_ENV)
    if given:
        try:
            return parse_size(given)
        except ValueError as err:
            raise ValueError(f"{BUDGET_ENV}: {err}") from None
    physical = _physical_memory()
    return int(DEFAULT_SHARE * physical) if physical else FALLBACK_BYTES


@contextmanager
def budget(size: int | None):
    """Inside this context the budget is ``size`` bytes (None: as it was), through the
    environment so that worker processes started inside it have it too."""
    if size is None:
        yield
        return
    before = os.environ.get(BUDGET_ENV)
    os.environ[BUDGET_ENV] = str(int(size))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(BUDGET_ENV, None)
        else:
            os.environ[BUDGET_ENV] = before


def check_memory(needed: float, what: str, instead: str) -> None:
    """Raise :class:`MemoryBudgetError` when ``needed`` bytes exceed the budget.

    ``what`` names the computation, ``instead`` what the user can do.
    """
    from ._json import _size  # here: the command line's parser imports this module

    allowed = memory_budget()
    if needed > allowed:
        raise MemoryBudgetError(
            f"{what} would need about {_size(int(needed))}, over the memory budget of "
            f"{_size(allowed)} ({BUDGET_ENV} or --memory-budget; default half the "
            f"machine's memory); {instead}")
