"""Run the real lm-evaluation-harness CLI on the weightless ``benchsel-fake`` model.

Each call starts one Python subprocess that imports :mod:`fake_lm` (registering
the model) and then calls lm-eval's own entry point
``lm_eval.__main__.cli_evaluate`` with ``sys.argv`` set, once per model:

* :func:`run_lm_eval` - one model;
* :func:`run_many` - several models one after another in the same subprocess,
  optionally split over ``jobs`` subprocesses. Starting Python and importing
  lm-eval costs about 1.5-2 s per subprocess, one model's evaluation of the
  four tasks about 0.3-0.5 s (12 models: about 5-7 s in one subprocess).

Unless ``builtin_tasks=True``, lm-eval's TaskManager indexes only
``--include_path`` (see :func:`_skip_builtin_task_index`); indexing the
~14,000 built-in task YAMLs would add about 7 s to every model.

The subprocess runs offline (``HF_DATASETS_OFFLINE=1``, ``HF_HUB_OFFLINE=1``)
with the ``datasets`` cache in ``<tasks_dir>/.hf_cache`` unless ``env`` says
otherwise. ``python run.py SPEC.json`` runs the argv lists (without program
name) of ``{"argvs": [...], "builtin_tasks": false}`` in order.

The argvs are written for 0.4.13 (``run`` subcommand first); under an older
lm-eval without subcommands (0.4.5, 0.4.8; used by ``make_fixtures.py``) the
subprocess drops the leading ``run``. ``--samples`` exists only in newer ones.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL_NAME = "benchsel-fake"  # as registered by fake_lm


def format_model_args(model_args: str | Mapping[str, object]) -> str:
    """``{"pretrained": "m1", "skill": 0.5}`` -> ``"pretrained=m1,skill=0.5"``."""
    if isinstance(model_args, str):
        return model_args
    return ",".join(f"{k}={v}" for k, v in model_args.items())


def lm_eval_argv(
    tasks_dir,
    output_path,
    model_args: str | Mapping[str, object],
    tasks: str | Iterable[str],
    *,
    samples: str | os.PathLike | Mapping[str, Sequence[int]] | None = None,
    limit: int | float | None = None,
    log_samples: bool = True,
    extra: Sequence[str] = (),
) -> list[str]:
    """The argv (without program name) of one ``lm-eval run`` of ``benchsel-fake``.

    ``samples`` is a mapping (sent as a JSON string), a JSON string or a path to
    a JSON file; lm-eval 0.4.13's ``--samples`` takes either of the last two.
    """
    tasks = [tasks] if isinstance(tasks, str) else list(tasks)
    argv = ["run", "--model", MODEL_NAME, "--model_args", format_model_args(model_args),
            "--tasks", ",".join(tasks), "--include_path", str(Path(tasks_dir).resolve()),
            "--output_path", str(Path(output_path).resolve())]
    if log_samples:
        argv.append("--log_samples")
    if samples is not None:
        if isinstance(samples, Mapping):
            samples = json.dumps({k: [int(i) for i in v] for k, v in samples.items()})
        argv += ["--samples", str(samples)]
    if limit is not None:
        argv += ["--limit", str(limit)]
    return argv + [str(x) for x in extra]


def _env(tasks_dir, env: Mapping[str, str] | None) -> dict[str, str]:
    out = dict(os.environ)
    out.update({
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_CACHE": str(Path(tasks_dir).resolve() / ".hf_cache"),
        "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
        "TQDM_DISABLE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "LMEVAL_LOG_LEVEL": "WARNING",
    })
    out.update(env or {})
    return out


def _spawn(argvs: list[list[str]], tasks_dir, env, builtin_tasks: bool) -> subprocess.Popen:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
        json.dump({"argvs": argvs, "builtin_tasks": bool(builtin_tasks)}, fh)
    log = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "run.py"), fh.name],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        env=_env(tasks_dir, env),
    )
    proc.benchsel_files = (log, fh.name)  # type: ignore[attr-defined]
    return proc


def _finish(proc: subprocess.Popen, timeout: float | None) -> str:
    log, spec = proc.benchsel_files  # type: ignore[attr-defined]
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.seek(0)
    out = log.read()
    log.close()
    os.unlink(spec)
    if proc.returncode != 0:
        raise RuntimeError(f"lm-eval failed or timed out (exit {proc.returncode}):\n"
                           f"{out[-6000:]}")
    return out


def run_lm_eval(
    tasks_dir,
    output_path,
    model_args: str | Mapping[str, object],
    tasks: str | Iterable[str],
    *,
    samples=None,
    limit=None,
    log_samples: bool = True,
    extra: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    builtin_tasks: bool = False,
    timeout: float | None = 600,
) -> str:
    """Run lm-eval once on ``benchsel-fake``; return its console output.

    ``output_path`` is a folder (files land in ``<folder>/<sanitized
    pretrained>/``) or a ``.json`` path (see FORMATS.md). Raises
    ``RuntimeError`` with the output's tail when lm-eval fails.
    """
    return run_many(tasks_dir, output_path, [model_args], tasks, samples=samples, limit=limit,
                    log_samples=log_samples, extra=extra, env=env,
                    builtin_tasks=builtin_tasks, timeout=timeout)[0]


def run_many(
    tasks_dir,
    output_path,
    models: Iterable[str | Mapping[str, object]],
    tasks: str | Iterable[str],
    *,
    jobs: int = 1,
    samples=None,
    limit=None,
    log_samples: bool = True,
    extra: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    builtin_tasks: bool = False,
    timeout: float | None = 600,
) -> list[str]:
    """Run lm-eval for each model args in ``models``, sequentially in ``jobs`` subprocesses.

    Every model should have its own ``pretrained=`` so each gets its own
    output folder. ``timeout`` applies to each subprocess in turn. Returns
    each subprocess's console output.
    """
    tasks = [tasks] if isinstance(tasks, str) else list(tasks)
    argvs = [lm_eval_argv(tasks_dir, output_path, m, tasks, samples=samples, limit=limit,
                          log_samples=log_samples, extra=extra) for m in models]
    jobs = max(1, min(int(jobs), len(argvs)))
    procs = [_spawn(argvs[i::jobs], tasks_dir, env, builtin_tasks) for i in range(jobs)]
    return [_finish(p, timeout) for p in procs]


def _skip_builtin_task_index() -> None:
    """Make lm-eval's TaskManager index only ``--include_path`` (``include_defaults=False``).

    The CLI always builds a TaskManager over lm-eval's ~14,000 built-in task
    YAMLs (about 7 s per call); ``include_defaults`` is the TaskManager's own
    switch for leaving them out, which the CLI does not expose. Nothing else
    changes: the CLI, task loading, evaluation and file writing are lm-eval's.
    """
    try:
        from lm_eval.tasks.manager import TaskManager
    except ImportError:  # lm-eval <= 0.4.8 or so: TaskManager lives in lm_eval.tasks
        from lm_eval.tasks import TaskManager

    original = TaskManager.__init__

    def init(self, *args, include_defaults: bool = False, **kwargs):
        original(self, *args, include_defaults=include_defaults, **kwargs)

    TaskManager.__init__ = init


def main() -> None:
    """Run each argv of the JSON spec file ``sys.argv[1]`` through ``cli_evaluate``.

    The spec is ``{"argvs": [[...], ...], "builtin_tasks": false}``.
    """
    spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    sys.path.insert(0, str(HERE))
    import fake_lm  # noqa: F401 - registers benchsel-fake
    from lm_eval.__main__ import cli_evaluate

    if not spec.get("builtin_tasks", False):
        _skip_builtin_task_index()
    # lm-eval before the subcommand CLI (lm_eval._cli, about 0.4.10) takes the
    # options directly: ``lm_eval --model ...``; drop a leading "run" there.
    subcommands = importlib.util.find_spec("lm_eval._cli") is not None
    for argv in spec["argvs"]:
        if not subcommands and argv[:1] == ["run"]:
            argv = argv[1:]
        sys.argv = ["lm-eval", *argv]
        cli_evaluate()


if __name__ == "__main__":
    main()
