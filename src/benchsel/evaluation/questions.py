"""``coreset-eval``: question-level methods on held-out models.

Splits of the models into sources (fitted on) and targets (predicted):

* ``interpolation`` (Zhang et al. 2025, Sec. 4): a random 75% of the models
  are sources, the other 25% targets;
* ``extrapolation`` (ibid.): models ranked by full-benchmark score, the
  weakest 50% are sources and the strongest 30% targets;
* ``frontier``: the strongest 10% of the models by full-benchmark score (at
  least 5) are targets, every other model a source
  (:func:`benchsel.splits.frontier_split`): a new checkpoint at or just past
  the top of the models a plan was fitted on, the common case;
* ``dated``: the models that came out before a date (``order`` and
  ``before``; :func:`benchsel.splits.dated_split`) are sources, the later
  ones targets;
* ``stratified`` (Bowyer et al., Sec. 3): ``sources`` models (15, 30 or 50
  in the paper) drawn across ten equally spaced bins of the full-benchmark
  score, every other model a target. We fill the bins in turns, one random
  model from each non-empty bin per turn, so the sources span the whole
  range even where models are scarce.

Each trial redraws the split (except extrapolation's, the frontier's and
the dated one, which are fixed) and
the methods' random questions; every method sees the same splits and the
same random generator.

Per method: the estimation gap (mean over trials of the mean |true -
predicted| x 100, in points for 0-1 scores) and its standard deviation
across trials, EGR (gap change versus random-sampling, %; negative is
better), RMSE and MAE over all target models of all trials, Kendall tau and
Spearman rho between predicted and true scores within a trial (averaged),
coverage of the central 90% interval (calibrated, see ``calibrate``, and
the method's own), the stability of the chosen questions
across trials (Nogueira's Phi, about 0 for random questions; Hamming: mean
number of questions two coresets differ in), fit and predict seconds per
trial, and, on 0/1 scores, the Pearson correlation between each target's
similarity to the sources (Zhang et al. eq. 4) and its normalized gap
(eq. 6) pooled over trials -- negative when a method does worse on models
unlike the ones it was fitted on.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.stats import kendalltau, spearmanr

from .. import names
from .._frames import rows_frame
from .._parallel import map_tasks, one_blas_thread
from .._reuse import reuse_fits
from ..coreset._base import resolve_n
from ..coreset.calibrated import Calibrated
from ..coreset.registry import DEFAULT_METHOD, make_method, method_names
from ..inputs import model_order_keys
from ..matrix import DataWarning, ScoreMatrix
from ..sources import as_scores
from ..splits import dated_split, frontier_split, random_split, strength_split
from .metrics import (
    hamming_stability,
    interval_coverage,
    json_record,
    model_similarity,
    nogueira_stability,
)

__all__ = [
    "CoresetRow",
    "CoresetResult",
    "evaluate_coresets",
    "model_split",
    "run_trial",
    "SPLITS",
]

SPLITS = names.SPLITS


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
    hamming: float
    similarity_corr: float
    fit_seconds: float
    predict_seconds: float
    uncalibrated_coverage: float = float("nan")

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
    sources: int | None = None

    def row(self, method: str) -> CoresetRow:
        return next(r for r in self.rows if r.method == method)

    def to_frame(self):
        """The table the command prints as a :class:`pandas.DataFrame`: one row per method."""
        return rows_frame(self.rows, "method", CoresetRow)

    def to_dict(self) -> dict:
        out = {
            "split": self.split,
            "dataset": self.dataset,
            "n": self.n,
            "trials": self.trials,
            "default": self.default,
            "seconds": self.seconds,
            "methods": [r.to_dict() for r in self.rows],
        }
        if self.sources is not None:
            out["sources"] = self.sources
        return out


def model_split(values: np.ndarray, split: str, rng, sources: int | None = None,
                dated: tuple | None = None):
    """Source and target model indices for one trial (see the module docstring).

    ``dated`` is ``(order, before)`` for the ``dated`` split: one sort key
    per model and the cut.
    """
    m = values.shape[0]
    if split == "interpolation":
        fold = random_split(m, rng)
        return fold.train, fold.validation
    if split == "extrapolation":
        fold = strength_split(values, strength=values.mean(axis=1))
        return fold.train, fold.validation
    if split == "frontier":
        fold = frontier_split(values, strength=values.mean(axis=1))
        return fold.train, fold.validation
    if split == "dated":
        if dated is None:
            raise ValueError("the dated split needs each model's date (order) and a cut "
                             "(before)")
        fold = dated_split(*dated)
        return fold.train, fold.validation
    if split == "stratified":
        if sources is None or not 3 <= sources <= m - 2:
            raise ValueError(f"the stratified split needs 3 <= sources <= {m - 2}; "
                             f"got {sources}")
        return _stratified(values.mean(axis=1), sources, rng)
    raise ValueError(f"split must be one of {', '.join(SPLITS)}; got {split!r}")


def _stratified(score: np.ndarray, sources: int, rng, bins: int = 10):
    edges = np.linspace(score.min(), score.max(), bins + 1)
    which = np.clip(np.searchsorted(edges, score, side="right") - 1, 0, bins - 1)
    pools = [list(rng.permutation(np.flatnonzero(which == b))) for b in range(bins)]
    chosen = []
    while len(chosen) < sources:
        for pool in pools:
            if pool and len(chosen) < sources:
                chosen.append(pool.pop())
    chosen = np.sort(np.array(chosen, dtype=np.intp))
    return chosen, np.setdiff1d(np.arange(len(score)), chosen)


def run_trial(values, split, sources, seed, trial, names, n, calibrate=True,
              dated=None) -> dict:
    """One trial's split, with every method fitted on its sources and predicting its targets.

    One BLAS thread, so trials run in parallel do not fight over cores and
    results do not depend on ``jobs``. Every method gets the same generator,
    seeded ``[seed, trial, 1]``: the methods that draw random questions draw
    the same ones, and the methods that repeat another's clustering or IRT
    fit reuse it (:func:`benchsel._reuse.reuse_fits`).

    Returns
    -------
    dict
        ``"source"`` and ``"target"`` model indices, and per method name
        ``(mean, sd, selected, fit_seconds, predict_seconds, raw_sd)`` (``sd``
        calibrated when ``calibrate``, ``raw_sd`` the method's own).
    """
    src, tgt = model_split(values, split, np.random.default_rng([seed, trial]), sources, dated)
    out = {"target": tgt, "source": src}
    with one_blas_thread(user_api=None), reuse_fits():
        for name in names:
            method = make_method(name, n_questions=n,
                                 random_state=np.random.default_rng([seed, trial, 1]))
            if calibrate:
                method = Calibrated(method)
            t0 = time.perf_counter()
            # Degenerate splits (every source model alike, a constant question) make
            # some methods divide by zero: their estimates come out non-finite and
            # are reported per method by _summarize, not as numpy's warnings.
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                method.fit(values[src])
                t1 = time.perf_counter()
                x = values[np.ix_(tgt, method.selected_)]
                if calibrate:
                    mean, sd, raw = method.predict_details(x)[:3]
                else:
                    mean, sd = method.predict(x)
                    raw = sd
            t2 = time.perf_counter()
            out[name] = (np.asarray(mean, float), None if sd is None else np.asarray(sd, float),
                         np.asarray(method.selected_), t1 - t0, t2 - t1,
                         None if raw is None else np.asarray(raw, float))
    return out


def evaluate_coresets(
    scores: ScoreMatrix,
    *,
    split: str = "interpolation",
    n=50,
    trials: int = 10,
    methods=None,
    seed: int = 0,
    level: float = 0.9,
    sources: int | None = None,
    n_jobs: int = 1,
    progress=None,
    calibrate: bool = True,
    backend: str | None = None,
    order=None,
    before: float | None = None,
) -> CoresetResult:
    """Run question-level methods on identical splits (see the module docstring).

    Parameters
    ----------
    scores : ScoreMatrix, pandas.DataFrame, path or str
        Complete models x questions scores, or a file or DataFrame of them
        that :func:`benchsel.as_scores` reads (an NPZ of one task's models x
        questions; :func:`benchsel.read_lm_eval` reads sample logs).
    split : {"interpolation", "extrapolation", "frontier", "stratified", "dated"}
    n : int or str
        Questions per coreset, or a percentage of them such as ``"5%"``.
    trials : int
    methods : sequence of str or None
        Registry names, ``+``/``++`` refits included (None: every method and
        the papers' refits); random-sampling is always added, since EGR is
        relative to it, and stratified-sampling beside the default (the
        plain mean of the default's own answers).
    seed : int
    level : float
        Central interval probability for ``interval_coverage``.
    sources : int or None
        Number of source models for the ``stratified`` split.
    n_jobs : int
        Trials run in parallel through joblib; results do not depend on it.
    backend : str, optional
        A joblib backend for the trials, e.g. ``"dask"`` inside a
        ``dask.distributed.Client`` context to run them on a cluster.
    progress : callable(done, total) or None
    calibrate : bool, default True
        Calibrate every method's error bars on its own source models
        (:class:`~benchsel.coreset.calibrated.Calibrated`: five refits per
        method and trial); ``interval_coverage`` is then calibrated and
        ``uncalibrated_coverage`` is the method's own (``nan`` for a method
        without an error bar). Fit times include the refits.
    order : mapping {model: key} or array-like (M,), optional
        The ``dated`` split's sort key of each model: a date (YYYY-MM-DD)
        or a number (:func:`benchsel.inputs.model_order_keys`).
    before : number or str, optional
        The ``dated`` split's cut: models whose key is below it are sources.
    """
    scores = as_scores(scores)
    values = np.asarray(scores.values, dtype=float)
    if np.isnan(values).any():
        raise ValueError(f"{scores._where()}question-level evaluation needs complete scores")
    if values.shape[0] < 8:
        raise ValueError(f"{scores._where()}need at least 8 models; got {values.shape[0]}")
    n = resolve_n(n, values.shape[1])
    if np.ptp(values) == 0:
        warnings.warn(f"{scores._where()}every model scores {values.flat[0]:g} on every "
                      "question: errors are all zero and rank correlations undefined",
                      DataWarning, stacklevel=2)
    if split != "stratified" and sources is not None:
        raise ValueError("sources is only used by the stratified split")
    dated = None
    if split == "dated":
        if order is None or before is None:
            raise ValueError("the dated split needs order (one key per model) and before")
        dated = model_order_keys(scores.models, order, before)
    elif order is not None or before is not None:
        raise ValueError("order and before are only used by the dated split")
    model_split(values, split, np.random.default_rng(seed), sources, dated)  # validate early
    names = method_names("all") if methods is None else [
        DEFAULT_METHOD if m == "default" else m for m in methods]
    if "random-sampling" not in names:
        names = ["random-sampling"] + names
    # The default is judged beside the plain mean of its own answers.
    if DEFAULT_METHOD in names and "stratified-sampling" not in names:
        names.insert(names.index(DEFAULT_METHOD), "stratified-sampling")
    for name in names:
        make_method(name)  # unknown names fail before any work
    start = time.perf_counter()
    args = (values, split, sources, seed)
    results = map_tasks(run_trial, ((*args, t, names, n, calibrate, dated)
                                    for t in range(trials)),
                        n_jobs=n_jobs, backend=backend, progress=progress)
    rows = _summarize(values, results, names, level)
    return CoresetResult(
        dataset=scores.source or "",
        split=split,
        n=n,
        trials=trials,
        default=DEFAULT_METHOD,
        seconds=time.perf_counter() - start,
        rows=rows,
        sources=sources,
    )


def _coverage(pairs: list, level: float) -> float:
    """% of targets inside their interval, from (errors, sds) of every trial; NaN for none."""
    if not pairs:
        return float("nan")
    err, sd = (np.concatenate(part) for part in zip(*pairs))
    return 100 * interval_coverage(err, 0.0, sd, level)


def _summarize(values: np.ndarray, results: list, names: list, level: float) -> list:
    scale = 100.0 if values.min() >= 0 and values.max() <= 1 else 1.0
    binary = bool(np.isin(values, (0.0, 1.0)).all())
    truths = [values[r["target"]].mean(axis=1) for r in results]
    similarity = ([model_similarity(values[r["target"]], values[r["source"]]) for r in results]
                  if binary else None)
    n_items = values.shape[1]
    gaps_by_method = {}
    rows = []
    for name in names:
        errs, gaps, taus, rhos, inside, raw_inside, chosen = [], [], [], [], [], [], []
        fit_s = pred_s = 0.0
        failed = total = 0
        for r, truth in zip(results, truths):
            mean, sd, selected, tf, tp, raw_sd = r[name]
            ok = np.isfinite(mean)
            failed, total = failed + int((~ok).sum()), total + ok.size
            if not ok.all():  # score the models the method could estimate
                mean, truth = mean[ok], truth[ok]
                sd = None if sd is None else sd[ok]
                raw_sd = None if raw_sd is None else raw_sd[ok]
            err = mean - truth
            errs.append(err)
            gaps.append(scale * np.abs(err).mean())
            chosen.append(selected)
            fit_s, pred_s = fit_s + tf, pred_s + tp
            if len(truth) > 1 and np.ptp(truth) > 0 and np.ptp(mean) > 0:
                taus.append(kendalltau(mean, truth).statistic)
                rhos.append(spearmanr(mean, truth).statistic)
            if sd is not None and np.isfinite(sd).all():
                inside.append((err, sd))
            if raw_sd is not None and np.isfinite(raw_sd).all():
                raw_inside.append((err, raw_sd))
        if failed:
            warnings.warn(f"{name}: no finite estimate for {failed} of {total} target models "
                          "(degenerate split); its figures use the others", DataWarning,
                          stacklevel=3)
        gaps_by_method[name] = float(np.mean(gaps))
        err = np.concatenate(errs)
        rows.append(dict(
            method=name,
            gap=gaps_by_method[name],
            gap_std=float(np.std(gaps)),
            rmse=float(scale * np.sqrt(np.mean(err**2))),
            mae=float(scale * np.mean(np.abs(err))),
            kendall=float(np.mean(taus)) if taus else float("nan"),
            spearman=float(np.mean(rhos)) if rhos else float("nan"),
            stability=(nogueira_stability(chosen, n_items) if len(chosen) > 1
                       else float("nan")),
            hamming=hamming_stability(chosen, n_items) if len(chosen) > 1 else float("nan"),
            interval_coverage=_coverage(inside, level),
            uncalibrated_coverage=_coverage(raw_inside, level),
            similarity_corr=(_similarity_corr(errs, truths, similarity)
                             if similarity is not None else float("nan")),
            fit_seconds=fit_s / len(results),
            predict_seconds=pred_s / len(results),
        ))
    base = gaps_by_method["random-sampling"]
    return [CoresetRow(egr=100.0 * (row["gap"] - base) / base if base > 0 else float("nan"),
                       **row) for row in rows]


def _similarity_corr(errs, truths, similarity) -> float:
    """Pearson correlation of model similarity (eq. 4) with the normalized gap (eq. 6)."""
    sim = np.concatenate(similarity)
    p = np.concatenate(truths)
    sigma = np.sqrt(p * (1 - p))
    gap = np.abs(np.concatenate(errs))
    keep = (sigma > 0) & np.isfinite(sim)
    if keep.sum() < 3 or np.ptp(sim[keep]) == 0 or np.ptp(gap[keep] / sigma[keep]) == 0:
        return float("nan")
    return float(np.corrcoef(sim[keep], gap[keep] / sigma[keep])[0, 1])
