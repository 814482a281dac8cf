"""benchsel's question-level methods beside paper 002's own package, paired per trial.

Both run on identical model splits (benchsel's :func:`model_split`, seeded
``[seed, trial]``) and, for the methods that draw questions uniformly, on
the identical draw (benchsel's, seeded ``[seed, trial, 1]``, handed to the
peer). The peer runs in its own environment through ``peer_worker.py``::

    python -m venv /tmp/peerenv && /tmp/peerenv/bin/pip install benchpred
    python benchmarks/peer_compare.py --peer-python /tmp/peerenv/bin/python \\
        [--files glue_rte,helm_math] [--splits interpolation,extrapolation] [--trials 10] \\
        [--cache /tmp/peer-cache] [--json results.json]

Per file, split and method it prints the estimation gap (mean over trials
of the mean |true - predicted| x 100), EGR against random sampling (%), the
CPU seconds of fit + predict per trial, and, for the default, the paired
difference of its gap to each peer method's (mean over trials and its
standard error; negative: the default is better) and its calibrated 90%
interval coverage; at the end, Markdown tables of the default against the best
peer method per file and split, and of each method pair averaged over the
files. ``--json FILE`` writes every figure.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _data import add_data_dir
from scipy.special import ndtri

from benchsel.coreset.registry import DEFAULT_METHOD
from benchsel.evaluation.questions import run_trial
from benchsel.io import read_scores

WORKER = Path(__file__).resolve().parent / "peer_worker.py"
Z90 = float(ndtri(0.95))  # half-width of a central 90% interval, in standard deviations

#: Peer method -> benchsel's method of the same paper section.
PEERS = {
    "random_sampling": "random-sampling",
    "random_sampling_and_learn": "random-sampling-learn",
    "aipw": "aipw",
    "pca": "pca",
    "anchor_points_weighted": "anchor-points-weighted",
    "anchor_points_predictor": "anchor-points-predictor",
    "double_optimize": "double-optimize",
    "lasso": "lasso",
    "random_search_and_learn": "random-search-learn",
}


def _gap(truth: np.ndarray, pred: np.ndarray) -> float:
    return float(np.mean(np.abs(truth - pred)) * 100)


def _benchsel(values, split, trials, seed, n, methods):
    """Per method: predictions (trials x targets), CPU seconds, calibrated coverage."""
    out = {m: {"mean": [], "seconds": [], "covered": []} for m in methods}
    splits = []
    for t in range(trials):
        for name in methods:
            start = time.process_time()
            # Only the default's error bars are scored: the others skip the
            # five calibration refits.
            res = run_trial(values, split, None, seed, t, [name], n,
                            calibrate=name == DEFAULT_METHOD)
            out[name]["seconds"].append(time.process_time() - start)
            mean, sd = res[name][0], res[name][1]
            out[name]["mean"].append(mean)
            if name == DEFAULT_METHOD and sd is not None:
                truth = values[res["target"]].mean(axis=1)
                out[name]["covered"].append(np.abs(truth - mean) <= Z90 * sd)
            if name == "random-sampling":
                draw = np.sort(res[name][2])
        # Every run_trial call of a trial draws the same split, seeded [seed, trial].
        splits.append((res["source"], res["target"], draw))
    return out, splits


def _peer(values, splits, n, seed, methods, search, python, cache: Path | None) -> dict:
    """The peer's predictions, from ``cache`` when this exact job ran before."""
    key = hashlib.sha256()
    for part in (values, np.array([np.concatenate(s) for s in splits]), n, seed,
                 ",".join(methods), search):
        key.update(np.ascontiguousarray(part).tobytes())
    cached = cache / f"{key.hexdigest()[:24]}.npz" if cache is not None else None
    if cached is not None and cached.exists():
        data = np.load(cached)
        return {k: data[k] for k in data.files}
    with tempfile.TemporaryDirectory() as tmp:
        job, result = Path(tmp) / "job.npz", Path(tmp) / "out.npz"
        m = values.shape[0]
        sources = np.array([np.isin(np.arange(m), s[0]) for s in splits])
        targets = np.array([np.isin(np.arange(m), s[1]) for s in splits])
        np.savez(job, values=values, n=n, methods=np.array(methods), sources=sources,
                 targets=targets, draws=np.array([s[2] for s in splits]), seed=seed,
                 search=search)
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                   MKL_NUM_THREADS="1")
        done = subprocess.run([python, str(WORKER), str(job), str(result)], env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"the peer worker failed:\n{done.stderr[-3000:]}")
        data = np.load(result)
        out = {k: data[k] for k in data.files}
    if cached is not None:
        cache.mkdir(parents=True, exist_ok=True)
        np.savez(cached, **out)
    return out


def compare(path: Path, split: str, trials: int, seed: int, n: int, peers, search, python,
            cache=None):
    values = read_scores(path).values
    ours = [DEFAULT_METHOD] + sorted({PEERS[p] for p in peers} | {"random-sampling"})
    mine, splits = _benchsel(values, split, trials, seed, n, ours)
    theirs = _peer(values, splits, n, seed, peers, search, python, cache)
    truths = [values[tgt].mean(axis=1) for _, tgt, _ in splits]
    gaps = {f"benchsel {m}": np.array([_gap(t, p) for t, p in zip(truths, mine[m]["mean"])])
            for m in ours}
    gaps.update({f"benchpred {p}": np.array([_gap(t, row) if np.isfinite(row).all() else np.nan
                                             for t, row in zip(truths, theirs[f"{p}/mean"])])
                 for p in peers})
    seconds = {f"benchsel {m}": float(np.mean(mine[m]["seconds"])) for m in ours}
    seconds.update({f"benchpred {p}": float(np.mean(theirs[f"{p}/seconds"])) for p in peers})
    random_gap = gaps["benchsel random-sampling"].mean()
    default = gaps[f"benchsel {DEFAULT_METHOD}"]
    rows = []
    for name, g in gaps.items():
        diff = default - g
        rows.append({
            "method": name, "gap": float(g.mean()),
            "egr": float((g.mean() - random_gap) / random_gap * 100),
            "seconds": seconds[name],
            "default_minus_this": float(diff.mean()),
            "se": float(diff.std(ddof=1) / np.sqrt(len(diff))) if len(diff) > 1 else float("nan"),
        })
    covered = np.concatenate(mine[DEFAULT_METHOD]["covered"]) if mine[DEFAULT_METHOD][
        "covered"] else np.zeros(0)
    best_peer = min((r for r in rows if r["method"].startswith("benchpred")),
                    key=lambda r: r["gap"])
    return {"file": path.stem, "split": split, "trials": trials, "n": n,
            "coverage": float(covered.mean()) if covered.size else None,
            "best_peer": best_peer["method"], "rows": rows}


def _print(result: dict) -> None:
    cov = result["coverage"]
    print(f"\n{result['file']}, {result['split']} ({result['trials']} trials, n = {result['n']}; "
          f"default's 90% coverage {'-' if cov is None else f'{100 * cov:.1f}%'})")
    print(f"  {'method':<42}{'gap':>7}{'EGR %':>8}{'CPU s':>8}   default - this (SE)")
    for r in sorted(result["rows"], key=lambda r: r["gap"]):
        mark = " <- best peer" if r["method"] == result["best_peer"] else ""
        print(f"  {r['method']:<42}{r['gap']:>7.2f}{r['egr']:>8.1f}{r['seconds']:>8.2f}"
              f"   {r['default_minus_this']:+.2f} ({r['se']:.2f}){mark}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer-python", required=True,
                        help="python of an environment with benchpred installed")
    add_data_dir(parser)
    parser.add_argument("--files", default=None,
                        help="comma-separated names in --data-dir (default: all)")
    parser.add_argument("--splits", default="interpolation,extrapolation,frontier")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--peers", default=",".join(p for p in PEERS
                                                     if p != "random_search_and_learn"),
                        help="benchpred methods (random_search_and_learn is slow: 10,000 "
                             "ridge fits per trial unless --search is lowered)")
    parser.add_argument("--search", type=int, default=10_000,
                        help="random_search_and_learn's candidates (benchpred's default)")
    parser.add_argument("--json", default=None, help="write every figure here")
    parser.add_argument("--cache", default=None,
                        help="keep the peer's predictions here and reuse them when the same "
                             "job runs again (only benchsel's side is then recomputed)")
    args = parser.parse_args()
    data = Path(args.data_dir)
    files = (sorted(data.glob("*.npz")) if args.files is None
             else [data / f"{f}.npz" for f in args.files.split(",")])
    missing = [str(f) for f in files if not f.is_file()]
    if missing or not files:
        sys.exit(f"no per-question matrices: {', '.join(missing) or str(data) + '/*.npz'}")
    peers = args.peers.split(",")
    unknown = [p for p in peers if p not in PEERS]
    if unknown:
        sys.exit(f"unknown peer methods {unknown}; choose from {', '.join(PEERS)}")
    results = []
    for path in files:
        for split in args.splits.split(","):
            start = time.perf_counter()
            result = compare(path, split, args.trials, args.seed, args.n, peers, args.search,
                             args.peer_python, None if args.cache is None else Path(args.cache))
            result["wall_seconds"] = time.perf_counter() - start
            _print(result)
            results.append(result)
            if args.json:
                Path(args.json).write_text(json.dumps(results, indent=1))
    _summary(results, peers)


def _summary(results: list, peers) -> None:
    """Markdown: the default against the best peer per file and split, then each method
    pair's gap (ours, the peer's) averaged over the files."""
    print("\n| file | split | default gap | best benchpred method | its gap "
          "| default − best (SE) | default cov90 % |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        rows = {x["method"]: x for x in r["rows"]}
        best = rows[r["best_peer"]]
        cov = "-" if r["coverage"] is None else f"{100 * r['coverage']:.1f}"
        print(f"| {r['file']} | {r['split']} | {rows[f'benchsel {DEFAULT_METHOD}']['gap']:.2f} "
              f"| {r['best_peer'].split()[1]} | {best['gap']:.2f} "
              f"| {best['default_minus_this']:+.2f} ({best['se']:.2f}) | {cov} |")
    for split in dict.fromkeys(r["split"] for r in results):
        chosen = [r for r in results if r["split"] == split]
        print(f"\n{split}: mean gap over {len(chosen)} files (benchsel / benchpred; CPU s "
              "per trial)\n")
        print("| method | benchsel | benchpred | benchsel CPU s | benchpred CPU s |")
        print("|---|---|---|---|---|")
        for peer in peers:
            ours, theirs = f"benchsel {PEERS[peer]}", f"benchpred {peer}"
            print(f"| {PEERS[peer]} / {peer} | {_mean(chosen, 'gap', ours):.2f} | "
                  f"{_mean(chosen, 'gap', theirs):.2f} | {_mean(chosen, 'seconds', ours):.2f} | "
                  f"{_mean(chosen, 'seconds', theirs):.2f} |")
        default = f"benchsel {DEFAULT_METHOD}"
        print(f"| {DEFAULT_METHOD} (default) | {_mean(chosen, 'gap', default):.2f} | "
              f"| {_mean(chosen, 'seconds', default):.2f} | |")


def _mean(results: list, key: str, method: str) -> float:
    return float(np.mean([next(x[key] for x in r["rows"] if x["method"] == method)
                          for r in results]))


if __name__ == "__main__":
    main()
