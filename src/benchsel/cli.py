"""The ``benchsel`` command line: argument parsing only.

Every command is a thin call into the library. Human-readable tables go to
stdout by default, ``--json`` prints machine-readable JSON instead, and
``--output FILE`` writes it atomically to a file. Exit codes: 0 success,
1 failure (bad data, unknown names), 2 usage error.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import warnings
from pathlib import Path

import numpy as np

from . import __version__
from .bounds import parse_bounds
from .coreset.evaluate import SPLITS, evaluate_coresets, resolve_n
from .coreset.methods import DEFAULT_METHOD, METHODS, PAPER_REFITS, make_method
from .datasets import bundled_path, list_datasets, load_dataset, resolve_data
from .evaluation import (
    SCORINGS,
    cross_validate,
    evaluate_completion,
    extrapolate,
    normality,
    oracle_subsets,
    spectrum,
)
from .gaussian import CALIBRATIONS, COVARIANCE_METHODS, GaussianModel
from .io import parse_observed, read_costs, read_model_order, write_text_atomic
from .lmeval import is_lm_eval_path, parse_per_task, read_lm_eval, write_samples
from .matrix import DataWarning, ScoreMatrix
from .plan import load_plan, plan_benchmarks, plan_mixed, plan_questions
from .prediction import COMPLETERS
from .progress import Progress
from .selection import OBJECTIVES
from .selection.greedy import describe_certificate
from .transforms import TRANSFORMS

__all__ = ["main", "build_parser"]


# ------------------------------------------------------------------ helpers
def _names(text: str | None) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()] if text else []


def _item_names(text: str | None, items) -> list[str]:
    """Comma-separated item names, where a name may itself hold commas.

    lm-eval columns are ``<task>/<metric>,<filter>``: pieces are joined back
    while they form a known name, and a bare task name stands for its one
    column. Unknown names pass through (the model rejects them by name).
    """
    known = set(items)
    pieces, out, i = _names(text), [], 0
    while i < len(pieces):
        for j in range(len(pieces), i, -1):
            name = ",".join(pieces[i:j])
            if name in known:
                break
        else:
            name, j = _as_items([pieces[i]], items)[0], i + 1
        out.append(name)
        i = j
    return out


def _costs(args, items) -> dict[str, float] | None:
    """``--costs``, a bare lm-eval task name standing for its one column."""
    if not args.costs:
        return None
    costs = read_costs(args.costs)
    return dict(zip(_as_items(list(costs), items), costs.values()))


def _table(headers: list[str], rows: list[list]) -> str:
    def fmt(v) -> str:
        if isinstance(v, float):
            return "-" if np.isnan(v) else f"{v:.4g}"
        return str(v)

    cells = [[str(h) for h in headers]] + [[fmt(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _emit(args, payload: dict, text: str) -> None:
    # allow_nan=False: a NaN that slipped through is an error, never invalid JSON.
    as_json = args.json or getattr(args, "format", None) == "json"
    _emit_text(args, json.dumps(payload, indent=2, allow_nan=False) + "\n" if as_json
               else text + "\n")


def _emit_text(args, text: str) -> None:
    if args.output:
        write_text_atomic(args.output, text, protect=_inputs(args))
    else:
        sys.stdout.write(text)


class _UsageError(ValueError):
                  """A usage error found after parsing (exit code 2)."""


def _inputs(args) -> list:
    """Files the command reads, which ``--output`` must never overwrite."""
    paths = [getattr(args, name, None) for name in ("data", "costs", "plan", "order",
                                                    "questions")]
    paths += list(getattr(args, "observed", None) or [])
    data = getattr(args, "data", None)
    if data is not None and bundled_path(data) is not None:
        paths.append(bundled_path(data))
    return paths


def _read_options(args) -> dict:
    opts = {}
    for name in ("input_format", "sep", "model_column", "item_column", "score_column"):
        value = getattr(args, name, None)
        if value is not None:
            opts["format" if name == "input_format" else name] = value
    return opts


def _load(args):
    """The DATA argument as a score matrix: a file, a bundled name, or lm-eval output."""
    if _is_lm_eval(args.data):
        runs = read_lm_eval(args.data)
        task = getattr(args, "lm_eval_task", None)
        if task:
            if "," in task:
                raise ValueError(f"--lm-eval-task {task!r}: this command reads one task; "
                                 "'benchsel plan --level questions' takes several")
            return _task_questions(runs, task, args)
        return runs.leaderboard(metric=parse_per_task(args.lm_eval_metric, "--lm-eval-metric"),
                                filter=parse_per_task(args.lm_eval_filter, "--lm-eval-filter"))
    if getattr(args, "lm_eval_task", None) and not str(args.data).lower().endswith(".npz"):
        raise ValueError(f"--lm-eval-task needs DATA to be a folder of lm-eval runs; "
                         f"{args.data} is not one")
    return resolve_data(args.data, **_read_options(args))


def _is_lm_eval(data) -> bool:
    return bundled_path(data) is None and is_lm_eval_path(data)


def _task_questions(runs, task: str, args):
    """Complete runs of ``task`` as models x questions; partial runs are named and left out."""
    runs.check_tasks([task])
    complete = runs.complete_models(task)
    partial = [m for (m, t), r in runs.runs.items()
               if t == task and r.partial and (m, t) not in runs.full_runs]
    if partial:
        warnings.warn(
            f"{runs.source}: left out {len(partial)} partial run(s) of {task!r} (fewer "
            f"documents than the task has; observations for 'predict --plan', not source "
            f"models): {', '.join(partial)}", DataWarning, stacklevel=2)
    if not complete:
        raise ValueError(f"{runs.source}: no model ran every question of {task!r} with "
                         "--log_samples; a question-level source needs full runs")
    metric = parse_per_task(args.lm_eval_metric, "--lm-eval-metric")
    filt = parse_per_task(args.lm_eval_filter, "--lm-eval-filter")
    return runs.questions(task, models=complete,
                          metric=metric.get(task) if isinstance(metric, dict) else metric,
                          filter=filt.get(task) if isinstance(filt, dict) else filt)


def _fit(args, scores) -> GaussianModel:
    return GaussianModel(covariance=args.covariance, transform=args.transform,
                         calibration=args.calibration,
                         bounds=getattr(args, "bounds", "infer")).fit(scores)


# ----------------------------------------------------------------- commands
def cmd_datasets(args) -> int:
    rows, payload = [], []
    for info in list_datasets():
        scores = load_dataset(info.name)
        m, n = scores.shape
        observed = round(100 * scores.observed_fraction, 1)
        rows.append([info.name, f"{m} x {n}", f"{observed}%", info.source])
        payload.append(
            {"name": info.name, "models": m, "items": n, "observed_percent": observed,
             "source": info.source}
        )
    _emit(args, {"datasets": payload}, _table(["name", "shape", "observed", "source"], rows))
    return 0


def cmd_select(args) -> int:
    scores = _load(args)
    if args.axis == "models":
        scores = scores.transpose()
    model = _fit(args, scores)
    costs = _costs(args, scores.items)
    if args.budget is not None and costs is None:
        raise ValueError("--budget needs --costs FILE")
    sel = model.select(
        args.k,
        objective=args.objective,
        include=_item_names(args.include, scores.items),
        exclude=_item_names(args.exclude, scores.items),
        costs=costs,
        budget=args.budget,
        target_residual=args.target_residual,
        seed=args.seed,
    )
    payload = sel.to_dict()
    payload["axis"] = args.axis
    payload["dataset"] = str(args.data)
    frequency = None
    if args.bootstrap:
        from .evaluation.bootstrap import selection_frequency

        progress = Progress("resamples", enabled=False if args.quiet else None)
        try:
            shares, skipped = selection_frequency(
                scores, args.k, bootstrap=args.bootstrap, seed=args.seed, progress=progress,
                model_options=dict(covariance=args.covariance, transform=args.transform,
                                   calibration="none"),
                select_options=dict(
                    objective=args.objective, include=_item_names(args.include, scores.items),
                    exclude=_item_names(args.exclude, scores.items), costs=costs,
                    budget=args.budget, target_residual=args.target_residual,
                    seed=args.seed))
        finally:
            progress.close()
        frequency = {name: shares.get(name, 0.0) for name in sel.items}
        payload["frequency"] = frequency
        payload["bootstrap"] = {"resamples": args.bootstrap, "skipped": skipped}
    est = model.estimate_
    if est.method.startswith("em"):
        payload["em"] = {"iterations": est.n_iter, "converged": est.converged}
    rows = [
        [t + 1, name, float(g), float(r), *([frequency[name]] if frequency else [])]
        for t, (name, g, r) in enumerate(zip(sel.items, sel.gains, sel.residual_variance))
    ]
    what = "model" if args.axis == "models" else "benchmark"
    head = (
        f"{len(sel.items)} {what}s selected from {scores.n_items} by {sel.objective} "
        f"({sel.strategy}, covariance: {sel.covariance})"
    )
    if sel.cost is not None:
        head += f", total cost {sel.cost:g}"
    if sel.stopped_by == "no positive gain":
        head += "; stopped: the next pick would add no information"
    head += "\n" + describe_certificate(sel.certificate)
    text = head + "\n" + _table(["#", what, "gain", "residual_var",
                                 *(["selected in resamples"] if frequency else [])], rows)
    _emit(args, payload, text)
    return 0


def cmd_predict(args) -> int:
    if args.format in _INPUT_FORMATS:  # predict's --format named the input's before
        warnings.warn(f"--format {args.format} names the input's format: use --input-format "
                      f"{args.format} (predict's --format is its output's)", FutureWarning,
                      stacklevel=2)
        args.input_format, args.format = args.format, "table"
    if (args.plan is None) == (args.data is None):
        raise _UsageError("predict takes DATA (fit now) or --plan PLAN.json (fitted "
                          "already), exactly one of them")
    pred, level = _prediction(args)
    if args.format == "csv":
        _emit_text(args, _prediction_csv(pred))
        return 0
    # A question-level plan lists every task, those run in full as observed.
    full_runs = level == "questions"
    payload = pred.to_dict(include_observed=full_runs)
    blocks = []
    pct = f"{100 * args.level:g}%"
    what = "task" if level == "questions" else "model" if args.axis == "models" else "benchmark"
    for i, name in enumerate(pred.models):
        records = pred.records(i, include_observed=full_runs)
        rows = [[r["benchmark"] + (" (run in full)" if r.get("observed") else ""), r["mean"],
                 r["std"], r["low"], r["high"]] for r in records]
        given = int(pred.observed[i].sum())
        head = (f"{name}: {len(rows) - given} task score(s) predicted from the planned "
                "questions" + (f", {given} task(s) run in full" if given else "")
                if level == "questions"
                else f"{name}: {len(rows)} predicted from {given} observed")
        if pred.choices:
            choice = pred.choices[i]
            margin = choice["margin"]
            head += (f"\n  method: {choice['method']} (auto: best of a cross-validation on "
                     f"{choice['cells']} held-out source cells"
                     + (f", MedAPE {margin:.2f} points below the runner-up)"
                        if margin is not None else ")"))
        cal = pred.calibration[i] if pred.calibration else {}
        if cal.get("method") == "conformal":
            head += ("\n  intervals: calibrated on held-out source models, "
                     f"x{cal['multiplier']:.2f} ({cal['regime']} the source models' "
                     "strength range)")
        ex = pred.extrapolation[i]
        if ex["flag"]:
            head += ("\n  WARNING: extrapolation -- this model lies outside what the source "
                     "models cover; predictions are less reliable:")
            head += "".join(f"\n  - {reason}" for reason in ex.get("reasons", []))
        blocks.append(
            head + "\n"
            + _table([what, "mean", "std", f"low ({pct})", f"high ({pct})"], rows)
        )
    _emit(args, payload, "\n\n".join(blocks))
    return 0


def _prediction(args):
    """(Prediction, plan level) of ``--observed``: from ``--plan``, or a fit of DATA."""
    if args.plan is not None:
        if getattr(args, "axis", "benchmarks") != "benchmarks":
            raise _UsageError("--axis models transposes DATA; a plan is already fitted")
        return _predict_from_plan(args)
    scores = _load(args)
    dual = getattr(args, "axis", "benchmarks") == "models"
    if dual:
        # The dual: a new benchmark's scores on a few reference models predict
        # its scores on every other model.
        scores = scores.transpose()
    model = _fit(args, scores)
    observed = _observed_benchmarks(args.observed, model.items_)
    pred = model.predict(observed, level=args.level, method=args.method or "auto")
    if dual and pred.models == ["new model"]:
        pred = dataclasses.replace(pred, models=["new benchmark"])
    return pred, "benchmarks"


def _predict_from_plan(args):
    """(Prediction, plan level) of ``predict --plan``."""
    if args.bounds != "infer":
        raise _UsageError("a plan carries its bounds: set them with 'benchsel plan --bounds', "
                          "not at predict time")
    _refuse_fit_options(args, "a plan carries its fitted model: set {flag} with 'benchsel "
                        "plan', not at predict time")
    for flag in ("lm_eval_task", "lm_eval_metric", "lm_eval_filter"):
        if getattr(args, flag) is not None:
            raise _UsageError(f"--{flag.replace('_', '-')}: a plan records which lm-eval tasks, "
                              "metrics and filters it reads")
    plan = load_plan(args.plan)
    if plan.level != "benchmarks" and args.method is not None:
        raise _UsageError(f"--method applies to benchmark-level prediction; a {plan.level} "
                          "plan predicts with the methods it was made with")
    if plan.level == "benchmarks":
        observed = _observed_benchmarks(args.observed, plan.benchmarks.source.items)
        return (plan.predict_benchmarks(observed, level=args.level, method=args.method or "auto"),
                "benchmarks")
    questions = _observed_questions(plan, args.observed)
    if plan.level == "questions":
        return plan.predict_questions(questions, level=args.level), "questions"
    full = None
    if any(not r.partial and r.scores for r in read_lm_eval(args.observed).runs.values()):
        with warnings.catch_warnings():
            # The sampled tasks' runs are partial by design.
            warnings.filterwarnings("ignore", ".*partial run", DataWarning)
            full = _observed_benchmarks(args.observed, plan.benchmarks.source.items)
    return plan.predict_mixed(full, questions, level=args.level), "mixed"


def _refuse_fit_options(args, message: str) -> None:
    """Usage error for a model option given where no model is fitted."""
    for flag, value, default in (("--covariance", args.covariance, "auto"),
                                 ("--transform", args.transform, "none"),
                                 ("--calibration", args.calibration, "conformal")):
        if value != default:
            raise _UsageError(message.format(flag=flag))


def _observed_benchmarks(specs: list[str], items):
    """``--observed`` for benchmark-level prediction: pairs, a file, or lm-eval output.

    A bare task name stands for the model's one ``<task>/<metric>,<filter>``
    column. lm-eval output is read with the metric and filter the model's
    columns name; scores of tasks the model does not cover are left out with
    a warning.
    """
    if len(specs) == 1 and not _is_lm_eval_output(specs[0]):
        observed = parse_observed(specs[0])
        if isinstance(observed, dict):
            return dict(zip(_as_items(list(observed), items), observed.values()))
        return observed._replace(items=_as_items(list(observed.items), items))
    for spec in specs:
        if not _is_lm_eval_output(spec):
            raise ValueError(f"--observed {spec}: several --observed values must all be "
                             "lm-eval output (folders, results_<date>.json, sample logs)")
    metric, filt = {}, {}
    for item in items:
        task, _, key = item.partition("/")
        if "," in key:
            metric[task], filt[task] = key.split(",", 1)
    board = read_lm_eval(specs).leaderboard(metric=metric, filter=filt)
    renamed = _as_items(list(board.items), items)
    known = set(items)
    extra = [c for c in renamed if c not in known]
    if len(extra) == len(renamed):
        raise ValueError(
            f"--observed {' '.join(specs)}: none of its scores ({', '.join(extra)}) is a "
            f"benchmark of the model; its benchmarks are {_short_names(items)}")
    if extra:
        warnings.warn(f"--observed: ignoring scores of {', '.join(extra)}: not benchmarks of "
                      "the model", DataWarning, stacklevel=2)
        board = board.subset(items=[j for j, c in enumerate(renamed) if c in known])
        renamed = [c for c in renamed if c in known]
    if len(set(renamed)) != len(renamed):
        raise ValueError(f"--observed: two lm-eval scores map to the same benchmark "
                         f"({', '.join(board.items)}); choose one with --lm-eval-metric")
    return board._replace(items=renamed)


def _short_names(items, limit: int = 20) -> str:
    items = list(items)
    return ", ".join(items[:limit]) + (f", ... ({len(items) - limit} more)"
                                       if len(items) > limit else "")


def _task_columns(items) -> dict[str, list[str]]:
    """Task -> its ``<task>/...`` columns (lm-eval leaderboards)."""
    out: dict[str, list[str]] = {}
    for item in items:
        if "/" in item:
            out.setdefault(item.split("/", 1)[0], []).append(item)
    return out


def _as_items(names: list[str], items) -> list[str]:
    """``names`` with each unknown one that is a task (or ``task/...``) of exactly one item
    renamed to that item."""
    known, by_task = set(items), _task_columns(items)
    out = []
    for name in names:
        task = name.split("/", 1)[0]
        if name not in known and len(by_task.get(task, ())) == 1:
            name = by_task[task][0]
        elif name not in known and task in known:
            name = task  # a leaderboard named by bare tasks, lm-eval columns observed
        out.append(name)
    return out


def _is_lm_eval_output(spec: str) -> bool:
    path = Path(spec)
    if is_lm_eval_path(path):
        return True
    if path.is_file() and path.suffix.lower() == ".json":
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            return False
        return isinstance(obj, dict) and isinstance(obj.get("results"), dict)
    return False


def _observed_questions(plan, specs: list[str]) -> dict:
    """model -> task -> {doc_id: score} of the plan's tasks, from lm-eval output."""
    from .lmeval import read_sample_scores

    for spec in specs:
        if not _is_lm_eval_output(spec):
            raise ValueError(
                f"--observed {spec}: a question-level plan needs lm-eval output of the new "
                "model (its --output_path folder, results_<date>.json or samples_*.jsonl)")
    runs = read_lm_eval(specs)
    out: dict = {}
    for (model, task), run in runs.runs.items():
        if task not in plan.tasks:
            continue
        if run.samples_file is None:
            raise ValueError(f"{run.results_file}: no sample log of {task!r} beside it; run "
                             "lm-eval with --log_samples")
        part = plan.tasks[task]
        out.setdefault(model, {})[task] = read_sample_scores(run, metric=part.metric,
                                                             filter=part.filter)
    if not out:
        raise ValueError(f"{runs.source}: no run of the plan's tasks "
                         f"({', '.join(plan.tasks)}); tasks found: {', '.join(runs.tasks)}")
    return out


def _prediction_csv(pred) -> str:
    """The filled-in leaderboard: one row per model, each item's value and its std."""
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["model", *[c for item in pred.items for c in (item, f"{item} std")]])
    for i, name in enumerate(pred.models):
        cells = []
        for j in range(len(pred.items)):
            cells += [repr(float(pred.mean[i, j])), repr(float(pred.std[i, j]))]
        writer.writerow([name, *cells])
    return buffer.getvalue()


def cmd_plan(args) -> int:
    import shlex

    command = "benchsel " + shlex.join(args.argv)
    if args.emit_lm_eval_samples is not None and \
            Path(args.emit_lm_eval_samples).resolve() == Path(args.output).resolve():
        raise _UsageError("--emit-lm-eval-samples and -o name the same file; the plan and "
                          "lm-eval's --samples file are two files")
    if args.level == "benchmarks":
        for flag, value in (("-n", args.n), ("--total", args.total),
                            ("--emit-lm-eval-samples", args.emit_lm_eval_samples),
                            ("--lm-eval-task", args.lm_eval_task)):
            if value is not None:
                raise _UsageError(f"{flag} belongs to --level questions")
        if args.method != "default":
            raise _UsageError("--method belongs to --level questions (benchmarks are selected by "
                              "--objective)")
        scores = _load(args)
        costs = _costs(args, scores.items)
        if args.budget is not None and costs is None:
            raise _UsageError("--budget needs --costs FILE")
        plan = plan_benchmarks(
            scores, args.k, objective=args.objective,
            include=_item_names(args.include, scores.items),
            exclude=_item_names(args.exclude, scores.items), costs=costs, budget=args.budget,
            target_residual=args.target_residual, seed=args.seed, command=command,
            covariance=args.covariance, transform=args.transform, bounds=args.bounds,
            calibration=args.calibration)
    else:
        if args.level == "questions":
            for flag, value in (("-k", args.k), ("--costs", args.costs),
                                ("--budget", args.budget), ("--include", args.include),
                                ("--exclude", args.exclude),
                                ("--target-residual", args.target_residual)):
                if value is not None:
                    raise _UsageError(f"{flag} belongs to --level benchmarks or mixed")
            _refuse_fit_options(args, "{flag} belongs to --level benchmarks or mixed (the "
                                "leaderboard's Gaussian model)")
            if args.bounds != "infer":
                raise _UsageError("--bounds belongs to --level benchmarks or mixed; task "
                                  "scores of per-question scores in [0, 1] stay in [0, 1]")
        if args.n is not None and args.total is not None:
            raise _UsageError("give -n (questions per task) or --total (spread over the tasks), "
                              "not both")
        sources, metrics, filters = _question_sources(args)
        questions = dict(n=None if args.total is not None else (args.n or "50"),
                         total=args.total, method=args.method, seed=args.seed,
                         metrics=metrics, filters=filters, command=command)
        if args.level == "questions":
            plan = plan_questions(sources, **questions)
        else:
            if not _is_lm_eval(args.data):
                raise _UsageError("--level mixed needs DATA to be a folder of lm-eval runs (full "
                                  "runs give the leaderboard, sample logs the questions)")
            board = read_lm_eval(args.data).leaderboard(
                metric=parse_per_task(args.lm_eval_metric, "--lm-eval-metric"),
                filter=parse_per_task(args.lm_eval_filter, "--lm-eval-filter"))
            costs = _costs(args, board.items)
            columns = {t: f"{t}/{metrics[t]},{filters[t]}" for t in sources}
            plan = plan_mixed(
                board, sources, columns, args.k, objective=args.objective,
                include=_item_names(args.include, board.items),
                exclude=_item_names(args.exclude, board.items), costs=costs, budget=args.budget,
                target_residual=args.target_residual, covariance=args.covariance,
                transform=args.transform, bounds=args.bounds, calibration=args.calibration,
                **questions)
    plan.save(args.output, protect=_inputs(args))
    summary = plan.summary()
    summary["plan"] = str(args.output)
    lines = [f"plan written to {args.output}"]
    if plan.tasks:
        samples = plan.lm_eval_samples()
        if args.emit_lm_eval_samples:
            write_samples(args.emit_lm_eval_samples, samples, protect=_inputs(args))
            summary["lm_eval_samples_file"] = args.emit_lm_eval_samples
            lines.append(f"lm-eval --samples file written to {args.emit_lm_eval_samples}")
        rows = [[t, p.n, len(p.doc_ids), p.source.n_models, p.method]
                for t, p in plan.tasks.items()]
        lines.append(_table(["task", "questions to run", "of", "source models", "method"], rows))
    if plan.level == "mixed":
        lines.append(f"and in full: {', '.join(plan.run_in_full)}")
    elif plan.level == "benchmarks":
        sel = plan.benchmarks.selection
        rows = [[t + 1, name, float(g), float(r)] for t, (name, g, r) in
                enumerate(zip(sel["selected"], sel["gains"], sel["residual_variance"]))]
        lines.append(f"{len(rows)} benchmarks to run, of {plan.benchmarks.source.n_items}:")
        lines.append(_table(["#", "benchmark", "gain", "residual_var"], rows))
    if args.json:
        sys.stdout.write(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    else:
        sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _question_sources(args):
    """(task -> models x questions, task -> metric, task -> filter) for a question-level plan."""
    if _is_lm_eval(args.data):
        tasks = _names(args.lm_eval_task)
        if not tasks:
            raise _UsageError("--lm-eval-task T1,T2,... names the tasks to plan (DATA is a folder "
                              "of lm-eval runs)")
        runs = read_lm_eval(args.data)
        runs.check_tasks(tasks)
        metric = parse_per_task(args.lm_eval_metric, "--lm-eval-metric")
        filt = parse_per_task(args.lm_eval_filter, "--lm-eval-filter")
        sources, metrics, filters = {}, {}, {}
        for task in tasks:
            sources[task] = _task_questions(runs, task, args)
            run = runs.run(runs.complete_models(task)[0], task)
            primary_metric, _, primary_filter = (run.primary or ",").partition(",")
            metrics[task] = (metric.get(task) if isinstance(metric, dict) else metric) \
                or primary_metric or None
            filters[task] = (filt.get(task) if isinstance(filt, dict) else filt) \
                or primary_filter or None
        return sources, metrics, filters
    task = args.lm_eval_task
    if task and "," in task:
        raise _UsageError(f"{args.data} holds one task's questions; --lm-eval-task names one task")
    scores = resolve_data(args.data, **_read_options(args)).cleaned()
    task, scores = _question_items(scores, task, args.data)
    return {task: scores}, None, None


def cmd_spectrum(args) -> int:
    scores = _load(args)
    model = _fit(args, scores)
    spec = spectrum(model.estimate_.covariance, model.items_)
    payload = spec.to_dict()
    payload["dataset"] = str(args.data)
    payload["covariance"] = model.estimate_.method
    n = len(spec.eigenvalues)
    show = min(n, 20)
    rows = [
        [k + 1, float(spec.eigenvalues[k]), float(spec.residual_fraction[k]),
         float(spec.greedy_residual[k]), spec.greedy_items[k]]
        for k in range(show)
    ]
    reach = ", ".join(f"{lvl}: k={k}" for lvl, k in payload["k_for_explained"].items())
    text = (
        f"{n} items; explained variance reached at {reach}\n"
        + _table(["k", "eigenvalue", "eig_tail (bound)", "greedy_residual", "greedy item"], rows)
    )
    if n > show:
        text += f"\n... {n - show} more (use --json for all)"
    _emit(args, payload, text)
    return 0


def cmd_discover(args) -> int:
    from .evaluation.discover import discover, read_correlation

    new = _names(args.new) if args.new else []
    progress = Progress("resamples", enabled=False if args.quiet else None)
    try:
        if args.correlation:
            if args.covariance != "auto" or args.transform != "none":
                raise _UsageError("--covariance/--transform need scores, not a correlation "
                                  "matrix")
            result = discover(correlation=read_correlation(args.data), new=new,
                              bootstrap=args.bootstrap, seed=args.seed)
        else:
            if args.transform != "none":
                raise _UsageError("--transform is not supported by discover")
            result = discover(_load(args), new=new, bootstrap=args.bootstrap,
                              covariance=args.covariance, seed=args.seed, progress=progress)
    finally:
        progress.close()
    payload = result.to_dict()
    payload["dataset"] = str(args.data)
    boot = result.bootstrap > 0
    few = 10  # fewer models than this: novelty may only reflect missing data
    rows = [[r.novelty_rank, r.benchmark + (" (new)" if r.new else "")
             + (" *" if r.observed_models is not None and r.observed_models < few else ""),
             r.novelty, *([f"{r.rank_low}-{r.rank_high}", r.top3_share] if boot else []),
             r.entropy_rank, r.information, r.mi_rank, r.observed_models]
            for r in result.rows]
    head = ["rank", "benchmark", "novelty",
            *([f"rank {100 * result.level:g}% CI", "top-3 share"] if boot else []),
            "entropy order", "information (nats)", "MI order", "models"]
    n = len(result.rows)
    lines = [f"{n} benchmarks, ranked by novelty (1 = least explained by the others); "
             "information = what each tells about the others (MI order 1 = most)"]
    for r in result.rows:
        if r.new:
            extra = (f", top 3 in {100 * r.top3_share:.0f}% of {result.bootstrap} resamples"
                     if boot and r.top3_share is not None else "")
            lines.append(f"{r.benchmark}: #{r.novelty_rank} of {n} by novelty{extra}; "
                         f"#{r.mi_rank} of {n} by information about the rest")
    if any(r.observed_models is not None and r.observed_models < few for r in result.rows):
        lines.append(f"* fewer than {few} models: its correlations are estimated from few "
                     "pairs, so its novelty may only reflect missing data")
    _emit(args, payload, "\n".join(lines) + "\n" + _table(head, rows))
    return 0


def cmd_budget(args) -> int:
    from .evaluation.budget import question_budget

    if args.transform != "none":
        raise _UsageError("--transform is not supported by budget (noise is on the score scale)")
    if (args.k is None) == (args.select is None):
        raise _UsageError("budget needs the benchmarks to run: -k K (select them) or --select "
                          "NAMES, exactly one")
    scores = _load(args)
    model = _fit(args, scores)
    selected = (_item_names(args.select, model.items_) if args.select
                else model.select(args.k, objective=args.objective).items)
    questions = None
    if args.questions:
        counts = read_costs(args.questions)
        questions = dict(zip(_as_items(list(counts), model.items_), counts.values()))
    result = question_budget(model, selected, fraction=args.fraction, questions=questions,
                             total=args.total)
    payload = result.to_dict()
    payload["dataset"] = str(args.data)
    rows = [[r.benchmark, r.score, r.conditional_variance,
             "-" if r.questions_needed is None else r.questions_needed,
             "-" if r.questions_available is None else r.questions_available,
             *(["-" if r.allocated is None else r.allocated] if args.total else [])]
            for r in result.rows]
    text = (f"questions per benchmark for sampling noise <= {args.fraction:g} x its variance "
            "given the other selected benchmarks\n"
            + _table(["benchmark", "mean score", "cond. variance", "questions needed",
                      "available", *(["allocated"] if args.total else [])], rows))
    for r in result.rows:
        if r.reason:
            text += f"\n{r.benchmark}: {r.reason}"
    if args.total:
        text += (f"\nwith {args.total} questions in all, the unselected benchmarks' total "
                 f"predictive variance is {result.rest_variance:.4g}")
    _emit(args, payload, text)
    return 0


def cmd_audit(args) -> int:
    from .evaluation.audit import audit

    if args.transform != "none":
        raise _UsageError("--transform is not supported by audit")
    order = read_model_order(args.order) if args.order else None
    result = audit(_load(args), threshold=args.threshold, covariance=args.covariance,
                   order=order)
    payload = result.to_dict()
    payload["dataset"] = str(args.data)
    show = result.cells[:30]
    text = (f"{len(result.cells)} of {result.n_cells} cells decouple from their model's other "
            f"scores (|z| > {result.threshold:g}; z = leave-one-out residual / board spread "
            f"{result.scale:.3g})\n")
    if show:
        text += _table(["model", "benchmark", "observed", "predicted", "z"],
                       [[c.model, c.benchmark, c.observed, c.predicted, c.z] for c in show])
        if len(result.cells) > len(show):
            text += f"\n... {len(result.cells) - len(show)} more (use --json for all)"
    marked = [b for b in result.benchmarks if b.flagged_cells or b.decoupled]
    if marked:
        text += "\n\nbenchmarks with flagged cells or drift across model order:\n" + _table(
            ["benchmark", "flagged", "cells", "mean z early", "mean z late", "drift t",
             "replacement"],
            [[b.benchmark, b.flagged_cells, b.cells, b.mean_z_early, b.mean_z_late, b.drift_t,
              b.replacement or "-"] for b in marked])
    _emit(args, payload, text)
    return 0


def cmd_compare(args) -> int:
    from .gaussian.compare import compare_models

    if args.paired or args.lm_eval_task:
        return _compare_paired(args)
    if args.plan is not None:
        model, observed, names = _compare_from_plan(args)
    else:
        if args.data is None or args.models is None:
            raise _UsageError("compare takes DATA and --models A,B (two of its models), or "
                              "--plan PLAN.json and --observed with two models' results")
        if args.observed:
            raise _UsageError("--observed goes with --plan; without it A and B are rows of DATA")
        model, observed, names = _compare_rows(args)
    result = compare_models(model, observed[0], observed[1], names=tuple(names),
                            level=args.level)
    payload = result.to_dict()
    payload["dataset"] = str(args.data if args.plan is None else args.plan)
    pct = f"{100 * args.level:g}%"
    table = [[name + (" (both run)" if result.observed[j] else ""), result.difference[j],
              result.std[j], result.low[j], result.high[j], result.p_b_better[j]]
             for j, name in enumerate(result.items)]
    fit = ("each fitted without the two of them" if args.plan is None
           else "predicted by the plan's model")
    head = f"{names[1]} minus {names[0]}, {fit}; error correlation {result.correlation:.2f}"
    _emit(args, payload, head + "\n" + _table(
        ["benchmark", "difference", "std", f"low ({pct})", f"high ({pct})", "P(B > A)"], table))
    return 0


def _compare_paired(args) -> int:
    """``compare --paired``: two rows of a models x questions matrix, question by question."""
    from .evaluation.paired import paired_difference

    if args.plan is not None or args.observed:
        raise _UsageError("--paired compares two rows of DATA (models x questions); it takes "
                          "no --plan or --observed")
    if args.data is None or args.models is None:
        raise _UsageError("compare --paired takes DATA and --models A,B")
    scores, names = _two_models(args, _load(args))
    result = paired_difference(scores, names[0], names[1], level=args.level)
    payload = {"dataset": str(args.data), "paired": result.to_dict()}
    text = (f"{names[1]} minus {names[0]} on the {result.questions} questions both answered: "
            f"{result.difference:+.4g} (standard error {result.std:.3g}; "
            f"{100 * args.level:g}% interval {result.low:+.4g} to {result.high:+.4g}); "
            f"P(B > A) = {result.p_b_better:.3f}\n"
            f"mean score {names[0]}: {result.mean_a:.4g}, {names[1]}: {result.mean_b:.4g}")
    if result.mcnemar_p is not None:
        text += (f"\nright only by {names[0]}: {result.a_only}, only by {names[1]}: "
                 f"{result.b_only}; exact McNemar p = {result.mcnemar_p:.3g}")
    _emit(args, payload, text)
    return 0


def _two_models(args, scores: ScoreMatrix) -> tuple[ScoreMatrix, list[str]]:
    """``--models A,B`` checked against the rows of ``scores``."""
    names = _names(args.models)
    if len(names) != 2 or names[0] == names[1]:
        raise _UsageError(f"--models takes two different model names, A,B; got {args.models!r}")
    missing = [n for n in names if n not in scores.models]
    if missing:
        raise ValueError(f"{args.data}: no model named {', '.join(map(repr, missing))}; models "
                         f"include {', '.join(scores.models[:10])}"
                         f"{' ...' if scores.n_models > 10 else ''}")
    return scores, names


def _compare_rows(args):
    """(model fitted on the other rows, the two rows' scores, their names) of DATA."""
    scores, names = _two_models(args, _load(args).cleaned())
    rows = [scores.models.index(n) for n in names]
    model = _fit(args, scores.subset(models=np.setdiff1d(np.arange(scores.n_models), rows)))
    known = set(model.items_)
    observed = [{item: float(scores.values[r, j]) for j, item in enumerate(scores.items)
                 if not np.isnan(scores.values[r, j]) and item in known} for r in rows]
    return model, observed, names


def _compare_from_plan(args):
    """(the plan's model, two runs' scores, their names) for ``compare --plan``."""
    if args.data is not None:
        raise _UsageError("compare takes DATA or --plan, not both")
    _refuse_fit_options(args, "a plan carries its fitted model: set {flag} with 'benchsel "
                        "plan', not at compare time")
    plan = load_plan(args.plan)
    if plan.level != "benchmarks":
        raise _UsageError(f"compare --plan needs a benchmark-level plan; this one is "
                          f"{plan.level}-level")
    model = plan.benchmarks.model()
    if not args.observed:
        raise _UsageError("compare --plan needs --observed: the two models' results")
    runs = _observed_benchmarks(args.observed, model.items_)
    if not isinstance(runs, ScoreMatrix) or runs.n_models < 2:
        raise ValueError("compare needs the results of two models in --observed (a CSV of two "
                         "rows, an lm-eval folder of two runs, or --observed twice)")
    names = _names(args.models) if args.models else list(runs.models)
    if len(names) != 2 or not set(names) <= set(runs.models):
        raise _UsageError(f"--observed holds {len(runs.models)} models "
                          f"({_short_names(list(runs.models), 10)}); name two with --models A,B")
    observed = []
    for name in names:
        row = runs.values[runs.models.index(name)]
        observed.append({item: float(v) for item, v in zip(runs.items, row) if not np.isnan(v)})
    return model, observed, names


def cmd_report(args) -> int:
    import time

    from .report import build_report

    start = time.perf_counter()
    if args.data is None and args.plan is None:
        raise _UsageError("report takes DATA, or --plan PLAN.json whose leaderboard it shows")
    if args.plan is not None and not args.observed:
        raise _UsageError("--plan goes with --observed: the new model's results")
    # The new model is predicted as 'predict' would: from the plan, else by a fit of DATA.
    pred = _prediction(args)[0] if args.observed else None
    if args.data is not None:
        scores = _load(args)
    else:
        plan = load_plan(args.plan)
        if plan.benchmarks is None:
            raise _UsageError(f"{args.plan} is a {plan.level} plan with no leaderboard; give "
                              "the leaderboard as DATA")
        scores = plan.benchmarks.source
    progress = Progress("sections", enabled=False if args.quiet else None)
    try:
        report = build_report(
            scores, dataset=str(args.data if args.data is not None else args.plan),
            prediction=pred, k=args.k, folds=args.folds, k_max=args.k_max,
            bootstrap=args.bootstrap, threshold=args.threshold, covariance=args.covariance,
            seed=args.seed, level=args.level, progress=progress)
    finally:
        progress.close()
    try:
        page = report.html()
        write_text_atomic(args.output, page, protect=_inputs(args))
        plots = ([str(p) for p in report.save_figures(args.plots, protect=_inputs(args))]
                 if args.plots else [])
    finally:
        report.close()
    seconds = time.perf_counter() - start
    size = len(page.encode())
    skipped = {s.key: s.skipped for s in report.sections if s.skipped}
    summary = {"output": str(args.output), "bytes": size, "seconds": seconds,
               "sections": [s.key for s in report.sections], "skipped": skipped,
               "plots": plots}
    text = (f"wrote {args.output}: {len(report.sections)} sections, {size / 1024:.0f} KiB, "
            f"{seconds:.1f} s" + (f"; {len(plots)} plot files in {args.plots}" if plots else ""))
    text += "".join(f"\n{key}: not available -- {why}" for key, why in skipped.items())
    if args.json:
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    else:
        sys.stdout.write(text + "\n")
    return 0


def _dask_client(address: str | None):
    """A dask.distributed client for ``--dask`` (``local`` starts a local cluster)."""
    if address is None:
        return None
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ValueError(
            "--dask needs dask.distributed; install it with 'pip install benchsel[dask]'"
        ) from None
    if address == "local":
        return Client(LocalCluster(processes=True, dashboard_address=None))
    return Client(address)


def cmd_evaluate(args) -> int:
    scores = _load(args)
    args.folds_given = args.folds is not None
    if args.folds is None:
        args.folds = 10
    objectives = tuple(_names(args.objectives))
    common = dict(objectives=objectives, k_max=args.k_max, covariance=args.covariance,
                  seed=args.seed)
    calibrate = args.calibration == "conformal"
    if args.protocol in ("cv", "extrapolation"):
        common["transform"] = args.transform
        common["scoring"] = args.scoring
        common["calibrate"] = calibrate
    elif args.transform != "none":
        raise ValueError(f"--transform is not supported by the {args.protocol} protocol")
    elif args.scoring != "default":
        raise ValueError(f"--scoring is not supported by the {args.protocol} protocol")
    if args.protocol == "complete" and args.covariance != "auto":
        raise ValueError(
            "--covariance does not apply to the complete protocol: it compares the "
            "'gaussian' (em-shrink) and 'gaussian-em' (paper) methods itself"
        )
    label = {"cv": "folds", "oracle": "subsets", "complete": "fits"}.get(args.protocol, "splits")
    progress = Progress(label, enabled=False if args.quiet else None)
    try:
        if args.protocol == "cv":
            client = _dask_client(args.dask)
            try:
                result = cross_validate(
                    scores, folds=args.folds, holdout=args.holdout, n_jobs=args.jobs,
                    backend="dask" if client is not None else None, progress=progress,
                    **common,
                )
            finally:
                if client is not None:
                    client.close()
        elif args.protocol == "extrapolation":
            result = extrapolate(scores, **common)
        elif args.protocol == "complete":
            methods = tuple(_names(args.methods)) if args.methods else tuple(COMPLETERS)
            result = evaluate_completion(scores, methods=methods, hide=args.hide,
                                         folds=args.folds if args.folds_given else 3,
                                         seed=args.seed, progress=progress,
                                         calibrate=calibrate)
        else:
            result = oracle_subsets(
                scores, folds=args.folds, holdout=args.holdout, max_subsets=args.max_subsets,
                progress=progress, **common,
            )
    finally:
        progress.close()
    payload = result.to_dict()
    payload["dataset"] = str(args.data)
    head = f"{scores.n_models} models x {scores.n_items} items, {result.seconds:.1f} s"
    if args.protocol == "complete":
        rows = [
            [r.method, r.medape, r.median_ae, r.within3, r.within5, r.coverage,
             r.interval_coverage, r.uncalibrated_coverage]
            for r in result.rows
        ]
        text = (
            f"complete: each model with >= {max(2, min(8, scores.n_items))} scores hides "
            f"{100 * result.hide:g}% of them, "
            f"{result.folds} folds, {head}; best (lowest MedAPE among methods predicting "
            f">= 99% of cells): {result.default}\n"
            + _table(["method", "MedAPE %", "median AE", "within 3", "within 5", "coverage %",
                      "interval cov %", "uncalibrated %"], rows)
        )
        _emit(args, payload, text)
        return 0
    if args.protocol == "oracle":
        rows = [
            [r.k, r.subsets, r.r2_oracle, *r.r2_greedy.values(), ", ".join(r.best)]
            for r in result.rows
        ]
        text = (
            f"oracle: best subsets by exhaustive search over the same {result.folds} folds, "
            f"{head}\n"
            + _table(["k", "subsets", "r2_oracle", *[f"r2_{o}" for o in objectives], "best"],
                     rows)
        )
        _emit(args, payload, text)
        return 0
    rows = [
        [r.objective, r.k, r.r2_mean, r.r2_std, r.residual_variance, r.interval_coverage,
         r.uncalibrated_coverage, r.stability]
        for r in result.rows
    ]
    setup = (
        f"{result.folds} folds, holdout {result.holdout:g}"
        if args.protocol == "cv"
        else "fit on the weakest 50% of models, predict the strongest 30%"
    )
    text = (
        f"{args.protocol}: {setup}, {head}\n"
        + _table(["objective", "k", "r2_mean", "r2_std", "residual_var", "coverage_90",
                  "uncalibrated", "stability"], rows)
    )
    _emit(args, payload, text)
    return 0


def cmd_diagnose(args) -> int:
    scores = _load(args)
    report = normality(scores, alpha=args.alpha)
    payload = report.to_dict()
    payload["dataset"] = str(args.data)
    order = np.argsort(report.w)
    rows = [
        [report.items[i], float(report.w[i]), float(report.p_adjusted[i]),
         "reject" if report.reject[i] else ""]
        for i in order[: args.show]
    ]
    lines = [
        f"Shapiro-Wilk per benchmark (Benjamini-Hochberg, alpha {args.alpha:g}): "
        f"{int(report.reject.sum())} of {len(report.items)} reject normality; "
        f"median W {payload['median_w']:.3f}" if report.items else "no benchmark could be tested",
        _table(["benchmark (lowest W first)", "W", "p_adjusted", ""], rows),
    ]
    if report.mardia is not None:
        m = report.mardia
        lines.append(
            f"Mardia on {m['n_models']} complete models: skewness b1 = {m['skewness']:.4g} "
            f"(p = {m['skewness_p']:.3g}), kurtosis b2 = {m['kurtosis']:.4g} vs "
            f"{m['kurtosis_expected']:.4g} expected (z = {m['kurtosis_z']:.3g}, "
            f"p = {m['kurtosis_p']:.3g})"
        )
    else:
        lines.append(f"Mardia: not computed ({report.mardia_note})")
    _emit(args, payload, "\n".join(lines))
    return 0


def _question_items(scores: ScoreMatrix, task: str | None, data) -> tuple[str, ScoreMatrix]:
    """(task, matrix with items named ``task/<doc_id>``) of a per-question matrix.

    Matrices read from lm-eval logs already name their items so; any other
    file's columns are doc ids when they are whole numbers, else positions
    0, 1, ... (with a warning) of ``task`` (default: the file's stem).
    """
    tails = [item.rpartition("/") for item in scores.items]
    heads = {head for head, _, _ in tails}
    if len(heads) == 1 and all(tail.isdigit() for _, _, tail in tails) and "" not in heads:
        read_task = heads.pop()
        if task is not None and task != read_task:
            raise ValueError(f"{data}: the questions are of task {read_task!r}, not {task!r}")
        return read_task, scores
    task = task or Path(str(data)).stem
    if all(item.isdigit() for item in scores.items):
        return task, scores._replace(items=[f"{task}/{int(item)}" for item in scores.items])
    if list(scores.items) != [f"item_{j}" for j in range(scores.n_items)]:  # unnamed NPZ
        warnings.warn(f"{data}: columns are not doc ids (whole numbers); taking column "
                      f"positions 0..{scores.n_items - 1} as the doc ids of {task!r}",
                      DataWarning, stacklevel=2)
    return task, scores._replace(items=[f"{task}/{j}" for j in range(scores.n_items)])


def cmd_coreset(args) -> int:
    scores = _load(args).cleaned()
    if np.isnan(scores.values).any():
        rows = np.flatnonzero(np.isnan(scores.values).any(axis=1))
        raise ValueError(
            f"{args.data}: question-level selection needs complete scores; model(s) "
            f"{', '.join(scores.models[i] for i in rows[:10])} miss some questions")
    n = resolve_n(args.n, scores.n_items)
    method = make_method(args.method).fit(scores.values, n, np.random.default_rng(args.seed))
    chosen = [int(j) for j in method.selected_]
    names = [scores.items[j] for j in chosen]
    payload = {"method": args.method if args.method != "default" else DEFAULT_METHOD,
               "n": n, "dataset": str(args.data), "indices": chosen, "selected": names}
    if args.emit_lm_eval_samples:
        task, path = args.emit_lm_eval_samples
        task, named = _question_items(scores, task, args.data)
        docs = [int(named.items[j].rpartition("/")[2]) for j in chosen]
        payload["lm_eval_samples"] = write_samples(path, {task: docs}, protect=_inputs(args))
    text = (f"{len(chosen)} of {scores.n_items} questions by {payload['method']}:\n"
            + ", ".join(names[:50]) + (" ..." if len(names) > 50 else ""))
    _emit(args, payload, text)
    return 0


def cmd_coreset_eval(args) -> int:
    scores = _load(args).cleaned()
    methods = None if args.methods == "all" else tuple(_names(args.methods))
    progress = Progress("fits", enabled=False if args.quiet else None)
    try:
        result = evaluate_coresets(scores, split=args.split, n=args.n, trials=args.trials,
                                   methods=methods, seed=args.seed, sources=args.sources,
                                   n_jobs=args.jobs, progress=progress)
    finally:
        progress.close()
    payload = result.to_dict()
    payload["dataset"] = str(args.data)
    rows = [[r.method, r.gap, r.gap_std, r.egr, r.rmse, r.kendall, r.interval_coverage,
             r.stability, r.similarity_corr, r.fit_seconds + r.predict_seconds]
            for r in result.rows]
    split = args.split + (f" ({args.sources} sources)" if args.sources else "")
    text = (
        f"{split}, n = {result.n}, {args.trials} trials, {scores.n_models} models x "
        f"{scores.n_items} questions, {result.seconds:.1f} s; default: {result.default}\n"
        + _table(["method", "gap", "gap_std", "EGR %", "RMSE", "kendall", "cov90 %",
                  "phi", "sim-corr", "seconds"], rows)
    )
    _emit(args, payload, text)
    return 0


# ------------------------------------------------------------------- parser
_INPUT_FORMATS = ("wide", "long", "npz", "parquet")


def _add_data(p: argparse.ArgumentParser, model_options: bool = True,
              optional: bool = False) -> None:
    p.add_argument("data", metavar="DATA", nargs="?" if optional else None,
                   help="score matrix file (CSV/TSV/Parquet/NPZ), a bundled dataset name, or "
                   "a folder of lm-eval runs (lm_eval --output_path; leaf tasks' primary "
                   "metrics become columns '<task>/<metric>,<filter>')"
                   + ("; leave it out with --plan" if optional else ""))
    g = p.add_argument_group("input format")
    # predict's --format is its output format; elsewhere --format still names the input's.
    flags = ("--input-format",) if optional else ("--input-format", "--format")
    g.add_argument(*flags, dest="input_format", choices=_INPUT_FORMATS,
                   help="file format (default: from the extension; text files are wide)")
    g.add_argument("--sep", help="field separator of text files (default: tab for .tsv)")
    g.add_argument("--model-column", help="column with model names (wide: first column)")
    g.add_argument("--item-column", help="long format: benchmark column (default: benchmark)")
    g.add_argument("--score-column", help="long format: score column (default: score)")
    _add_lm_eval(p)
    if not model_options:
        return
    p.add_argument("--covariance", choices=COVARIANCE_METHODS, default="auto",
                   help="covariance estimator: em (the paper's EM), em-shrink (EM with "
                   "correlation shrinkage), pairwise; default auto = pairwise if the matrix "
                   "is complete, else em-shrink")
    p.add_argument("--transform", choices=TRANSFORMS, default="none",
                   help="per-column transform before modelling: logit of score / training "
                   "max (Smola 2026, App. K); default none")
    p.add_argument("--calibration", choices=CALIBRATIONS, default="conformal",
                   help="error bars: conformal (default) widens or narrows the predictor's "
                   "standard deviation by multipliers measured on held-out source models, a "
                   "wider one for a model stronger or weaker than every source model; none "
                   "uses the predictor's own standard deviation")


def _add_bounds(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bounds", type=_bounds, default="infer", metavar="LOW,HIGH",
                   help="range of every score, e.g. 0,1 or 0,100; predictions and intervals "
                   "are clipped into it. Default infer: [0, 1] for a column whose scores all "
                   "lie in it, [0, 100] for one in percent, else none ('none')")


def _bounds(text: str) -> str:
    """``--bounds``: checked here, passed on as text (it is what a plan records)."""
    if text.strip().lower() in ("infer", "none"):
        return text.strip().lower()
    try:
        parse_bounds(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def _add_lm_eval(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("lm-evaluation-harness output (DATA is a folder of runs)")
    g.add_argument("--lm-eval-task", metavar="TASK",
                   help="build the models x questions matrix of TASK from the sample logs "
                   "(samples_TASK_<date>.jsonl; runs need --log_samples)")
    g.add_argument("--lm-eval-metric", metavar="METRIC",
                   help="which score: a metric for every task, or 'task=metric,...' "
                   "(default: each task's primary metric)")
    g.add_argument("--lm-eval-filter", metavar="FILTER",
                   help="which filter: one for every task, or 'task=filter,...' "
                   "(default: each task's first filter)")


def _add_selection(p) -> None:
    """The options of a benchmark selection (``select``, ``plan``)."""
    p.add_argument("-k", type=_k_value,
                   help="how many to select (needed unless --budget or --target-residual); "
                   "auto (MI): stop before the first pick that adds no information")
    p.add_argument("--objective", choices=OBJECTIVES, default="mi",
                   help="mi (default): predict the rest best; entropy: most diverse; random")
    p.add_argument("--include", help="comma-separated names that must be selected (first)")
    p.add_argument("--exclude", help="comma-separated names that must not be selected")
    p.add_argument("--costs", help="per-benchmark costs: JSON {name: cost} or CSV name,cost")
    p.add_argument("--budget", type=float, help="total cost cap (needs --costs)")
    p.add_argument("--target-residual", type=_fraction,
                   help="stop once the unexplained variance fraction is at most this")


def _add_output(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("-o", "--output", help="write to this file (atomically) instead of stdout")


def _k_value(text: str):
    """-k: a positive integer or 'auto'."""
    return "auto" if text == "auto" else _positive_int(text)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer; got {text}")
    return value


def _coreset_size(text: str) -> str:
    """A count or a percentage; checked against the question count once data is loaded."""
    body = text[:-1] if text.endswith("%") else text
    try:
        value = float(body) if text.endswith("%") else int(body)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a count or a percentage such as 5%; got {text}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive; got {text}")
    return text


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1); got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchsel",
        description="Choose which benchmarks to run on a new model; predict the rest "
        "with error bars.",
    )
    parser.add_argument("--version", action="version", version=f"benchsel {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("datasets", help="list the bundled leaderboards")
    _add_output(p)
    p.set_defaults(func=cmd_datasets)

    p = sub.add_parser("select", help="choose the k most informative benchmarks (or models)")
    _add_data(p)
    _add_selection(p)
    p.add_argument("--axis", choices=["benchmarks", "models"], default="benchmarks",
                   help="models: pick reference models to run a new benchmark on")
    p.add_argument("--seed", type=int, default=0,
                   help="seed for --objective random and --bootstrap")
    p.add_argument("--bootstrap", type=int, default=0, metavar="B",
                   help="also resample the models B times and report how often each "
                   "selected benchmark is selected again (default 0: no)")
    p.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    _add_output(p)
    p.set_defaults(func=cmd_select)

    p = sub.add_parser("plan", help="decide what to run on a new model; save the plan "
                       "that 'predict --plan' reads")
    _add_data(p)
    p.add_argument("--level", choices=["benchmarks", "questions", "mixed"],
                   default="benchmarks",
                   help="benchmarks (default): run a few benchmarks of a leaderboard in full; "
                   "questions: run a few questions of each lm-eval task; mixed: -k "
                   "benchmarks in full and questions of the --lm-eval-task tasks, predict "
                   "every other benchmark (DATA: lm-eval runs)")
    p.add_argument("-o", "--output", required=True, metavar="PLAN.json",
                   help="the plan file to write (atomically)")
    p.add_argument("--json", action="store_true", help="print the plan's summary as JSON")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of every random choice (default 0); recorded in the plan")
    _add_selection(p.add_argument_group("--level benchmarks or mixed (as in 'benchsel "
                                        "select')"))
    g = p.add_argument_group("--level questions or mixed (DATA: lm-eval runs with "
                             "--log_samples, or one task's models x questions NPZ/CSV)")
    g.add_argument("-n", type=_coreset_size,
                   help="questions per task, a count or a percentage such as 5%% "
                   "(default 50)")
    g.add_argument("--total", type=_positive_int,
                   help="instead of -n: a question budget spread over the tasks where it "
                   "reduces the predicted scores' variance most (docs/question-level.md)")
    g.add_argument("--method", default="default",
                   help=f"question-level method: default ({DEFAULT_METHOD}) or one of "
                   f"{', '.join(METHODS)}")
    g.add_argument("--emit-lm-eval-samples", metavar="FILE",
                   help="also write lm-eval's --samples JSON: every planned task's doc ids")
    _add_bounds(p)
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("predict", help="predict a new model's unrun benchmarks (or full-task "
                       "scores from a question-level plan)")
    _add_data(p, optional=True)
    p.add_argument("--plan", metavar="PLAN.json",
                   help="predict from a saved plan ('benchsel plan') instead of fitting DATA")
    p.add_argument("--observed", required=True, action="append", metavar="PATH",
                   help='scores of the new model(s): "name=value,name=value" (a task name '
                   "stands for its lm-eval column), a JSON object file, a wide CSV of one or "
                   "more new models, or lm-eval output (an --output_path folder, "
                   "results_<date>.json, samples_<task>_<date>.jsonl; repeat --observed for "
                   "several); a question-level plan needs the sample logs of the planned "
                   "questions")
    p.add_argument("--level", type=_fraction, default=0.9,
                   help="coverage of the central interval (default 0.9)")
    p.add_argument("--axis", choices=["benchmarks", "models"], default="benchmarks",
                   help="models: the dual -- --observed gives a new benchmark's scores on "
                   "some models (model=score,...), and its score on every other model is "
                   "predicted (pick the reference models with 'select --axis models')")
    p.add_argument("--method", choices=list(COMPLETERS), default=None,
                   help="predictor: auto (default) cross-validates every method on the "
                   "source models, each given the benchmarks the new model was run on, and "
                   "uses the best (the JSON output's 'choice' says which, by how much); "
                   "gaussian is the conditional distribution; the rest as in 'benchsel "
                   "evaluate DATA --protocol complete'")
    p.add_argument("--format", choices=["table", "json", "csv", *_INPUT_FORMATS],
                   default="table",
                   help="output: table (default), json (as --json), or csv: the filled-in "
                   "leaderboard, one row per model, each benchmark's value and its std "
                   "(csv wins over --json). The input's format is --input-format")
    _add_bounds(p)
    _add_output(p)
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser(
        "evaluate", help="cross-validate selection + prediction on held-out models"
    )
    _add_data(p)
    p.add_argument("--protocol", choices=["cv", "extrapolation", "complete", "oracle"],
                   default="cv",
                   help="cv: K folds over models (Smola 2026, Sec. 5.1); extrapolation: fit "
                   "on the weakest 50%% of models, test on the strongest 30%%; complete: hide "
                   "cells of models with >= 8 scores and fill them back (matrix completion); "
                   "oracle: best subsets of size <= --k-max by exhaustive search")
    p.add_argument("--folds", type=_positive_int, default=None,
                   help="number of folds (default 10; 3 for the complete protocol)")
    p.add_argument("--holdout", type=_fraction, default=0.1,
                   help="holdout fraction p; training uses floor((1-p) M) models (default 0.1)")
    p.add_argument("--k-max", type=_positive_int, default=15,
                   help="evaluate subsets of size 1..K (default 15)")
    p.add_argument("--objectives", default="mi,entropy,random",
                   help="comma-separated objectives (default mi,entropy,random)")
    p.add_argument("--scoring", choices=SCORINGS, default="default",
                   help="cv/extrapolation R^2 bookkeeping: default scores every validation "
                   "model; paper follows the paper's published code (drops models with no "
                   "selected item observed, scores columns too sparse to model against the "
                   "training mean)")
    p.add_argument("--seed", type=int, default=0, help="seed for folds and random orders")
    p.add_argument("--jobs", type=int, default=1, help="folds in parallel (joblib; -1 = all cores)")
    p.add_argument("--dask", metavar="SCHEDULER",
                   help="run cv folds on a dask.distributed cluster (scheduler address, or "
                   "'local' for a local cluster; needs benchsel[dask])")
    p.add_argument("--hide", type=_fraction, default=0.5,
                   help="complete: fraction of each model's scores hidden (default 0.5)")
    p.add_argument("--methods",
                   help=f"complete: comma-separated methods (default all: {', '.join(COMPLETERS)})")
    p.add_argument("--max-subsets", type=_positive_int, default=50_000,
                   help="oracle: refuse a k with more subsets than this (default 50000)")
    p.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    _add_output(p)
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("coreset", help="pick the questions to run on a new model")
    _add_data(p, model_options=False)
    p.add_argument("-n", type=_coreset_size, default="50",
                   help="questions to pick, a count or a percentage such as 5%% (default 50)")
    p.add_argument("--method", default="default",
                   help=f"default ({DEFAULT_METHOD}) or one of: {', '.join(METHODS)}; append "
                   "+ or ++ to any for a ridge or kernel ridge refit")
    p.add_argument("--emit-lm-eval-samples", nargs=2, metavar=("TASK", "FILE"),
                   help="also write the selection as lm-eval's --samples JSON")
    p.add_argument("--seed", type=int, default=0, help="seed for the random questions")
    _add_output(p)
    p.set_defaults(func=cmd_coreset)

    p = sub.add_parser("coreset-eval",
                       help="compare question-level methods on held-out models")
    _add_data(p, model_options=False)
    p.add_argument("--split", choices=SPLITS, default="interpolation",
                   help="interpolation: random 75/25 models; extrapolation: weakest 50%% "
                   "source, strongest 30%% target; stratified: --sources models spread "
                   "over 10 score bins, the rest targets (Bowyer et al.)")
    p.add_argument("-n", "--n", type=_coreset_size, default="50", dest="n",
                   help="questions per coreset, a count or a percentage such as 5%% "
                   "(default 50)")
    p.add_argument("--sources", type=_positive_int,
                   help="stratified split: number of source models (the paper uses 15, 30, 50)")
    p.add_argument("--jobs", type=_positive_int, default=1,
                   help="trials run in parallel (default 1; results do not depend on it)")
    p.add_argument("--trials", type=_positive_int, default=10, help="trials (default 10)")
    p.add_argument("--methods", default="all",
                   help=f"all, default, or comma-separated: {', '.join(METHODS)}; append "
                   "+ or ++ to any for a ridge or kernel ridge refit (default all: these "
                   f"and {', '.join(PAPER_REFITS)})")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    _add_output(p)
    p.set_defaults(func=cmd_coreset_eval)

    p = sub.add_parser("diagnose", help="normality tests: Shapiro-Wilk per benchmark, Mardia")
    _add_data(p, model_options=False)
    p.add_argument("--alpha", type=_fraction, default=0.05,
                   help="false discovery rate for the Benjamini-Hochberg correction")
    p.add_argument("--show", type=_positive_int, default=15,
                   help="benchmarks listed in the table (lowest W first; --json has all)")
    _add_output(p)
    p.set_defaults(func=cmd_diagnose)

    p = sub.add_parser(
        "discover",
        help="rank benchmarks by novelty (what the others do not explain) and by "
             "information about the rest")
    _add_data(p)
    p.add_argument("--correlation", action="store_true",
                   help="DATA is a correlation matrix (CSV: benchmark names as first column "
                        "and header, symmetric, unit diagonal) instead of scores")
    p.add_argument("--new", metavar="NAMES",
                   help="comma-separated benchmarks to mark as new and summarize")
    p.add_argument("--bootstrap", type=int, default=0, metavar="B",
                   help="resample the models B times for an interval of each novelty rank "
                        "and its top-3 share (default 0: none)")
    p.add_argument("--seed", type=int, default=0, help="seed for the resamples")
    p.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    _add_output(p)
    p.set_defaults(func=cmd_discover)

    p = sub.add_parser(
        "budget",
        help="how many questions each selected benchmark needs, and a total budget's split")
    _add_data(p)
    p.add_argument("-k", type=_positive_int, help="select k benchmarks (MI) and budget them")
    p.add_argument("--objective", choices=OBJECTIVES, default="mi",
                   help="objective of the -k selection (default mi)")
    p.add_argument("--select", metavar="NAMES",
                   help="comma-separated benchmarks to budget instead of -k")
    p.add_argument("--fraction", type=float, default=0.1,
                   help="sampling noise allowed, as a share of each benchmark's variance "
                   "given the other selected ones (default 0.1)")
    p.add_argument("--questions", metavar="FILE",
                   help="question count per benchmark (CSV 'benchmark,questions' or JSON); "
                   "caps the counts and corrects for sampling without replacement")
    p.add_argument("--total", type=_positive_int,
                   help="also spread this many questions over the selected benchmarks, "
                   "greedily lowering the rest's predictive variance")
    _add_output(p)
    p.set_defaults(func=cmd_budget)

    p = sub.add_parser(
        "audit",
        help="flag scores that decouple from the rest of their model's row (contamination, "
             "gaming, broken runs) and benchmarks that drift")
    _add_data(p)
    p.add_argument("--threshold", type=float, default=5.0,
                   help="flag cells whose robust leave-one-out z exceeds this (default 5)")
    p.add_argument("--order", metavar="FILE",
                   help="when each model came out, for the drift test (early half vs late "
                   "half): CSV 'model,order' or JSON {model: order}, a number or a date "
                   "(YYYY-MM-DD) per model; default the row order of DATA")
    _add_output(p)
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser(
        "compare",
        help="predicted difference of two models on every benchmark, with its error bar")
    _add_data(p, optional=True)
    p.add_argument("--models", metavar="A,B",
                   help="two models of DATA (each predicted from its own scores by a fit on "
                   "the other models), or the two of --observed to compare; B - A is reported")
    p.add_argument("--plan", metavar="PLAN.json",
                   help="compare two new models with a saved benchmark-level plan instead of "
                   "fitting DATA")
    p.add_argument("--observed", action="append", metavar="PATH",
                   help="with --plan: the two models' results (as for 'predict --observed': "
                   "a CSV of both, lm-eval output, repeat for several)")
    p.add_argument("--paired", action="store_true",
                   help="DATA is models x questions: the paired difference of A and B over "
                   "the questions both answered, with its standard error (and McNemar's test "
                   "for 0/1 scores); on by default with --lm-eval-task")
    p.add_argument("--level", type=float, default=0.9,
                   help="coverage of the central interval (default 0.9)")
    _add_output(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "report",
        help="one self-contained HTML page of what the leaderboard tells you, with plots")
    _add_data(p, optional=True)
    p.add_argument("-o", "--output", required=True, metavar="FILE.html",
                   help="the page to write (atomically; it loads nothing from the network)")
    p.add_argument("--plots", metavar="DIR",
                   help="also write every figure as DIR/<name>.png and DIR/<name>.svg")
    p.add_argument("--observed", action="append", metavar="PATH",
                   help="a new model's scores to predict and show against the leaderboard "
                   "(as for 'predict --observed')")
    p.add_argument("--plan", metavar="PLAN.json",
                   help="predict --observed with this saved plan; without DATA, its "
                   "leaderboard is the one reported")
    p.add_argument("--method", choices=list(COMPLETERS), default=None,
                   help="predictor of the new model (default auto, as in 'predict')")
    _add_bounds(p)
    p.add_argument("-k", type=_positive_int, default=5,
                   help="size of the selection shown (default 5)")
    p.add_argument("--folds", type=_positive_int, default=5,
                   help="cross-validation folds over models (default 5)")
    p.add_argument("--k-max", type=_positive_int, default=10,
                   help="largest k the cross-validation scores (default 10)")
    p.add_argument("--bootstrap", type=int, default=0, metavar="B",
                   help="model resamples for the discover ranks' intervals (default 0; "
                   "each refits the model)")
    p.add_argument("--threshold", type=float, default=5.0,
                   help="audit threshold on the robust leave-one-out z (default 5)")
    p.add_argument("--level", type=_fraction, default=0.9,
                   help="coverage of the intervals (default 0.9)")
    p.add_argument("--seed", type=int, default=0, help="seed of the folds and resamples")
    p.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    p.add_argument("--json", action="store_true",
                   help="print what was written as JSON (the page embeds the sections' JSON)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("spectrum", help="eigenvalue decay vs greedy residual variance")
    _add_data(p)
    _add_output(p)
    p.set_defaults(func=cmd_spectrum)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"benchsel: warning: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    args = parser.parse_args(argv)
    args.argv = argv  # recorded in plans
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = _show_warning
        try:
            return args.func(args)
        except _UsageError as err:
            parser.error(str(err))  # exits with code 2
        except (ValueError, OSError, np.linalg.LinAlgError) as err:
            print(f"benchsel: error: {err}", file=sys.stderr)
            return 1
        except BrokenPipeError:
            return 0
