"""Coverage of nominal 90% intervals, calibrated and not, in every benchmark-level protocol.

For each bundled leaderboard: the ``cv`` protocol (10 folds, holdout 0.1),
the ``extrapolation`` protocol (fit on the weakest 50% of models, predict
the strongest 30%) with MI selection, and the ``complete`` protocol (3
folds, half of each model's scores hidden) for every completion method.
Each cell is ``calibrated / uncalibrated`` coverage in %; cv and
extrapolation are averaged over k = 1..min(10, items - 1) and also shown at
k = 5. Boards a protocol cannot run on (one item; five models) say why.

    python benchmarks/calibration.py                    # every bundled board, ~15 min
    python benchmarks/calibration.py mteb helm_lite --jobs 4
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _data import LEADERBOARDS, add_data_dir, load_board

from benchsel.datasets import list_datasets
from benchsel.evaluation import cross_validate, evaluate_completion, extrapolate


def _pct(calibrated, raw) -> str:
    return f"{100 * calibrated:5.1f} / {100 * raw:5.1f}"


def _gaussian_rows(result, k_top: int) -> tuple[str, str]:
    rows = [r for r in result.rows if r.objective == "mi" and r.k <= k_top]
    mean = _pct(np.nanmean([r.interval_coverage for r in rows]),
                np.nanmean([r.uncalibrated_coverage for r in rows]))
    at5 = [r for r in rows if r.k == 5]
    return mean, (_pct(at5[0].interval_coverage, at5[0].uncalibrated_coverage) if at5 else "-")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("boards", nargs="*", help="leaderboards by bundled name (default: all)")
    ap.add_argument("--jobs", type=int, default=1, help="cv folds in parallel")
    ap.add_argument("--seed", type=int, default=0)
    add_data_dir(ap, LEADERBOARDS)
    args = ap.parse_args(argv)
    boards = args.boards or [d.name for d in list_datasets("leaderboard")]
    warnings.simplefilter("ignore")
    print("coverage of nominal 90% intervals, calibrated / uncalibrated (%)")
    print(f"{'board':14} {'protocol':14} {'mean k<=10':>15} {'k = 5':>15}  seconds")
    complete_lines = []
    for name in boards:
        scores = load_board(name, args.data_dir).cleaned()
        k_top = min(10, scores.n_items - 1)
        for protocol, run in (("cv", cross_validate), ("extrapolation", extrapolate)):
            if k_top < 1:
                print(f"{name:14} {protocol:14} not run: {scores.n_items} item, nothing to "
                      "predict")
                continue
            start = time.perf_counter()
            try:
                opts = dict(objectives=("mi",), k_max=k_top, seed=args.seed, predictor="gaussian")
                if protocol == "cv":
                    opts["n_jobs"] = args.jobs
                result = run(scores, **opts)
            except ValueError as err:
                print(f"{name:14} {protocol:14} not run: {err}")
                continue
            mean, at5 = _gaussian_rows(result, k_top)
            print(f"{name:14} {protocol:14} {mean:>15} {at5:>15}  "
                  f"{time.perf_counter() - start:6.1f}", flush=True)
        start = time.perf_counter()
        try:
            result = evaluate_completion(scores, seed=args.seed)
        except ValueError as err:
            complete_lines.append(f"{name:14} not run: {err}")
            continue
        cells = "  ".join(
            f"{r.method}={r.interval_coverage:.0f}/{r.uncalibrated_coverage:.0f}"
            for r in result.rows if np.isfinite(r.interval_coverage))
        complete_lines.append(f"{name:14} {cells}  ({time.perf_counter() - start:.0f} s)")
    print("\ncomplete protocol, per method: calibrated/uncalibrated coverage (%)")
    print("\n".join(complete_lines))


if __name__ == "__main__":
    main()
