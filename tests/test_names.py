"""The option names the parser offers are exactly what the library implements."""

import subprocess
import sys

from benchsel import names


def test_registries_list_exactly_the_names():
    from benchsel.coreset.registry import DEFAULT_METHOD, METHODS, PAPER_REFITS
    from benchsel.evaluation.cv import SCORINGS
    from benchsel.gaussian import COVARIANCE_METHODS
    from benchsel.io import _FORMATS
    from benchsel.models import CALIBRATIONS
    from benchsel.prediction import COMPLETERS
    from benchsel.selection import OBJECTIVES
    from benchsel.transforms import TRANSFORMS

    assert tuple(COMPLETERS) == names.COMPLETION_METHODS
    assert tuple(METHODS) == names.CORESET_METHODS
    assert DEFAULT_METHOD == names.DEFAULT_CORESET_METHOD in METHODS
    assert PAPER_REFITS == names.PAPER_REFITS
    assert (SCORINGS, CALIBRATIONS, COVARIANCE_METHODS, OBJECTIVES, TRANSFORMS, _FORMATS) == (
        names.SCORINGS, names.CALIBRATIONS, names.COVARIANCE_METHODS, names.OBJECTIVES,
        names.TRANSFORMS, names.INPUT_FORMATS)


def test_the_parser_imports_no_heavy_module():
    """--help and usage errors must not pay for scipy, pandas or scikit-learn."""
    code = ("import sys; from benchsel.cli import build_parser; build_parser(); "
            "heavy = [m for m in ('numpy', 'scipy', 'pandas', 'sklearn', 'matplotlib') "
            "if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == ""


def test_selecting_imports_neither_scikit_learn_nor_scipy_stats():
    code = ("import sys; from benchsel.cli import main; main(['select', 'merged', '-k', '3']);"
            "print('heavy:' + ','.join(m for m in ('sklearn', 'scipy.stats', 'scipy.special', "
            "'pandas', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip().splitlines()[-1] == "heavy:"


def test_every_command_of_the_parser_has_the_module_that_runs_it():
    import argparse

    from benchsel import commands
    from benchsel.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(commands.MODULES)
    assert all(callable(commands.command(name)) for name in sub.choices)
