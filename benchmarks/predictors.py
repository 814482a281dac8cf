"""R^2 and interval coverage of MI selection with each predictor (Smola 2026's protocol).

Usage: python benchmarks/predictors.py [--boards mteb,merged] [--predictors gaussian,gp,auto]
       [--seeds 3] [--k-max 5] [--objectives mi,random] [--extrapolation] [--jobs 2]
       [--data-dir DIR]

The cv protocol of `benchsel evaluate` (10 folds, 10% holdout, seeds 0..S-1)
with ``--predictor`` set: the selection is the same for every predictor,
only what predicts the unselected benchmarks changes. Prints one Markdown
row per board, predictor and k: R^2 (mean over seeds of the per-seed mean
over folds) and calibrated 90% coverage, per objective; with
``--extrapolation`` also the extrapolation split (one split, no seeds;
``--seeds 0`` runs only that). For
``auto`` it prints how often each method was chosen.
"""

import argparse
import time
import warnings
from collections import Counter

import numpy as np
from _data import LEADERBOARDS, add_data_dir, load_board

from benchsel import ConvergenceWarning
from benchsel.evaluation import cross_validate, extrapolate


def _rows(name, predictor, results, objectives, k_max, label):
    for k in range(1, k_max + 1):
        if any((o, k) not in {(r.objective, r.k) for r in res.rows}
               for res in results for o in objectives):
            break  # fewer items than k_max + 1
        cells = []
        for o in objectives:
            r2 = np.mean([r.row(o, k).r2_mean for r in results])
            cov = np.mean([r.row(o, k).interval_coverage for r in results])
            cells.append(f"{r2:.3f} | {100 * cov:.1f}")
        print(f"| {name} | {label} | {predictor} | {k} | " + " | ".join(cells) + " |", flush=True)
    if predictor == "auto":
        picked = Counter(m for r in results for per_obj in r.choices.values()
                         for fold in per_obj for m in fold if m)
        print("|  |  | auto chose: " + ", ".join(f"{m} {n}x" for m, n in picked.most_common())
              + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default="mteb,merged")
    parser.add_argument("--predictors", default="gaussian,gp,auto")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--k-max", type=int, default=5)
    parser.add_argument("--objectives", default="mi,random")
    parser.add_argument("--extrapolation", action="store_true")
    parser.add_argument("--jobs", type=int, default=1)
    add_data_dir(parser, LEADERBOARDS)
    args = parser.parse_args()
    objectives = tuple(args.objectives.split(","))
    warnings.simplefilter("ignore", ConvergenceWarning)
    head = " | ".join(f"{o} R² | {o} cov90 %" for o in objectives)
    print(f"| board | protocol | predictor | k | {head} |")
    print("|---" * (4 + 2 * len(objectives)) + "|")
    for name in args.boards.split(","):
        data = load_board(name, args.data_dir)
        for predictor in args.predictors.split(","):
            start = time.perf_counter()
            results = [cross_validate(data, objectives=objectives, k_max=args.k_max,
                                      predictor=predictor, seed=seed, n_jobs=args.jobs)
                       for seed in range(args.seeds)]
            if results:
                _rows(name, predictor, results, objectives, args.k_max,
                      f"cv, {args.seeds} seeds ({time.perf_counter() - start:.0f} s)")
            if args.extrapolation:
                start = time.perf_counter()
                res = extrapolate(data, objectives=objectives, k_max=args.k_max,
                                  predictor=predictor)
                _rows(name, predictor, [res], objectives, args.k_max,
                      f"extrapolation ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
