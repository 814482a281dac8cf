"""Progress of long runs on stderr, with the time left.

On a terminal one status line is redrawn (at most ten times a second); in a
log or a pipe a plain line is written at most once a minute, so a batch job
shows it is alive without flooding its log; ``--quiet`` silences both.

In Python, long library steps (``auto``'s cross-validations and
calibrations, in ``predict`` and ``plan_benchmarks``) are silent by default,
as a library's should be: they log to the ``benchsel`` logger at INFO, a
record a minute at most (``logging.basicConfig(level=logging.INFO)`` shows
them), and :func:`reporting_to` hands every step ``(stage, done, total)`` to
a callback instead.
"""

from __future__ import annotations

import logging
import sys
import time
from contextlib import contextmanager

__all__ = ["LOGGER", "Progress", "Stages", "quiet", "report", "reporting_to"]

#: The logger long library steps report to when no reporter is set (silent unless
#: the application configures logging: the package adds a NullHandler).
LOGGER = logging.getLogger("benchsel")
LOGGER.addHandler(logging.NullHandler())

#: Set by the command line's ``--quiet`` (:func:`quiet`): every progress line is off.
_QUIET = False


@contextmanager
def quiet():
    """No :class:`Progress` shows anything inside this context (``--quiet``)."""
    global _QUIET
    before, _QUIET = _QUIET, True
    try:
        yield
    finally:
        _QUIET = before


#: Where long library steps report ``(stage, done, total)``; set with :func:`reporting_to`.
_REPORT = None


@contextmanager
def reporting_to(reporter):
    """Inside this context, long library steps (``auto``'s cross-validations and
    calibrations) call ``reporter(stage, done, total)``; the command line passes a
    :class:`Stages`. Outside it, nothing is reported."""
    global _REPORT
    before, _REPORT = _REPORT, reporter
    try:
        yield
    finally:
        _REPORT = before


def report(stage: str, done: int, total: int) -> None:
    """Tell the current reporter that ``done`` of ``total`` steps of ``stage`` are done:
    the one :func:`reporting_to` set, else :data:`LOGGER` (at INFO, a record a minute)."""
    if _REPORT is not None:
        _REPORT(stage, done, total)
    elif LOGGER.isEnabledFor(logging.INFO):
        _LOG(stage, done, total)


#: Seconds between two lines when stderr is not a terminal.
LOG_INTERVAL = 60.0


class _LogReporter:
    """``(stage, done, total)`` as INFO records of :data:`LOGGER`, at most one per
    :data:`LOG_INTERVAL` seconds of a stage (none for a stage shorter than that)."""

    def __init__(self):
        self.stage, self.start, self.last = None, 0.0, 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.perf_counter()
        if stage != self.stage:
            self.stage, self.start, self.last = stage, now, now
        if now - self.last >= LOG_INTERVAL:
            LOGGER.info("%s: %d/%d, %s so far", stage, done, total,
                        _duration(now - self.start))
            self.last = now


_LOG = _LogReporter()

#: Seconds between two redraws of the terminal line.
REDRAW_INTERVAL = 0.1


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class Progress:
    """Callable ``progress(done, total)`` reporting how far a run is and how long is left.

    Parameters
    ----------
    label : str
        What is being counted (``"folds"``, ``"subsets"``).
    enabled : bool, optional
        False silences it; True redraws a status line whatever the stream;
        by default a status line on a terminal and a line a minute otherwise.
    stream : file, optional
        Where to write (default ``sys.stderr``).
    interval : float, optional
        Seconds between lines off a terminal (default :data:`LOG_INTERVAL`).
    """

    def __init__(self, label: str, enabled: bool | None = None, stream=None,
                 interval: float = LOG_INTERVAL):
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled is not False and not _QUIET
        self.redraw = enabled is True or (enabled is None and self._isatty())
        self.interval = interval
        self.start = time.perf_counter()
        self.last = self.start if not self.redraw else 0.0
        self.drawn = False

    def _isatty(self) -> bool:
        try:
            return bool(self.stream.isatty())
        except (AttributeError, ValueError):
            return False

    def status(self, done: int, total: int, now: float | None = None) -> str:
        """``label: done/total (pct%) elapsed, about T left`` (no time left before the first)."""
        now = time.perf_counter() if now is None else now
        elapsed = now - self.start
        pct = 100.0 * done / total if total else 100.0
        text = f"{self.label}: {done}/{total} ({pct:.0f}%) {_duration(elapsed)}"
        if 0 < done < total:
            text += f", about {_duration(elapsed / done * (total - done))} left"
        return text

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.redraw:
            if done < total and now - self.last < REDRAW_INTERVAL:
                return
            self.stream.write("\r" + self.status(done, total, now) + "\033[K")
            self.drawn = True
        else:
            if done < total and now - self.last < self.interval:
                return
            if done >= total and not self.drawn:
                return  # a run that ended within the first interval logs nothing
            self.stream.write(self.status(done, total, now) + "\n")
        self.stream.flush()
        self.last = now
        if not self.redraw:
            self.drawn = True

    def close(self) -> None:
        """End the status line (if one was drawn)."""
        if self.drawn and self.redraw:
            self.stream.write("\n")
            self.stream.flush()
        self.drawn = False


class Stages:
    """Callable ``stages(stage, done, total)``: one :class:`Progress` per named stage.

    On a terminal a stage shows nothing in its first ``delay`` seconds, so
    quick steps stay silent and only those longer than that get a line with
    the time left. Off a terminal a line is written whenever ``interval``
    seconds passed since the last one, whichever stage is running: a run of
    many short stages (``plan`` on a board of its own: 50 s of them) is
    still seen to be alive in a log.
    """

    def __init__(self, delay: float = 2.0, stream=None, interval: float = LOG_INTERVAL):
        self.delay = delay
        self.stream = stream
        self.interval = interval
        self.current: tuple[str, Progress] | None = None
        self.started = self.last_line = time.perf_counter()

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.current is None or self.current[0] != stage:
            self.close()
            self.current = (stage, Progress(stage, stream=self.stream, interval=self.interval))
        progress = self.current[1]
        if not progress.redraw:
            self._log_line(progress, done, total)
        elif time.perf_counter() - progress.start >= self.delay or progress.drawn:
            progress(done, total)
        if done >= total:
            self.close()

    def _log_line(self, progress: Progress, done: int, total: int) -> None:
        """Off a terminal: the stage's status, once ``interval`` passed since the last line."""
        now = time.perf_counter()
        if not progress.enabled or now - self.last_line < self.interval:
            return
        progress.stream.write(f"{progress.status(done, total, now)} "
                              f"({_duration(now - self.started)} in all)\n")
        progress.stream.flush()
        self.last_line = now

    def close(self) -> None:
        if self.current is not None:
            self.current[1].close()
            self.current = None
