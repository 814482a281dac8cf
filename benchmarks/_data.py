"""Where the benchmark scripts read their data: ``--data-dir``, by default the bundled copies.

The per-question matrices and the leaderboards ship inside the package
(``benchsel datasets``), so every script runs from a clone; ``--data-dir``
points one at other files of the same layout (``*.npz`` per-question
matrices, or leaderboard CSVs).
"""

from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path

#: The bundled per-question matrices (models x questions, NPZ).
QUESTIONS = Path(str(resources.files("benchsel.datasets").joinpath("data", "questions")))
#: The bundled leaderboards (models x benchmarks, CSV).
LEADERBOARDS = Path(str(resources.files("benchsel.datasets").joinpath("data")))


def add_data_dir(parser: argparse.ArgumentParser, default: Path = QUESTIONS) -> None:
    """``--data-dir DIR`` (default: the bundled copies)."""
    parser.add_argument("--data-dir", type=Path, default=default,
                        help=f"folder of the input files (default: the bundled copies, {default})")
