"""What each ``benchsel`` command does, once :mod:`benchsel.cli` has parsed it.

Every command is a thin call into the library. Human-readable tables go to
stdout by default, ``--json`` prints machine-readable JSON instead, and
``--output FILE`` writes it atomically to a file. This package imports the
whole library; the parser in :mod:`benchsel.cli` imports none of it, so that
``--help`` and usage errors answer at once.

One module per command group: :mod:`.data` (``datasets``), :mod:`.select`
(``select``, ``plan``), :mod:`.predict`, :mod:`.compare`, :mod:`.analyses`
(``spectrum``, ``discover``, ``budget``, ``audit``, ``diagnose``),
:mod:`.evaluate`, :mod:`.questions` (``coreset``, ``coreset-eval``) and
:mod:`.report`; what they share: :mod:`._args` (arguments as the library's
objects, usage errors, the files ``-o`` must not overwrite), :mod:`._render`
(tables, JSON, CSV, ``-o``), :mod:`._workers` (``--jobs``, ``--dask``) and
:mod:`._noise` (the measurement noise of observed scores).
"""

from ._args import UsageError, check_outputs
from .analyses import cmd_audit, cmd_budget, cmd_diagnose, cmd_discover, cmd_spectrum
from .compare import cmd_compare
from .data import cmd_datasets
from .evaluate import cmd_evaluate
from .predict import cmd_predict
from .questions import cmd_coreset, cmd_coreset_eval
from .report import cmd_report
from .select import cmd_plan, cmd_select

__all__ = [
    "UsageError",
    "check_outputs",
    "cmd_audit",
    "cmd_budget",
    "cmd_compare",
    "cmd_coreset",
    "cmd_coreset_eval",
    "cmd_datasets",
    "cmd_diagnose",
    "cmd_discover",
    "cmd_evaluate",
    "cmd_plan",
    "cmd_predict",
    "cmd_report",
    "cmd_select",
    "cmd_spectrum",
]
