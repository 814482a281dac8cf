"""EGR of every coreset method on every per-question matrix, n = 50.

Usage: python benchmarks/coreset_eval_all.py [--data-dir DIR] [--trials T] [-n N]
       [--methods a,b] [--splits interpolation,extrapolation,frontier] [--jobs J]

For each split, prints a Markdown table with one row per method: its EGR
versus random-sampling (%, negative = better) on each file, then the
average EGR and the average coverage of its 90% intervals, calibrated and
the method's own (paper 002's Figures 2-3 report the same averages), then
the calibrated coverage per file, then each method's gap in points per
file (mean |true - predicted| x 100) with, when ``stratified-sampling`` is
among the methods, the change against it (%) -- the default's own answers'
weighted mean, the baseline the default must not lose to.
"""

import argparse
import warnings

import numpy as np
from _data import add_data_dir

from benchsel import DataWarning, read_scores
from benchsel.coreset.registry import METHODS
from benchsel.evaluation.questions import evaluate_coresets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(parser)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("-n", type=int, default=50)
    parser.add_argument("--methods", default="all")
    parser.add_argument("--splits", default="interpolation,extrapolation,frontier")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    methods = [m for m in (METHODS if args.methods == "all" else args.methods.split(","))
               if m != "random-sampling"]
    paths = sorted(args.data_dir.glob("*.npz"))
    for split in args.splits.split(","):
        egr = {m: [] for m in methods}
        cover = {m: [] for m in methods}
        raw_cover = {m: [] for m in methods}
        gap = {m: [] for m in methods}
        base = []
        for path in paths:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DataWarning)
                scores = read_scores(path)
            res = evaluate_coresets(scores, split=split, n=args.n, trials=args.trials,
                                    methods=methods, n_jobs=args.jobs)
            base.append(res.row("random-sampling").gap)
            for m in methods:
                egr[m].append(res.row(m).egr)
                cover[m].append(res.row(m).interval_coverage)
                raw_cover[m].append(res.row(m).uncalibrated_coverage)
                gap[m].append(res.row(m).gap)
        names = [p.stem.replace("openllm_", "ol_").replace("helm_", "h_") for p in paths]
        print(f"\n{split}, n = {args.n}, {args.trials} trials: EGR % per file\n")
        print("| method | " + " | ".join(names) + " | **average** | cov90 % | own cov90 % |")
        print("|---" * (len(names) + 4) + "|")

        def avg(values):
            return "-" if np.all(np.isnan(values)) else f"{np.nanmean(values):.0f}"

        for m in methods:
            cells = [f"{e:+.0f}" for e in egr[m]]
            print(f"| {m} | " + " | ".join(cells) + f" | **{np.mean(egr[m]):+.1f}** | "
                  f"{avg(cover[m])} | {avg(raw_cover[m])} |", flush=True)
        print("| *random gap (points)* | " + " | ".join(f"{b:.2f}" for b in base) + " | | | |")
        print(f"\n{split}: calibrated 90% coverage per file\n")
        for m in methods:
            print(f"| {m} | " + " | ".join("-" if np.isnan(c) else f"{c:.0f}" for c in cover[m])
                  + " |")
        print(f"\n{split}: gap (points) per file"
              + (", and its change against stratified-sampling (%)"
                 if "stratified-sampling" in gap else "") + "\n")
        for m in methods:
            cells = [f"{g:.2f}" for g in gap[m]]
            if "stratified-sampling" in gap and m != "stratified-sampling":
                cells = [f"{g:.2f} ({100 * (g / b - 1):+.0f})"
                         for g, b in zip(gap[m], gap["stratified-sampling"])]
            print(f"| {m} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
