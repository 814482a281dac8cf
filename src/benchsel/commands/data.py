"""``benchsel datasets``: the bundled leaderboards and per-question sets."""

from __future__ import annotations

import numpy as np

from .._text import text_table
from ..datasets import list_datasets, load_dataset
from ._render import _emit


def cmd_datasets(args) -> int:
    if args.name is not None:
        return _show_dataset(args)
    rows, payload = [], []
    for info in list_datasets():
        scores = load_dataset(info.name)
        m, n = scores.shape
        observed = round(100 * scores.observed_fraction, 1)
        rows.append([info.name, f"{m} x {n}", f"{observed}%", info.kind, info.source])
        payload.append(
            {"name": info.name, "kind": info.kind, "models": m, "items": n,
             "observed_percent": observed, "source": info.source}
        )
    _emit(args, {"datasets": payload},
          text_table(["name", "shape", "observed", "kind", "source"], rows))
    return 0


def _show_dataset(args) -> int:
    """``benchsel datasets NAME``: one bundled matrix's shape, items and models."""
    info = next((d for d in list_datasets() if d.name == args.name), None)
    scores = load_dataset(args.name)  # an unknown name: the error suggests close ones
    counts = scores.observed.sum(axis=0)
    payload = {"name": info.name, "kind": info.kind, "source": info.source,
               "models": scores.n_models, "items": scores.n_items,
               "observed_percent": round(100 * scores.observed_fraction, 1),
               "item_models": {item: int(c) for item, c in zip(scores.items, counts)},
               "model_names": list(scores.models)}
    what = "questions" if info.kind == "questions" else "benchmarks"
    lines = [f"{info.name}: {info.source}",
             f"{scores.n_models} models x {scores.n_items} {what}, "
             f"{payload['observed_percent']}% of the cells observed", ""]
    if info.kind == "questions":
        lines.append(f"questions {scores.items[0]} ... {scores.items[-1]} (doc ids 0.."
                     f"{scores.n_items - 1}); mean score "
                     f"{float(np.nanmean(scores.values)):.3f}")
    else:
        lines.append(text_table(["benchmark", "models with a score"],
                            [[item, int(c)] for item, c in zip(scores.items, counts)]))
    shown = 30
    more = (f", ... ({scores.n_models - shown} more; --json lists all)"
            if scores.n_models > shown else "")
    lines += ["", "models: " + ", ".join(scores.models[:shown]) + more]
    _emit(args, payload, "\n".join(lines))
    return 0
