"""Figures behind two learned question-level methods' settings (issue 12).

* ``--lasso``: how many non-zero weights the lasso coreset has on every
  split of every shared per-question file (n = 50, 10 trials per split);
  paper 002's lasso should have exactly n.
* ``--double-optimize``: double-optimize's mean gap on the interpolation
  splits of four files (5 trials, n = 50) for a grid of Adam step sizes,
  with and without early stopping -- how its default was chosen.

    python benchmarks/learned_checks.py --lasso --double-optimize
"""

from __future__ import annotations

import argparse

import numpy as np
from _data import QUESTIONS, add_data_dir

from benchsel._parallel import one_blas_thread
from benchsel.coreset.double_optimize import DoubleOptimize
from benchsel.coreset.lasso import LassoCoreset
from benchsel.evaluation.questions import model_split

SHARED = QUESTIONS  # --data-dir
TUNING_FILES = ("glue_mrpc", "helm_gsm8k", "helm_math", "openllm_arc_challenge")


def lasso_support(trials: int = 10, n: int = 50) -> None:
    print(f"non-zero lasso weights, n = {n}, {trials} trials per split")
    for path in sorted(SHARED.glob("*.npz")):
        values = np.load(path)["scores"]
        for split in ("interpolation", "extrapolation"):
            counts = []
            for t in range(trials):
                src, _ = model_split(values, split, np.random.default_rng([0, t]))
                method = LassoCoreset(n_questions=n, random_state=0).fit(values[src])
                counts.append(int(np.count_nonzero(method.coef_)))
            print(f"  {path.stem:<24}{split:<15}{counts}", flush=True)


def double_optimize_steps(trials: int = 5, n: int = 50) -> None:
    grid = [(lr, holdout) for holdout in (0.2, 0.0) for lr in (0.0003, 0.001, 0.003)]
    gaps = {g: [] for g in grid}
    for name in TUNING_FILES:
        values = np.load(SHARED / f"{name}.npz")["scores"]
        for t in range(trials):
            src, tgt = model_split(values, "interpolation", np.random.default_rng([0, t]))
            truth = values[tgt].mean(axis=1)
            for lr, holdout in grid:
                method = DoubleOptimize(n, random_state=np.random.default_rng([0, t, 1]), lr=lr,
                                        holdout=holdout).fit(values[src])
                mean, _ = method.predict(values[np.ix_(tgt, method.selected_)])
                gaps[lr, holdout].append(np.abs(mean - truth).mean() * 100)
    print(f"double-optimize, interpolation, mean gap over {', '.join(TUNING_FILES)} "
          f"({trials} trials, n = {n})")
    for (lr, holdout), values in gaps.items():
        print(f"  lr {lr:<7} early stopping {'on ' if holdout else 'off'}  {np.mean(values):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lasso", action="store_true")
    parser.add_argument("--double-optimize", action="store_true")
    add_data_dir(parser)
    args = parser.parse_args()
    global SHARED
    SHARED = args.data_dir
    with one_blas_thread(user_api=None):
        if args.lasso:
            lasso_support()
        if args.double_optimize:
            double_optimize_steps()


if __name__ == "__main__":
    main()
