"""The ``benchsel`` command line: parse (:mod:`._parser`), run the command, say how it ended.

The parser is built from option names alone (:mod:`benchsel.names`), so
``benchsel --help``, ``--version`` and usage errors import nothing heavy;
the command itself runs in :mod:`benchsel.commands`. Exit codes: 0 success,
1 failure (bad data, unknown names), 2 usage error, 130 interrupted.
"""

from __future__ import annotations

import sys
import warnings

from ._memory import budget
from ._parser import build_parser
from .progress import Stages, quiet, reporting_to

__all__ = ["build_parser", "main"]


class _WarningPrinter:
    """``warnings.showwarning`` for the CLI: one line per distinct message, once a run.

    Python's "default" filter is meant to show a warning once per place,
    but every ``catch_warnings`` block inside the library resets that memory,
    so a protocol's folds would repeat the same line dozens of times. EM's
    failure to converge is said once a run whatever its figures: each fold's
    fit has its own.
    """

    def __init__(self):
        self.shown: set[str] = set()

    def __call__(self, message, category, filename, lineno, file=None, line=None) -> None:
        text = str(message)
        # By name, so that scikit-learn's ConvergenceWarning (the lasso's) is said once
        # as benchsel's is.
        key = category.__name__ if category.__name__ == "ConvergenceWarning" else text
        if key not in self.shown:
            self.shown.add(key)
            print(f"benchsel: warning: {text}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = _WarningPrinter()
        args = parser.parse_args(argv)  # inside: an old flag's warning is printed as ours
        args.argv = argv  # recorded in plans
        # The library is imported only now that there is a command to run (apart from the
        # handlers below, which need it: a broken install's ImportError is its own message).
        try:
            import numpy as np

            from . import commands
        except KeyboardInterrupt:
            print("benchsel: interrupted", file=sys.stderr)
            return 130
        try:
            run = commands.command(args.command)
            commands.check_outputs(args)  # a target that cannot be written: before any work
            with budget(args.memory_budget):
                if not args.quiet:
                    stages = Stages()  # auto's long steps: a line each, with the time left
                    with reporting_to(stages):
                        try:
                            return run(args)
                        finally:
                            stages.close()
                warnings.simplefilter("ignore")
                with quiet():
                    return run(args)
        except KeyboardInterrupt:
            print("benchsel: interrupted", file=sys.stderr)
            return 130
        except commands.UsageError as err:
            parser.error(str(err))  # exits with code 2
        except BrokenPipeError:  # e.g. '| head': the reader has what it wanted
            return 0
        except (ValueError, OSError, np.linalg.LinAlgError) as err:
            print(f"benchsel: error: {err}", file=sys.stderr)
            return 1
