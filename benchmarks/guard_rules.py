"""Rules for when the default question-level method trusts its model, compared offline.

``guarded-ensemble`` predicts a new model's full-benchmark score by its
model-based ensemble only where the model's own answers place it among the
source models, and by a design-consistent estimate from those answers
elsewhere (their design-weighted mean, or aipw's difference estimator where
it predicted the strongest sources better).
This script fits the shipped method once per file, split and trial, keeps
both estimates of every target, and then scores each rule of
:data:`RULES` on them: the gap's change (%) against ``stratified-sampling``
(the design-weighted mean of the same answers, the baseline the default
must not lose to) per file, its mean and worst file, and EGR against
``random-sampling``.

Splits: interpolation, extrapolation and frontier as in ``coreset-eval``,
and ``weakest`` -- the weakest 10% of the models (at least 5) held out,
the others as sources: a small model evaluated with a plan of larger ones.
Point estimates only (calibration changes error bars, not means); the
shipped rule's estimates are checked against ``predict``.

    python benchmarks/guard_rules.py [--trials 30] [--jobs 2] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import copy
import warnings

import numpy as np
from _data import add_data_dir
from scipy.special import ndtri

from benchsel.coreset.methods import BEYOND_EVIDENCE

SPLITS = ("interpolation", "extrapolation", "frontier", "weakest")

#: name -> (upper, lower): upper is the level of the design interval whose upper end
#: must not pass the strongest source (None: no check); lower is a list of checks at
#: the bottom, any of which suffices: ("interval", level) for that interval's lower
#: end against the weakest source, ("share", q[, z]) for the estimate (plus z of
#: its standard deviations) above the q-quantile of the sources' means (an empty
#: list: no check). An untrusted target gets the design-weighted mean of its
#: answers (as up to v4), or with a third entry ``"beyond"`` the shipped method's
#: estimate beyond the sources (``beyond_estimate``: aipw where it predicted the
#: strongest sources better, v5).
RULES = {
    "interval 90% at both ends (v3)": (0.9, [("interval", 0.9)]),
    "interval 90%; at the bottom 50%": (0.9, [("interval", 0.5)]),
    "interval 90% at the top; at the bottom, estimate above the weakest source":
        (0.9, [("share", 0.0)]),
    "interval 90% at the top; at the bottom, estimate above the weakest 10%":
        (0.9, [("share", 0.1)]),
    "interval 90%; at the bottom, or estimate above the weakest 5%":
        (0.9, [("interval", 0.9), ("share", 0.05)]),
    "interval 90%; at the bottom, or estimate above the weakest 10% (v4 at 05b2f28)":
        (0.9, [("interval", 0.9), ("share", 0.1)]),
    "interval 90%; at the bottom, or estimate + 0.5 SD above the weakest 10%":
        (0.9, [("interval", 0.9), ("share", 0.1, 0.5)]),
    "interval 90%; at the bottom, or estimate + 1 SD above the weakest 10% (v4)":
        (0.9, [("interval", 0.9), ("share", 0.1, 1.0)]),
    "interval 90%; at the bottom, or estimate + 1 SD above the weakest 10%; "
    "aipw beyond where better on the strongest sources (v5, shipped)":
        (0.9, [("interval", 0.9), ("share", 0.1, 1.0)], "beyond"),
    "interval 90%; at the bottom, or estimate + 1.645 SD above the weakest 10%":
        (0.9, [("interval", 0.9), ("share", 0.1, float(ndtri(0.95)))]),
    "interval 90%; at the bottom, or estimate above the weakest 20%":
        (0.9, [("interval", 0.9), ("share", 0.2)]),
    "interval 75%; at the bottom, or estimate above the weakest 10%":
        (0.75, [("interval", 0.75), ("share", 0.1)]),
    "interval 50%; at the bottom, or estimate above the weakest 10%":
        (0.5, [("interval", 0.5), ("share", 0.1)]),
    "interval 90% at the top, nothing at the bottom": (0.9, []),
    "the ensemble everywhere": (None, []),
}
SHIPPED = ("interval 90%; at the bottom, or estimate + 1 SD above the weakest 10%; "
           "aipw beyond where better on the strongest sources (v5, shipped)")
# v5 with a stricter test of aipw on the strongest sources: a fallback ("evidence", t)
# takes aipw where the paired t statistic is below -t (v5's t is BEYOND_EVIDENCE, 2).
RULES.update({
    f"v5, aipw beyond only at t < -{t:g}": (0.9, [("interval", 0.9), ("share", 0.1, 1.0)],
                                            ("evidence", t))
    for t in (2.5, 3.0, 4.0)
})


def _targets(values: np.ndarray, split: str, trial: int):
    from benchsel.evaluation.questions import model_split
    from benchsel.splits import frontier_split

    if split == "weakest":
        fold = frontier_split(values, strength=-values.mean(axis=1))
        return fold.train, fold.validation
    return model_split(values, split, np.random.default_rng([0, trial]))


def estimates(path, trials: int) -> tuple[str, dict]:
    """Per split, one record per trial: truth, both estimates, random-sampling's, sources."""
    from benchsel import read_scores
    from benchsel._parallel import one_blas_thread
    from benchsel.coreset.registry import make_method

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values = np.asarray(read_scores(path).values, dtype=float)
    out = {}
    for split in SPLITS:
        records = []
        # The weakest split is fixed, as the frontier is: trials differ in the draw.
        for trial in range(trials):
            src, tgt = _targets(values, split, trial)
            with one_blas_thread(user_api=None), np.errstate(all="ignore"), \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore")
                draws = {name: make_method(name, n_questions=50,
                                           random_state=np.random.default_rng([0, trial, 1]))
                         .fit(values[src]) for name in ("guarded-ensemble", "random-sampling")}
                ge, rs = draws["guarded-ensemble"], draws["random-sampling"]
                x = values[np.ix_(tgt, ge.selected_)]
                design = ge.design_estimate(x)
                beyond = ge.beyond_estimate(x)[0]
                model = ge.model_based_estimate(x)[0]
                shipped = ge.predict(x)[0]
                # aipw beyond the sources whatever the test on the strongest sources
                # said: a copy of the fit with the test's outcome overridden.
                forced = copy.copy(ge)
                forced.beyond_ = "aipw"
                aipw = forced.beyond_estimate(x)[0]
                rand = rs.predict(values[np.ix_(tgt, rs.selected_)])[0]
            records.append({"truth": values[tgt].mean(axis=1), "design": design[0],
                            "design_sd": design[1], "beyond": beyond, "model": model,
                            "random": rand, "aipw": aipw, "evidence": ge.beyond_evidence_,
                            "shipped": shipped, "sources": np.sort(values[src].mean(axis=1))})
        out[split] = records
    return path.stem, out


def rule_estimate(record: dict, upper, lower, fallback="design") -> np.ndarray:
    """The estimate a rule gives each target of one trial.

    ``fallback`` names the record's estimate for an untrusted target, or is
    ``("evidence", t)``: aipw's where the test on the strongest sources gave
    a t statistic below ``-t``, else the design-weighted mean.
    """
    design, sd, sources = record["design"], record["design_sd"], record["sources"]
    trust = np.ones(design.shape, dtype=bool)
    if upper is not None:
        trust &= design + ndtri(0.5 + upper / 2) * sd <= sources[-1]
    if lower:
        bottom = np.zeros(design.shape, dtype=bool)
        for kind, value, *margin in lower:
            bottom |= (design - ndtri(0.5 + value / 2) * sd >= sources[0]) \
                if kind == "interval" else \
                design + (margin[0] if margin else 0.0) * sd >= np.quantile(sources, value)
        trust &= bottom
    if isinstance(fallback, tuple):
        untrusted = record["aipw"] if record["evidence"] < -fallback[1] else record["design"]
    else:
        untrusted = record[fallback]
    return np.where(trust, record["model"], untrusted)


def _gap(records: list, estimates: list) -> float:
    """Mean |truth - estimate| over every target of every trial."""
    return float(np.mean(np.concatenate([np.abs(e - r["truth"])
                                         for r, e in zip(records, estimates)])))


def main() -> None:
    from joblib import Parallel, delayed

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_dir(parser)
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    paths = sorted(args.data_dir.glob("*.npz"))
    results = Parallel(n_jobs=args.jobs)(delayed(estimates)(p, args.trials) for p in paths)
    for _, out in results:  # the shipped rule is what predict returns
        for records in out.values():
            for r in records:
                np.testing.assert_allclose(rule_estimate(r, *RULES[SHIPPED]), r["shipped"],
                                           rtol=0, atol=1e-12)
                # ... and the override reproduces it at the shipped threshold.
                np.testing.assert_allclose(
                    rule_estimate(r, *RULES[SHIPPED][:2], ("evidence", BEYOND_EVIDENCE)),
                    r["shipped"], rtol=0, atol=1e-12)
    names = [stem.replace("openllm_", "ol_").replace("helm_", "h_") for stem, _ in results]
    for split in SPLITS:
        print(f"\n{split}, n = 50, {args.trials} trials: gap change against "
              "stratified-sampling (%)\n")
        print("| rule | " + " | ".join(names) + " | mean | worst | EGR % |")
        print("|---" * (len(names) + 4) + "|")
        for rule, spec in RULES.items():
            change, egr = [], []
            for _, out in results:
                records = out[split]
                ours = _gap(records, [rule_estimate(r, *spec) for r in records])
                design = _gap(records, [r["design"] for r in records])
                rand = _gap(records, [r["random"] for r in records])
                # A file whose targets all answer alike has no gap to compare with.
                change.append(100 * (ours / design - 1) if design > 0 else np.nan)
                egr.append(100 * (ours / rand - 1) if rand > 0 else np.nan)
            cells = ["-" if np.isnan(c) else f"{c:+.1f}" for c in change]
            print(f"| {rule} | " + " | ".join(cells) + f" | {np.nanmean(change):+.1f} | "
                  f"{np.nanmax(change):+.1f} | {np.nanmean(egr):+.1f} |", flush=True)
    print("\nthe shipped rule's gap minus stratified-sampling's, points, with its paired SE "
          "over trials (the trial's mean |error| difference; * beyond 2 SE)\n")
    print("| split | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for split in SPLITS:
        cells = []
        for _, out in results:
            diff = np.array([_gap([r], [r["shipped"]]) - _gap([r], [r["design"]])
                             for r in out[split]])
            se = diff.std(ddof=1) / np.sqrt(diff.size)
            star = "*" if abs(diff.mean()) > 2 * se else ""
            cells.append(f"{100 * diff.mean():+.3f} ({100 * se:.3f}){star}")
        print(f"| {split} | " + " | ".join(cells) + " |")
    print("\ntrials (of each file's fits) in which aipw is taken beyond the sources, by the "
          "t statistic it must be below\n")
    print("| split | t | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 2) + "|")
    for split in SPLITS:
        for t in (BEYOND_EVIDENCE, 2.5, 3.0, 4.0):
            counts = [sum(r["evidence"] < -t for r in out[split]) for _, out in results]
            print(f"| {split} | -{t:g} | " + " | ".join(map(str, counts)) + " |")


if __name__ == "__main__":
    main()
