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

The oracle is one rule of a wider kind: one multiplier per split, read off
the nested split and never smaller for a split whose nested need is
larger. The last line counts the cells in the band for the shipped
intervals and for the oracle, and the most that any rule of that kind
could put there (:func:`monotone_bound`, from each board split's *window*:
the multipliers that would put it in the band, :func:`band_window`).
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
        low, high = band_window(board["normalized"])
        rows.append({"k": board["k"], "cells": board["cells"], "nested_cells": nested["cells"],
                     "nested_coverage": nested["coverage"], "nested_need": nested["need"],
                     "coverage": board["coverage"], "need": board["need"],
                     "ratio": board["need"] / nested["need"], "oracle_coverage": oracle,
                     "band_low": low, "band_high": high})
    return rows


def band_window(normalized: np.ndarray) -> tuple[float, float]:
    """The multipliers of the methods' own standard deviations that put a split's
    coverage in the target band: ``[low, high)``, applied to every cell alike,
    score bounds ignored as for the need (``(nan, nan)`` when none does: the
    cells are too few or too alike)."""
    s = np.sort(normalized[np.isfinite(normalized)])
    n = s.size
    first = int(np.ceil(TARGET[0] * n - 1e-9))   # cells that must be covered
    last = int(np.floor(TARGET[1] * n + 1e-9))   # cells that may be covered
    if n == 0 or first > last or first < 1:
        return float("nan"), float("nan")
    low = s[first - 1] / Z
    high = s[last] / Z if last < n else float("inf")
    return (float(low), float(high)) if low < high else (float("nan"), float("nan"))


def monotone_bound(records: list[dict]) -> int:
    """The most cells any rule can put in the band that gives each split one
    multiplier, never smaller for a split whose nested need is larger.

    Splits in order of nested need; a dynamic programme over the multiplier
    levels (every window's ends): the best count so far ending at each level,
    carried up to higher levels (the multiplier may grow between splits) and
    raised by one where a split's window holds the level.
    """
    order = sorted(records, key=lambda r: r["nested_need"])
    ends = [r[key] for r in order for key in ("band_low", "band_high")]
    levels = np.unique([e for e in ends if np.isfinite(e)])
    best = np.zeros(levels.size, dtype=int)
    for r in order:
        best = np.maximum.accumulate(best)
        if np.isfinite(r["band_low"]):
            best = best + ((levels >= r["band_low"]) & (levels < r["band_high"]))
    return int(best.max(initial=0))


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
          f"{in_band('coverage')}, the oracle with the nested need {in_band('oracle_coverage')}; "
          f"at most {monotone_bound(records)} for any one multiplier per split that never "
          "shrinks as the nested need grows")
    if args.json:
        with open(args.json, "w") as fh:
            # An open-ended or empty window is null, not JSON's non-standard Infinity/NaN.
            json.dump([{k: v if not isinstance(v, float) or np.isfinite(v) else None
                        for k, v in r.items()} for r in records], fh, indent=1)


if __name__ == "__main__":
    main()
