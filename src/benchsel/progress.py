"""A minimal progress line on stderr for long runs.

Shown only when stderr is a terminal (so logs and pipes stay clean) and not
silenced with ``--quiet``; updates at most ten times a second.
"""

from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


class Progress:
    """Callable ``progress(done, total)`` that redraws one status line.

    Parameters
    ----------
    label : str
        What is being counted (``"folds"``, ``"subsets"``).
    enabled : bool, optional
        Force on or off; by default on when stderr is a terminal.
    stream : file, optional
        Where to draw (default ``sys.stderr``).
    """

    def __init__(self, label: str, enabled: bool | None = None, stream=None):
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.start = time.perf_counter()
        self.last = 0.0
        self.drawn = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        pct = 100.0 * done / total if total else 100.0
        self.stream.write(
            f"\r{self.label}: {done}/{total} ({pct:.0f}%) {now - self.start:.1f} s"
        )
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        """End the status line (if one was drawn)."""
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False
