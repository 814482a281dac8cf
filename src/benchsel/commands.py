"""What each ``benchsel`` command does, once :mod:`benchsel.cli` has parsed it.

Every command is a thin call into the library. Human-readable tables go to
stdout by default, ``--json`` prints machine-readable JSON instead, and
``--output FILE`` writes it atomically to a file. This module imports the
whole library; the parser in :mod:`benchsel.cli` imports none of it, so that
``--help`` and usage errors answer at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

from .datasets import bundled_path, list_datasets, load_dataset, resolve_data
from .gaussian import GaussianModel
from .io import (
    check_output_folder,
    check_output_path,
    read_costs,
    read_model_order,
    read_question_counts,
    write_text_atomic,
)
from .lmeval import parse_per_task, write_samples
from .matrix import DataWarning, ScoreMatrix, did_you_mean
from .names import COMPLETION_METHODS, DEFAULT_CORESET_METHOD, DEFAULT_PREDICTOR, INPUT_FORMATS
from .observations import as_items, observe, observe_benchmarks, observe_stderr, short_names
from .plan import load_plan, plan_benchmarks, plan_mixed, plan_questions
from .progress import Progress
from .selection.greedy import describe_certificate
from .sources import TaskSources, as_scores, is_lm_eval_data, question_items, task_sources


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
            name, j = as_items([pieces[i]], items)[0], i + 1
        out.append(name)
        i = j
    return out


def _costs(args, items) -> dict[str, float] | None:
    """``--costs``, a bare lm-eval task name standing for its one column."""
    if not args.costs:
        return None
    costs = read_costs(args.costs)
    return dict(zip(as_items(list(costs), items), costs.values()))


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


@contextlib.contextmanager
def _as_flags(**flags):
    """Library errors that begin with a parameter's name, told with the CLI's flag."""
    try:
        yield
    except ValueError as err:
        text = str(err)
        for param, flag in flags.items():
            if text.startswith(param + " "):
                raise ValueError(flag + text[len(param):]) from None
        raise


class UsageError(ValueError):
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


def check_outputs(args) -> None:
    """Refuse every output target of the command before any work is done.

    ``-o``, ``--emit-lm-eval-samples`` and ``--plots`` are checked with the
    writers' own rules (:func:`benchsel.io.check_output_path` and
    :func:`~benchsel.io.check_output_folder`), so a read-only file, a
    symbolic link loop, an input or a folder that is a file is refused at
    once instead of after minutes of fitting.
    """
    inputs = _inputs(args)
    files = []
    if getattr(args, "output", None) is not None:
        files.append(("-o/--output", args.output))
    samples = getattr(args, "emit_lm_eval_samples", None)
    if samples is not None:  # plan: FILE; coreset: TASK FILE
        files.append(("--emit-lm-eval-samples", samples if isinstance(samples, str)
                      else samples[-1]))
    for flag, path in files:
        if path == "":
            raise UsageError(f"{flag}: an empty file name; give the name of a file to write"
                             + (", or leave -o out to print" if flag.startswith("-o") else ""))
        check_output_path(path, protect=inputs)
    plots = getattr(args, "plots", None)
    if plots is not None:
        if plots == "":
            raise UsageError("--plots: an empty folder name; give the folder to write the "
                             "figures into")
        for flag, path in files:
            if Path(path).resolve() == Path(plots).resolve():
                raise UsageError(f"--plots {plots} and {flag} name the same path; the "
                                 "figures go into a folder of their own")
        check_output_folder(plots, protect=inputs)


def _read_options(args) -> dict:
    opts = {}
    for name in ("input_format", "sep", "model_column", "item_column", "score_column"):
        value = getattr(args, name, None)
        if value is not None:
            opts["format" if name == "input_format" else name] = value
    return opts


def _load(args):
    """The DATA argument as a score matrix: a file, a bundled name, or lm-eval output."""
    metric = parse_per_task(getattr(args, "lm_eval_metric", None), "--lm-eval-metric")
    filt = parse_per_task(getattr(args, "lm_eval_filter", None), "--lm-eval-filter")
    task = getattr(args, "lm_eval_task", None)
    if is_lm_eval_data(args.data):
        if task:
            if "," in task:
                raise ValueError(f"--lm-eval-task {task!r}: this command reads one task; "
                                 "'benchsel plan --kind questions' takes several")
            return task_sources(args.data, task, metric=metric, filter=filt,
                                fan_out=_fan_out(args)).scores[task]
        return as_scores(args.data, metric=metric, filter=filt)
    if task and not str(args.data).lower().endswith(".npz"):
        raise ValueError(f"--lm-eval-task needs DATA to be a folder of lm-eval runs; "
                         f"{args.data} is not one")
    return resolve_data(args.data, **_read_options(args))


def _fit(args, scores) -> GaussianModel:
    return GaussianModel(covariance=args.covariance,
                         transform=getattr(args, "transform", "none"),
                         calibration=getattr(args, "calibration", "conformal"),
                         bounds=getattr(args, "bounds", "infer")).fit(scores)


# ----------------------------------------------------------------- commands
def cmd_datasets(args) -> int:
    if args.name is not None:
        return _show_dataset(args)
    rows, payload = [], []
    for info in list_datasets():
        scores = load_dataset(info.name)
        m, n = scores.shape
        observed = round(100 * scores.observed_fraction, 1)
        rows.append([info.name, f"{m} x {n}", f"{observed}%", info.kind, info.source])
        payload.append(
            {"name": info.name, "kind": info.kind, "models": m, "items": n,
             "observed_percent": observed, "source": info.source}
        )
    _emit(args, {"datasets": payload},
          _table(["name", "shape", "observed", "kind", "source"], rows))
    return 0


def _show_dataset(args) -> int:
    """``benchsel datasets NAME``: one bundled matrix's shape, items and models."""
    info = next((d for d in list_datasets() if d.name == args.name), None)
    scores = load_dataset(args.name)  # an unknown name: the error suggests close ones
    counts = scores.observed.sum(axis=0)
    payload = {"name": info.name, "kind": info.kind, "source": info.source,
               "models": scores.n_models, "items": scores.n_items,
               "observed_percent": round(100 * scores.observed_fraction, 1),
               "item_models": {item: int(c) for item, c in zip(scores.items, counts)},
               "model_names": list(scores.models)}
    what = "questions" if info.kind == "questions" else "benchmarks"
    lines = [f"{info.name}: {info.source}",
             f"{scores.n_models} models x {scores.n_items} {what}, "
             f"{payload['observed_percent']}% of the cells observed", ""]
    if info.kind == "questions":
        lines.append(f"questions {scores.items[0]} ... {scores.items[-1]} (doc ids 0.."
                     f"{scores.n_items - 1}); mean score "
                     f"{float(np.nanmean(scores.values)):.3f}")
    else:
        lines.append(_table(["benchmark", "models with a score"],
                            [[item, int(c)] for item, c in zip(scores.items, counts)]))
    shown = 30
    more = (f", ... ({scores.n_models - shown} more; --json lists all)"
            if scores.n_models > shown else "")
    lines += ["", "models: " + ", ".join(scores.models[:shown]) + more]
    _emit(args, payload, "\n".join(lines))
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
        keep_aggregates=args.keep_aggregates,
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
                    seed=args.seed, keep_aggregates=args.keep_aggregates))
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
    if args.format in INPUT_FORMATS:  # predict's --format named the input's before
        warnings.warn(f"--format {args.format} names the input's format: use --input-format "
                      f"{args.format} (predict's --format is its output's)", FutureWarning,
                      stacklevel=2)
        args.input_format, args.format = args.format, "table"
    if (args.plan is None) == (args.data is None):
        raise UsageError("predict takes DATA (fit now) or --plan PLAN.json (fitted "
                          "already), exactly one of them")
    pred, level = _prediction(args)
    if args.format == "csv":
        _emit_text(args, _prediction_csv(pred))
        return 0
    # A question-level plan lists every task, those run in full as observed.
    full_runs = level == "questions"
    payload = pred.to_dict(include_observed=full_runs)
    blocks = []
    pct = f"{100 * args.coverage:g}%"
    what = "task" if level == "questions" else "model" if args.axis == "models" else "benchmark"
    for i, name in enumerate(pred.models):
        records = pred.records(i, include_observed=full_runs)
        rows = [[r["benchmark"] + (" (run in full)" if r.get("observed") else ""), r["mean"],
                 r["std"], r["low"], r["high"]] for r in records]
        given = int(pred.observed[i].sum())
        head = (f"{name}: {len(rows) - given} task score(s) predicted from the planned "
                "questions" + (f", {given} task(s) run in full" if given else "")
                if level == "questions"
                else f"{name}: {len(rows)} predicted from {given} observed"
                if not getattr(args, "questions", None)
                else f"{name}: {len(rows)} predicted, its observed scores among them: the "
                "Gaussian conditioned on them with their measurement noise (--questions)")
        if pred.choices:
            choice = pred.choices[i]
            margin = choice["margin"]
            held = ("cells of the strongest and weakest source models, as this model lies "
                    "beyond the others' range" if choice.get("split") == "strength"
                    else "held-out source cells")
            if choice.get("split") == "none":
                head += (f"\n  method: {choice['method']} (auto: no observed score to choose "
                         "by; the source models' mean and spread)")
            elif choice.get("split") == "frontier":
                head += (f"\n  method: {choice['method']} (auto: this model is at the top of "
                         "the source models, where the Gaussian's conditional mean is "
                         "corrected by the shortfall measured on the strongest sources)")
            else:
                head += (f"\n  method: {choice['method']} (auto: best of a cross-validation "
                         f"on {choice['cells']} {held}"
                         + (f", MedAPE {margin:.2f} points below the runner-up)"
                            if margin is not None else ")"))
        cal = pred.calibration[i] if pred.calibration else {}
        if cal.get("method") == "conformal":
            where = ("no observed score: as wide as a model beyond the source models' "
                     "strength range needs" if cal.get("regime") == "unknown"
                     else f"{cal['regime']} the source models' range")
            head += ("\n  intervals: calibrated on held-out source models, "
                     f"x{cal['multiplier']:.2f} ({where})")
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


def _prediction(args, scores: ScoreMatrix | None = None):
    """(Prediction, plan level) of ``--observed``: from ``--plan``, or a fit of DATA
    (``scores``, when the caller has read it already)."""
    if args.plan is not None:
        if getattr(args, "axis", "benchmarks") != "benchmarks":
            raise UsageError("--axis models transposes DATA; a plan is already fitted")
        return _predict_from_plan(args)
    scores = _load(args) if scores is None else scores
    dual = getattr(args, "axis", "benchmarks") == "models"
    if dual:
        # The dual: a new benchmark's scores on a few reference models predict
        # its scores on every other model.
        scores = scores.transpose()
    model = _fit(args, scores)
    with _as_flags(observed="--observed"):
        observed = observe_benchmarks(args.observed, model.items_)
    observed = _on_the_boards_scale(args, model, observed)
    # auto's decisions for this board and pattern are kept between runs.
    from .prediction.memo import load_cached, save_cached

    load_cached(model)
    pred = model.predict(observed, level=args.coverage, method=args.method,
                         observed_std=_predict_noise(args, model, observed))
    save_cached(model)
    if dual and pred.models == ["new model"]:
        pred = dataclasses.replace(pred, models=["new benchmark"])
    return pred, "benchmarks"


def _predict_noise(args, model, observed):
    """``predict --questions``: the observed scores' standard errors over the model's items
    (the Gaussian then conditions on them with that noise), or None."""
    if not getattr(args, "questions", None):
        return None
    if args.method not in (None, "auto", "gaussian"):
        raise UsageError(f"--questions makes the observed scores noisy, which only the "
                         f"Gaussian predictor models; --method {args.method} cannot use it")
    _, x = model._rows(observed)
    return np.nan_to_num(_binomial_noise(args.questions, model, x), nan=0.0)


def _on_the_boards_scale(args, model, observed):
    """Scores given as percent for a column of fractions (or the reverse): an error that
    says what to give, or with ``--rescale`` put on the column's scale."""
    fixed, changes = model.rescaled(observed)
    if not changes:
        return observed
    if getattr(args, "rescale", False):
        for name, item, given, new in changes:
            warnings.warn(f"--rescale: {name}: {item} = {given:.4g} read as {new:.4g}",
                          DataWarning, stacklevel=2)
        return fixed
    lines = [f"{name}: {item} = {given:.4g} looks like "
             + (f"a percent; the column holds fractions: give {new:.4g}" if new < given
                else f"a fraction; the column is in percent: give {new:.4g}")
             for name, item, given, new in changes[:5]]
    raise ValueError("scores on another scale than the leaderboard's -- " + "; ".join(lines)
                     + ("; ..." if len(changes) > 5 else "") + " (or --rescale converts them)")


def _predict_from_plan(args):
    """(Prediction, plan level) of ``predict --plan``."""
    if args.bounds != "infer":
        raise UsageError("a plan carries its bounds: set them with 'benchsel plan --bounds', "
                          "not at predict time")
    _refuse_fit_options(args, "a plan carries its fitted model: set {flag} with 'benchsel "
                        "plan', not at predict time")
    for flag in ("lm_eval_task", "lm_eval_metric", "lm_eval_filter"):
        if getattr(args, flag) is not None:
            raise UsageError(f"--{flag.replace('_', '-')}: a plan records which lm-eval tasks, "
                              "metrics and filters it reads")
    plan = load_plan(args.plan)
    if plan.level != "benchmarks" and args.method is not None:
        raise UsageError(f"--method applies to benchmark-level prediction; a {plan.level} "
                          "plan predicts with the methods it was made with")
    with _as_flags(observed="--observed"):
        observations = observe(plan, args.observed)
    noise = None
    if plan.level == "benchmarks":
        model = plan.benchmarks.model()
        observations.benchmarks = _on_the_boards_scale(args, model, observations.benchmarks)
        noise = _predict_noise(args, model, observations.benchmarks)
    elif args.questions:
        raise UsageError(f"--questions applies to benchmark scores; a {plan.level}-level "
                         "plan knows the questions each task score comes from")
    return plan.predict(observations, coverage=args.coverage, method=args.method,
                        observed_std=noise), plan.level


def _refuse_fit_options(args, message: str) -> None:
    """Usage error for a model option given where no model is fitted."""
    for flag, value, default in (("--covariance", args.covariance, "auto"),
                                 ("--transform", args.transform, "none"),
                                 ("--calibration", args.calibration, "conformal")):
        if value != default:
            raise UsageError(message.format(flag=flag))


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
        raise UsageError("--emit-lm-eval-samples and -o name the same file; the plan and "
                          "lm-eval's --samples file are two files")
    from .evaluation.budget import MAX_TOTAL_QUESTIONS

    if args.total is not None and args.total > MAX_TOTAL_QUESTIONS:
        raise UsageError(f"--total {args.total}: at most {MAX_TOTAL_QUESTIONS:,} questions "
                         "can be planned")
    if args.kind == "benchmarks":
        for flag, value in (("-n", args.n), ("--total", args.total),
                            ("--emit-lm-eval-samples", args.emit_lm_eval_samples),
                            ("--lm-eval-task", args.lm_eval_task), ("--dask", args.dask),
                            ("--jobs", None if args.jobs == 1 else args.jobs)):
            if value is not None:
                raise UsageError(f"{flag} belongs to --kind questions")
        if args.method != "default":
            raise UsageError("--method belongs to --kind questions (benchmarks are selected by "
                              "--objective)")
        scores = _load(args)
        costs = _costs(args, scores.items)
        if args.budget is not None and costs is None:
            raise UsageError("--budget needs --costs FILE")
        plan = plan_benchmarks(
            scores, args.k, objective=args.objective,
            include=_item_names(args.include, scores.items),
            exclude=_item_names(args.exclude, scores.items), costs=costs, budget=args.budget,
            target_residual=args.target_residual, seed=args.seed, command=command,
            keep_aggregates=args.keep_aggregates, covariance=args.covariance,
            transform=args.transform, bounds=args.bounds, calibration=args.calibration)
    else:
        if args.kind == "questions":
            for flag, value in (("-k", args.k), ("--costs", args.costs),
                                ("--budget", args.budget), ("--include", args.include),
                                ("--exclude", args.exclude),
                                ("--target-residual", args.target_residual),
                                ("--keep-aggregates", args.keep_aggregates or None)):
                if value is not None:
                    raise UsageError(f"{flag} belongs to --kind benchmarks or mixed")
            _refuse_fit_options(args, "{flag} belongs to --kind benchmarks or mixed (the "
                                "leaderboard's Gaussian model)")
            if args.bounds != "infer":
                raise UsageError("--bounds belongs to --kind benchmarks or mixed; task "
                                  "scores of per-question scores in [0, 1] stay in [0, 1]")
        if args.n is not None and args.total is not None:
            raise UsageError("give -n (questions per task) or --total (spread over the tasks), "
                              "not both")
        if args.kind == "mixed" and args.transform != "none":
            raise ValueError("a mixed plan conditions on sampled task scores with their "
                             "standard errors, which works on raw scores only: use no "
                             "--transform")
        if args.kind == "mixed" and not is_lm_eval_data(args.data):
            raise UsageError("--kind mixed needs DATA to be a folder of lm-eval runs (full "
                              "runs give the leaderboard, sample logs the questions)")
        with _workers(args):
            sources = _question_sources(args)
        questions = dict(n=None if args.total is not None else (args.n or "50"),
                         total=args.total, method=args.method, seed=args.seed,
                         metric=sources.metrics, filter=sources.filters, command=command)
        if args.kind == "questions":
            plan = plan_questions(sources.scores, **questions)
        else:
            board = as_scores(args.data,
                              metric=parse_per_task(args.lm_eval_metric, "--lm-eval-metric"),
                              filter=parse_per_task(args.lm_eval_filter, "--lm-eval-filter"))
            costs = _costs(args, board.items)
            columns = {t: f"{t}/{sources.metrics[t]},{sources.filters[t]}"
                       for t in sources.scores}
            plan = plan_mixed(
                board, sources.scores, columns, args.k, objective=args.objective,
                include=_item_names(args.include, board.items),
                exclude=_item_names(args.exclude, board.items), costs=costs, budget=args.budget,
                target_residual=args.target_residual, keep_aggregates=args.keep_aggregates,
                covariance=args.covariance, transform=args.transform, bounds=args.bounds,
                calibration=args.calibration, **questions)
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


def _question_sources(args) -> TaskSources:
    """The per-question sources of a question-level or mixed plan."""
    tasks = _names(args.lm_eval_task)
    if bundled_path(args.data) is None and not Path(args.data).exists():
        resolve_data(args.data)  # the error: no such file, and the closest bundled names
    if is_lm_eval_data(args.data):
        if not tasks:
            raise UsageError("--lm-eval-task T1,T2,... names the tasks to plan (DATA is a folder "
                              "of lm-eval runs)")
    elif len(tasks) > 1:
        raise UsageError(f"{args.data} holds one task's questions; --lm-eval-task names one task")
    return task_sources(args.data, tasks or None,
                        metric=parse_per_task(args.lm_eval_metric, "--lm-eval-metric"),
                        filter=parse_per_task(args.lm_eval_filter, "--lm-eval-filter"),
                        fan_out=_fan_out(args), **_read_options(args))


def cmd_spectrum(args) -> int:
    from .evaluation.spectrum import spectrum

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
    needed = {lvl: model.benchmarks_needed(float(lvl.rstrip("%")) / 100,
                                           objective=args.objective)
              for lvl in payload["k_for_explained"]}
    payload["benchmarks_needed"] = {"objective": args.objective, **needed}
    picks = ", ".join(f"{lvl}: {k}" for lvl, k in needed.items())
    bound = ", ".join(f"{lvl}: {k}" for lvl, k in payload["k_for_explained"].items())
    text = (
        f"{n} items. Benchmarks needed to explain 90/95/99% of the variance, greedy "
        f"{args.objective} (as 'select --objective {args.objective} --target-residual'): "
        f"{picks}; no choice of fewer can do it (eigenvalues): {bound}.\n"
        "The table: eigenvalues, the variance left by the best k directions (a lower bound), "
        "and by greedy entropy's first k benchmarks (every column, aggregates included)\n"
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
            if args.covariance != "auto":
                raise UsageError("--covariance needs scores, not a correlation matrix")
            result = discover(correlation=read_correlation(args.data), new=new,
                              bootstrap=args.bootstrap, seed=args.seed)
        else:
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
    from .evaluation.budget import MAX_TOTAL_QUESTIONS, question_budget

    if args.total is not None and args.total > MAX_TOTAL_QUESTIONS:
        raise UsageError(f"--total {args.total}: at most {MAX_TOTAL_QUESTIONS:,} questions "
                         "can be spread")
    if (args.k is None) == (args.select is None):
        raise UsageError("budget needs the benchmarks to run: -k K (select them) or --select "
                          "NAMES, exactly one")
    scores = _load(args)
    model = _fit(args, scores)
    selected = (_item_names(args.select, model.items_) if args.select
                else model.select(args.k, objective=args.objective).items)
    questions = None
    if args.questions:
        counts = read_question_counts(args.questions)
        questions = dict(zip(as_items(list(counts), model.items_), counts.values()))
    result = question_budget(model, selected, fraction=args.fraction, questions=questions,
                             total=args.total,
                             per_question=_item_names(args.per_question, model.items_))
    payload = result.to_dict()
    payload["dataset"] = str(args.data)
    rows = [[r.benchmark, r.score,
             "-" if r.conditional_variance is None else r.conditional_variance,
             "-" if r.questions_needed is None else r.questions_needed,
             "-" if r.questions_available is None else r.questions_available,
             *(["-" if r.allocated is None else r.allocated] if args.total else [])]
            for r in result.rows]
    text = (f"questions per benchmark for sampling noise <= {args.fraction:g} x its variance "
            "given the other selected benchmarks\n"
            + _table(["benchmark", "mean score", "cond. variance", "questions needed",
                      "available", *(["allocated"] if args.total else [])], rows)
            + "\n\nmean score: over the leaderboard's models, in the board's units; cond. "
            "variance: what the other selected benchmarks leave unexplained, in score units "
            "squared; questions needed: for a binomial score p measured on n questions, "
            "p(1-p)/n is at most that share of it; available: the benchmark's questions "
            "(--questions)" + ("; allocated: the --total spread where it lowers the "
                              "unselected benchmarks' predictive variance most"
                              if args.total else ""))
    for r in result.rows:
        if r.reason:
            text += f"\n{r.benchmark}: {r.reason}"
    if args.total:
        text += (f"\nwith {args.total} questions in all, the unselected benchmarks' total "
                 "predictive variance (summed over them, score units squared) is "
                 + ("beyond float64's range (scores near 1e154 or more)"
                    if result.rest_variance is None else f"{result.rest_variance:.4g}"))
    _emit(args, payload, text)
    return 0


def cmd_audit(args) -> int:
    from .evaluation.audit import audit

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
        text += ("\n\nflagged: cells with |z| above the threshold, of the benchmark's cells; "
                 "mean z early / late: its mean z over the earlier and later half of the "
                 "models (row order, or --order's dates); drift t: Welch's t of late against "
                 "early, |t| > 3 marks a benchmark whose relation to the others drifts (e.g. "
                 "contamination); replacement: the unflagged benchmark most correlated with "
                 "it, which carries most of what it measures")
    _emit(args, payload, text)
    return 0


def cmd_compare(args) -> int:
    from .gaussian.compare import compare_models

    if args.paired or args.lm_eval_task:
        return _compare_paired(args)
    if args.plan is not None:
        model, observed, names, stderr = _compare_from_plan(args)
    else:
        if args.data is None or args.models is None:
            raise UsageError("compare takes DATA and --models A,B (two of its models), or "
                              "--plan PLAN.json and --observed with two models' results")
        if args.observed:
            raise UsageError("--observed goes with --plan; without it A and B are rows of DATA")
        model, observed, names, stderr = _compare_rows(args)
    stderr = [{**stderr[i], **_binomial_stderr(args.questions, observed[i], model)}
              for i in range(2)]
    result = compare_models(model, observed[0], observed[1], names=tuple(names),
                            level=args.coverage, stderr_a=stderr[0], stderr_b=stderr[1])
    payload = result.to_dict()
    payload["dataset"] = str(args.data if args.plan is None else args.plan)
    pct = f"{100 * args.coverage:g}%"
    table = [[name + (" (both run)" if result.observed[j] else ""), result.difference[j],
              result.std[j], result.low[j], result.high[j], result.p_b_better[j]]
             for j, name in enumerate(result.items)]
    fit = ("each fitted without the two of them" if args.plan is None
           else "predicted by the plan's model")
    head = f"{names[1]} minus {names[0]}, {fit}; error correlation {result.correlation:.2f}"
    unknown = [item for j, item in enumerate(result.items) if not result.noise_known[j]]
    if unknown:
        head += (f"\nboth run on {short_names(unknown, 5)}: no measurement noise known, so no "
                 "error bar or P(B > A) there (-); give --questions N, "
                 "'<benchmark>_stderr' columns or lm-eval runs (their *_stderr)")
    _emit(args, payload, head + "\n" + _table(
        ["benchmark", "difference", "std", f"low ({pct})", f"high ({pct})", "P(B > A)"], table))
    return 0


def _binomial_noise(spec: str | None, model, x: np.ndarray) -> np.ndarray:
    """``--questions``: the standard error sqrt(p(1-p)/N) of each observed score of ``x``
    (rows over ``model.items_``), on the benchmark's own scale ([0, 1] or [0, 100]);
    NaN where a score is observed without a count, 0 where none is observed."""
    out = np.where(np.isnan(x), 0.0, np.nan)
    if not spec:
        return out
    items = list(model.items_)
    counts = _question_counts(spec, items)
    for j, item in enumerate(items):
        n = counts.get(item, counts.get(None))
        rows = ~np.isnan(x[:, j])
        if n is None or not rows.any():
            continue
        low, high = model.bounds_[:, j]
        if not (low == 0 and high in (1, 100)):
            raise ValueError(f"--questions: {item!r} is not a score in [0, 1] or [0, 100] "
                             f"(bounds {low:g}, {high:g}); give its standard error in a "
                             "'_stderr' column instead")
        p = np.clip(x[rows, j] / high, 0.0, 1.0)
        out[rows, j] = high * np.sqrt(p * (1 - p) / n)
    return out


def _binomial_stderr(spec: str | None, observed: dict, model) -> dict:
    """``--questions`` for one model's ``{item: score}``: ``{item: standard error}``."""
    items = list(model.items_)
    x = np.full((1, len(items)), np.nan)
    for item, value in observed.items():
        x[0, items.index(item)] = value
    se = _binomial_noise(spec, model, x)[0]
    return {item: float(se[j]) for j, item in enumerate(items)
            if item in observed and np.isfinite(se[j])}


def _question_counts(spec: str, items: list[str]) -> dict:
    """``N`` (every benchmark, key None), ``NAME=N,...`` or a file of counts (as budget's
    ``--questions``: CSV ``benchmark,count`` or JSON), checked."""
    if Path(spec).is_file():
        counts = read_question_counts(spec)
        return dict(zip(as_items(list(counts), items), counts.values()))

    def count(text: str, where: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = 0
        if n < 1:
            raise UsageError(f"--questions {where}: {text!r} is not a positive whole number")
        return n

    if "=" not in spec:
        return {None: count(spec.strip(), "")}
    out = {}
    for part in filter(None, (t.strip() for t in spec.split(","))):
        name, _, value = part.rpartition("=")
        if name not in items:
            raise ValueError(f"--questions: no benchmark {name!r}{did_you_mean([name], items)}")
        out[name] = count(value.strip(), name)
    return out


def _split_stderr(scores: ScoreMatrix) -> tuple[ScoreMatrix, dict]:
    """DATA's ``<benchmark>_stderr`` columns apart: (the scores, model -> {item: stderr})."""
    pairs = {item: item[: -len("_stderr")] for item in scores.items
             if item.endswith("_stderr") and item[: -len("_stderr")] in scores.items}
    if not pairs:
        return scores, {}
    keep = [j for j, item in enumerate(scores.items) if item not in pairs]
    stderr = {}
    for i, model in enumerate(scores.models):
        stderr[model] = {
            pairs[item]: float(scores.values[i, j]) for j, item in enumerate(scores.items)
            if item in pairs and not np.isnan(scores.values[i, j])}
    return scores.subset(items=keep), stderr


def _compare_paired(args) -> int:
    """``compare --paired``: two rows of a models x questions matrix, question by question."""
    from .evaluation.paired import paired_difference

    if args.plan is not None or args.observed:
        raise UsageError("--paired compares two rows of DATA (models x questions); it takes "
                          "no --plan or --observed")
    if args.data is None or args.models is None:
        raise UsageError("compare --paired takes DATA and --models A,B")
    scores, names = _two_models(args, _load(args))
    result = paired_difference(scores, names[0], names[1], level=args.coverage)
    payload = {"dataset": str(args.data), "paired": result.to_dict()}
    text = (f"{names[1]} minus {names[0]} on the {result.questions} questions both answered: "
            f"{result.difference:+.4g} (standard error {result.std:.3g}; "
            f"{100 * args.coverage:g}% interval {result.low:+.4g} to {result.high:+.4g}); "
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
        raise UsageError(f"--models takes two different model names, A,B; got {args.models!r}")
    missing = [n for n in names if n not in scores.models]
    if missing:
        raise ValueError(f"{args.data}: no model named {', '.join(map(repr, missing))}; models "
                         f"include {', '.join(scores.models[:10])}"
                         f"{' ...' if scores.n_models > 10 else ''}")
    return scores, names


def _compare_rows(args):
    """(model fitted on the other rows, the two rows' scores, their names, their standard
    errors from DATA's ``_stderr`` columns) of DATA."""
    scores, stderr = _split_stderr(_load(args))
    if is_lm_eval_data(args.data):  # lm-eval writes each score's standard error beside it
        found = observe_stderr(args.data, scores.items)
        stderr = dict(zip(found.models, _stderr_rows(found, list(found.models))))
    scores, names = _two_models(args, scores.cleaned())
    rows = [scores.models.index(n) for n in names]
    model = _fit(args, scores.subset(models=np.setdiff1d(np.arange(scores.n_models), rows)))
    known = set(model.items_)
    observed = [{item: float(scores.values[r, j]) for j, item in enumerate(scores.items)
                 if not np.isnan(scores.values[r, j]) and item in known} for r in rows]
    errors = [{item: se for item, se in stderr.get(n, {}).items() if item in known}
              for n in names]
    return model, observed, names, errors


def _compare_from_plan(args):
    """(the plan's model, two runs' scores, their names) for ``compare --plan``."""
    if args.data is not None:
        raise UsageError("compare takes DATA or --plan, not both")
    _refuse_fit_options(args, "a plan carries its fitted model: set {flag} with 'benchsel "
                        "plan', not at compare time")
    plan = load_plan(args.plan)
    if plan.level != "benchmarks":
        raise UsageError(f"compare --plan needs a benchmark-level plan; this one is "
                          f"{plan.level}-level")
    model = plan.benchmarks.model()
    if not args.observed:
        raise UsageError("compare --plan needs --observed: the two models' results")
    with _as_flags(observed="--observed"):
        runs = observe_benchmarks(args.observed, model.items_)
    if runs.n_models < 2:
        raise ValueError("compare needs the results of two models in --observed (a CSV of two "
                         "rows, an lm-eval folder of two runs, or --observed twice)")
    names = _names(args.models) if args.models else list(runs.models)
    if len(names) != 2 or not set(names) <= set(runs.models):
        raise UsageError(f"--observed holds {len(runs.models)} models "
                          f"({short_names(list(runs.models), 10)}); name two with --models A,B")
    observed = []
    for name in names:
        row = runs.values[runs.models.index(name)]
        observed.append({item: float(v) for item, v in zip(runs.items, row) if not np.isnan(v)})
    return model, observed, names, _stderr_rows(observe_stderr(args.observed, model.items_),
                                                names)


def _stderr_rows(stderr: ScoreMatrix | None, names: list[str]) -> list[dict]:
    """``{item: standard error}`` of each named model, where one is known."""
    if stderr is None:
        return [{} for _ in names]
    return [{item: float(v) for item, v in zip(stderr.items, stderr.values[
        stderr.models.index(name)]) if np.isfinite(v)} if name in stderr.models else {}
        for name in names]


def cmd_report(args) -> int:
    import time

    from .report import build_report

    start = time.perf_counter()
    if args.data is None and args.plan is None:
        raise UsageError("report takes DATA, or --plan PLAN.json whose leaderboard it shows")
    if args.plan is not None and not args.observed:
        raise UsageError("--plan goes with --observed: the new model's results")
    if args.data is not None:
        scores = _load(args)
    else:
        plan = load_plan(args.plan)
        if plan.benchmarks is None:
            raise UsageError(f"{args.plan} is a {plan.level} plan with no leaderboard; give "
                              "the leaderboard as DATA")
        scores = plan.benchmarks.source
    # The new model is predicted as 'predict' would: from the plan, else by a fit of DATA.
    pred = _prediction(args, scores)[0] if args.observed else None
    progress = Progress("sections", enabled=False if args.quiet else None)
    try:
        report = build_report(
            scores, dataset=str(args.data if args.data is not None else args.plan),
            prediction=pred, k=args.k, folds=args.folds, k_max=args.k_max,
            bootstrap=args.bootstrap, threshold=args.threshold, covariance=args.covariance,
            seed=args.seed, level=args.coverage, progress=progress)
    finally:
        progress.close()
    try:
        page = report.html()
        # The page states what the user waited: the whole command, the new model's
        # prediction and the page's own drawing included (known only once drawn).
        shown = f"computed in {report.seconds:.1f} s"
        report.seconds = time.perf_counter() - start
        page = page.replace(shown, f"computed in {report.seconds:.1f} s", 1)
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


def _fan_out(args) -> dict:
    """``n_jobs`` and ``backend`` for the library: ``--jobs`` workers, or every Dask worker."""
    if getattr(args, "dask", None) is not None:
        return {"n_jobs": -1, "backend": "dask"}
    return {"n_jobs": getattr(args, "jobs", 1), "backend": None}


@contextlib.contextmanager
def _workers(args):
    """:func:`_fan_out`'s keywords, with the client of ``--dask`` alive for the block."""
    client = _dask_client(getattr(args, "dask", None))
    try:
        yield _fan_out(args)
    finally:
        if client is not None:
            client.close()


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
    from .evaluation import (
        cross_validate,
        evaluate_completion,
        extrapolate,
        frontier,
        oracle_subsets,
    )

    scores = _load(args)
    args.folds_given = args.folds is not None
    if args.folds is None:
        args.folds = 10
    objectives = tuple(_names(args.objectives))
    common = dict(objectives=objectives, k_max=args.k_max, covariance=args.covariance,
                  seed=args.seed)
    calibrate = args.calibration == "conformal"
    if args.protocol in ("cv", "extrapolation", "frontier"):
        common["transform"] = args.transform
        common["scoring"] = args.scoring
        common["calibrate"] = calibrate
        common["predictor"] = args.predictor or DEFAULT_PREDICTOR
    elif args.predictor not in (None, "gaussian"):
        raise ValueError(f"--predictor is not supported by the {args.protocol} protocol")
    elif args.transform != "none":
        raise ValueError(f"--transform is not supported by the {args.protocol} protocol")
    elif args.scoring != "default":
        raise ValueError(f"--scoring is not supported by the {args.protocol} protocol")
    if args.protocol != "cv" and args.splitter != "default":
        raise UsageError(f"--splitter is not supported by the {args.protocol} protocol")
    if args.protocol == "complete" and args.covariance != "auto":
        raise ValueError(
            "--covariance does not apply to the complete protocol: it compares the "
            "'gaussian' (em-shrink) and 'gaussian-em' (paper) methods itself"
        )
    label = {"cv": "folds", "oracle": "subsets", "complete": "folds"}.get(args.protocol, "splits")
    progress = Progress(label, enabled=False if args.quiet else None)
    try:
        if args.protocol == "cv":
            with _workers(args) as fan_out:
                result = cross_validate(scores, folds=args.folds, holdout=args.holdout,
                                        splitter=args.splitter, progress=progress,
                                        **fan_out, **common)
        elif args.protocol == "extrapolation":
            result = extrapolate(scores, **common)
        elif args.protocol == "frontier":
            result = frontier(scores, **common)
        elif args.protocol == "complete":
            methods = tuple(_names(args.methods)) if args.methods else COMPLETION_METHODS
            with _workers(args) as fan_out:
                result = evaluate_completion(
                    scores, methods=methods, hide=args.hide,
                    folds=args.folds if args.folds_given else 3, seed=args.seed,
                    progress=progress, calibrate=calibrate, **fan_out)
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
    setup = {
        "cv": f"{result.folds} folds, holdout {result.holdout:g}",
        "extrapolation": "fit on the weakest 50% of models, predict the strongest 30%",
        "frontier": "fit on every model but the strongest 10% (at least 5), predict those",
    }[args.protocol]
    if result.predictor != "gaussian":
        setup += f", predictor {result.predictor}"
        if result.predictor == "auto":
            picked = Counter(m for obj in result.choices.values() for fold in obj
                             for m in fold if m)
            setup += " (chose " + ", ".join(f"{m} {n}x" for m, n in picked.most_common()) + ")"
    text = (
        f"{args.protocol}: {setup}, {head}\n"
        + _table(["objective", "k", "r2_mean", "r2_std", "residual_var", "coverage_90",
                  "uncalibrated", "stability"], rows)
    )
    _emit(args, payload, text)
    return 0


def cmd_diagnose(args) -> int:
    from .evaluation.diagnostics import normality

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


def cmd_coreset(args) -> int:
    from .coreset.evaluate import resolve_n
    from .coreset.methods import make_method

    with _workers(args):
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
    payload = {"method": args.method if args.method != "default" else DEFAULT_CORESET_METHOD,
               "n": n, "dataset": str(args.data), "indices": chosen, "selected": names}
    if args.emit_lm_eval_samples:
        task, path = args.emit_lm_eval_samples
        task, named = question_items(scores, task, args.data)
        docs = [int(named.items[j].rpartition("/")[2]) for j in chosen]
        payload["lm_eval_samples"] = write_samples(path, {task: docs}, protect=_inputs(args))
    text = (f"{len(chosen)} of {scores.n_items} questions by {payload['method']}:\n"
            + ", ".join(names[:50]) + (" ..." if len(names) > 50 else ""))
    _emit(args, payload, text)
    return 0


def _dated_split_args(args, scores):
    """``--order`` keys aligned with the models and the ``--before`` cut (the dated split)."""
    if args.split != "dated":
        if args.order or args.before:
            raise ValueError("--order and --before are for --split dated")
        return None, None
    if not (args.order and args.before):
        raise ValueError("--split dated needs --order FILE (when each model came out) and "
                         "--before DATE")
    from .io import _order_key, read_model_order

    keys = read_model_order(args.order)
    missing = [m for m in scores.models if m not in keys]
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise ValueError(f"{args.order}: no date for {len(missing)} model(s) of {args.data}: "
                         f"{shown}")
    before = _order_key(args.before)
    if before is None:
        raise ValueError(f"--before {args.before!r}: expected a date (YYYY-MM-DD) or a number")
    return np.array([keys[m] for m in scores.models]), before


def cmd_coreset_eval(args) -> int:
    from .coreset.evaluate import evaluate_coresets

    progress = Progress("trials", enabled=False if args.quiet else None)
    try:
        with _workers(args) as fan_out:
            scores = _load(args).cleaned()
            methods = None if args.methods == "all" else tuple(_names(args.methods))
            order, before = _dated_split_args(args, scores)
            result = evaluate_coresets(scores, split=args.split, n=args.n, trials=args.trials,
                                       methods=methods, seed=args.seed, sources=args.sources,
                                       progress=progress, order=order, before=before,
                                       **fan_out)
    finally:
        progress.close()
    payload = result.to_dict()
    payload["dataset"] = str(args.data)
    rows = [[r.method, r.gap, r.gap_std, r.egr, r.rmse, r.kendall, r.interval_coverage,
             r.stability, r.similarity_corr, r.fit_seconds + r.predict_seconds]
            for r in result.rows]
    split = args.split + (f" ({args.sources} sources)" if args.sources else "")
    if args.split == "dated":
        split += f" (before {args.before}: {int((order < before).sum())} sources)"
    text = (
        f"{split}, n = {result.n}, {args.trials} trials, {scores.n_models} models x "
        f"{scores.n_items} questions, {result.seconds:.1f} s; default: {result.default}\n"
        + _table(["method", "gap", "gap_std", "EGR %", "RMSE", "kendall", "cov90 %",
                  "phi", "sim-corr", "seconds"], rows)
    )
    _emit(args, payload, text)
    return 0


# ------------------------------------------------------------------- parser
