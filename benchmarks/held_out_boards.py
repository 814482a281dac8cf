"""The default predictor's intervals on boards its rules were tuned on, and on boards they were not.

Usage: python benchmarks/held_out_boards.py [--boards lowrank,merged] [--k-max 5]
                                            [--protocols frontier,extrapolation]
                                            [--json out.json] [--data-dir DIR]

Every rule of ``auto`` and of its calibration was chosen while looking at the
bundled leaderboards ("tuned on"); the synthetic boards of
:data:`benchsel.datasets.synthetic.SYNTHETIC_BOARDS` were never looked at
when a rule was made ("held out"). For each board, protocol (``frontier``:
the strongest 10% predicted from the rest; ``extrapolation``: the strongest
30% from the weakest 50%) and k = 1..k-max, MI selection, it prints what
``benchsel evaluate --protocol P --objectives mi`` reports of the shipped
default (``predict``'s own predictions and intervals): the scored cells, the
coverage of the 90% intervals (beside the column-spread baseline's), their
interval score (Gneiting-Raftery /
Winkler, standardized units, lower is better) beside the column-spread
baseline's (what ``predict`` says of a model it knows nothing of), and the
MAE beside the column mean's. A cell is marked ``under`` when it has at
least 40 scored cells and covers less than 85%, ``over`` above 95%, and
``wide`` when its interval score is worse than the baseline's.
"""

import argparse
import json
import time
import warnings

from _data import LEADERBOARDS, add_data_dir, load_board

from benchsel import ConvergenceWarning, DataWarning
from benchsel.datasets.synthetic import SYNTHETIC_BOARDS, synthetic_board
from benchsel.evaluation import extrapolate, frontier

PROTOCOLS = {"frontier": frontier, "extrapolation": extrapolate}
#: The bundled boards with enough benchmarks to select five from.
TUNED_ON = ("mteb", "merged", "open_llm_v2", "helm_lite", "bigcodebench", "wildbench")
#: Fewest scored cells for a coverage to be judged (the issue's targets).
MIN_CELLS = 40


def board(name: str, data_dir, synthetic=SYNTHETIC_BOARDS):
    """``(kind, scores)`` of a board: a synthetic one ``held out``, a bundled one (from
    ``data_dir``) ``tuned on``."""
    if name in synthetic:
        return "held out", synthetic_board(name=name, **synthetic[name])
    return "tuned on", load_board(name, data_dir)


def marks(row) -> str:
    """``under`` / ``over`` / ``wide`` for one row (see the module docstring)."""
    out = []
    if row["cells"] >= MIN_CELLS and row["coverage"] < 0.85:
        out.append("under")
    if row["cells"] >= MIN_CELLS and row["coverage"] > 0.95:
        out.append("over")
    if row["interval_score"] > row["baseline_interval_score"]:
        out.append("wide")
    return " ".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default=",".join((*SYNTHETIC_BOARDS, *TUNED_ON)))
    parser.add_argument("--protocols", default="frontier,extrapolation")
    parser.add_argument("--k-max", type=int, default=5)
    parser.add_argument("--json")
    add_data_dir(parser, LEADERBOARDS)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.simplefilter("ignore", DataWarning)
    out = []
    print("| board | kind | protocol | k | cells | coverage % | baseline | interval score | "
          "baseline | MAE | baseline | marks | s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.boards.split(","):
        kind, scores = board(name, args.data_dir)
        for protocol in args.protocols.split(","):
            start = time.perf_counter()
            result = PROTOCOLS[protocol](scores, objectives=("mi",), k_max=args.k_max)
            seconds = time.perf_counter() - start
            for r in result.rows:
                row = {"board": name, "kind": kind, "protocol": protocol, "k": r.k,
                       "cells": r.cells, "coverage": r.interval_coverage,
                       "interval_score": r.interval_score,
                       "baseline_interval_score": r.baseline_interval_score,
                       "baseline_coverage": r.baseline_coverage,
                       "mae": r.mae, "baseline_mae": r.baseline_mae, "seconds": seconds}
                row["marks"] = marks(row)
                out.append(row)
                print(f"| {name} | {kind} | {protocol} | {r.k} | {r.cells} | "
                      f"{100 * r.interval_coverage:.1f} | {100 * r.baseline_coverage:.1f} | "
                      f"{r.interval_score:.2f} | "
                      f"{r.baseline_interval_score:.2f} | {r.mae:.3f} | {r.baseline_mae:.3f} | "
                      f"{row['marks']} | {seconds:.1f} |", flush=True)
    judged = [r for r in out if r["cells"] >= MIN_CELLS]
    for kind in ("tuned on", "held out"):
        rows = [r for r in judged if r["kind"] == kind]
        if rows:
            under = sum(r["coverage"] < 0.85 for r in rows)
            over = sum(r["coverage"] > 0.95 for r in rows)
            wide = sum(r["interval_score"] > r["baseline_interval_score"] for r in rows)
            print(f"\n{kind}: {len(rows)} cells with >= {MIN_CELLS} scored; coverage < 85% in "
                  f"{under}, > 95% in {over}; interval score worse than the column spread's in "
                  f"{wide}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
