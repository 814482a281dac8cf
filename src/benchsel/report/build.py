"""Gather everything a leaderboard tells you into one :class:`Report`.

Each section runs the same library call as its CLI command (``spectrum``,
``select``, ``evaluate``, ``discover``, ``audit``, ``predict``), keeps that
call's JSON payload, and draws its figures from it. A section that cannot run
on this leaderboard (one benchmark, too few models for cross-validation) says
why in the report instead of failing the whole of it.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._version import __version__
from ..analyses import spectrum
from ..analyses.audit import audit
from ..analyses.discover import FEW_MODELS, discover
from ..evaluation import cross_validate
from ..matrix import ScoreMatrix
from ..models import GaussianModel
from ..outputs import check_output_folder, write_text_atomic
from ..selection.greedy import describe_certificate
from ..sources import as_scores
from . import figures
from .html import render

__all__ = ["Report", "Section", "Table", "build_report"]


@dataclass(frozen=True)
class Table:
    """A table of the report: plain cells, escaped when the page is written."""

    headers: list[str]
    rows: list[list]
    caption: str = ""


@dataclass
class Section:
    """One part of the report.

    Attributes
    ----------
    key : str
        Its anchor in the page and its entry in :attr:`Report.payload`.
    title : str
    text : list of str
        Paragraphs, plain text.
    tables : list of Table
    figures : list of str
        Names of its figures in :attr:`Report.figures`.
    skipped : str or None
        Why the section could not be computed for this leaderboard.
    notes : list of str
        Warnings raised while computing it.
    """

    key: str
    title: str
    text: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    skipped: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class Report:
    """A leaderboard's report: sections, figures and the JSON behind them.

    Attributes
    ----------
    title : str
    sections : list of Section
    figures : dict of str -> matplotlib Figure
    payload : dict
        Per section key, the JSON its CLI command prints (``--json``); the
        page embeds it.
    seconds : float
        Time to compute the sections and draw the figures (the command line
        puts the whole command's time on the page: what the user waited).
    """

    title: str
    sections: list[Section]
    figures: dict
    payload: dict
    seconds: float

    def html(self) -> str:
        """The page: one self-contained HTML document (see :mod:`.html`)."""
        return render(self)

    def save_figures(self, directory, *, protect=()) -> list[Path]:
        """Write every figure as ``<name>.png`` and ``<name>.svg`` into ``directory``.

        ``directory`` is created if missing; one that is a file, an input or
        inside an input folder (``protect``) is refused by name first
        (:func:`benchsel.outputs.check_output_folder`).
        """
        directory = check_output_folder(directory, protect=protect)
        directory.mkdir(parents=True, exist_ok=True)
        # Every figure is rendered before any file is written: rendering is the slow
        # part, so an interrupted run leaves no plot files rather than some of them.
        with figures.style():
            encoded = {directory / f"{name}.{fmt}": figures.encode(fig, fmt)
                       for name, fig in self.figures.items() for fmt in ("png", "svg")}
        for path, data in encoded.items():
            write_text_atomic(path, data, protect=protect)
        return list(encoded)

    def close(self) -> None:
        """Release the figures' memory."""
        plt = figures.pyplot()
        for fig in self.figures.values():
            plt.close(fig)
        self.figures.clear()


class _Builder:
    """Computes the sections one by one, recording figures and payloads."""

    def __init__(self, total: int, progress=None):
        self.total = total
        self.sections: list[Section] = []
        self.figures: dict = {}
        self.payload: dict = {}
        self.progress = progress

    def section(self, key: str, title: str, compute, *args, **kwargs) -> None:
        """Run ``compute(self, section, *args)``; a ValueError skips the section, saying why."""
        section = Section(key, title)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                compute(self, section, *args, **kwargs)
            except (ValueError, np.linalg.LinAlgError) as err:
                section.skipped = str(err)
        section.notes = list(dict.fromkeys(str(w.message) for w in caught))
        self.sections.append(section)
        if self.progress is not None:
            self.progress(len(self.sections), self.total)

    def figure(self, section: Section, name: str, fig) -> None:
        self.figures[name] = fig
        section.figures.append(name)


def _overview(b: _Builder, s: Section, scores: ScoreMatrix, dataset: str) -> None:
    counts = scores.observed.sum(axis=0)
    s.text.append(f"{scores.n_models} models x {scores.n_items} benchmarks, "
                  f"{100 * scores.observed_fraction:.1f}% of the scores observed "
                  f"(source: {dataset}).")
    if scores.n_models and counts.min() < 10:
        few = [scores.items[j] for j in np.flatnonzero(counts < 10)]
        s.text.append(f"{len(few)} benchmark(s) have fewer than 10 models; what the report "
                      "says about them rests on few pairs of scores.")
    b.payload["overview"] = {"dataset": dataset, "models": scores.n_models,
                             "benchmarks": scores.n_items,
                             "observed_fraction": float(scores.observed_fraction)}
    b.figure(s, "pattern", figures.pattern_figure(scores))


def _spectrum(b: _Builder, s: Section, model: GaussianModel) -> None:
    spec = spectrum(model.estimate_.covariance, model.items_).to_dict()
    b.payload["spectrum"] = spec
    n = len(spec["greedy_residual"])
    k90 = model.benchmarks_needed(0.9, objective="mi")
    spec["benchmarks_needed"] = {"objective": "mi", "90%": k90}
    bound = spec["k_for_explained"]["90%"]
    s.text.append(
        f"Run {k90} of the {n} benchmarks, chosen greedily by mutual information "
        "('benchsel select --target-residual 0.1', the selection below), and at most 10% of "
        "the leaderboard's variance (each benchmark standardized) is left unexplained; by "
        f"the eigenvalues, no choice of fewer than {bound} benchmark(s) could reach that.")
    b.figure(s, "spectrum", figures.spectrum_figure(spec))


def _selection(b: _Builder, s: Section, model: GaussianModel, k: int) -> None:
    k = min(k, len(model.items_) - 1)
    if k < 1:
        raise ValueError("a selection needs at least two benchmarks")
    sel = model.select(k, objective="mi")
    b.payload["selection"] = sel.to_dict()
    s.text.append(f"The {len(sel.items)} benchmarks to run, in the order the greedy mutual-"
                  f"information selection picks them ('benchsel select -k {k}').")
    needed = model.benchmarks_needed(0.9, objective="mi")
    if needed > len(sel.items):
        s.text.append(f"The list stops at {len(sel.items)}, as asked (-k {k}); {needed} "
                      "leave at most 10% of the variance unexplained (see How many "
                      f"benchmarks; 'benchsel report -k {needed}' lists them all).")
    elif needed < len(sel.items):
        s.text.append(f"The first {needed} already leave at most 10% of the variance "
                      "unexplained; the rest, asked for with -k, reduce it further.")
    s.text.append(describe_certificate(sel.certificate))
    s.tables.append(Table(
        ["#", "benchmark", "gain (nats)", "variance left"],
        [[t + 1, name, float(g), float(r)]
         for t, (name, g, r) in enumerate(zip(sel.items, sel.gains, sel.residual_variance))]))


def _cross_validation(b: _Builder, s: Section, scores: ScoreMatrix, *, folds: int, k_max: int,
                      covariance: str, transform: str, calibration: str, seed: int,
                      level: float) -> None:
    k_max = min(k_max, scores.n_items - 1)
    if k_max < 1:
        raise ValueError("cross-validation needs at least two benchmarks")
    result = cross_validate(scores, folds=folds, k_max=k_max, covariance=covariance,
                            transform=transform, calibrate=calibration != "none", seed=seed,
                            level=level, predictor="gaussian")
    cv = result.to_dict()
    b.payload["cv"] = cv
    best = max((r for r in result.rows if r.objective == "mi"), key=lambda r: r.r2_mean)
    s.text.append(
        f"Each of {result.folds} folds fits the model on the other models, selects 1 to "
        f"{k_max} benchmarks and predicts the held-out models' other scores from them "
        f"with the Gaussian conditional mean ('benchsel evaluate --protocol cv --folds {folds} "
        f"--k-max {k_max} --predictor gaussian'; the default predictor costs 100-200 times "
        "more). MI reaches "
        f"R\u00b2 {best.r2_mean:.3f} at k = {best.k}; the random line is what an "
        "uninformed choice gets.")
    coverage = [r.interval_coverage for r in result.rows
                if r.objective == "mi" and np.isfinite(r.interval_coverage)]
    if coverage:
        s.text.append(
            f"The {100 * level:g}% intervals covered {100 * min(coverage):.0f}-"
            f"{100 * max(coverage):.0f}% of the held-out scores (target "
            f"{100 * (level - 0.05):g}-{100 * (level + 0.05):g}%).")
    b.figure(s, "r2_vs_k", figures.r2_figure(cv))
    b.figure(s, "coverage", figures.coverage_figure(cv, level=level))
    if "mi" in result.orders:
        b.figure(s, "stability", figures.stability_figure(result.orders["mi"]))
    s.tables.append(Table(
        ["objective", "k", "R\u00b2 mean", "R\u00b2 SD", f"coverage {100 * level:g}%",
         "uncalibrated", "stability"],
        [[r["objective"], r["k"], r["r2_mean"], r["r2_std"], r["interval_coverage"],
          r["uncalibrated_coverage"], r["stability"]] for r in cv["results"]]))


def _discover(b: _Builder, s: Section, scores: ScoreMatrix, *, bootstrap: int,
              covariance: str, seed: int) -> None:
    result = discover(scores, bootstrap=bootstrap, covariance=covariance, seed=seed)
    found = result.to_dict()
    b.payload["discover"] = found
    rows = result.rows
    # The headline is a benchmark whose novelty its data can show: one run on a handful
    # of models tops the ranking for want of pairs (as `benchsel discover` marks it).
    first = next((r for r in rows if not r.few_models), rows[0])
    above = sum(r.few_models for r in rows[:rows.index(first)])
    useful = min(rows, key=lambda r: r.mi_rank)
    s.text.append(
        f"Novelty: the share of a benchmark's variance the others do not explain (1: nothing "
        f"else measures it). Most novel: {first.benchmark} ({first.novelty:.2f})"
        + (f", after {above} ranked above it on fewer than {FEW_MODELS} models each" if above
           else "")
        + f". Most informative about the rest: {useful.benchmark} "
        f"({useful.information:.2f} nats). ('benchsel discover"
        + (f" --bootstrap {bootstrap}" if bootstrap else "") + "')")
    if any(r.few_models for r in rows):
        s.text.append(f"* run on fewer than {FEW_MODELS} models: its correlations come from "
                      "few pairs, so its novelty may only reflect missing data.")
    boot = bootstrap > 0
    s.tables.append(Table(
        ["novelty rank", "benchmark", "novelty",
         *(["rank interval", "top-3 share"] if boot else []),
         "entropy order", "information (nats)", "MI order", "models"],
        [[r.novelty_rank, r.benchmark + (" *" if r.few_models else ""), r.novelty,
          *([f"{r.rank_low}-{r.rank_high}", r.top3_share] if boot else []),
          r.entropy_rank, r.information, r.mi_rank, r.observed_models]
         for r in rows]))
    b.figure(s, "discover", figures.discover_figure(found))


def _audit(b: _Builder, s: Section, scores: ScoreMatrix, *, threshold: float,
           covariance: str, shown: int = 30) -> None:
    result = audit(scores, threshold=threshold, covariance=covariance)
    found = result.to_dict()
    b.payload["audit"] = found
    s.text.append(
        f"{len(result.cells)} of {result.n_cells} scores decouple from the rest of their "
        f"model's row (|z| > {threshold:g}: far from what the model's other scores predict; "
        "contamination, gaming or a broken run look like this). ('benchsel audit')")
    if result.cells:
        s.tables.append(Table(
            ["model", "benchmark", "observed", "predicted", "z"],
            [[c["model"], c["benchmark"], c["observed"], c["predicted"], c["z"]]
             for c in found["cells"][:shown]],
            caption=(f"the {shown} largest of {len(result.cells)}"
                     if len(result.cells) > shown else "")))
    marked = [r for r in found["benchmarks"] if r["flagged_cells"] or r["decoupled"]]
    if marked:
        s.tables.append(Table(
            ["benchmark", "flagged", "scores", "drift t", "drifts", "replacement"],
            [[r["benchmark"], r["flagged_cells"], r["cells"], r["drift_t"],
              "yes" if r["decoupled"] else "no", r["replacement"] or "-"] for r in marked],
            caption="benchmarks with flagged scores or drift across the model order"))


def _new_model(b: _Builder, s: Section, prediction, scores: ScoreMatrix) -> None:
    b.payload["prediction"] = prediction.to_dict(include_observed=True)
    pct = f"{100 * prediction.level:g}%"
    for row, name in enumerate(prediction.models):
        given = int(prediction.observed[row].sum())
        s.text.append(f"{name}: {len(prediction.items) - given} scores predicted from {given} "
                      "run.")
        flag = prediction.extrapolation[row] if prediction.extrapolation else {}
        if flag.get("flag"):
            s.text.append("WARNING: this model lies outside what the leaderboard's models "
                          "cover; its predictions are extrapolations: "
                          + "; ".join(flag.get("reasons", [])))
        s.tables.append(Table(
            ["benchmark", "run", "score", "std", f"low ({pct})", f"high ({pct})"],
            [[r["benchmark"], "yes" if r["observed"] else "", r["mean"], r["std"], r["low"],
              r["high"]] for r in prediction.records(row, include_observed=True)],
            caption=name))
        b.figure(s, f"prediction_{row + 1}", figures.prediction_figure(prediction, scores, row))


def build_report(scores: ScoreMatrix, *, dataset: str = "", prediction=None, k: int = 5,
                 folds: int = 5, k_max: int = 10, bootstrap: int = 0, threshold: float = 5.0,
                 covariance: str = "auto", transform: str = "none",
                 calibration: str = "conformal", seed: int = 0, level: float = 0.9,
                 progress=None) -> Report:
    """Compute every section of a leaderboard's report.

    Parameters
    ----------
    scores : ScoreMatrix, pandas.DataFrame, path or str
        The leaderboard (models x benchmarks), or anything
        :func:`benchsel.as_scores` reads.
    dataset : str
        How the user named it (shown in the page).
    prediction : Prediction, optional
        A new model's prediction (``benchsel predict``) to show against the
        leaderboard.
    k : int, default 5
        Size of the selection shown.
    folds, k_max : int
        Cross-validation folds and the largest ``k`` it scores.
    bootstrap : int, default 0
        Resamples for the discover ranks' intervals (each refits the model).
    threshold : float, default 5
        Audit threshold on the robust leave-one-out z.
    covariance : str, default "auto"
    transform : str, default "none"
        Per-column transform of the fit, the selection and the
        cross-validation (:class:`~benchsel.GaussianModel`); the discover and
        audit sections work on the score scale.
    calibration : str, default "conformal"
        Whether the cross-validation's intervals are calibrated (``"none"``:
        the Gaussian's own).
    seed : int, default 0
    level : float, default 0.9
        Nominal coverage of the intervals.
    progress : callable, optional
        ``progress(done, total)`` after each section.

    Returns
    -------
    Report
    """
    scores = as_scores(scores)
    start = time.perf_counter()
    b = _Builder(7 if prediction is not None else 6, progress)
    dataset = dataset or "leaderboard"
    fitted: list[GaussianModel] = []

    def fit_spectrum(builder, section):
        # The report's own fit only selects; intervals are calibrated per fold in cv.
        fitted.append(GaussianModel(covariance=covariance, transform=transform,
                                    calibration="none").fit(scores))
        _spectrum(builder, section, fitted[0])

    def selection(builder, section):
        if not fitted:
            raise ValueError("no model could be fitted (see the section above)")
        _selection(builder, section, fitted[0], k)

    with figures.style():
        b.section("overview", "The leaderboard", _overview, scores, dataset)
        b.section("spectrum", "How many benchmarks", fit_spectrum)
        b.section("selection", "Which benchmarks to run", selection)
        b.section("cv", "How well the rest is predicted", _cross_validation, scores,
                  folds=folds, k_max=k_max, covariance=covariance, transform=transform,
                  calibration=calibration, seed=seed, level=level)
        b.section("discover", "What each benchmark adds", _discover, scores,
                  bootstrap=bootstrap, covariance=covariance, seed=seed)
        b.section("audit", "Scores that decouple", _audit, scores, threshold=threshold,
                  covariance=covariance)
        if prediction is not None:
            b.section("prediction", "The new model", _new_model, prediction, scores)
    title = f"benchsel report: {dataset}"
    b.payload["benchsel"] = __version__
    return Report(title, b.sections, b.figures, b.payload, time.perf_counter() - start)
