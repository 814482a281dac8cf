"""What each ``benchsel`` command does, once :mod:`benchsel.cli` has parsed it.

Every command is a thin call into the library. Human-readable tables go to
stdout by default, ``--json`` prints machine-readable JSON instead, and
``--output FILE`` writes it atomically to a file. The parser in
:mod:`benchsel.cli` imports none of the library, so that ``--help`` and
usage errors answer at once; then :func:`command` imports the one module
that runs the command.

One module per command group: :mod:`.data` (``datasets``), :mod:`.select`
(``select``, ``plan``), :mod:`.predict`, :mod:`.compare`, :mod:`.analyses`
(``spectrum``, ``discover``, ``budget``, ``audit``, ``diagnose``),
:mod:`.evaluate`, :mod:`.questions` (``coreset``, ``coreset-eval``) and
:mod:`.report`; what they share: :mod:`._args` (arguments as the library's
objects, usage errors, the files ``-o`` must not overwrite), :mod:`._render`
(tables, JSON, CSV, ``-o``), :mod:`._workers` (``--jobs``, ``--dask``) and
:mod:`._noise` (the measurement noise of observed scores).
"""

import importlib

from ._args import UsageError, check_outputs

__all__ = ["MODULES", "UsageError", "check_outputs", "command"]

#: Each command and the module of this package that runs it (``cmd_<command>``).
MODULES = {
    "datasets": "data", "select": "select", "plan": "select", "predict": "predict",
    "compare": "compare", "spectrum": "analyses", "discover": "analyses",
    "budget": "analyses", "audit": "analyses", "diagnose": "analyses",
    "evaluate": "evaluate", "coreset": "questions", "coreset-eval": "questions",
    "report": "report",
}


def command(name: str):
    """The function that runs command ``name``.

    Only its module is imported, and each module imports what it needs at its
    top: a command pays for its own imports alone (``coreset`` brings in
    scikit-learn, about a second; ``select`` does not).
    """
    module = importlib.import_module(f".{MODULES[name]}", __name__)
    return getattr(module, "cmd_" + name.replace("-", "_"))
