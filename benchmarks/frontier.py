"""Benchmark-level figures where a new checkpoint usually is: at the frontier.

Usage: python benchmarks/frontier.py [--boards mteb,merged] [--predictor gaussian|auto]
                                     [--k-max 5] [--json out.json] [--data-dir DIR]

For every bundled board that can be split, prints R^2 and calibrated 90%
interval coverage of MI and random selections at k = 1..k-max under two
protocols: ``frontier`` (fit on every model but the strongest 10%, at least
5, predict those; :func:`benchsel.evaluation.frontier`) and
``extrapolation`` (fit on the weakest 50%, predict the strongest 30%).
``--predictor`` is as ``benchsel evaluate --predictor``: ``gaussian`` (the
paper's conditional mean; default) or ``auto`` (what ``predict`` uses).
"""

import argparse
import json
import time
import warnings

from _data import LEADERBOARDS, add_data_dir, load_board

from benchsel import ConvergenceWarning
from benchsel.datasets import list_datasets
from benchsel.evaluation import extrapolate, frontier

PROTOCOLS = {"frontier": frontier, "extrapolation": extrapolate}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default=",".join(d.name for d in list_datasets("leaderboard")))
    parser.add_argument("--predictor", default="gaussian")
    parser.add_argument("--k-max", type=int, default=5)
    parser.add_argument("--json")
    add_data_dir(parser, LEADERBOARDS)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    out = []
    print(f"predictor {args.predictor}; R² / calibrated coverage % at k = 1..{args.k_max}\n")
    print("| board | protocol | objective | R² | coverage % | s |")
    print("|---|---|---|---|---|---|")
    for board in args.boards.split(","):
        data = load_board(board, args.data_dir)
        for name, protocol in PROTOCOLS.items():
            start = time.perf_counter()
            try:
                res = protocol(data, objectives=("mi", "random"), k_max=args.k_max,
                               predictor=args.predictor)
            except ValueError as err:
                print(f"| {board} | {name} | | not run: {err} | | |")
                continue
            seconds = time.perf_counter() - start
            for obj in ("mi", "random"):
                rows = [r for r in res.rows if r.objective == obj]
                r2 = " ".join(f"{r.r2_mean:.3f}" for r in rows)
                cov = " ".join(f"{100 * r.interval_coverage:.1f}" for r in rows)
                print(f"| {board} | {name} | {obj} | {r2} | {cov} | {seconds:.0f} |", flush=True)
                out.append({"board": board, "protocol": name, "objective": obj,
                            "r2": [r.r2_mean for r in rows],
                            "coverage": [r.interval_coverage for r in rows]})
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
