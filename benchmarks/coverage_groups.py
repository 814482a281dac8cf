"""Where a frontier or extrapolation split's coverage comes from: the targets by method and regime.

Usage: python benchmarks/coverage_groups.py [--boards merged,mteb] [--protocols frontier]
                                            [--k-max 5] [--json out.json] [--data-dir DIR]

On each split it fits what ``plan``/``predict`` ship (:class:`benchsel.GaussianModel`
with its defaults) on the sources, selects ``k`` benchmarks by MI with the
model's :meth:`~benchsel.GaussianModel.select`, and predicts every target
from its selected scores with :meth:`~benchsel.GaussianModel.predict`
(the default ``auto`` and its calibrated 90% intervals). The targets are
then grouped by what ``auto`` did with them: the method it chose, the
split it chose on (``random``, ``near``, ``strength``; ``none`` for a
target with no selected score) and the calibration regime (``inside``,
``outside``, ``unknown``). Per group it prints the cells, their coverage,
the multiplier applied (median and range), the multiplier that would have
covered 90% of the group's cells (their normalized residuals' 90th
percentile over 1.645) and the mean signed normalized residual (positive:
the targets scored above the prediction).

Cells are scored in score units and not clipped, so a group's coverage can
differ by a few tenths from ``benchsel evaluate``'s, which clips
standardized scores at ±10.
"""

import argparse
import collections
import json
import warnings

import numpy as np
from _data import LEADERBOARDS, add_data_dir, load_board
from scipy.special import ndtri

from benchsel import ConvergenceWarning, DataWarning, GaussianModel, ScoreMatrix
from benchsel.splits import frontier_split, strength_split

SPLITS = {"frontier": lambda v: frontier_split(v, 0.1, 5),
          "extrapolation": lambda v: strength_split(v, 0.5, 0.3)}
BOARDS = "mteb,merged,open_llm_v2,bigcodebench"


def groups(data, protocol: str, k_max: int) -> list[dict]:
    """One record per k and group of targets (see the module docstring)."""
    values, items = data.values, list(data.items)
    split = SPLITS[protocol](values)
    sources, targets = split.train, split.validation
    model = GaussianModel().fit(ScoreMatrix(values[sources], [f"m{i}" for i in sources], items))
    z90 = ndtri(0.95)
    out = []
    for k in range(1, k_max + 1):
        given = list(model.select(k, objective="mi").items)
        cols = [items.index(g) for g in given]
        new = ScoreMatrix(values[targets][:, cols], [f"t{i}" for i in targets], given)
        p = model.predict(new, level=0.9)
        truth = values[targets][:, [items.index(n) for n in p.items]]
        scored = ~np.isnan(truth) & ~p.observed
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
                "needed": float(np.quantile(np.abs(s), 0.9) / z90) if s.size else None,
                "bias": float(s.mean()) if s.size else None,
                "all_coverage": float(covered[scored].mean()),
            })
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default=BOARDS)
    parser.add_argument("--protocols", default=",".join(SPLITS))
    parser.add_argument("--k-max", type=int, default=5)
    parser.add_argument("--json")
    add_data_dir(parser, LEADERBOARDS)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.simplefilter("ignore", DataWarning)
    print("| board | protocol | k (all cells' coverage %) | method, chosen on, regime | targets "
          "| cells | coverage % | multiplier (range) | needed for 90% | mean normalized residual |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    records = []
    for board in args.boards.split(","):
        data = load_board(board, args.data_dir)
        for protocol in args.protocols.split(","):
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
