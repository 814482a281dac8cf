"""Real score matrices bundled with benchsel: leaderboards and per-question sets.

The files under ``datasets/data`` are copies of public leaderboards
(models x benchmarks, CSV) and of per-question results (models x questions,
1 = right, 0 = wrong, NPZ under ``data/questions``); see each entry's
``source``. ``load_dataset(name)`` reads one with the same reader a user's
file goes through; a per-question set's items are named ``<name>/<doc_id>``
(doc id = column position), as a plan's questions are.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..io import read_scores
from ..matrix import DataWarning, ScoreMatrix, did_you_mean

__all__ = ["KINDS", "DatasetInfo", "bundled_path", "load_dataset", "list_datasets",
           "resolve_data"]


#: The kinds of bundled data.
KINDS = ("leaderboard", "questions")


@dataclass(frozen=True)
class DatasetInfo:
    """A bundled matrix: its name, file, provenance, left-out columns and kind."""

    name: str
    filename: str
    source: str
    auxiliary: tuple[str, ...] = ()
    kind: str = "leaderboard"


def _questions(name: str, source: str) -> DatasetInfo:
    return DatasetInfo(name, f"questions/{name}.npz", source, kind="questions")


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
        # Per-question sets of the benchmark-prediction study (MIT licence).
        _questions("helm_openbookqa", "HELM Lite OpenbookQA (per question)"),
        _questions("helm_gsm8k", "HELM Lite GSM8K (per question)"),
        _questions("helm_math", "HELM Lite MATH (per question)"),
        _questions("helm_mmlu", "HELM Lite MMLU (per question)"),
        _questions("glue_mrpc", "GLUE MRPC (per question)"),
        _questions("glue_rte", "GLUE RTE (per question)"),
        _questions("openllm_arc_challenge", "Open LLM Leaderboard ARC-Challenge (per question)"),
        _questions("openllm_ifeval", "Open LLM Leaderboard v2 IFEval (per question)"),
        _questions("openllm_musr", "Open LLM Leaderboard v2 MuSR (per question)"),
        _questions("openllm_math_lvl5", "Open LLM Leaderboard v2 MATH Level 5 (per question)"),
    )
}


def list_datasets(kind: str | None = None) -> list[DatasetInfo]:
    """The bundled datasets in a stable order: all, or those of one ``kind`` (see KINDS)."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
    return [info for info in _DATASETS.values() if kind in (None, info.kind)]


def _path(info: DatasetInfo) -> Path:
    return Path(str(resources.files(__package__).joinpath("data", info.filename)))


def load_dataset(name: str) -> ScoreMatrix:
    """Load a bundled leaderboard or per-question set by name (see :func:`list_datasets`).

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
            f"unknown dataset {name!r}{did_you_mean([name], _DATASETS)}; bundled datasets "
            f"are: {', '.join(_DATASETS)} ('benchsel datasets' lists them)"
        ) from None
    with warnings.catch_warnings():
        # The Open LLM sets hold a few models evaluated twice; they are numbered
        # name#2, ... on purpose (each run is a source model of its own).
        warnings.filterwarnings("ignore", ".*repeated model name", DataWarning)
        scores = read_scores(_path(info))
    if info.kind == "questions":
        scores = scores._replace(items=[f"{name}/{j}" for j in range(scores.n_items)])
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
        f"{spec}: no such file, and not a bundled dataset{did_you_mean([str(spec)], _DATASETS)} "
        f"(bundled: {', '.join(_DATASETS)}; 'benchsel datasets' lists them)"
    )
