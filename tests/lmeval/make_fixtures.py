"""Regenerate the committed output of old lm-eval versions in ``tests/data/lm_eval/<version>/``.

The files under ``tests/data/lm_eval/0.4.5/`` and ``tests/data/lm_eval/0.4.8/``
are exactly as the real lm-evaluation-harness of that version wrote them for
the weightless ``benchsel-fake`` model (:mod:`fake_lm`) on the local tasks of
``fake_lm.write_tasks`` (``bs_mc_a``, ``bs_mc_b`` and ``bs_gen`` 6 docs each, ``bs_gen`` with
filters ``strict`` and ``flex``; group ``bs_group`` = bs_mc_a + bs_mc_b). Nothing
is edited afterwards. Usage::

    python tests/lmeval/make_fixtures.py /tmp/venv-lmeval-0.4.5/bin/python tests/data/lm_eval/0.4.5
    python tests/lmeval/make_fixtures.py /tmp/venv-lmeval-0.4.8/bin/python tests/data/lm_eval/0.4.8

The first argument is the Python of a virtualenv holding that lm-eval (this
script itself needs only the standard library); the output folder's name must
be that lm-eval's version. The folder is emptied first. The venvs were made
with (CPU torch wheels from a local ``/opt/wheels`` find-links folder; drop
``--find-links`` to use the package index)::

    python -m venv /tmp/venv-lmeval-0.4.5
    /tmp/venv-lmeval-0.4.5/bin/pip install --find-links /opt/wheels \\
      "torch==2.13.0+cpu" "lm-eval==0.4.5" "transformers==4.45.2" "datasets==3.0.1" \\
      "accelerate==0.34.2" "peft==0.13.2" "evaluate==0.4.3" "numpy==1.26.4" \\
      "huggingface-hub==0.25.2" "pyarrow==17.0.0" "pandas==2.2.3" "scipy==1.14.1" \\
      "scikit-learn==1.5.2"
    python -m venv /tmp/venv-lmeval-0.4.8
    /tmp/venv-lmeval-0.4.8/bin/pip install --find-links /opt/wheels \\
      "torch==2.13.0+cpu" "lm-eval==0.4.8" "transformers==4.49.0" "datasets==3.3.2" \\
      "accelerate==1.4.0" "peft==0.14.0" "evaluate==0.4.3" "numpy==2.2.3" \\
      "huggingface-hub==0.29.1" "pyarrow==19.0.1" "pandas==2.2.3" "scipy==1.15.2" \\
      "scikit-learn==1.6.1"

Layout written (``OUT`` = the version folder; all runs with ``--log_samples``;
lm-eval's own ``--output_path`` handling decides the file names):

``runs/``
    ``fake-00`` ... ``fake-07`` (skills -2 ... 2 evenly spaced) on
    ``bs_group,bs_gen`` with ``--output_path OUT/runs``: one folder per model.
``nested/``
    ``fake-08`` with ``--output_path OUT/nested/fake-08`` (files in
    ``nested/fake-08/fake-08/``).
``jsonpath/``
    ``fake-09`` with ``--output_path OUT/jsonpath/out.json``. lm-eval 0.4.13
    would write ``out_<date>.json`` and the samples beside it; 0.4.5 and 0.4.8
    have no file-path variant and take ``out.json`` as a folder name:
    ``jsonpath/out.json/fake-09/results_<date>.json`` etc.
``tworuns/``
    ``fake-10`` run twice into ``OUT/tworuns``: first ``bs_mc_a``, then
    ``bs_mc_b`` (two results files in one model folder).
``partial/``
    ``fake-11`` with ``--limit 5`` on ``bs_group,bs_gen`` (``n-samples``
    effective 5 of 6 for each leaf task).

The task YAML and JSONL files and the ``datasets`` cache live in a temporary
folder (its absolute path is recorded in the results' ``configs``), and lm-eval
runs with that folder as working directory (so ``git_hash`` is null).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run  # noqa: E402 - stdlib only; builds the argvs and the environment

SIZES = {"bs_mc_a": 6, "bs_mc_b": 6, "bs_gen": 6}  # small: the sample logs hold the prompts
SKILLS = [-2 + 4 * i / 7 for i in range(8)]
FULL = ["bs_group", "bs_gen"]


def lm_eval_version(python: str) -> str:
    return subprocess.run(
        [python, "-c", "import importlib.metadata as m; print(m.version('lm_eval'))"],
        check=True, capture_output=True, text=True).stdout.strip()


def jobs(out: Path, tasks: Path) -> dict[str, list[list[str]]]:
    """Argvs per layout folder (each folder's argvs run in one subprocess, in order)."""
    def argv(output, name, skill, task_list, limit=None):
        return run.lm_eval_argv(tasks, output, {"pretrained": name, "skill": f"{skill:.2f}"},
                                task_list, limit=limit, log_samples=True)

    return {
        "runs": [argv(out / "runs", f"fake-{i:02d}", s, FULL) for i, s in enumerate(SKILLS)],
        "nested": [argv(out / "nested" / "fake-08", "fake-08", 0.3, FULL)],
        "jsonpath": [argv(out / "jsonpath" / "out.json", "fake-09", -0.4, FULL)],
        "tworuns": [argv(out / "tworuns", "fake-10", 0.8, ["bs_mc_a"]),
                    argv(out / "tworuns", "fake-10", 0.8, ["bs_mc_b"])],
        "partial": [argv(out / "partial", "fake-11", 1.1, FULL, limit=5)],
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("python", help="the python of a venv with the old lm-eval")
    ap.add_argument("out", type=Path, help="output folder, named after that lm-eval version")
    args = ap.parse_args(argv)
    version = lm_eval_version(args.python)
    out = args.out.resolve()
    if out.name != version:
        sys.exit(f"{args.python} has lm-eval {version}; the output folder must be named so, "
                 f"not {out.name!r}")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix=f"benchsel-lmeval-{version}-") as tmp:
        tasks = Path(tmp) / "tasks"
        subprocess.run(
            [args.python, "-c",
             "import json, sys; sys.path.insert(0, sys.argv[1]); import fake_lm; "
             "fake_lm.write_tasks(sys.argv[2], json.loads(sys.argv[3]))",
             str(HERE), str(tasks), json.dumps(SIZES)], check=True)
        for folder, argvs in jobs(out, tasks).items():
            spec = Path(tmp) / f"{folder}.json"
            spec.write_text(json.dumps({"argvs": argvs, "builtin_tasks": False}), encoding="utf-8")
            proc = subprocess.run([args.python, str(HERE / "run.py"), str(spec)], cwd=tmp,
                                  env=run._env(tasks, None), stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(f"lm-eval {version} failed on {folder}/:\n"
                         f"{(proc.stdout + proc.stderr)[-6000:]}")
            print(f"{version}: {folder}/ done")
    leftovers = [p for p in out.rglob("*") if p.is_file()
                 and not (p.suffix == ".json" or p.name.endswith(".jsonl"))]
    if leftovers:
        sys.exit(f"unexpected files in {out}: {leftovers}")


if __name__ == "__main__":
    main()
