"""Reading a folder of lm-eval sample logs at scale: serial, joblib, Dask.

Generates a folder in lm-eval's layout (``<model>/results_<date>.json`` and
``<model>/samples_<task>_<date>.jsonl``), each line a copy of a line the real
harness wrote (``tests/data/lm_eval/0.4.8``: prompt, arguments, responses,
hashes, metric) with its own ``doc_id`` and a 0/1 ``acc`` drawn from a
two-parameter logistic model, then times building the models x questions
matrix the way ``benchsel coreset-eval FOLDER --lm-eval-task TASK`` does:
serially, with ``--jobs``, and on a local Dask cluster. Each run is a fresh
process; peak memory is its resident peak (and its worker processes' for
joblib). The projection for a larger folder scales the measured time per log.

    python benchmarks/scaling.py --folder /tmp/lm-eval-500 --models 500 --questions 20000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "tests" / "data" / "lm_eval" / "0.4.8"
TASK = "scale_mc"
DATE = "2026-01-01T00-00-00.000000"


def _templates() -> tuple[dict, dict]:
    results = next(TEMPLATE.rglob("results_*.json"))
    samples = next(results.parent.glob("samples_bs_mc_a_*.jsonl"))
    return json.loads(results.read_text()), json.loads(samples.read_text().splitlines()[0])


def generate(folder: Path, models: int, questions: int, seed: int) -> None:
    """Write the folder (skipped when it already holds every model)."""
    done = folder / ".complete"
    if done.exists() and done.read_text() == f"{models} {questions} {seed}":
        return
    results, line = _templates()
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=models)
    difficulty, slope = rng.normal(size=questions), rng.lognormal(0, 0.3, size=questions)
    start = time.perf_counter()
    for i in range(models):
        out = folder / f"model-{i:05d}"
        out.mkdir(parents=True, exist_ok=True)
        p = 1 / (1 + np.exp(-slope * (ability[i] - difficulty)))
        acc = (rng.random(questions) < p).astype(float)
        with (out / f"samples_{TASK}_{DATE}.jsonl").open("w") as fh:
            for j in range(questions):
                row = dict(line, doc_id=j, acc=acc[j])
                fh.write(json.dumps(row) + "\n")
        run = dict(results)
        run["results"] = {TASK: {"alias": TASK, "acc,none": float(acc.mean()),
                                 "acc_stderr,none": float(acc.std() / np.sqrt(questions))}}
        run["n-samples"] = {TASK: {"original": questions, "effective": questions}}
        run["configs"] = {TASK: {"task": TASK, "metric_list": [{"metric": "acc"}]}}
        run["versions"] = {TASK: 1.0}
        run["higher_is_better"] = {TASK: {"acc": True}}
        run["n-shot"] = {TASK: 0}
        run["groups"], run["group_subtasks"] = {}, {TASK: []}
        run["model_name"] = out.name
        run["config"] = dict(run.get("config") or {}, model_args=f"pretrained={out.name}")
        (out / f"results_{DATE}.json").write_text(json.dumps(run))
        if (i + 1) % 50 == 0:
            print(f"  generated {i + 1}/{models} models, {time.perf_counter() - start:.0f} s",
                  flush=True)
    done.write_text(f"{models} {questions} {seed}")


_CHILD = """
import json, resource, sys, time
from benchsel.lmeval import read_lm_eval
folder, mode, task = sys.argv[1], sys.argv[2], sys.argv[3]
start = time.perf_counter()
runs = read_lm_eval(folder)
listed = time.perf_counter() - start
models = runs.complete_models(task)
if mode == "serial":
    scores = runs.questions(task, models=models)
elif mode.startswith("jobs"):
    scores = runs.questions(task, models=models, n_jobs=int(mode[4:]))
else:
    from dask.distributed import Client, LocalCluster
    with LocalCluster(n_workers=int(mode[4:]), threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        scores = runs.questions(task, models=models, n_jobs=-1, backend="dask")
total = time.perf_counter() - start
self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"seconds": total, "listing": listed, "shape": list(scores.shape),
                  "observed": float(scores.observed_fraction),
                  "peak_mb": self_kb / 1024, "worker_peak_mb": child_kb / 1024}))
"""


def measure(folder: Path, mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(folder), mode, TASK],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--models", type=int, default=500)
    parser.add_argument("--questions", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--modes", default="serial,jobs2,dask2",
                        help="comma-separated: serial, jobsN, daskN (N workers)")
    parser.add_argument("--project", type=int, default=4500,
                        help="models of the folder to project the time for (default 4500)")
    args = parser.parse_args()
    print(f"generating {args.models} models x {args.questions} questions in {args.folder}")
    generate(args.folder, args.models, args.questions, args.seed)
    size = sum(f.stat().st_size for f in args.folder.rglob("*") if f.is_file())
    print(f"folder: {size / 2**30:.2f} GiB")
    print(f"{'mode':<10}{'wall s':>9}{'listing s':>11}{'peak MiB':>10}{'workers MiB':>13}  shape"
          "  (workers: ended worker processes only)")
    serial = None
    for mode in args.modes.split(","):
        r = measure(args.folder, mode)
        serial = r["seconds"] if mode == "serial" else serial
        print(f"{mode:<10}{r['seconds']:>9.1f}{r['listing']:>11.1f}{r['peak_mb']:>10.0f}"
              f"{r['worker_peak_mb']:>13.0f}  {r['shape'][0]} x {r['shape'][1]}", flush=True)
    if serial is not None:
        per_log = serial / args.models
        print(f"serial: {per_log:.2f} s per log of {args.questions} questions; "
              f"{args.project} models would take about {per_log * args.project / 60:.0f} min "
              f"serially, {per_log * args.project / 60 / 16:.1f} min on 16 workers and "
              f"{per_log * args.project / 60 / 64:.1f} min on 64 (reading scales with the "
              "workers until the shared file system saturates)")


if __name__ == "__main__":
    main()
