"""``benchsel report``: the HTML page of what the leaderboard tells you."""

from __future__ import annotations

import json
import sys

from ..outputs import write_text_atomic
from ..plan import load_plan
from ..progress import Progress
from ..report import build_report
from ._args import UsageError, _inputs, _load
from .predict import _prediction


def cmd_report(args) -> int:
    import time

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
            transform=args.transform, calibration=args.calibration, seed=args.seed,
            level=args.coverage, progress=progress)
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
