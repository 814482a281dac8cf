"""Where a frontier or extrapolation split's coverage comes from: the targets by method and regime.

Usage: python benchmarks/coverage_groups.py [--boards merged,mteb] [--protocols frontier]
                                            [--k-max 5] [--json out.json] [--data-dir DIR]

On each split it fits what ``plan``/``predict`` ship on the sources, selects
``k`` benchmarks by MI and predicts every target from its selected scores, as
``coverage_noise.py`` does (:func:`coverage_noise.shipped_predictions`: the
default ``auto`` and its calibrated 90% intervals). The targets are
then grouped by what ``auto`` did with them: the method it chose, the
split it chose on (``random``, ``near``, ``strength``; ``none`` for a
target with no selected score) and the calibration regime (``inside``,
``outside``, ``unknown``). Per group it prints the cells, their coverage,
the multiplier applied (median and range), the multiplier that would have
covered 90% of the group's cells (their normalized residuals' 90th
percentile over 1.645) and the mean signed normalized residual (positive:
the targets scored above the prediction).

The coverage over all of a k's cells is the one ``benchsel evaluate
--protocol frontier`` (or ``extrapolation``) reports for MI.
"""

import argparse
import collections
import json

import numpy as np
from _data import load_board
from coverage_noise import (
    LEVEL,
    SPLITS,
    add_split_arguments,
    parse_split_arguments,
    shipped_predictions,
)
from scipy.special import ndtri

BOARDS = "mteb,merged,open_llm_v2,bigcodebench"


def groups(scores, protocol: str, k_max: int) -> list[dict]:
    """One record per k and group of targets (see the module docstring)."""
    z = ndtri(0.5 + LEVEL / 2)
    out = []
    split = SPLITS[protocol](scores.values)
    for k, given, p, truth, scored in shipped_predictions(scores, split, k_max):
        covered = (truth >= p.low) & (truth <= p.high)
        multiplier = np.array([c.get("multiplier", 1.0) for c in p.calibration])
        with np.errstate(divide="ignore", invalid="ignore"):  # given cells: std 0
            normalized = (truth - p.mean) / (p.std / multiplier[:, None])
        members = collections.defaultdict(list)
        for r, (choice, cal) in enumerate(zip(p.choices, p.calibration)):
            members[(choice["method"], choice["split"], cal.get("regime"))].append(r)
        for (method, chosen_on, regime), rows in members.items():
            cells = scored[rows]
            s = normalized[rows][cells]
            out.append({
                "k": k, "given": given, "method": method, "split": chosen_on, "regime": regime,
                "targets": len(rows), "cells": int(cells.sum()),
                "coverage": float(covered[rows][cells].mean()) if s.size else None,
                "multiplier": [float(np.median(multiplier[rows])),
                               float(multiplier[rows].min()), float(multiplier[rows].max())],
                "needed": float(np.quantile(np.abs(s), LEVEL) / z) if s.size else None,
                "bias": float(s.mean()) if s.size else None,
                "all_coverage": float(covered[scored].mean()),
            })
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_split_arguments(parser, BOARDS)
    args, boards, protocols = parse_split_arguments(parser)
    print("| board | protocol | k (all cells' coverage %) | method, chosen on, regime | targets "
          "| cells | coverage % | multiplier (range) | needed for 90% | mean normalized residual |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    records = []
    for board in boards:
        data = load_board(board, args.data_dir)
        for protocol in protocols:
            for g in groups(data, protocol, args.k_max):
                g.update(board=board, protocol=protocol)
                records.append(g)
                m = g["multiplier"]
                cov = "" if g["coverage"] is None else f"{100 * g['coverage']:.1f}"
                need = "" if g["needed"] is None else f"{g['needed']:.2f}"
                bias = "" if g["bias"] is None else f"{g['bias']:+.2f}"
                print(f"| {board} | {protocol} | {g['k']} ({100 * g['all_coverage']:.1f}) "
                      f"| {g['method']}, {g['split']}, {g['regime']} | {g['targets']} "
                      f"| {g['cells']} | {cov} | {m[0]:.2f} ({m[1]:.2f}-{m[2]:.2f}) "
                      f"| {need} | {bias} |", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(records, fh, indent=1)


if __name__ == "__main__":
    main()
