"""``benchsel evaluate``: selection and prediction replayed on held-out models."""

from __future__ import annotations

from collections import Counter

from .._text import text_table
from ..evaluation import (
    cross_validate,
    dated,
    evaluate_completion,
    extrapolate,
    frontier,
    oracle_subsets,
    paper_protocol,
)
from ..names import COMPLETION_METHODS, DEFAULT_PREDICTOR, ORACLE_K_MAX
from ..progress import Progress
from ._args import UsageError, _dated_cut, _load, _names
from ._render import _emit
from ._workers import _workers


def cmd_evaluate(args) -> int:
    if args.paper:
        if args.protocol != "cv":
            raise UsageError(f"--paper is the paper's cv protocol; not --protocol {args.protocol}")
        if args.predictor not in (None, "gaussian"):  # None: not given
            raise UsageError(f"--paper predicts with --predictor gaussian; not {args.predictor}")
        try:
            (args.covariance, args.scoring, args.splitter, args.predictor,
             args.seed) = paper_protocol(covariance=args.covariance, scoring=args.scoring,
                                         splitter=args.splitter,
                                         predictor=args.predictor,
                                         seed=args.seed)
        except ValueError as err:
            raise UsageError(f"--paper: {err}") from None
    scores = _load(args)
    order, before = _dated_cut(args, scores, args.protocol == "dated", "--protocol dated")
    args.folds_given = args.folds is not None
    if args.folds is None:
        args.folds = 10
    if args.k_max is None:  # the oracle's subsets grow combinatorially in k: its own default
        args.k_max = ORACLE_K_MAX if args.protocol == "oracle" else 15
    objectives = tuple(_names(args.objectives))
    common = dict(objectives=objectives, k_max=args.k_max, covariance=args.covariance,
                  seed=args.seed)
    calibrate = args.calibration == "conformal"
    if args.protocol in ("cv", "extrapolation", "frontier", "dated"):
        common["transform"] = args.transform
        common["scoring"] = args.scoring
        common["calibrate"] = calibrate
        common["predictor"] = args.predictor or DEFAULT_PREDICTOR
        common["keep_aggregates"] = args.keep_aggregates
    elif args.keep_aggregates:
        raise ValueError(f"--keep-aggregates is not supported by the {args.protocol} protocol"
                         + (" (its subsets are drawn from every column)"
                            if args.protocol == "oracle" else ""))
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
        elif args.protocol == "dated":
            result = dated(scores, order, before, **common)
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
            + text_table(["method", "MedAPE %", "median AE", "within 3", "within 5", "coverage %",
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
            + text_table(["k", "subsets", "r2_oracle", *[f"r2_{o}" for o in objectives], "best"],
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
        "dated": (f"fit on the {int((order < before).sum())} models before {args.before}, "
                  f"predict the {int((order >= before).sum())} from it on"
                  if order is not None else ""),
    }[args.protocol]
    if result.predictor != "gaussian":
        setup += f", predictor {result.predictor}"
        if result.predictor == "auto":
            picked = Counter(m for obj in result.choices.values() for fold in obj
                             for m in fold if m)
            # The three most frequent, then a count: a large board's folds and k made
            # this line thousands of characters long (--json keeps every choice).
            common = picked.most_common()
            shown = ", ".join(f"{m} {n}x" for m, n in common[:3])
            rest = sum(n for _, n in common[3:])
            setup += f" (chose {shown}" + (
                f"; {len(common) - 3} other choices {rest}x, listed by --json"
                if rest else "") + ")"
    columns = ["objective", "k", "r2_mean", "r2_std", "residual_var", "coverage_90",
               "uncalibrated", "stability"]
    if result.predictor != "gaussian":
        # As predict ships it: its interval score beside knowing nothing of the model.
        for row, r in zip(rows, result.rows):
            row += [r.interval_score, r.baseline_interval_score]
        columns += ["interval_score", "column_spread_score"]
        head += ("\ninterval_score: the 90% intervals' width plus 20x their misses "
                 "(standardized, lower is better), beside the column spread's")
    text = f"{args.protocol}: {setup}, {head}\n" + text_table(columns, rows) + _below_zero(result)
    _emit(args, payload, text)
    return 0


def _below_zero(result) -> str:
    """A line per objective whose mean R² falls below 0 at some k: its predictions of the
    held-out models are worse there than each benchmark's training mean."""
    lines = []
    for objective in dict.fromkeys(r.objective for r in result.rows):
        ks = [r.k for r in result.rows if r.objective == objective
              and r.r2_mean is not None and r.r2_mean < 0]
        if ks:
            lines.append(f"\n{objective}: R² below 0 at k = {', '.join(map(str, ks))}: its "
                         "predictions there are worse than each benchmark's mean over the "
                         "training models; do not run its choice at those sizes")
    return "".join(lines)
