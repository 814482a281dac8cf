"""``coreset-eval``: question-level methods on interpolation and extrapolation splits.

Splits (Zhang et al. 2025, Sec. 4): ``interpolation`` draws 75% of the
models at random as sources and predicts the other 25%; ``extrapolation``
ranks models by their full-benchmark score and predicts the strongest 30%
from the weakest 50%. Each trial redraws the split (interpolation) and the
methods' random questions; every method sees the same splits.

Per method: the estimation gap (mean over trials of the mean |true -
predicted| x 100, in points for 0-1 scores) and its standard deviation
across trials, EGR (gap change versus random-sampling, %; negative is
better), RMSE and MAE over all target models of all trials, Kendall tau and
Spearman rho between predicted and true scores within a trial (averaged),
coverage of the central 90% interval, the stability of the chosen questions
across trials (Nogueira's Phi; about 0 for random questions), and the mean
fit + predict seconds per trial.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.stats import kendalltau, norm, spearmanr

from ..evaluation.metrics import json_record, nogueira_stability
from ..matrix import ScoreMatrix
from .methods import DEFAULT_METHOD, METHODS, make_method

__all__ = ["CoresetRow", "CoresetResult", "evaluate_coresets", "model_split", "SPLITS"]

SPLITS = ("interpolation", "extrapolation")


@dataclass(frozen=True)
class CoresetRow:
    method: str
    gap: float
    gap_std: float
    egr: float
    rmse: float
    mae: float
    kendall: float
    spearman: float
    interval_coverage: float
    stability: float
    fit_seconds: float

    def to_dict(self) -> dict:
        return json_record(self)


@dataclass(frozen=True)
class CoresetResult:
    dataset: str
    split: str
    n: int
    trials: int
    default: str
    seconds: float
    rows: list

    def row(self, method: str) -> CoresetRow:
        return next(r for r in self.rows if r.method == method)

    def to_dict(self) -> dict:
        return {
            "split": self.split,
            "dataset": self.dataset,
            "n": self.n,
            "trials": self.trials,
            "default": self.default,
            "seconds": self.seconds,
            "methods": [r.to_dict() for r in self.rows],
        }


def model_split(values: np.ndarray, split: str, rng) -> tuple[np.ndarray, np.ndarray]:
    """Source and target model indices for one trial."""
    m = values.shape[0]
    if split == "interpolation":
        order = rng.permutation(m)
        cut = int(0.75 * m)
        return np.sort(order[:cut]), np.sort(order[cut:])
    if split == "extrapolation":
        order = np.argsort(values.mean(axis=1), kind="stable")
        return np.sort(order[: m // 2]), np.sort(order[m - int(0.3 * m):])
    raise ValueError(f"split must be one of {', '.join(SPLITS)}; got {split!r}")


def evaluate_coresets(
    scores: ScoreMatrix,
    *,
    split: str = "interpolation",
    n: int = 50,
    trials: int = 10,
    methods=None,
    seed: int = 0,
    level: float = 0.9,
    progress=None,
) -> CoresetResult:
    """Run question-level methods on identical splits (see the module docstring)."""
    values = np.asarray(scores.values, dtype=float)
    if np.isnan(values).any():
        raise ValueError(f"{scores._where()}question-level evaluation needs complete scores")
    if values.shape[0] < 8:
        raise ValueError(f"{scores._where()}need at least 8 models; got {values.shape[0]}")
    names = list(METHODS) if methods is None else [DEFAULT_METHOD if m == "default" else m
                                                   for m in methods]
    if "random-sampling" not in names:
        names = ["random-sampling"] + names  # EGR is relative to it
    for name in names:
        make_method(name)  # unknown names fail before any work
    scale = 100.0 if values.min() >= 0 and values.max() <= 1 else 1.0
    quantile = norm.ppf(0.5 + level / 2)
    start = time.perf_counter()
    errors = {m: [] for m in names}
    gaps = {m: [] for m in names}
    taus = {m: [] for m in names}
    rhos = {m: [] for m in names}
    chosen = {m: [] for m in names}
    inside = {m: [] for m in names}
    secs = {m: 0.0 for m in names}
    done, total = 0, trials * len(names)
    for trial in range(trials):
        source, target = model_split(values, split, np.random.default_rng([seed, trial]))
        truth = values[target].mean(axis=1)
        for name in names:
            t0 = time.perf_counter()
            rng = np.random.default_rng([seed, trial, 1])
            method = make_method(name).fit(values[source], n, rng)
            mean, sd = method.predict(values[np.ix_(target, method.selected_)])
            secs[name] += time.perf_counter() - t0
            err = mean - truth
            errors[name].append(err)
            gaps[name].append(scale * np.abs(err).mean())
            chosen[name].append(method.selected_)
            if len(truth) > 1 and np.ptp(truth) > 0:
                taus[name].append(kendalltau(mean, truth).statistic)
                rhos[name].append(spearmanr(mean, truth).statistic)
            if sd is not None:
                inside[name].append(np.abs(err) <= quantile * sd)
            done += 1
            if progress is not None:
                progress(done, total)
    base = float(np.mean(gaps["random-sampling"]))
    rows = []
    for name in names:
        err = np.concatenate(errors[name])
        gap = float(np.mean(gaps[name]))
        rows.append(CoresetRow(
            method=name,
            gap=gap,
            gap_std=float(np.std(gaps[name])),
            egr=100.0 * (gap - base) / base if base > 0 else float("nan"),
            rmse=float(scale * np.sqrt(np.mean(err**2))),
            mae=float(scale * np.mean(np.abs(err))),
            kendall=float(np.mean(taus[name])) if taus[name] else float("nan"),
            spearman=float(np.mean(rhos[name])) if rhos[name] else float("nan"),
            stability=(nogueira_stability(chosen[name], values.shape[1])
                       if trials > 1 else float("nan")),
            interval_coverage=(float(100 * np.mean(np.concatenate(inside[name])))
                               if inside[name] else float("nan")),
            fit_seconds=secs[name] / trials,
        ))
    return CoresetResult(
        dataset=scores.source or "",
        split=split,
        n=n,
        trials=trials,
        default=DEFAULT_METHOD,
        seconds=time.perf_counter() - start,
        rows=rows,
    )
