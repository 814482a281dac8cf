"""Real leaderboard matrices bundled with benchsel.

The files under ``datasets/data`` are copies of public leaderboards
(see each entry's ``source``); ``load_dataset(name)`` reads one with the same
reader a user's CSV goes through.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..io import read_scores
from ..matrix import ScoreMatrix

__all__ = ["DatasetInfo", "bundled_path", "load_dataset", "list_datasets", "resolve_data"]


@dataclass(frozen=True)
class DatasetInfo:
    """A bundled leaderboard: its name, file, provenance and left-out columns."""

    name: str
    filename: str
    source: str
    auxiliary: tuple[str, ...] = ()


_DATASETS = {
    info.name: info
    for info in (
        DatasetInfo("mteb", "mteb.csv", "MTEB English leaderboard (embedding models)"),
        DatasetInfo(
            "merged", "merged.csv",
            "9 LLM leaderboards merged by canonical model name (Smola 2026, Table 1)",
        ),
        DatasetInfo(
            "open_llm_v2", "open_llm_v2.csv",
            "Open LLM Leaderboard v2 (IFEval, BBH, MATH Lvl5, GPQA, MuSR, MMLU-Pro)",
        ),
        DatasetInfo("helm_lite", "helm_lite.csv", "HELM Lite"),
        DatasetInfo("livebench", "livebench.csv", "LiveBench"),
        DatasetInfo("bigcodebench", "bigcodebench.csv", "BigCodeBench"),
        DatasetInfo("wildbench", "wildbench.csv", "WildBench per-category scores"),
        DatasetInfo(
            "alpaca_eval", "alpaca_eval.csv", "AlpacaEval 2 (win-rate columns only)",
            auxiliary=("standard_error", "n_wins", "n_wins_base", "n_draws", "n_total",
                       "avg_length", "lc_standard_error"),
        ),
        DatasetInfo(
            "arena_hard", "arena_hard.csv", "Arena-Hard-Auto (score column only)",
            auxiliary=("rating_q025", "rating_q975", "avg_tokens"),
        ),
        DatasetInfo("mt_bench", "mt_bench.csv", "MT-Bench categories"),
    )
}


def list_datasets() -> list[DatasetInfo]:
    """The bundled datasets, in a stable order."""
    return list(_DATASETS.values())


def _path(info: DatasetInfo) -> Path:
    return Path(str(resources.files(__package__).joinpath("data", info.filename)))


def load_dataset(name: str) -> ScoreMatrix:
    """Load a bundled leaderboard by name (see :func:`list_datasets`).

    Auxiliary columns that are not benchmark scores (counts, standard errors,
    lengths) are left out.

    Raises
    ------
    ValueError
        If ``name`` is not a bundled dataset; the message lists the names.
    """
    try:
        info = _DATASETS[name]
    except KeyError:
        raise ValueError(
            f"unknown dataset {name!r}; bundled datasets are: {', '.join(_DATASETS)}"
        ) from None
    scores = read_scores(_path(info))
    if info.auxiliary:
        keep = [j for j, item in enumerate(scores.items) if item not in info.auxiliary]
        scores = scores.subset(items=keep)
    return scores._replace(source=name)


def bundled_path(name: str | os.PathLike) -> Path | None:
    """The file behind a bundled dataset name (None for anything else)."""
    info = _DATASETS.get(str(name))
    return None if info is None or Path(name).exists() else _path(info)


def resolve_data(spec: str | os.PathLike, **read_options) -> ScoreMatrix:
    """A CLI ``DATA`` argument: an existing path, else a bundled dataset name."""
    path = Path(spec)
    if path.exists():
        return read_scores(path, **read_options)
    if str(spec) in _DATASETS:
        return load_dataset(str(spec))
    raise FileNotFoundError(
        f"{spec}: no such file, and not a bundled dataset "
        f"(bundled: {', '.join(_DATASETS)})"
    )
