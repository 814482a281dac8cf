"""Where the benchmark scripts read their data: ``--data-dir``, by default the bundled copies.

The per-question matrices and the leaderboards ship inside the package
(``benchsel datasets``), so every script runs from a clone; ``--data-dir``
points one at other files of the same layout (``*.npz`` per-question
matrices, or leaderboard CSVs named as the bundled boards, e.g. the
project's ``../shared/data/leaderboards``).
"""

from __future__ import annotations

import argparse
import warnings
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


def _bundled(data_dir: Path) -> bool:
    return Path(data_dir).resolve() == LEADERBOARDS.resolve()


def load_board(name: str, data_dir: Path = LEADERBOARDS):
    """The leaderboard ``name`` from ``data_dir``: the bundled copy by default.

    Another folder's ``<name>.csv`` is read as the bundled copy is: the same
    reader, without the auxiliary columns ``benchsel datasets`` leaves out
    (AlpacaEval's counts, Arena-Hard's rating interval, ...).
    """
    from benchsel.datasets import list_datasets, load_dataset
    from benchsel.io import read_scores
    from benchsel.matrix import DataWarning

    if _bundled(data_dir):
        return load_dataset(name)
    path = Path(data_dir) / f"{name}.csv"
    with warnings.catch_warnings():
        # As load_dataset: repeated model names (re-runs) are numbered on purpose.
        warnings.filterwarnings("ignore", ".*repeated model name", DataWarning)
        scores = read_scores(path)
    info = {d.name: d for d in list_datasets("leaderboard")}.get(name)
    if info is not None and info.auxiliary:
        keep = [j for j, item in enumerate(scores.items) if item not in info.auxiliary]
        scores = scores.subset(items=keep)
    return scores._replace(source=name)


def quiet_boards(names: str, data_dir: Path, k_max: int):
    """``(name, scores, k)`` for each comma-separated board of ``names``, ``k`` being
    ``k_max`` capped at the board's benchmarks less one, with the fits' convergence and
    data warnings silenced while the caller works on each board."""
    from benchsel import ConvergenceWarning
    from benchsel.matrix import DataWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", DataWarning)
        for name in names.split(","):
            scores = load_board(name, data_dir)
            yield name, scores, min(k_max, len(scores.items) - 1)


def board_argument(name: str, data_dir: Path = LEADERBOARDS) -> str:
    """What to pass as the CLI's ``DATA`` for ``name``: the bundled name, or the CSV's path.

    The CLI reads every column of a CSV it is given a path to, auxiliary ones
    included; only the bundled names leave those out.
    """
    return name if _bundled(data_dir) else str(Path(data_dir) / f"{name}.csv")
