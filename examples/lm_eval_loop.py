"""The README's lm-evaluation-harness walkthrough, run for real on replayed answers.

A user has lm-eval runs of past models (``--log_samples``) and a new
checkpoint. This script runs the same commands the README lists -- the real
``lm_eval`` CLI and the real ``benchsel`` CLI -- with one difference: instead
of loading weights, each "model" is lm-eval model class registered from
``tests/lmeval/fake_lm.py`` that answers every question exactly as a real
model did in a released per-question matrix (HELM MMLU by default, 83 models x
567 questions, bundled with benchsel). So the files are the ones
lm-eval writes, and the "true" full-task accuracy of each new model is known.

    python examples/lm_eval_loop.py                     # 60 past models, 3 new ones
    python examples/lm_eval_loop.py --frontier          # the 5 strongest are the new ones
    python examples/lm_eval_loop.py --sources 20 --new 2 --questions 200

It prints every command, then what the command printed, and at the end each
new model's true and predicted accuracy beside the plain mean of the answers
it gave to the planned questions. With ``--frontier`` the new models are the
strongest ones, every past model weaker: the usual case of a new checkpoint.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

import numpy as np

from benchsel.progress import Progress

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
# The per-question matrices bundled with the package (`benchsel datasets`).
DATA = Path(str(resources.files("benchsel.datasets").joinpath("data", "questions")))


def show(cmd: list[str], output: str) -> None:
    print("$ " + " ".join(cmd))
    print(output.rstrip() + "\n", flush=True)  # as it happens, also into a pipe or log


def benchsel(*args) -> str:
    cmd = ["benchsel", *map(str, args)]
    out = subprocess.run([sys.executable, "-m", "benchsel", *cmd[1:]], capture_output=True,
                         text=True)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    show(cmd, out.stdout + out.stderr)
    return out.stdout


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", default="helm_mmlu.npz",
                        help="per-question matrix to replay: a bundled one's file name "
                        "(helm_mmlu.npz, glue_rte.npz, ...) or a path")
    parser.add_argument("--sources", type=int, default=60, help="past models (default 60)")
    parser.add_argument("--new", type=int, help="new models (default 3; 5 with --frontier)")
    parser.add_argument("--frontier", action="store_true",
                        help="the new models are the strongest; the past ones a random "
                        "--sources of the others")
    parser.add_argument("--questions", type=int, help="only the first K questions")
    parser.add_argument("-n", type=int, default=50, help="questions to run (default 50)")
    parser.add_argument("--workdir", help="keep lm-eval's files here (default: a temp dir)")
    args = parser.parse_args(argv)

    try:
        import lm_eval  # noqa: F401
    except ImportError:
        # A plain `pip install .` does not bring the harness: say what does, in one line.
        raise SystemExit("lm_eval_loop.py runs the real lm-evaluation-harness, which is not "
                         "installed here: pip install 'lm_eval>=0.4.13' (or pip install "
                         "-e '.[test]')") from None
    from lmeval.fake_lm import write_replay_task
    from lmeval.run import format_model_args, run_many

    work = Path(args.workdir or tempfile.mkdtemp(prefix="benchsel-loop-"))
    work.mkdir(parents=True, exist_ok=True)
    with np.load(DATA / args.file, allow_pickle=False) as z:
        scores = z["scores"][:, : args.questions]
    matrix = work / "answers.npz"
    np.savez(matrix, scores=scores)
    task = "replay_" + Path(args.file).stem
    tasks = write_replay_task(work / "tasks", matrix, task).parent
    n_new = args.new or (5 if args.frontier else 3)
    if args.frontier:
        by_strength = np.argsort(scores.mean(axis=1), kind="stable")
        new = by_strength[len(scores) - n_new:]
        past = np.random.default_rng(0).permutation(by_strength[: len(scores) - n_new])
        past = past[: args.sources]
    else:
        rows = np.random.default_rng(0).permutation(len(scores))
        past, new = rows[: args.sources], rows[args.sources: args.sources + n_new]

    def lm_eval(models, out, samples=None) -> None:
        specs = [{"pretrained": f"model-{r:03d}", "replay": matrix, "row": r} for r in models]
        # A few batches, so that stderr shows how far the runs are and the time left.
        progress = Progress(f"lm_eval runs into {out.name}/")
        done = 0
        for batch in np.array_split(np.arange(len(specs)), min(len(specs), 6)):
            progress(done, len(specs))
            run_many(tasks, out, [specs[i] for i in batch], [task], samples=samples,
                     jobs=min(2, os.cpu_count() or 1))
            done += len(batch)
        progress(done, len(specs))
        progress.close()
        extra = f" --samples {samples}" if samples else ""
        show(["lm_eval", "--model", "benchsel-fake", "--model_args",
              format_model_args(specs[0]).replace(str(matrix), "answers.npz"), "--tasks", task,
              "--include_path", "tasks", "--output_path", out.name, "--log_samples" + extra],
             f"(and {len(specs) - 1} more models: {len(specs)} runs written to {out})")

    lm_eval(past, work / "runs")
    plan, samples = work / "plan.json", work / "samples.json"
    benchsel("plan", work / "runs", "--kind", "questions", "--lm-eval-task", task,
             "-n", args.n, "-o", plan, "--emit-lm-eval-samples", samples)
    lm_eval(new, work / "new", samples=samples)
    out = json.loads(benchsel("predict", "--plan", plan, "--observed", work / "new", "--json"))
    benchsel("predict", "--plan", plan, "--observed", work / "new")
    predictions = out.get("models") or [out]
    planned = json.loads(samples.read_text())[task]
    print(f"{'model':<12} {'true':>7} {'predicted':>9}  90% interval      "
          f"{'mean of its answers':>19}")
    errors = []
    for entry in predictions:
        row = int(entry["model"].split("-")[1])
        p = entry["predictions"][0]
        own = scores[row, planned].mean()
        errors.append((abs(p["mean"] - scores[row].mean()), abs(own - scores[row].mean())))
        print(f"{entry['model']:<12} {scores[row].mean():7.3f} {p['mean']:9.3f}  "
              f"[{p['low']:.3f}, {p['high']:.3f}]  {own:19.3f}")
    mae, own_mae = 100 * np.mean(errors, axis=0)
    print(f"\nmean |error|: predicted {mae:.2f} points, mean of the same answers "
          f"{own_mae:.2f} points")
    print(f"\nlm-eval's files are in {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
