"""What :meth:`GaussianModel.select <benchsel.models.GaussianModel.select>` does: the
checks of its arguments, greedy selection on the model's covariance, the warnings a
choice deserves and its certificate."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from ..aggregates import aggregate_columns
from ..gaussian.covariance import working_covariance
from ..matrix import FEW_MODELS, DataWarning, _short_list
from ..selection.greedy import (
    OBJECTIVES,
    GreedyResult,
    entropy_certificate,
    mi_oracle_gap,
    run_greedy,
)
from .results import Selection

__all__ = ["select_items", "warn_few_models"]


def _certificate(sigma, result: GreedyResult, objective: str, budget, include=(),
                 exclude=()) -> dict:
    """The quality certificate of a selection (see :class:`Selection`); the MI oracle
    searches the subsets the selection's ``include``/``exclude`` allow."""
    if objective == "random":
        return {"objective": "random", "fraction": None,
                "reason": "a random selection has no guarantee"}
    if objective == "entropy" and budget is None:
        return entropy_certificate(sigma, result.indices)
    if objective == "entropy":
        return {"objective": "shifted entropy", "fraction": None,
                "greedy_guarantee": float(0.5 * (1 - 1 / np.e)),
                "reason": "budgeted selection: the a-priori guarantee of the modified greedy "
                          "is (1 - 1/e)/2 (Krause & Guestrin 2005); no data-dependent bound "
                          "is computed for budgets"}
    return mi_oracle_gap(sigma, result.indices, include=include, exclude=exclude)


def warn_few_models(model, picked, objective: str) -> None:
    """Say so when a chosen item was run on fewer than ``FEW_MODELS`` source models:
    its variance and correlations, and so its gain, rest on a handful of scores
    (greedy entropy picked such columns first on a sparse board)."""
    if objective == "random":
        return
    counts = np.sum(~np.isnan(model.scores_.values), axis=0)
    few = [(model.items_[j], int(counts[j])) for j in picked if counts[j] < FEW_MODELS]
    if few:
        shown = ", ".join(f"{name!r} ({n} models)" for name, n in few)
        one = len(few) == 1
        its, they, it = ("its gain rests", "it", "it") if one else \
            ("their gains rest", "they", "them")
        warnings.warn(
            f"chosen on few source models: {shown}; {its} on fewer than {FEW_MODELS} "
            f"scores, so {they} may only look informative: exclude {it} (--exclude) "
            f"unless you mean to run {it}", DataWarning, stacklevel=4)


def select_items(
    model,
    k: int | None = None,
    *,
    objective: str = "mi",
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    costs: Mapping[str, float] | np.ndarray | None = None,
    budget: float | None = None,
    target_residual: float | None = None,
    seed=0,
    keep_aggregates: bool = False,
) -> Selection:
    """:meth:`GaussianModel.select <benchsel.models.GaussianModel.select>` of the fitted
    ``model`` (see it for the parameters)."""
    model._check_fitted()
    if objective not in OBJECTIVES:
        raise ValueError(
            f"objective must be one of {', '.join(OBJECTIVES)}; got {objective!r}"
        )
    scores = model.scores_
    include = [include] if isinstance(include, str) else list(include)
    exclude = [exclude] if isinstance(exclude, str) else list(exclude)
    left_out = [name for name in include if name in model.dropped_items_]
    if left_out:
        raise ValueError(
            f"cannot include {_short_list(left_out)}: left out of the model "
            "(no observed score, or constant)"
        )
    clash = [name for name in include if name in set(exclude)]
    if clash:
        raise ValueError(f"{_short_list(clash)}: both included and excluded; drop it from "
                         "one of the two")
    aggregates = {}
    if not keep_aggregates:
        aggregates = {name: why for name, why in
                      aggregate_columns(scores.values, scores.items).items()
                      if name not in include and name not in exclude}
        if aggregates:
            warnings.warn(
                "left out of the choice, as aggregates of the other benchmarks that no "
                "new model can be run on (still predicted): "
                + "; ".join(f"{name!r} ({why})" for name, why in aggregates.items())
                + "; keep_aggregates=True (select/plan --keep-aggregates) allows them",
                DataWarning, stacklevel=3)
        exclude = exclude + list(aggregates)
    inc = scores.item_indices(include, "included benchmark")
    exc = scores.item_indices(model._known(exclude, "exclusions", stacklevel=4),
                              "excluded benchmark")
    cost_array = None
    if isinstance(costs, Mapping):
        known = {name: costs[name] for name in model._known(costs, "costs", stacklevel=4)}
        unknown = [name for name in known if name not in set(model.items_)]
        if unknown:
            raise ValueError(
                f"costs name unknown benchmark(s) {_short_list(unknown)}; valid names are: "
                f"{_short_list(model.items_, limit=60)}"
            )
        cost_array = scores.with_costs(known).costs
    elif costs is not None:
        cost_array = scores.with_costs(np.asarray(costs, dtype=float)).costs
    elif scores.costs is not None:
        cost_array = scores.costs
    auto = isinstance(k, str) and k == "auto"
    if auto and objective != "mi":
        raise ValueError("k='auto' stops at the first non-positive MI gain; it needs "
                         f"objective='mi' (got {objective!r})")
    # A factor model selects from its factors: nothing N x N (selection.lowrank).
    sigma = working_covariance(model.estimate_)
    result: GreedyResult = run_greedy(
        sigma,
        None if auto else k,
        objective=objective,
        include=list(inc),
        exclude=list(exc),
        costs=cost_array,
        budget=budget,
        target_residual=target_residual,
        seed=seed,
        stop_at_nonpositive=auto,
    )
    if budget is not None and not len(result.indices):
        allowed = np.setdiff1d(np.arange(len(model.items_)), exc)
        cheapest = float(np.min(cost_array[allowed])) if allowed.size else float("nan")
        warnings.warn(
            f"nothing selected: the budget {budget:g} is below the cost of every "
            f"selectable benchmark (the cheapest costs {cheapest:g}); raise the budget to "
            f"at least {cheapest:g}", DataWarning, stacklevel=3)
    if objective == "mi" and np.any(result.gains <= 0):
        first = int(np.flatnonzero(result.gains <= 0)[0]) + 1
        warnings.warn(
            f"the MI gain is not positive from pick {first} on: mutual information is not "
            "monotone, and past that point more benchmarks lower it; k='auto' (-k auto) "
            f"stops before it, at {first - 1}",
            DataWarning,
            stacklevel=3,
        )
    warn_few_models(model, result.indices, objective)
    certificate = _certificate(sigma, result, objective, budget, include=list(inc),
                               exclude=list(exc))
    if "oracle_best" in certificate:
        certificate["oracle_best"] = [model.items_[j] for j in certificate["oracle_best"]]
    return Selection(
        certificate=certificate,
        items=[model.items_[j] for j in result.indices],
        indices=result.indices,
        gains=result.gains,
        residual_variance=result.residual_variance,
        objective=objective,
        covariance=model.estimate_.method,
        strategy=result.strategy,
        cost=result.cost,
        stopped_by=result.stopped_by,
        aggregates=aggregates,
    )
