"""Coverage of the 90% interval of a predicted difference between two models, on hidden real scores.

For each bundled board: pairs of real models are held out of the fit, both
are "run" on the same k benchmarks (the MI selection of the fit), and
``benchsel.models.compare.compare_models`` predicts their difference on
every other benchmark they both have; the truth is their observed
difference. Two settings: ``interpolation`` (the fit on a random 75% of the
models, pairs drawn from the other 25%) and ``extrapolation`` (the fit on the
weakest 50%, pairs from the strongest 30%). Printed: coverage of the 90%
interval with the measured error correlation, and with the errors taken as
independent (rho = 0), the median interval width, and how often the sign of
the predicted difference is right where P(B > A) is above 0.9 or below 0.1.

    python benchmarks/compare.py                       # mteb merged bigcodebench wildbench
    python benchmarks/compare.py helm_lite --pairs 100 -k 3
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
from _data import LEADERBOARDS, add_data_dir, load_board

from benchsel import GaussianModel
from benchsel.matrix import model_strength
from benchsel.models.compare import compare_models


def run(name: str, split: str, pairs: int, k: int, seed: int,
        data_dir: Path = LEADERBOARDS) -> dict:
    scores = load_board(name, data_dir).cleaned()
    v = scores.values
    rng = np.random.default_rng(seed)
    if split == "interpolation":
        order = rng.permutation(v.shape[0])
        cut = int(0.75 * v.shape[0])
        train, held = order[:cut], order[cut:]
    else:
        order = np.argsort(model_strength(v), kind="stable")
        train, held = order[: v.shape[0] // 2], order[v.shape[0] - int(0.3 * v.shape[0]):]
    model = GaussianModel().fit(scores.subset(models=np.sort(train)))
    sel = model.select(k).items
    cols = [scores.items.index(s) for s in sel]
    inside, inside0, width, sure, sure_right = [], [], [], 0, 0
    for _ in range(pairs):
        i, j = rng.choice(held, 2, replace=False)
        obs = [{s: float(v[r, c]) for s, c in zip(sel, cols) if not np.isnan(v[r, c])}
               for r in (i, j)]
        if not obs[0] or not obs[1]:
            continue
        cmp = compare_models(model, obs[0], obs[1], names=(scores.models[i], scores.models[j]))
        truth = np.array([v[j, scores.items.index(t)] - v[i, scores.items.index(t)]
                          for t in cmp.items])
        ok = ~np.isnan(truth) & ~cmp.observed
        if not ok.any():
            continue
        d, s = cmp.difference[ok], cmp.std[ok]
        inside.append(np.abs(truth[ok] - d) <= 1.6448536 * s)
        width.append(2 * 1.6448536 * s)
        # Independent errors: the two calibrated stds added in quadrature.
        s0 = np.sqrt(cmp.std_a[ok] ** 2 + cmp.std_b[ok] ** 2)
        inside0.append(np.abs(truth[ok] - d) <= 1.6448536 * s0)
        confident = (cmp.p_b_better[ok] > 0.9) | (cmp.p_b_better[ok] < 0.1)
        sure += int(confident.sum())
        sure_right += int(np.sum(confident & (np.sign(d) == np.sign(truth[ok]))))
    cover = np.concatenate(inside)
    return {"board": name, "split": split, "cells": cover.size,
            "coverage": 100 * cover.mean(), "coverage_rho0": 100 * np.concatenate(inside0).mean(),
            "median_width": float(np.median(np.concatenate(width))),
            "confident": sure, "confident_right": 100 * sure_right / max(sure, 1)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("boards", nargs="*", default=["mteb", "merged", "bigcodebench", "wildbench"])
    ap.add_argument("--pairs", type=int, default=60)
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    add_data_dir(ap, LEADERBOARDS)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    print(f"{'board':14} {'split':14} {'cells':>6} {'cov90 %':>8} {'rho=0 %':>8} "
          f"{'median width':>12} {'P>.9|<.1':>9} {'right %':>8}")
    for name in args.boards:
        for split in ("interpolation", "extrapolation"):
            r = run(name, split, args.pairs, args.k, args.seed, args.data_dir)
            print(f"{name:14} {split:14} {r['cells']:6d} {r['coverage']:8.1f} "
                  f"{r['coverage_rho0']:8.1f} {r['median_width']:12.4g} {r['confident']:9d} "
                  f"{r['confident_right']:8.1f}", flush=True)


if __name__ == "__main__":
    main()
