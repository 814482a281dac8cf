"""Where ``em-shrink`` (the default covariance on incomplete boards) starts, and how it shrinks.

Usage: python benchmarks/em_start.py [--boards merged,mteb] [--variants shipped,project-first]
                                     [--seed 0] [--k-max 10] [--json out.json] [--data-dir DIR]

For each variant of the default estimator and each bundled board with
missing cells (a complete board takes the pairwise branch, where neither
the start nor the per-step shrinkage applies), prints:

* the fit of the whole board: EM iterations (E-steps) and seconds;
* 10-fold cv (10% holdout) and the extrapolation split (fit on the weakest
  50%, predict the strongest 30%): R^2 of MI and random selections at
  k = 1..k-max with the Gaussian predictor, and MI's calibrated 90%
  interval coverage.

Variants (``em_covariance`` options; everything else as shipped):

* ``shipped``: the pairwise start shrunk, then projected (``shrink-first``);
* ``project-first``: projected, then shrunk (the published ``em_cov.py``);
* ``paper-tol``: ``project-first`` stopped as the published code stops
  (plain EM, relative covariance change below 5e-4, no likelihood test);
* ``pairN``: ``shipped`` plus pair-count shrinkage ``n_jk / (n_jk + N)`` of
  every off-diagonal entry after each M-step.

A variant replaces ``em_covariance`` where ``estimate_covariance`` calls it
for ``em-shrink`` by one with the variant's options, so every fit of the
protocol (folds, calibration splits, the whole-board fit) uses it, as a
shipped default would be used.
"""

import argparse
import json
import time
import warnings

import numpy as np
from _data import LEADERBOARDS, add_data_dir, load_board

import benchsel
from benchsel import ConvergenceWarning
from benchsel.evaluation import cross_validate, extrapolate
from benchsel.gaussian import covariance as cov_module

BOARDS = ("merged", "mteb", "bigcodebench", "livebench", "open_llm_v2")
SHIPPED_EM = cov_module.em_covariance


def variant_options(name: str) -> dict:
    if name == "shipped":
        return {}
    if name == "project-first":
        return {"start_order": "project-first"}
    if name == "paper-tol":
        return {"start_order": "project-first", "tol": 5e-4, "accelerate": False,
                "check_likelihood": False}
    if name.startswith("pair"):
        return {"pair_shrinkage": float(name[4:])}
    raise SystemExit(f"unknown variant {name!r}")


def use_variant(name: str) -> None:
    """Make ``estimate_covariance``'s ``em-shrink`` fits take the variant's options."""
    overrides = variant_options(name)

    def em_covariance(z, **options):
        if options.get("correlation_shrinkage", 0) > 0:
            options.update(overrides)
        return SHIPPED_EM(z, **options)

    cov_module.em_covariance = em_covariance


def run(board: str, variant: str, seed: int, k_max: int, data_dir=LEADERBOARDS) -> dict:
    use_variant(variant)
    data = load_board(board, data_dir).cleaned()
    start = time.perf_counter()
    model = benchsel.GaussianModel().fit(data)
    fit_s = time.perf_counter() - start
    out = {"board": board, "variant": variant, "em_iter": model.estimate_.n_iter,
           "method": model.estimate_.method, "fit_s": fit_s}
    for protocol, call in (("cv", cross_validate), ("extrapolation", extrapolate)):
        start = time.perf_counter()
        res = call(data, objectives=("mi", "random"), k_max=k_max, seed=seed)
        ks = [r.k for r in res.rows if r.objective == "mi"]
        out[protocol] = {
            "seconds": time.perf_counter() - start,
            "mi": [res.row("mi", k).r2_mean for k in ks],
            "random": [res.row("random", k).r2_mean for k in ks],
            "coverage_mi": [res.row("mi", k).interval_coverage for k in ks],
        }
    return out


def fmt(values, digits: int = 3) -> str:
    return " ".join(f"{v:.{digits}f}" for v in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default=",".join(BOARDS))
    parser.add_argument("--variants", default="shipped,project-first,paper-tol,pair2,pair5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--k-max", type=int, default=10)
    parser.add_argument("--json")
    add_data_dir(parser, LEADERBOARDS)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    results = []
    print("| board | variant | EM iter (full board) | fit s | protocol | MI R² k=1.. | "
          "random R² k=1.. | MI cov90 k=1.. | s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for board in args.boards.split(","):
        for variant in args.variants.split(","):
            r = run(board, variant, args.seed, args.k_max, args.data_dir)
            results.append(r)
            for protocol in ("cv", "extrapolation"):
                p = r[protocol]
                print(f"| {board} | {variant} | {r['em_iter']} | {r['fit_s']:.2f} | {protocol} "
                      f"| {fmt(p['mi'])} | {fmt(p['random'])} | "
                      f"{fmt(np.array(p['coverage_mi']) * 100, 1)} | {p['seconds']:.0f} |",
                      flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
