"""What a leaderboard tells about itself: ``spectrum``, ``discover``, ``budget``,
``audit`` and ``diagnose``."""

from __future__ import annotations

import numpy as np

from .._text import text_table
from ..analyses.audit import audit
from ..analyses.budget import MAX_TOTAL_QUESTIONS, question_budget
from ..analyses.diagnostics import normality
from ..analyses.discover import FEW_MODELS, discover, read_correlation
from ..analyses.spectrum import spectrum
from ..inputs import read_model_order, read_question_counts
from ..observations import as_items
from ..progress import Progress
from ._args import UsageError, _as_flags, _fit, _item_names, _load, _names
from ._render import _emit


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
        + text_table(["k", "eigenvalue", "eig_tail (bound)", "greedy_residual", "greedy item"],
                     rows)
    )
    if n > show:
        text += f"\n... {n - show} more (use --json for all)"
    _emit(args, payload, text)
    return 0


def cmd_discover(args) -> int:
    new = _names(args.new) if args.new else []
    progress = Progress("resamples", enabled=False if args.quiet else None)
    try:
        if args.correlation:
            if args.covariance != "auto":
                raise UsageError("--covariance needs scores, not a correlation matrix")
            with _as_flags(new="--new"):
                result = discover(correlation=read_correlation(args.data), new=new,
                                  bootstrap=args.bootstrap, seed=args.seed)
        else:
            data = _load(args)
            with _as_flags(new="--new"):
                result = discover(data, new=new, bootstrap=args.bootstrap,
                                  covariance=args.covariance, seed=args.seed, progress=progress)
    finally:
        progress.close()
    payload = result.to_dict()
    payload["dataset"] = str(args.data)
    boot = result.bootstrap > 0
    rows = [[r.novelty_rank, r.benchmark + (" (new)" if r.new else "")
             + (" *" if r.few_models else ""),
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
    if any(r.few_models for r in result.rows):
        lines.append(f"* fewer than {FEW_MODELS} models: its correlations are estimated from "
                     "few pairs, so its novelty may only reflect missing data")
    _emit(args, payload, "\n".join(lines) + "\n" + text_table(head, rows))
    return 0


def cmd_budget(args) -> int:
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
            + text_table(["benchmark", "mean score", "cond. variance", "questions needed",
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
        text += text_table(["model", "benchmark", "observed", "predicted", "z"],
                       [[c.model, c.benchmark, c.observed, c.predicted, c.z] for c in show])
        if len(result.cells) > len(show):
            text += f"\n... {len(result.cells) - len(show)} more (use --json for all)"
    marked = [b for b in result.benchmarks if b.flagged_cells or b.decoupled]
    if marked:
        text += "\n\nbenchmarks with flagged cells or drift across model order:\n" + text_table(
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
        text_table(["benchmark (lowest W first)", "W", "p_adjusted", ""], rows),
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
