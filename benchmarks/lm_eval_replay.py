"""Question-level prediction of held-out models, end to end through the real lm-evaluation-harness.

What it measures
----------------
For each real per-question matrix (``scores``: models x questions, 0/1;
the bundled per-question sets, or ``--data-dir``), replayed through lm-eval 0.4.x by the
weightless model ``benchsel-fake`` (tests/lmeval/fake_lm.py: with
``replay=<npz>,row=<i>`` it answers doc ``q`` right iff ``scores[i, q] == 1``),
the whole user loop is run with real files and the real CLIs:

1. ``write_replay_task`` writes a multiple-choice lm-eval task with one doc per
   matrix column; model row ``i`` is ``--model_args pretrained=m<i>,replay=...,row=<i>``.
2. The models are split as benchsel's ``coreset-eval`` splits them
   (``benchsel.evaluation.questions.model_split``): ``interpolation`` = a random
   75% of the models are sources, the other 25% held out (redrawn for each of
   ``--trials`` trials, generator ``default_rng([seed, trial])``);
   ``extrapolation`` = sources are the weakest 50% by full-task accuracy,
   held out the strongest 30% (fixed, one trial); ``frontier`` = held out the
   strongest 10% (at least 5), every other model a source (fixed, one trial):
   a new checkpoint at or past the top of the models the plan was fitted on.
3. lm-eval (tests/lmeval/run.py ``run_many``, i.e. ``lm_eval run ... --log_samples``
   in subprocesses) runs every model that is a source in some split, in full,
   once, into a pool folder; each split's RUNS folder holds hard links to its
   source models' result and sample files (so each RUNS folder is exactly
   what lm-eval would have written had only those models been run).
4. ``benchsel plan RUNS --kind questions --lm-eval-task T -n N -o plan.json
   --emit-lm-eval-samples samples.json --json [--method M] --seed S`` (the real
   ``benchsel`` executable, a subprocess).
5. lm-eval runs every held-out model with ``--samples samples.json --log_samples``
   into a NEW folder; then ``benchsel predict --plan plan.json --observed NEW --json``
   (one call for all held-out models).
6. Compared with the truth, the held-out model's full-task accuracy = its npz
   row mean. Checks, any failure aborts the script: every pool model's full
   lm-eval ``acc`` equals its npz row mean (this includes at least
   ``--check-full`` held-out models per split, run in full for that purpose);
   every held-out model's sample log holds exactly the planned doc ids, with
   ``acc`` equal to the npz entries; the plan's stored source matrix equals the
   npz rows of the split's sources.

Printed per file, split and trial (and pooled over the interpolation trials):
numbers of source / held-out models, n (questions run per held-out model),
``MAE`` = mean |predicted - true| accuracy of the held-out models in accuracy
points (x100), ``rand MAE`` = mean |error| of random sampling (the mean of n
uniformly random questions of the same held-out model, without replacement,
averaged over ``--random-draws`` draws and over the held-out models),
``EGR % = 100 * (MAE / rand MAE - 1)`` (negative: better than random
sampling), ``own MAE`` = mean |error| of the plain mean of the very answers
the held-out model gave to the planned questions (what a user gets by
averaging the answers they ran; the default must not lose to it), ``cov90``
= % of held-out models whose true accuracy lies in predict's 90% interval
[low, high], ``flagged`` = held-out models predict flags as extrapolations,
``cov90 unflagged`` = coverage among the others,
``|CLI-mem|`` = the largest difference between the CLI's prediction and the
same method fitted in memory on the npz rows (``Calibrated(make_method(..,
n_questions=n, random_state=seed)).fit(values)``, as ``benchsel plan`` does)
-- 0 means lm-eval's files carry the matrix unchanged -- and wall seconds of
the held-out lm-eval runs
(``lm-eval s``), ``plan s`` and ``predict s`` (each a ``benchsel`` subprocess,
interpreter start included). A second table gives per file the full lm-eval
runs (models, wall seconds, seconds per model) shared by all splits.

How to run
----------
::

    python benchmarks/lm_eval_replay.py                       # the defaults below
    python benchmarks/lm_eval_replay.py --files helm_mmlu --trials 5 --json out.json
    python benchmarks/lm_eval_replay.py --files helm_gsm8k,openllm_arc_challenge \\
        --splits interpolation -n 100 --method random-sampling --keep --workdir /tmp/w

Defaults: ``--files helm_mmlu,helm_gsm8k`` (83 x 567 and 83 x 1000),
``--splits interpolation,extrapolation,frontier``, ``--trials 3``, ``-n 50``, the
CLI's default method, ``--jobs 2`` lm-eval subprocesses. Measured on 2 CPUs
(shared with another busy process): 8 min 20 s with two splits, of which
5.4 min are the 166 full lm-eval runs; 17 min with the frontier split too
and two other jobs on the machine. ``openllm_arc_challenge`` (218 x 1172) is left out of
the defaults to stay under ~10 minutes: lm-eval needs about 2.5 CPU-seconds
per model for its 1172 docs (it compiles its Jinja templates anew for every
doc), and its 216 full runs took 8 min; ``--files openllm_arc_challenge``
alone took 9 min 40 s, all three files together take about 18 minutes.
Names in ``--files`` are stems of npz files in ``--data-dir`` or paths.
Working files go to a temporary folder (inside ``--workdir`` if given),
deleted at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _data import QUESTIONS, add_data_dir

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from lmeval.fake_lm import write_replay_task  # noqa: E402
from lmeval.run import run_many  # noqa: E402

from benchsel.coreset.calibrated import Calibrated  # noqa: E402
from benchsel.coreset.registry import make_method  # noqa: E402
from benchsel.evaluation.questions import model_split  # noqa: E402
from benchsel.plan import load_plan  # noqa: E402

DEFAULT_FILES = "helm_mmlu,helm_gsm8k"
DATA_DIR = QUESTIONS
QUANTILE_LEVEL = 0.9


def benchsel_exe() -> list[str]:
    here = Path(sys.executable).parent / "benchsel"
    if here.exists():
        return [str(here)]
    found = shutil.which("benchsel")
    return [found] if found else [sys.executable, "-m", "benchsel"]


def run_benchsel(argv: list[str], notes: list[str]) -> tuple[str, float]:
    """Run the real ``benchsel`` CLI; return (stdout, wall seconds). Fails loudly."""
    t0 = time.perf_counter()
    proc = subprocess.run([*benchsel_exe(), *map(str, argv)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"benchsel {' '.join(map(str, argv))} failed (exit "
                           f"{proc.returncode}):\nstdout:\n{proc.stdout[-4000:]}\n"
                           f"stderr:\n{proc.stderr[-4000:]}")
    for line in proc.stderr.splitlines():
        line = line.strip()
        if line:
            notes.append(f"benchsel {argv[0]}: {line}")
    return proc.stdout, seconds


def model_name(row: int) -> str:
    return f"m{row}"


def model_args(npz: Path, row: int) -> dict:
    return {"pretrained": model_name(row), "replay": str(npz), "row": int(row)}


def one_file(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    if len(found) != 1:
        raise RuntimeError(f"expected one {pattern} in {folder}; found {found}")
    return found[0]


def link_runs(pool: Path, dest: Path, rows) -> None:
    """``dest/m<i>/`` = hard links (copies if linking fails) of ``pool/m<i>/``'s files."""
    for row in rows:
        src = pool / model_name(row)
        out = dest / model_name(row)
        out.mkdir(parents=True)
        for f in src.iterdir():
            try:
                os.link(f, out / f.name)
            except OSError:
                shutil.copy2(f, out / f.name)


def check_full_runs(pool: Path, task: str, values: np.ndarray, rows) -> int:
    """Every full run's lm-eval acc (results json) equals the npz row mean."""
    for row in rows:
        res = json.loads(one_file(pool / model_name(row), "results_*.json").read_text())
        acc = res["results"][task]["acc,none"]
        n = res["results"][task].get("sample_len", values.shape[1])
        if n != values.shape[1] or abs(acc - values[row].mean()) > 1e-9:
            raise RuntimeError(f"full lm-eval run of {model_name(row)}: acc {acc} over {n} "
                               f"docs, npz row mean {values[row].mean()} over "
                               f"{values.shape[1]}")
    return len(rows)


def check_sample_log(folder: Path, task: str, values: np.ndarray, row: int,
                     planned: list[int]) -> None:
    """The held-out model's sample log holds exactly the planned docs, scored as in the npz."""
    log = one_file(folder / model_name(row), f"samples_{task}_*.jsonl")
    got = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            got[int(rec["doc_id"])] = float(rec["acc"])
    if sorted(got) != sorted(planned) or len(planned) != len(set(planned)):
        raise RuntimeError(f"{log}: doc ids {sorted(got)[:10]}... are not the planned "
                           f"{sorted(planned)[:10]}... ({len(got)} vs {len(planned)})")
    bad = [d for d, a in got.items() if a != float(values[row, d])]
    if bad:
        raise RuntimeError(f"{log}: acc differs from the npz on doc ids {bad[:10]}")


def random_sampling_mae(values: np.ndarray, rows, n: int, draws: int, rng) -> float:
    """Mean |mean of n uniformly random questions - full mean| over draws and models (points)."""
    q = values.shape[1]
    sub = values[np.asarray(rows)]
    truth = sub.mean(axis=1)
    errs = []
    for _ in range(draws):
        idx = rng.choice(q, size=n, replace=False)
        errs.append(np.abs(sub[:, idx].mean(axis=1) - truth))
    return 100.0 * float(np.mean(errs))


def predictions_by_model(out: dict) -> dict:
    entries = out["models"] if "models" in out else [
        {"model": out["model"], "extrapolation": out.get("extrapolation", {}),
         "predictions": out["predictions"]}]
    result = {}
    for e in entries:
        if len(e["predictions"]) != 1:
            raise RuntimeError(f"predict gave {len(e['predictions'])} predictions for "
                               f"{e['model']} (expected 1): {e['predictions']}")
        result[e["model"]] = (e["predictions"][0], e.get("extrapolation") or {})
    return result


def in_memory(plan_path: Path, task: str, values: np.ndarray, held):
    """The plan's method fitted in memory on the npz rows (as benchsel plan fits it).

    Returns the plan's source rows, the npz rows of them, the plan's stored
    source matrix, the doc ids the in-memory fit selects, and its predictions
    (mean clipped into [0, 1], std) for the held-out rows.
    """
    part = load_plan(plan_path).tasks[task]
    src_rows = [int(m[1:]) for m in part.source.models]
    doc_ids = np.asarray(part.doc_ids)
    if list(part.source.items) != [f"{task}/{d}" for d in doc_ids]:
        raise RuntimeError("the plan's source columns are not '<task>/<doc id>' of its doc ids")
    src = values[np.ix_(src_rows, doc_ids)]
    # As benchsel plan fits it: the method, its error bars calibrated on the sources.
    fitted = Calibrated(make_method(part.method, n_questions=int(part.n),
                                    random_state=part.seed)).fit(src)
    selected = [int(doc_ids[j]) for j in fitted.selected_]
    mean, sd = fitted.predict(values[np.ix_(list(held), selected)])
    return (part.method, src_rows, src, np.asarray(part.source.values, float), selected,
            np.clip(np.asarray(mean, float), 0, 1), sd)


def run_split(args, ctx: dict, split: str, trial: int, src, held, notes: list[str]) -> dict:
    npz, task, values, pool, work = (ctx[k] for k in ("npz", "task", "values", "pool", "work"))
    tag = f"{split}-{trial}"
    base = work / tag
    runs, new = base / "runs", base / "new"
    link_runs(pool, runs, src)
    plan_path, samples_path = base / "plan.json", base / "samples.json"
    seed = args.seed + trial
    plan_argv = ["plan", runs, "--kind", "questions", "--lm-eval-task", task, "-n", args.n,
                 "-o", plan_path, "--emit-lm-eval-samples", samples_path, "--json",
                 "--seed", seed]
    if args.method:
        plan_argv += ["--method", args.method]
    summary_text, plan_s = run_benchsel(plan_argv, notes)
    summary = json.loads(summary_text)
    wanted = json.loads(samples_path.read_text())
    if set(wanted) != {task}:
        raise RuntimeError(f"samples.json names tasks {sorted(wanted)}, expected [{task!r}]")
    planned = [int(d) for d in wanted[task]]
    if summary["tasks"][task]["doc_ids"] != planned:
        raise RuntimeError("plan --json doc ids differ from the --emit-lm-eval-samples file")
    # The plan's source matrix must be the npz rows of exactly the split's sources.
    method, src_rows, src_vals, stored, selected, mem_mean, mem_sd = in_memory(
        plan_path, task, values, held)
    if sorted(src_rows) != sorted(int(r) for r in src):
        raise RuntimeError(f"plan sources {sorted(src_rows)[:8]}... are not the split's")
    if not np.array_equal(stored, src_vals):
        raise RuntimeError("the plan's stored source matrix differs from the npz rows")
    if sorted(selected) != sorted(planned):
        raise RuntimeError(f"in-memory fit chose {sorted(selected)[:8]}..., the plan "
                           f"{planned[:8]}...")

    t0 = time.perf_counter()
    run_many(ctx["tasks_dir"], new, [model_args(npz, r) for r in held], task,
             jobs=args.jobs, samples=samples_path, timeout=3600)
    lm_s = time.perf_counter() - t0
    for r in held:
        check_sample_log(new, task, values, r, planned)

    pred_text, predict_s = run_benchsel(["predict", "--plan", plan_path, "--observed", new,
                                         "--json"], notes)
    preds = predictions_by_model(json.loads(pred_text))
    if sorted(preds) != sorted(model_name(r) for r in held):
        raise RuntimeError(f"predict returned models {sorted(preds)[:8]}..., expected the "
                           f"{len(held)} held-out ones")

    per_model = []
    for i, r in enumerate(held):
        p, ex = preds[model_name(r)]
        if p["benchmark"] != task:
            raise RuntimeError(f"prediction for {p['benchmark']!r}, expected {task!r}")
        truth = float(values[r].mean())
        per_model.append({
            "row": int(r), "model": model_name(r), "true": truth, "mean": p["mean"],
            "std": p["std"], "low": p["low"], "high": p["high"],
            "inside": bool(p["low"] <= truth <= p["high"]),
            "flag": bool(ex.get("flag", False)),
            "in_memory_mean": float(mem_mean[i]),
            "in_memory_std": None if mem_sd is None else float(np.asarray(mem_sd)[i]),
            "planned_sample_mean": float(values[r, planned].mean()),
        })
    rng = np.random.default_rng([args.seed, trial, 2])
    rand = random_sampling_mae(values, held, len(planned), args.random_draws, rng)
    return summarize({
        "file": ctx["name"], "split": split, "trial": trial, "sources": len(src),
        "held_out": len(held), "n": len(planned), "method": method, "seed": seed,
        "planned_doc_ids": planned, "random_mae": rand, "lm_eval_seconds": lm_s,
        "plan_seconds": plan_s, "predict_seconds": predict_s, "models": per_model,
        "full_checked_held_out": int(sum(r in ctx["pool_rows"] for r in held)),
    })


def summarize(rec: dict) -> dict:
    ms = rec["models"]
    err = np.array([abs(m["mean"] - m["true"]) for m in ms])
    rec["mae"] = 100.0 * float(err.mean())
    rec["own_mae"] = 100.0 * float(np.mean([abs(m["planned_sample_mean"] - m["true"])
                                            for m in ms]))
    rec["egr"] = 100.0 * (rec["mae"] / rec["random_mae"] - 1) if rec["random_mae"] > 0 \
        else float("nan")
    rec["coverage"] = 100.0 * float(np.mean([m["inside"] for m in ms]))
    rec["flagged"] = int(sum(m["flag"] for m in ms))
    unflagged = [m["inside"] for m in ms if not m["flag"]]
    rec["coverage_unflagged"] = 100.0 * float(np.mean(unflagged)) if unflagged else float("nan")
    rec["cli_vs_memory"] = float(max(abs(m["mean"] - m["in_memory_mean"]) for m in ms))
    return rec


def pooled(recs: list[dict]) -> dict:
    """The interpolation trials together (MAE and coverage over all their held-out models)."""
    models = [m for r in recs for m in r["models"]]
    weights = np.array([r["held_out"] for r in recs], float)
    out = {
        "file": recs[0]["file"], "split": recs[0]["split"], "trial": "all",
        "sources": f"{np.mean([r['sources'] for r in recs]):.0f}",
        "held_out": len(models), "n": recs[0]["n"], "models": models,
        "random_mae": float(np.average([r["random_mae"] for r in recs], weights=weights)),
        "lm_eval_seconds": sum(r["lm_eval_seconds"] for r in recs),
        "plan_seconds": sum(r["plan_seconds"] for r in recs),
        "predict_seconds": sum(r["predict_seconds"] for r in recs),
    }
    return summarize(out)


def fmt_row(r: dict) -> str:
    def num(x, spec):
        return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else format(x, spec)
    cells = [r["file"], r["split"], str(r["trial"]), str(r["sources"]), str(r["held_out"]),
             str(r["n"]), num(r["mae"], ".2f"), num(r["own_mae"], ".2f"),
             num(r["random_mae"], ".2f"),
             num(r["egr"], "+.0f"), num(r["coverage"], ".0f"), str(r["flagged"]),
             num(r["coverage_unflagged"], ".0f"), num(r["cli_vs_memory"], ".1e"),
             num(r["lm_eval_seconds"], ".1f"), num(r["plan_seconds"], ".1f"),
             num(r["predict_seconds"], ".1f")]
    if r["trial"] == "all":
        cells = [f"**{c}**" for c in cells]
    return "| " + " | ".join(cells) + " |"


def main(argv=None) -> int:
    doc = __doc__.split("\n\n")[0]
    p = argparse.ArgumentParser(description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--files", default=DEFAULT_FILES,
                   help=f"comma-separated npz stems in --data-dir or paths (default "
                        f"{DEFAULT_FILES})")
    add_data_dir(p, DATA_DIR)
    p.add_argument("--splits", default="interpolation,extrapolation,frontier")
    p.add_argument("--trials", type=int, default=3,
                   help="interpolation trials (redrawn splits); extrapolation has one")
    p.add_argument("-n", type=int, default=50, help="questions per held-out model (plan -n)")
    p.add_argument("--method", default=None, help="plan --method (default: the CLI's default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                   help="lm-eval subprocesses run at once")
    p.add_argument("--random-draws", type=int, default=100,
                   help="draws of random questions for the random-sampling baseline")
    p.add_argument("--check-full", type=int, default=2,
                   help="held-out models per split run in full to check acc == row mean")
    p.add_argument("--workdir", default=None, help="parent of the temporary working folder")
    p.add_argument("--keep", action="store_true", help="keep the working folder")
    p.add_argument("--json", default=None, help="also write every record to this JSON file")
    args = p.parse_args(argv)

    start = time.perf_counter()
    if args.workdir:
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
    work_root = Path(tempfile.mkdtemp(prefix="lm_eval_replay-", dir=args.workdir))
    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    records, file_rows, notes = [], [], []
    try:
        for spec in [f.strip() for f in args.files.split(",") if f.strip()]:
            path = Path(spec)
            if not path.suffix:
                path = Path(args.data_dir) / f"{spec}.npz"
            path = path.resolve()
            values = np.asarray(np.load(path, allow_pickle=False)["scores"], dtype=float)
            if not np.isin(values, (0.0, 1.0)).all():
                raise RuntimeError(f"{path}: scores are not all 0/1")
            name = path.stem
            task = "replay_" + re.sub(r"[^A-Za-z0-9]+", "_", name).lower()
            work = work_root / name
            tasks_dir = work / "tasks"
            write_replay_task(tasks_dir, path, task)
            instances = []
            for split in splits:
                trials = range(args.trials) if split == "interpolation" else range(1)
                for t in trials:
                    src, held = model_split(values, split,
                                            np.random.default_rng([args.seed, t]))
                    instances.append((split, t, [int(x) for x in src], [int(x) for x in held]))
            pool_rows = set()
            for _, _, src, held in instances:
                pool_rows |= set(src) | set(held[: args.check_full])
            pool_rows = sorted(pool_rows)
            pool = work / "pool"
            print(f"[{name}] {values.shape[0]} x {values.shape[1]}: lm-eval in full for "
                  f"{len(pool_rows)} models ...", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            run_many(tasks_dir, pool, [model_args(path, r) for r in pool_rows], task,
                     jobs=args.jobs, timeout=3600)
            full_s = time.perf_counter() - t0
            checked = check_full_runs(pool, task, values, pool_rows)
            file_rows.append({"file": name, "shape": list(values.shape), "task": task,
                              "full_runs": len(pool_rows), "full_seconds": full_s,
                              "checked_acc_equals_row_mean": checked})
            ctx = {"npz": path, "task": task, "values": values, "pool": pool, "work": work,
                   "tasks_dir": tasks_dir, "name": name, "pool_rows": set(pool_rows)}
            file_recs = []
            for split, t, src, held in instances:
                print(f"[{name}] {split} trial {t}: {len(src)} sources, {len(held)} held out",
                      file=sys.stderr, flush=True)
                file_recs.append(run_split(args, ctx, split, t, src, held, notes))
            records += file_recs
            interp = [r for r in file_recs if r["split"] == "interpolation"]
            if len(interp) > 1:
                records.append(pooled(interp))
    finally:
        if args.keep:
            print(f"working files kept in {work_root}", file=sys.stderr)
        else:
            shutil.rmtree(work_root, ignore_errors=True)
    total = time.perf_counter() - start

    method = records[0]["method"] if records else args.method
    print(f"\n## benchsel question-level loop through lm-eval (replayed npz), n = {args.n}, "
          f"method {method}{' (CLI default)' if not args.method else ''}, "
          f"interpolation trials {args.trials}\n")
    print("MAE, own MAE (the plain mean of the same answers) and rand MAE in accuracy points; "
          "EGR % = 100*(MAE/rand MAE - 1); cov90 = % of held-out models inside predict's 90% "
          "interval; seconds are wall times.\n")
    print("| file | split | trial | sources | held out | n | MAE | own MAE | rand MAE | EGR % "
          "| cov90 % | flagged | cov90 unflagged % | \\|CLI-mem\\| | lm-eval s | plan s "
          "| predict s |")
    print("|---" * 17 + "|")
    for r in records:
        print(fmt_row(r))
    print("\nFull lm-eval runs (shared by every split of a file; each checked: results acc == "
          "npz row mean):\n")
    print("| file | models x questions | full runs | lm-eval s | s / model |")
    print("|---|---|---|---|---|")
    for f in file_rows:
        print(f"| {f['file']} | {f['shape'][0]} x {f['shape'][1]} | {f['full_runs']} | "
              f"{f['full_seconds']:.1f} | {f['full_seconds'] / max(f['full_runs'], 1):.2f} |")
    checked_held = sum(r.get("full_checked_held_out", 0) for r in records
                       if r["trial"] != "all")
    print(f"\nChecks passed: every full run's acc == npz row mean; every held-out sample log "
          f"== the planned doc ids with npz scores; plan sources == npz rows. Held-out "
          f"(split, model) pairs with a full run checked too: {checked_held}.")
    uniq = list(dict.fromkeys(notes))
    if uniq:
        print("\nbenchsel stderr (unique lines):")
        for line in uniq[:40]:
            print(f"    {line}")
        if len(uniq) > 40:
            print(f"    ... {len(uniq) - 40} more")
    print(f"\nTotal wall time: {total:.0f} s (jobs = {args.jobs})")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"args": vars(args), "files": file_rows, "records": records,
             "notes": uniq, "total_seconds": total}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
