"""Precision and recall of ``benchsel audit`` on injected inflations; false alarms on clean data.

For each bundled board: the clean board is audited (every flagged cell is a
false alarm, as far as we know); then, in each of ``--trials`` trials, one
benchmark with at least 10 models gets +10 to +20 points (0.10-0.20 on
fraction-scale boards) on five random models that have it -- the size of a
contamination or gaming jump -- and the flags are compared with the injected
cells. Printed per threshold: false alarms on the clean board, recall and
precision on the injected boards.

    python benchmarks/audit.py                     # six bundled boards, 8 trials
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _data import LEADERBOARDS, add_data_dir, load_board

from benchsel.analyses.audit import audit

BOARDS = ("mteb", "merged", "open_llm_v2", "bigcodebench", "wildbench", "helm_lite")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("boards", nargs="*", default=list(BOARDS))
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--thresholds", default="4,5,6")
    ap.add_argument("--seed", type=int, default=0)
    add_data_dir(ap, LEADERBOARDS)
    args = ap.parse_args(argv)
    thresholds = [float(t) for t in args.thresholds.split(",")]
    warnings.simplefilter("ignore")
    print(f"{'board':14} {'cells':>6} {'threshold':>9} {'clean flags':>11} {'recall %':>9} "
          f"{'precision %':>11}  seconds/audit")
    for name in args.boards:
        scores = load_board(name, args.data_dir).cleaned()
        v = scores.values
        start = time.perf_counter()
        clean = audit(scores, threshold=1e-9)
        seconds = time.perf_counter() - start
        z_clean = np.array([abs(c.z) for c in clean.cells])
        points = 1.0 if np.nanmax(v) > 1.5 else 0.01
        rng = np.random.default_rng(args.seed)
        hits = {t: [0, 0, 0] for t in thresholds}  # found, flagged, injected
        for _ in range(args.trials):
            j = rng.choice(np.flatnonzero((~np.isnan(v)).sum(axis=0) >= 10))
            rows = rng.choice(np.flatnonzero(~np.isnan(v[:, j])), 5, replace=False)
            bumped = v.copy()
            bumped[rows, j] += rng.uniform(10, 20, size=5) * points
            result = audit(scores._replace(values=bumped), threshold=1e-9)
            injected = {(scores.models[r], scores.items[j]) for r in rows}
            for t in thresholds:
                flagged = {(c.model, c.benchmark) for c in result.cells if abs(c.z) > t}
                hits[t][0] += len(injected & flagged)
                hits[t][1] += len(flagged)
                hits[t][2] += len(injected)
        for t in thresholds:
            found, flagged, injected = hits[t]
            print(f"{name:14} {clean.n_cells:6d} {t:9g} {int((z_clean > t).sum()):11d} "
                  f"{100 * found / injected:9.0f} {100 * found / max(flagged, 1):11.0f}  "
                  f"{seconds:.2f}", flush=True)


if __name__ == "__main__":
    main()
