"""``benchsel predict``: a new model's unrun benchmarks (or full-task scores),
from a plan or from a fit of DATA."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np

from ..matrix import DataWarning, ScoreMatrix
from ..names import INPUT_FORMATS
from ..observations import observe, observe_benchmarks
from ..plan import load_plan
from ..prediction.memo import load_cached, save_cached
from ._args import UsageError, _as_flags, _fit, _load, _refuse_fit_options
from ._noise import _binomial_noise
from ._render import _emit, _emit_text, _prediction_csv


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
    text = pred.explain(include_observed=full_runs,
                        noisy="--questions" if getattr(args, "questions", None) else False)
    _emit(args, payload, text)
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
    load_cached(model)  # auto's decisions for this board and pattern are kept between runs
    pred = model.predict(observed, level=args.coverage, method=args.method,
                         observed_std=_predict_noise(args, model, observed))
    save_cached(model)
    if dual:  # the items are the board's models; an unnamed new row is a benchmark
        pred = dataclasses.replace(pred, item_kind="model", models=[
            "new benchmark" if pred.models == ["new model"] else m for m in pred.models])
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
    says what to give, or with ``--rescale`` put on the column's scale. An error about the
    scores (a name the board lacks, a scale slip) names the ``--observed`` file they came
    from."""
    given = args.observed or []
    source = given[0] if len(given) == 1 and Path(given[0]).is_file() else None
    try:
        return _rescaled(args, model, observed)
    except ValueError as err:
        if source is None or str(err).startswith(source):
            raise
        raise ValueError(f"{source}: {err}") from None


def _rescaled(args, model, observed):
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
