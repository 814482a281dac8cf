"""``benchsel compare``: two models' difference on every benchmark, predicted
or (``--paired``) question by question."""

from __future__ import annotations

import numpy as np

from .._text import text_table
from ..analyses.paired import paired_difference
from ..matrix import ScoreMatrix, did_you_mean
from ..models.compare import compare_models
from ..observations import observe_benchmarks, observe_stderr, short_names, split_stderr
from ..plan import load_plan
from ..sources import is_lm_eval_data
from ._args import UsageError, _as_flags, _fit, _load, _names, _refuse_fit_options
from ._noise import _binomial_stderr, _stderr_rows
from ._render import _emit


def cmd_compare(args) -> int:
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
    unpredictable = result.unpredictable()
    table = [[name + (" (both run)" if result.observed[j] else "")
              + (" *" if name in unpredictable else ""), result.difference[j],
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
    if unpredictable:
        head += (f"\ncannot be predicted from what was run on {len(unpredictable)} of "
                 f"{len(result.items)} benchmarks (* below: {short_names(unpredictable, 5)}): "
                 "a prediction there is only the benchmark's spread among the source models; "
                 "run them to compare")
    _emit(args, payload, head + "\n" + text_table(
        ["benchmark", "difference", "std", f"low ({pct})", f"high ({pct})", "P(B > A)"], table))
    return 0


def _compare_paired(args) -> int:
    """``compare --paired``: two rows of a models x questions matrix, question by question."""
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
        raise ValueError(f"{args.data}: no model named {', '.join(map(repr, missing))}"
                         f"{did_you_mean(missing, scores.models)}; models "
                         f"include {', '.join(scores.models[:10])}"
                         f"{' ...' if scores.n_models > 10 else ''}")
    return scores, names


def _compare_rows(args):
    """(model fitted on the other rows, the two rows' scores, their names, their standard
    errors from DATA's ``_stderr`` columns) of DATA."""
    scores, stderr = split_stderr(_load(args))
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
