"""A total question budget spread by variance reduction vs split equally, on the HELM tasks.

The four HELM Lite per-question files (GSM8K, MATH, MMLU, OpenbookQA) share
their 83 models in the same order. Each trial holds out a random quarter of
the models, plans on the rest with ``benchsel.plan.plan_questions`` once with
``total=BUDGET`` (allocated, docs/experiments/question-level.md) and once with
``n=BUDGET/4`` per task, predicts each held-out model's four task scores from
the planned questions, and scores the sum over tasks of squared errors (the
quantity the allocation minimizes), the mean absolute error and the 90%
interval coverage.

    python benchmarks/allocation.py                  # budget 120, 10 trials
    python benchmarks/allocation.py --budget 200 --trials 20 --method random-sampling
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _data import QUESTIONS, add_data_dir

from benchsel import read_scores
from benchsel.plan import plan_questions

DATA = QUESTIONS  # --data-dir
FILES = {"gsm8k": "helm_gsm8k.npz", "math": "helm_math.npz", "mmlu": "helm_mmlu.npz",
         "openbookqa": "helm_openbookqa.npz"}


def load() -> dict:
    out = {}
    for task, file in FILES.items():
        s = read_scores(DATA / file)
        out[task] = s._replace(items=[f"{task}/{j}" for j in range(s.n_items)])
    return out


def evaluate(plan, tasks, rows) -> tuple[np.ndarray, np.ndarray]:
    """(R, T) errors and coverage of the plan's predictions for ``rows``."""
    names = next(iter(tasks.values())).models  # the same models in every task
    observed = {names[i]: {t: {d: tasks[t].values[i, d] for d in p.selected}
                           for t, p in plan.tasks.items()} for i in rows}
    pred = plan.predict_questions(observed)
    truth = np.column_stack([tasks[t].values[rows].mean(axis=1) for t in pred.items])
    return pred.mean - truth, (pred.low <= truth) & (truth <= pred.high)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=120)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--method", default="default")
    add_data_dir(parser)
    args = parser.parse_args(argv)
    global DATA
    DATA = args.data_dir
    tasks = load()
    m = next(iter(tasks.values())).n_models
    rows: dict = {"allocated": [], "equal": []}
    cover: dict = {"allocated": [], "equal": []}
    sizes = []
    start = time.perf_counter()
    for trial in range(args.trials):
        order = np.random.default_rng(trial).permutation(m)
        source, held = order[: int(0.75 * m)], order[int(0.75 * m):]
        src = {t: s.subset(models=source) for t, s in tasks.items()}
        for kind, spec in (("allocated", dict(total=args.budget)),
                           ("equal", dict(n=args.budget // len(tasks)))):
            plan = plan_questions(src, method=args.method, seed=trial, **spec)
            if kind == "allocated":
                sizes.append([plan.tasks[t].n for t in tasks])
            err, cov = evaluate(plan, tasks, held)
            rows[kind].append(err)
            cover[kind].append(cov)
    print(f"budget {args.budget} questions over {', '.join(tasks)}; method {args.method}; "
          f"{args.trials} trials x {m - int(0.75 * m)} held-out models; "
          f"{time.perf_counter() - start:.0f} s")
    print("allocated questions per task (mean over trials): "
          + ", ".join(f"{t} {v:.1f}" for t, v in zip(tasks, np.mean(sizes, axis=0))))
    print("| split | sum of squared errors per model (x1e-3) | MAE (points) | 90% coverage |")
    print("|---|---|---|---|")
    for kind in rows:
        err = np.concatenate(rows[kind])
        cov = np.concatenate(cover[kind])
        print(f"| {kind} | {1e3 * np.mean((err**2).sum(axis=1)):.2f} | "
              f"{100 * np.mean(np.abs(err)):.2f} | {100 * cov.mean():.1f}% |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
