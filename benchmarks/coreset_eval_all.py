"""EGR of every coreset method on every per-question matrix, both splits, n = 50.

Usage: python benchmarks/coreset_eval_all.py [DATA_DIR] [--trials T]

Prints one row per (file, split) with each method's EGR versus
random-sampling (%, negative = better) and 90% interval coverage, then the
averages over files (paper 002's Figures 2-3 report the same averages).
"""

import argparse
import warnings
from pathlib import Path

import numpy as np

from benchsel import DataWarning, read_scores
from benchsel.coreset.evaluate import SPLITS, evaluate_coresets
from benchsel.coreset.methods import METHODS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", nargs="?",
                        default=str(Path(__file__).parents[2] / "shared/data/questions"))
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("-n", type=int, default=50)
    args = parser.parse_args()
    methods = [m for m in METHODS if m != "random-sampling"]
    print("| file | split | random gap | " + " | ".join(methods) + " |")
    print("|---" * (3 + len(methods)) + "|")
    egr = {(s, m): [] for s in SPLITS for m in methods}
    cover = {(s, m): [] for s in SPLITS for m in methods}
    for path in sorted(Path(args.data_dir).glob("*.npz")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            scores = read_scores(path)
        for split in SPLITS:
            res = evaluate_coresets(scores, split=split, n=args.n, trials=args.trials)
            cells = []
            for m in methods:
                row = res.row(m)
                egr[split, m].append(row.egr)
                cover[split, m].append(row.interval_coverage)
                cells.append(f"{row.egr:+.0f}% / {row.interval_coverage:.0f}")
            base = res.row("random-sampling").gap
            print(f"| {path.stem} | {split} | {base:.2f} | " + " | ".join(cells) + " |", flush=True)
    for split in SPLITS:
        cells = [f"{np.mean(egr[split, m]):+.1f}% / {np.mean(cover[split, m]):.0f}"
                 for m in methods]
        print(f"| **average** | {split} | | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
