"""``benchsel select`` and ``benchsel plan``: what to run on a new model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .._text import text_table
from ..datasets import bundled_path, resolve_data
from ..lmeval import parse_per_task, write_samples
from ..plan import plan_benchmarks, plan_mixed, plan_questions
from ..progress import Progress
from ..selection.greedy import describe_certificate
from ..sources import TaskSources, as_scores, is_lm_eval_data, task_sources
from ._args import (
    UsageError,
    _as_flags,
    _costs,
    _fit,
    _inputs,
    _item_names,
    _load,
    _names,
    _read_options,
    _refuse_fit_options,
)
from ._render import _emit
from ._workers import _fan_out, _workers


def cmd_select(args) -> int:
    scores = _load(args)
    if args.axis == "models":
        scores = scores.transpose()
    costs = _costs(args, scores.items)
    if args.budget is not None and costs is None:  # before minutes of fitting
        raise UsageError("--budget needs --costs FILE")
    model = _fit(args, scores)
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
        # Here, as below: the evaluation and analyses packages bring in scipy.stats
        # and scipy.special, which a plain select does not need.
        from ..evaluation.bootstrap import selection_frequency

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
    text = head + "\n" + text_table(["#", what, "gain", "residual_var",
                                 *(["selected in resamples"] if frequency else [])], rows)
    if frequency:
        text += _stability_line(frequency, what)
    _emit(args, payload, text)
    return 0


def _stability_line(frequency: dict, what: str) -> str:
    """What picks chosen again in fewer than half the resamples mean for the user."""
    shaky = [name for name, share in frequency.items() if share < 0.5]
    if not shaky:
        return ""
    return (f"\n{len(shaky)} of {len(frequency)} picks are chosen again in fewer than half "
            f"the resamples ({', '.join(shaky)}): the models do not single them out, and "
            f"other {what}s that vary with them would serve about as well; how much a "
            "selection of this size predicts is what to trust (evaluate), not which "
            f"{what}s it names")


def cmd_plan(args) -> int:
    import shlex

    command = "benchsel " + shlex.join(args.argv)
    if args.emit_lm_eval_samples is not None and \
            Path(args.emit_lm_eval_samples).resolve() == Path(args.output).resolve():
        raise UsageError("--emit-lm-eval-samples and -o name the same file; the plan and "
                          "lm-eval's --samples file are two files")
    from ..analyses.budget import MAX_TOTAL_QUESTIONS

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
        questions = dict(n=None if args.total is not None else args.n,
                         total=args.total, method=args.method, seed=args.seed,
                         metric=sources.metrics, filter=sources.filters, command=command)
        if args.kind == "questions":
            with _as_flags(total="--total"):
                plan = plan_questions(sources.scores, **questions)
        else:
            board = as_scores(args.data,
                              metric=parse_per_task(args.lm_eval_metric, "--lm-eval-metric"),
                              filter=parse_per_task(args.lm_eval_filter, "--lm-eval-filter"))
            costs = _costs(args, board.items)
            columns = {t: f"{t}/{sources.metrics[t]},{sources.filters[t]}"
                       for t in sources.scores}
            include = _item_names(args.include, board.items)
            exclude = _item_names(args.exclude, board.items)
            with _as_flags(total="--total"):
                plan = plan_mixed(
                    board, sources.scores, columns, args.k, objective=args.objective,
                    include=include, exclude=exclude, costs=costs, budget=args.budget,
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
        lines.append(text_table(["task", "questions to run", "of", "source models", "method"],
                                rows))
    if plan.level == "mixed":
        lines.append(f"and in full: {', '.join(plan.run_in_full)}")
    elif plan.level == "benchmarks":
        sel = plan.benchmarks.selection
        rows = [[t + 1, name, float(g), float(r)] for t, (name, g, r) in
                enumerate(zip(sel["selected"], sel["gains"], sel["residual_variance"]))]
        lines.append(f"{len(rows)} benchmarks to run, of {plan.benchmarks.source.n_items}:")
        lines.append(text_table(["#", "benchmark", "gain", "residual_var"], rows))
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
