"""Whether each rule of the default earns its place: the default with one rule switched off,
beside the default as it ships, on the boards of ``held_out_boards.py``.

Usage: python benchmarks/held_out_rules.py RULE [--boards lowrank,merged] [--k-max 5]
       (RULE: no-slope, constant-outside, no-frontier-shift, choose-on-random,
        frontier-fraction-10, no-gaussian-em, gp-base-dense-rows, no-svd,
        no-singular-factor)

Each rule is switched off by replacing one library function for this
process only (the shipped code is not changed):

* ``no-slope``: beyond the sources' range the multiplier is the step
  constant alone, not also ``slope * (1 + excess)``
  (:class:`benchsel.calibration.Calibration`).
* ``constant-outside``: one outside multiplier, neither steps nor slope.
* ``no-frontier-shift``: no method's mean is moved at the frontier
  (:func:`benchsel.calibration.measures_frontier` always false).
* ``choose-on-random``: ``auto`` chooses its method on random held-out
  models for every new model, inside the range or beyond it
  (:func:`benchsel.prediction.choose_for_new_models`).
* ``no-gaussian-em``: ``auto`` does not consider ``gaussian-em`` (the plain
  EM Gaussian beside the shrunk one: on a sparse board it doubles the EM
  fits ``auto`` makes).
* ``gp-base-dense-rows``: the Gaussian under ``gp``'s process, predicting a
  new model, is fitted on the training models with more than 10 scores, as
  it was before (:func:`benchsel.prediction.gp.base_rows`), not on
  all of them.
* ``no-svd``: ``auto`` does not consider the low-rank methods (``svd``,
  ``svd+ridge``, ``gaussian+svd``), whose soft-impute fits are a quarter
  of the default's time on MTEB.
* ``no-singular-factor``: ``auto`` keeps the pairwise covariance on a
  complete board with no more models than items, where it fits the factor
  model (:func:`benchsel.gaussian.covariance.sample_singular`). Measured
  while the rule applied to every fit, it cost 0.075 in interval score on
  the held-out boards' extrapolation, whose calibration splits of 30
  models of 30 benchmarks it reached; since then it applies to whole
  boards only.
* ``frontier-fraction-10``: not a rule switched off but a constant moved: a
  new model is shifted when it is in the sources' top 10%, not 3%
  (:data:`benchsel.calibration.FRONTIER_APPLY_FRACTION`).

Two boards of 600 models (``drift_large``, ``heavy_large``) join the
synthetic ones: the frontier shift needs 300 models to be measured. For
each rule it prints, per kind of board (tuned on / held out) and protocol,
the (board, k) cells with at least 40 scored cells where the interval score
got better or worse without the rule, the mean change, and how many cells
cover below 85% and above 95% with and without it.
"""

import argparse
import warnings

import numpy as np
from _data import LEADERBOARDS, add_data_dir
from held_out_boards import MIN_CELLS, PROTOCOLS, TUNED_ON, board

from benchsel import ConvergenceWarning, DataWarning
from benchsel.datasets.synthetic import SYNTHETIC_BOARDS

LARGE = {"drift_large": dict(n_models=600, n_items=30, rank=3, top_drift=1.5, seed=8),
         "heavy_large": dict(n_models=600, n_items=30, rank=3, noise_df=2.5, noise=0.45,
                             seed=9)}
RULES = ("no-slope", "constant-outside", "no-frontier-shift", "choose-on-random",
         "frontier-fraction-10", "no-gaussian-em", "gp-base-dense-rows", "no-svd",
         "no-singular-factor")


def _factor_without(steps_off: bool, slope_off: bool):
    """:meth:`Calibration.factor` with the outside steps and/or the slope left out."""
    def factor(self, excess):
        e = np.asarray(excess, dtype=float)
        steps = () if steps_off else self.outside_steps
        slope = 0.0 if slope_off else self.outside_slope
        near = self.outside
        if steps:
            edges = np.array([t for t, _ in steps])
            values = np.array([m for _, m in steps])
            step = np.minimum(np.searchsorted(edges, np.abs(e), side="left"), len(edges) - 1)
            near = np.maximum(self.inside, values[step])
        beyond = np.maximum(near, slope * (1 + np.abs(e)))
        if self.below is not None:
            below_slope = 0.0 if slope_off else self.below_slope
            beyond = np.where(e < 0, np.maximum(self.below, below_slope * (1 + np.abs(e))),
                              beyond)
        return np.where(e != 0, beyond, self.inside)
    return factor


def switch_off(rule: str) -> None:
    """Replace the library function that makes ``rule``, for this process."""
    import benchsel.prediction.choice as choice
    from benchsel.calibration import conformal

    if rule in ("no-slope", "constant-outside"):
        conformal.Calibration.factor = _factor_without(rule == "constant-outside", True)
    elif rule == "no-gaussian-em":
        choice.AUTO_CANDIDATES = tuple(m for m in choice.AUTO_CANDIDATES if m != "gaussian-em")
    elif rule == "no-singular-factor":
        import benchsel.gaussian.covariance as covariance

        covariance.sample_singular = lambda observed: False
    elif rule == "no-svd":
        low_rank = ("svd", "svd+ridge", "gaussian+svd")
        choice.AUTO_CANDIDATES = tuple(m for m in choice.AUTO_CANDIDATES if m not in low_rank)
    elif rule == "gp-base-dense-rows":
        from benchsel.prediction import gp

        gp.base_rows = lambda source: source[~gp.process_rows(source)]
    elif rule == "frontier-fraction-10":
        import benchsel.models.gaussian as model

        model.FRONTIER_APPLY_FRACTION = 0.1
    elif rule == "no-frontier-shift":
        import benchsel.models.calibrator as calibrator
        import benchsel.models.gaussian as model
        import benchsel.prediction.frontier as frontier

        for module in (model, frontier, calibrator):
            module.measures_frontier = lambda z: False
    elif rule == "choose-on-random":
        shipped = choice.choose_for_new_models

        def choose(values, given, excess, **kw):
            return shipped(values, given, np.zeros_like(np.asarray(excess, dtype=float)), **kw)

        choice.choose_for_new_models = choose
    else:
        raise SystemExit(f"unknown rule {rule!r}; rules: {', '.join(RULES)}")


def run(boards, data_dir, k_max: int) -> dict:
    """(board, protocol, k) -> (kind, cells, coverage, interval score) of the default."""
    out = {}
    for name in boards:
        kind, scores = board(name, data_dir, {**SYNTHETIC_BOARDS, **LARGE})
        for protocol, evaluate in PROTOCOLS.items():
            result = evaluate(scores, objectives=("mi",), k_max=k_max)
            for r in result.rows:
                out[name, protocol, r.k] = (kind, r.cells, r.interval_coverage, r.interval_score)
        print(f"  {name} done", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rule", choices=RULES)
    parser.add_argument("--boards", default=",".join((*SYNTHETIC_BOARDS, *LARGE, *TUNED_ON)))
    parser.add_argument("--k-max", type=int, default=5)
    add_data_dir(parser, LEADERBOARDS)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.simplefilter("ignore", DataWarning)
    boards = args.boards.split(",")
    print("the default as it ships:")
    shipped = run(boards, args.data_dir, args.k_max)
    switch_off(args.rule)
    print(f"without the rule ({args.rule}):")
    without = run(boards, args.data_dir, args.k_max)
    print("\n| rules | protocol | cells | interval score better without | worse without | "
          "mean change | below 85% (shipped -> without) | above 95% |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in ("tuned on", "held out"):
        for protocol in PROTOCOLS:
            keys = [key for key, v in shipped.items()
                    if v[0] == kind and key[1] == protocol and v[1] >= MIN_CELLS]
            if not keys:
                continue
            change = np.array([without[key][3] - shipped[key][3] for key in keys])
            below = [sum(run_[key][2] < 0.85 for key in keys) for run_ in (shipped, without)]
            above = [sum(run_[key][2] > 0.95 for key in keys) for run_ in (shipped, without)]
            print(f"| {kind} | {protocol} | {len(keys)} | {int((change < -1e-9).sum())} | "
                  f"{int((change > 1e-9).sum())} | {change.mean():+.3f} | "
                  f"{below[0]} -> {below[1]} | {above[0]} -> {above[1]} |")


if __name__ == "__main__":
    main()
