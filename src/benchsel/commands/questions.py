"""``benchsel coreset`` and ``benchsel coreset-eval``: question-level selection
and its evaluation."""

from __future__ import annotations

import numpy as np

from .._text import text_table
from ..coreset._base import resolve_n
from ..coreset.registry import make_method
from ..evaluation.questions import evaluate_coresets
from ..lmeval import write_samples
from ..names import DEFAULT_CORESET_METHOD
from ..progress import Progress
from ..sources import question_items
from ._args import _dated_cut, _inputs, _load, _names
from ._render import _emit
from ._workers import _workers


def cmd_coreset(args) -> int:
    with _workers(args):
        scores = _load(args).cleaned()
    if np.isnan(scores.values).any():
        rows = np.flatnonzero(np.isnan(scores.values).any(axis=1))
        raise ValueError(
            f"{args.data}: question-level selection needs complete scores; model(s) "
            f"{', '.join(scores.models[i] for i in rows[:10])} miss some questions")
    n = resolve_n(args.n, scores.n_items)
    method = make_method(args.method, n_questions=n, random_state=args.seed).fit(scores.values)
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


def cmd_coreset_eval(args) -> int:
    progress = Progress("trials", enabled=False if args.quiet else None)
    try:
        with _workers(args) as fan_out:
            scores = _load(args).cleaned()
            methods = None if args.methods == "all" else tuple(_names(args.methods))
            order, before = _dated_cut(args, scores, args.split == "dated", "--split dated")
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
        + text_table(["method", "gap", "gap_std", "EGR %", "RMSE", "kendall", "cov90 %",
                  "phi", "sim-corr", "seconds"], rows)
    )
    _emit(args, payload, text)
    return 0
