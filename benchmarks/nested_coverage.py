"""What a calibration fitted on the sources can know: the same split, nested within them.

Usage: python benchmarks/nested_coverage.py [--boards merged,mteb] [--protocols frontier]
                                            [--k-max 5] [--json out.json] [--data-dir DIR]

A calibration learns from the source models only. The most it can learn
about a frontier (or extrapolation) split is what the same split does
*within* the sources: their own strongest 10% (or 30%) predicted from the
rest. This script measures both splits with what ``plan``/``predict``
ship (:func:`coverage_noise.shipped_predictions`: the default ``auto``, MI
selection, calibrated 90% intervals) and prints per board, protocol and
``k``:

- the coverage of the shipped intervals, on the nested split and on the
  board's own split (the one ``frontier.py`` and ``evaluate --protocol``
  report);
- each split's *need*: the multiplier of the methods' own standard
  deviations that would cover 90% of its cells (the 90th percentile of
  ``|y - mean| / own std``, over 1.645; score bounds ignored);
- ``ratio``: the board's need over the nested need;
- the board split's coverage under the nested need: the intervals of an
  oracle that knew exactly what the sources' own version of the split
  needs, and applied it to every target.

Where that oracle leaves 85-95%, no calibration that learns the
multiplier from the sources alone can be in the band there. The last line
counts the cells in the band for the shipped intervals and for the
oracle.
"""

import argparse
import json

import numpy as np
from _data import load_board
from coverage_noise import (
    BOARDS,
    LEVEL,
    SPLITS,
    TARGET,
    add_split_arguments,
    parse_split_arguments,
    shipped_predictions,
)
from scipy.special import ndtri

Z = float(ndtri(0.5 + LEVEL / 2))


def split_figures(scores, split, k_max: int) -> list[dict]:
    """Per k: the shipped intervals' coverage, the need, and each cell's
    normalized residual against the methods' own standard deviation."""
    out = []
    for k, _, p, truth, scored in shipped_predictions(scores, split, k_max):
        multiplier = np.array([c.get("multiplier", 1.0) for c in p.calibration])[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):  # given cells: std 0
            normalized = np.abs(truth - p.mean) / (p.std / multiplier)
        s = normalized[scored]
        covered = (truth >= p.low) & (truth <= p.high)
        out.append({"k": k, "cells": int(s.size), "coverage": float(covered[scored].mean()),
                    "need": float(np.quantile(s, LEVEL) / Z), "normalized": s})
    return out


def compare(scores, protocol: str, k_max: int) -> list[dict]:
    """Per k, the board's split beside the same split nested within its sources."""
    make_split = SPLITS[protocol]
    outer = make_split(scores.values)
    sources = scores.subset(models=outer.train)
    inner = make_split(sources.values)
    rows = []
    for board, nested in zip(split_figures(scores, outer, k_max),
                             split_figures(sources, inner, k_max)):
        oracle = float(np.mean(board["normalized"] <= Z * nested["need"]))
        rows.append({"k": board["k"], "cells": board["cells"], "nested_cells": nested["cells"],
                     "nested_coverage": nested["coverage"], "nested_need": nested["need"],
                     "coverage": board["coverage"], "need": board["need"],
                     "ratio": board["need"] / nested["need"], "oracle_coverage": oracle})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_split_arguments(parser, BOARDS)
    args, boards, protocols = parse_split_arguments(parser)
    print("| board | protocol | k | nested: coverage % | nested need | board: coverage % "
          "| board need | ratio | board under the nested need % |")
    print("|---|---|---|---|---|---|---|---|---|")
    records = []
    for board in boards:
        scores = load_board(board, args.data_dir)
        k_max = min(args.k_max, len(scores.items) - 1)
        for protocol in protocols:
            try:
                rows = compare(scores, protocol, k_max)
            except ValueError as exc:  # too few sources for the nested split
                print(f"| {board} | {protocol} | not run: {exc} | | | | | | |", flush=True)
                continue
            for r in rows:
                print(f"| {board} | {protocol} | {r['k']} | {100 * r['nested_coverage']:.1f} "
                      f"| {r['nested_need']:.2f} | {100 * r['coverage']:.1f} | {r['need']:.2f} "
                      f"| {r['ratio']:.2f} | {100 * r['oracle_coverage']:.1f} |", flush=True)
                records.append({"board": board, "protocol": protocol, **r})

    def in_band(key):
        return sum(TARGET[0] <= r[key] <= TARGET[1] for r in records)

    print(f"\nIn {100 * TARGET[0]:.0f}-{100 * TARGET[1]:.0f}%, of {len(records)} cells: shipped "
          f"{in_band('coverage')}, the oracle with the nested need {in_band('oracle_coverage')}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(records, fh, indent=1)


if __name__ == "__main__":
    main()
