"""What the default predictor costs beside the Gaussian it builds on, as a user meets it.

Usage: python benchmarks/default_cost.py [--only predict,evaluate]
                                         [--boards merged-less-one,300x200,300x500]

Each command runs in a fresh process with a fresh cache folder and one BLAS
thread, as a user's first run on a board that is not bundled; the figures
are that process's CPU seconds (user + system) and its peak resident memory.

* ``predict``: on each board, ``select -k 5`` and the default ``predict`` of
  a new model run on three benchmarks, and their ratio (issue 52's target:
  at most 3). ``merged-less-one`` is MERGED without its first model (so not
  the bundled board, whose fits ship with the package), predicting that
  model from three of its scores; ``MxN`` boards are generated with five
  factors (80% of each column's variance), 30% of the cells missing.
* ``evaluate``: ``evaluate BOARD --protocol cv --objectives mi --k-max 5``
  with the default predictor and with ``--predictor gaussian`` (the paper's
  conditional, calibrated) on the same folds, and their ratio (target: at
  most 5), on MTEB and MERGED.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


def _run(args: list[str]) -> tuple[float, float]:
    """CPU seconds and peak resident MiB of ``benchsel ARGS`` in a fresh process."""
    with tempfile.TemporaryDirectory() as cache:
        os.chmod(cache, 0o700)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1", "BENCHSEL_CACHE_DIR": cache}
        child = subprocess.Popen([sys.executable, "-m", "benchsel", *args, "--quiet"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode:
            raise SystemExit(f"benchsel {' '.join(args)} failed:\n{child.stderr.read().decode()}")
        child.stderr.close()
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _generated(models: int, items: int, path: Path, seed: int = 0) -> dict[str, float]:
    """Five factors (80% of the variance) plus noise, 30% missing; a new model's scores."""
    rng = np.random.default_rng(seed)
    loadings = rng.normal(size=(5, items))
    traits = rng.normal(size=(models + 1, 5))
    signal = traits @ loadings
    noise = rng.normal(size=signal.shape) * np.sqrt(0.25 * signal.var(axis=0))
    scores = 50 + 10 * (signal + noise) / (signal + noise).std(axis=0)
    new, values = scores[0], scores[1:]
    values[rng.random(values.shape) < 0.3] = np.nan
    values[:, :3] = np.where(np.isnan(values[:, :3]), 50.0, values[:, :3])  # given ones shared
    lines = ["model," + ",".join(f"b{j}" for j in range(items))]
    lines += [f"m{i}," + ",".join("" if np.isnan(v) else f"{v:.3f}" for v in row)
              for i, row in enumerate(values)]
    path.write_text("\n".join(lines) + "\n")
    return {f"b{j}": round(float(new[j]), 3) for j in range(3)}


def _merged_less_one(path: Path) -> dict[str, float]:
    from benchsel import load_dataset

    data = load_dataset("merged")
    frame = data.to_frame()
    frame.iloc[1:].to_csv(path)
    first = frame.iloc[0].dropna()
    return {name: float(first[name]) for name in first.index[:3]}


def _observed(scores: dict[str, float]) -> str:
    return ",".join(f"{name}={value}" for name, value in scores.items())


def predict_rows(boards: list[str], tmp: Path) -> None:
    print("| board | `select -k 5` | default `predict` | ratio | peak memory (select / predict) |")
    print("|---|---|---|---|---|")
    for board in boards:
        path = tmp / f"{board}.csv"
        if board == "merged-less-one":
            given = _merged_less_one(path)
        else:
            models, items = (int(x) for x in board.split("x"))
            given = _generated(models, items, path)
        select, select_mib = _run(["select", str(path), "-k", "5"])
        predict, predict_mib = _run(["predict", str(path), "--observed", _observed(given)])
        print(f"| {board} | {select:.2f} s | {predict:.2f} s | {predict / select:.1f} | "
              f"{select_mib:.0f} / {predict_mib:.0f} MiB |", flush=True)


def evaluate_rows(boards: list[str]) -> None:
    print("| board | default | `--predictor gaussian` | ratio |")
    print("|---|---|---|---|")
    for board in boards:
        common = ["evaluate", board, "--protocol", "cv", "--objectives", "mi", "--k-max", "5"]
        default, _ = _run(common)
        paper, _ = _run([*common, "--predictor", "gaussian"])
        print(f"| {board} | {default:.1f} s | {paper:.1f} s | {default / paper:.1f} |",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="predict,evaluate")
    parser.add_argument("--boards", default="merged-less-one,300x200,300x500",
                        help="predict: merged-less-one and/or generated MODELSxBENCHMARKS")
    parser.add_argument("--evaluate-boards", default="mteb,merged")
    args = parser.parse_args()
    only = args.only.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        if "predict" in only:
            predict_rows(args.boards.split(","), Path(tmp))
        if "evaluate" in only:
            evaluate_rows(args.evaluate_boards.split(","))


if __name__ == "__main__":
    main()
