"""At the frontier, is the default's R² within 2 SE of the best completion method's?

Usage: python benchmarks/frontier_r2.py [--boards mteb,merged] [--k-max 5]
                                        [--methods gaussian,svd,ridge,...]
                                        [--resamples 2000] [--json out.json] [--data-dir DIR]

The frontier protocol holds out one set of models (the strongest 10%, at
least 5; :func:`benchsel.splits.frontier_split`), so its R² has no
fold-to-fold standard error. This script gives the comparison one: on each
bundled board it fits what ``plan``/``predict`` ship
(:class:`benchsel.GaussianModel` with its defaults) on the sources, selects
``k`` benchmarks by MI, and predicts every target from its selected scores
with :meth:`~benchsel.GaussianModel.predict` -- once with the default
method and once with each completion method (``method=``, as ``benchsel
predict --method``). Cells are scored as ``benchsel evaluate --protocol
frontier`` scores them: standardized with the sources' statistics, clipped
to ±10, R² against the sources' mean pooled over every target's
unselected benchmarks.

Per board and ``k`` it prints the default's R², the best other method and
its R², and their difference with a paired two-way bootstrap standard error
(targets and benchmarks resampled apart, the same resamples for every
method): the target is met where the difference is above ``-2 SE``.
"""

import argparse
import json
import time
import warnings

import numpy as np
from _data import LEADERBOARDS, add_data_dir, load_board

from benchsel import ConvergenceWarning, DataWarning, GaussianModel, ScoreMatrix
from benchsel.datasets import list_datasets
from benchsel.names import DEFAULT_PREDICTOR
from benchsel.prediction import COMPLETERS
from benchsel.splits import frontier_split

CLIP = 10.0
#: Compared with the default: every completion method but the default itself.
METHODS = tuple(m for m in COMPLETERS if m != DEFAULT_PREDICTOR)


def squared_errors(model: GaussianModel, targets: ScoreMatrix, given: list, method: str):
    """Targets x predicted benchmarks: squared errors and squared truths, NaN where unscored.

    In the sources' standardized units, clipped as the protocols clip.
    """
    cols = [targets.items.index(b) for b in given]
    x = ScoreMatrix(targets.values[:, cols], list(targets.models), list(given))
    p = model.predict(x, method=method)
    truth = targets.values[:, [targets.items.index(b) for b in p.items]]
    std = model.standardizer_
    y = np.clip(std.transform(truth), -CLIP, CLIP)
    pred = np.clip(std.transform(p.mean), -CLIP, CLIP)
    scored = ~np.isnan(truth) & ~np.asarray(p.observed, dtype=bool)
    return (np.where(scored, (y - pred) ** 2, np.nan), np.where(scored, y ** 2, np.nan))


def pooled_r2(err: np.ndarray, tot: np.ndarray, rows=None, cols=None) -> float:
    """``1 - sum err / sum tot`` over scored cells, weighted by resample counts."""
    w = np.ones(err.shape) if rows is None else np.outer(rows, cols)
    has = ~np.isnan(err)
    return 1.0 - np.sum(w[has] * err[has]) / np.sum(w[has] * tot[has])


def compare(scores: ScoreMatrix, k_max: int, methods, resamples: int, seed: int = 0):
    """Per k: R² of the default and of each method, and bootstrap SEs of the differences."""
    split = frontier_split(scores.values)
    sources = scores.subset(models=split.train)
    targets = scores.subset(models=split.validation)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", DataWarning)
        model = GaussianModel().fit(sources)
        order = model.select(k_max, objective="mi").items
        out = []
        for k in range(1, k_max + 1):
            given = list(order[:k])
            errors = {m: squared_errors(model, targets, given, m)
                      for m in (DEFAULT_PREDICTOR, *methods)}
            err0, tot = errors[DEFAULT_PREDICTOR]
            keep = ~np.isnan(tot).all(axis=0)  # benchmarks no target has are not scored
            r2 = {m: pooled_r2(e[:, keep], tot[:, keep]) for m, (e, _) in errors.items()}
            rng = np.random.default_rng([seed, k])
            n_rows, n_cols = tot[:, keep].shape
            diffs = {m: np.empty(resamples) for m in methods}
            for b in range(resamples):
                rows = np.bincount(rng.integers(0, n_rows, n_rows), minlength=n_rows)
                cols = np.bincount(rng.integers(0, n_cols, n_cols), minlength=n_cols)
                base = pooled_r2(err0[:, keep], tot[:, keep], rows, cols)
                for m in methods:
                    diffs[m][b] = base - pooled_r2(errors[m][0][:, keep], tot[:, keep], rows,
                                                   cols)
            se = {m: float(np.nanstd(d, ddof=1)) for m, d in diffs.items()}
            out.append((k, len(targets.models), int(keep.sum()), r2, se))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default=",".join(
        d.name for d in list_datasets("leaderboard")))
    parser.add_argument("--k-max", type=int, default=5)
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated completion methods to compare with the default")
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--json")
    add_data_dir(parser, LEADERBOARDS)
    args = parser.parse_args()
    methods = tuple(args.methods.split(","))
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise SystemExit(f"--methods: {', '.join(unknown)} not among {', '.join(METHODS)}")
    records = []
    print(f"frontier, MI; the default is {DEFAULT_PREDICTOR}\n")
    print("| board | k | targets | benchmarks | default R² | best other (R²) | "
          "default − best (SE) | within 2 SE | s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for board in args.boards.split(","):
        scores = load_board(board, args.data_dir)
        k_max = min(args.k_max, len(scores.items) - 1)
        start = time.perf_counter()
        rows = compare(scores, k_max, methods, args.resamples)
        seconds = time.perf_counter() - start
        for k, n_targets, n_items, r2, se in rows:
            best = max(methods, key=lambda m: r2[m])
            gap = r2[DEFAULT_PREDICTOR] - r2[best]
            ok = "yes" if gap >= -2 * se[best] else "**no**"
            print(f"| {board} | {k} | {n_targets} | {n_items} | {r2[DEFAULT_PREDICTOR]:.3f} | "
                  f"{best} ({r2[best]:.3f}) | {gap:+.3f} ({se[best]:.3f}) | {ok} | "
                  f"{seconds:.0f} |", flush=True)
            records.append({"board": board, "k": k, "targets": n_targets,
                            "benchmarks": n_items, "r2": r2, "se_of_difference": se})
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(records, fh, indent=1)


if __name__ == "__main__":
    main()
