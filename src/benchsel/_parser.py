"""The command line's parser: every command, its flags and their help.

It imports nothing heavy (no numpy), so that ``--help`` and usage errors answer
at once; the argument types are :mod:`._argtypes`.
"""

from __future__ import annotations

import argparse
import warnings

from ._version import __version__
from .names import (
    CALIBRATIONS,
    COMPLETION_METHODS,
    CORESET_METHODS,
    COVARIANCE_METHODS,
    DEFAULT_CORESET_METHOD,
    DEFAULT_PREDICTOR,
    DEFAULT_QUESTIONS,
    FOLD_SPLITTERS,
    INPUT_FORMATS,
    OBJECTIVES,
    PAPER_REFITS,
    SCORINGS,
    SPLITS,
    TRANSFORMS,
)

__all__ = ["build_parser"]


from ._argtypes import (
    _bounds,
    _coreset_size,
    _fraction,
    _jobs,
    _k_value,
    _memory_size,
    _positive_int,
    _questions,
    _whole_in,
)


def _add_data(p: argparse.ArgumentParser, model_options: bool = True,
              optional: bool = False, intervals: bool = True, transform: bool = True) -> None:
    p.add_argument("data", metavar="DATA", nargs="?" if optional else None,
                   help="score matrix file (CSV/TSV/Parquet/NPZ), a bundled dataset name, or "
                   "a folder of lm-eval runs (lm_eval --output_path; leaf tasks' primary "
                   "metrics become columns '<task>/<metric>,<filter>')"
                   + ("; leave it out with --plan" if optional else ""))
    g = p.add_argument_group("input format")
    g.add_argument("--input-format", dest="input_format", choices=INPUT_FORMATS,
                   help="file format (default: from the extension; text files are wide)")
    if not optional:  # predict's --format is its output format; elsewhere the old spelling
        g.add_argument("--format", dest="input_format", choices=INPUT_FORMATS,
                       action=_Renamed, new="--input-format", help=argparse.SUPPRESS)
    g.add_argument("--sep", help="field separator of text files (default: tab for .tsv)")
    g.add_argument("--model-column", help="column with model names (wide: first column)")
    g.add_argument("--item-column", help="long format: benchmark column (default: benchmark)")
    g.add_argument("--score-column", help="long format: score column (default: score)")
    _add_lm_eval(p)
    if not model_options:
        return
    p.add_argument("--covariance", choices=COVARIANCE_METHODS, default="auto",
                   help="covariance estimator: em (the paper's EM), em-shrink (EM with "
                   "correlation shrinkage), pairwise, factor (a few factors plus each "
                   "benchmark's noise, for thousands of benchmarks), paper (the published "
                   "code's choices); default auto = pairwise if the matrix is complete with "
                   "more models than benchmarks, factor if complete with fewer, else "
                   "em-shrink, or factor where EM would take hours or too much memory")
    if transform:  # budget, audit and discover work on the score scale: no transform
        p.add_argument("--transform", choices=TRANSFORMS, default="none",
                       help="per-column transform before modelling: logit of score / training "
                       "max (Smola 2026, App. K); default none")
    if not intervals:  # a command that prints no error bar has no use for it
        return
    p.add_argument("--calibration", choices=CALIBRATIONS, default="conformal",
                   help="error bars: conformal (default) widens or narrows the predictor's "
                   "standard deviation by multipliers measured on held-out source models, a "
                   "wider one for a model stronger or weaker than every source model; none "
                   "uses the predictor's own standard deviation")


def _add_bounds(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bounds", type=_bounds, default="infer", metavar="LOW,HIGH",
                   help="range of every score, e.g. 0,1 or 0,100; each prediction's normal "
                   "distribution is truncated to it, so its mean and interval lie inside it "
                   "(not clipped to it). Default infer: [0, 1] for a column whose scores all "
                   "lie in it, [0, 100] for one in percent, else none ('none')")


def _add_lm_eval(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("lm-evaluation-harness output (DATA is a folder of runs)")
    g.add_argument("--lm-eval-task", metavar="TASK",
                   help="build the models x questions matrix of TASK from the sample logs "
                   "(samples_TASK_<date>.jsonl; runs need --log_samples)")
    g.add_argument("--lm-eval-metric", metavar="METRIC",
                   help="which score: a metric for every task, or 'task=metric,...' "
                   "(default: each task's primary metric)")
    g.add_argument("--lm-eval-filter", metavar="FILTER",
                   help="which filter: one for every task, or 'task=filter,...' "
                   "(default: each task's first filter)")


def _add_selection(p) -> None:
    """The options of a benchmark selection (``select``, ``plan``)."""
    p.add_argument("-k", type=_k_value,
                   help="how many to select (needed unless --budget or --target-residual); "
                   "auto (MI): stop before the first pick that adds no information")
    p.add_argument("--objective", choices=OBJECTIVES, default="mi",
                   help="mi (default): predict the rest best; entropy: most diverse; random")
    p.add_argument("--include", help="comma-separated names that must be selected (first)")
    p.add_argument("--exclude", help="comma-separated names that must not be selected")
    p.add_argument("--costs", help="per-benchmark costs: JSON {name: cost} or CSV name,cost")
    p.add_argument("--budget", type=float, help="total cost cap (needs --costs)")
    p.add_argument("--target-residual", type=_fraction,
                   help="stop once the unexplained variance fraction is at most this")
    p.add_argument("--keep-aggregates", action="store_true",
                   help="let a column that aggregates the others (a mean win rate, an "
                   "average, a rank) be chosen; by default it is left out of the choice (no "
                   "new model can be run on it) and still predicted")


def _add_dated(p: argparse.ArgumentParser) -> None:
    """The dated split's two flags (evaluate's and coreset-eval's)."""
    p.add_argument("--order", metavar="FILE",
                   help="dated split: when each model came out, CSV lines 'model,date' (a "
                   "header optional) or JSON {model: date}, a date (YYYY-MM-DD) or a number per "
                   "model")
    p.add_argument("--before", metavar="DATE",
                   help="dated split: models before this date (or number) are the sources, "
                   "the others the targets")


def _add_output(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("-o", "--output",
                   help="write to this file (atomically) instead of stdout; - is stdout")


_QUIET = "nothing on stderr but errors: no progress lines, no warnings"
_MEMORY_BUDGET = ("the most memory a computation may plan to take, e.g. 4G or 500M (default: "
                  "$BENCHSEL_MEMORY_BUDGET, else half the machine's memory); above it a "
                  "method switches (EM to the factor model) or stops with a message")


class _Renamed(argparse.Action):
    """An old spelling of a flag: stores into the new one's destination, with a warning."""

    def __init__(self, option_strings, dest, new: str = "", **kwargs):
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        warnings.warn(f"{option_string} is now {self.new}; the old spelling goes in a later "
                      "release", FutureWarning, stacklevel=2)
        setattr(namespace, self.dest, values)


def _add_coverage(p) -> None:
    """--coverage, and its old spelling --level."""
    p.add_argument("--coverage", type=_fraction, default=0.9,
                   help="coverage of the central intervals (default 0.9)")
    p.add_argument("--level", dest="coverage", type=_fraction, action=_Renamed,
                   new="--coverage", help=argparse.SUPPRESS)


def _add_log_readers(p) -> None:
    """--jobs / --dask for reading a folder of lm-eval sample logs."""
    p.add_argument("--jobs", type=_positive_int, default=1,
                   help="lm-eval sample logs read in parallel (joblib; default 1)")
    p.add_argument("--dask", metavar="SCHEDULER",
                   help="read lm-eval sample logs on a dask.distributed cluster (scheduler "
                   "address, or 'local'; needs benchsel[dask])")


#: Seeds: numpy's generators take 0 .. 2**63 - 1 here.
_seed = _whole_in(0, 2**63 - 1)
#: Resamples and trials: each refits a model; past this a run takes days, not minutes.
_resamples = _whole_in(0, 100_000, " (each one refits the model)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchsel",
        description="Choose which benchmarks to run on a new model; predict the rest "
        "with error bars.",
    )
    parser.add_argument("--version", action="version", version=f"benchsel {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("datasets", help="list the bundled leaderboards and per-question sets, "
                       "or show one")
    p.add_argument("name", nargs="?",
                   help="a bundled dataset: its shape, its benchmarks (with how many models "
                   "have each) and its models")
    _add_output(p)

    p = sub.add_parser("select", help="choose the k most informative benchmarks (or models)")
    _add_data(p, intervals=False)
    _add_selection(p)
    p.add_argument("--axis", choices=["benchmarks", "models"], default="benchmarks",
                   help="models: pick reference models to run a new benchmark on")
    p.add_argument("--seed", type=_seed, default=0,
                   help="seed for --objective random and --bootstrap")
    p.add_argument("--bootstrap", type=_resamples, default=0, metavar="B",
                   help="also resample the models B times and report how often each "
                   "selected benchmark is selected again (default 0: no)")
    p.add_argument("--quiet", "-q", action="store_true", help=_QUIET)
    _add_output(p)

    p = sub.add_parser("plan", help="decide what to run on a new model; save the plan "
                       "that 'predict --plan' reads")
    _add_data(p)
    kinds = ["benchmarks", "questions", "mixed"]
    p.add_argument("--kind", choices=kinds, default="benchmarks",
                   help="benchmarks (default): run a few benchmarks of a leaderboard in full; "
                   "questions: run a few questions of each lm-eval task (or of a "
                   "per-question matrix); mixed: -k benchmarks in full and questions of the "
                   "--lm-eval-task tasks, predict every other benchmark (DATA: lm-eval runs)")
    p.add_argument("--level", dest="kind", choices=kinds, action=_Renamed, new="--kind",
                   help=argparse.SUPPRESS)
    p.add_argument("-o", "--output", required=True, metavar="PLAN.json",
                   help="the plan file to write (atomically)")
    p.add_argument("--json", action="store_true", help="print the plan's summary as JSON")
    p.add_argument("--seed", type=_seed, default=0,
                   help="seed of every random choice (default 0); recorded in the plan")
    _add_selection(p.add_argument_group("--kind benchmarks or mixed (as in 'benchsel "
                                        "select')"))
    g = p.add_argument_group("--kind questions or mixed (DATA: lm-eval runs with "
                             "--log_samples, or one task's models x questions NPZ/CSV)")
    g.add_argument("-n", type=_coreset_size,
                   help="questions per task, a count or a percentage such as 5%% "
                   "(default 50)")
    g.add_argument("--total", type=_positive_int,
                   help="instead of -n: a question budget spread over the tasks where it "
                   "reduces the predicted scores' variance most "
                   "(docs/experiments/question-level.md)")
    g.add_argument("--method", default="default",
                   help=f"question-level method: default ({DEFAULT_CORESET_METHOD}) or one of "
                   f"{', '.join(CORESET_METHODS)}")
    g.add_argument("--emit-lm-eval-samples", metavar="FILE",
                   help="also write lm-eval's --samples JSON: every planned task's doc ids")
    _add_log_readers(g)
    _add_bounds(p)

    p = sub.add_parser("predict", help="predict a new model's unrun benchmarks (or full-task "
                       "scores from a question-level plan)",
                       epilog="predict DATA keeps auto's decisions and fits between runs in "
                       "$BENCHSEL_CACHE_DIR (default $XDG_CACHE_HOME/benchsel or "
                       "~/.cache/benchsel; 'off' keeps nothing). Its folders are private "
                       "(0700); a folder others can write is not used, and a link, FIFO, "
                       "damaged or altered entry there is skipped with a warning, never "
                       "written through.")
    _add_data(p, optional=True)
    p.add_argument("--plan", metavar="PLAN.json",
                   help="predict from a saved plan ('benchsel plan') instead of fitting DATA")
    p.add_argument("--observed", required=True, action="append", metavar="PATH",
                   help='scores of the new model(s): "name=value,name=value" (a task name '
                   "stands for its lm-eval column), a JSON object file, a wide CSV of one or "
                   "more new models, or lm-eval output (an --output_path folder, "
                   "results_<date>.json, samples_<task>_<date>.jsonl; repeat --observed for "
                   "several); a question-level plan needs the sample logs of the planned "
                   "questions, or a JSON file {task: {doc_id: score}}")
    _add_coverage(p)
    p.add_argument("--rescale", action="store_true",
                   help="a score given as a percent for a column of fractions (62 for 0.62), "
                   "or the reverse, is converted to the column's scale (default: an error)")
    p.add_argument("--axis", choices=["benchmarks", "models"], default="benchmarks",
                   help="models: the dual -- --observed gives a new benchmark's scores on "
                   "some models (model=score,...), and its score on every other model is "
                   "predicted (pick the reference models with 'select --axis models')")
    p.add_argument("--method", choices=list(COMPLETION_METHODS), default=None,
                   help="predictor: auto (default) cross-validates every method on the "
                   "source models, each given the benchmarks the new model was run on, and "
                   "uses the best (the JSON output's 'choice' says which, by how much); "
                   "gaussian is the conditional distribution; the rest as in 'benchsel "
                   "evaluate DATA --protocol complete'")
    p.add_argument("--questions", metavar="N or NAME=N,...", type=_questions,
                   help="questions behind each observed score (one count for all, per "
                   "benchmark, or a 'benchmark,questions' file): an accuracy p from N "
                   "questions has the standard error sqrt(p(1-p)/N), and the Gaussian "
                   "conditions on it with that noise; the observed benchmarks are then "
                   "predicted too")
    p.add_argument("--format", choices=["table", "json", "csv", *INPUT_FORMATS],
                   default="table",
                   help="output: table (default), json (as --json), or csv: the filled-in "
                   "leaderboard, one row per model, each benchmark's value and its std "
                   "(csv wins over --json; a name that would start a spreadsheet formula, "
                   "=, +, -, @, gets a leading '). The input's format is --input-format")
    _add_bounds(p)
    _add_output(p)

    p = sub.add_parser(
        "evaluate", help="cross-validate selection + prediction on held-out models"
    )
    _add_data(p)
    p.add_argument("--protocol",
                   choices=["cv", "extrapolation", "frontier", "dated", "complete", "oracle"],
                   default="cv",
                   help="cv: K folds over models (Smola 2026, Sec. 5.1); extrapolation: fit "
                   "on the weakest 50%% of models, test on the strongest 30%%; frontier: fit "
                   "on every model but the strongest 10%% (at least 5), test on those; "
                   "dated: fit on the models that came out before --before (by --order), "
                   "test on the later ones; complete: hide "
                   "cells of models with >= 8 scores and fill them back (matrix completion); "
                   "oracle: best subsets of size <= --k-max by exhaustive search")
    _add_dated(p)
    p.add_argument("--folds", type=_positive_int, default=None,
                   help="number of folds (default 10; 3 for the complete protocol)")
    p.add_argument("--holdout", type=_fraction, default=0.1,
                   help="holdout fraction p; training uses floor((1-p) M) models (default 0.1)")
    p.add_argument("--k-max", type=_positive_int, default=None,
                   help="evaluate subsets of size 1..K (default 15; 3 for --protocol oracle, "
                   "whose subsets grow combinatorially with K)")
    p.add_argument("--objectives", default="mi,entropy,random",
                   help="comma-separated objectives (default mi,entropy,random)")
    p.add_argument("--keep-aggregates", action="store_true",
                   help="cv/extrapolation/frontier/dated: let a column that aggregates the "
                   "others "
                   "(a mean win rate, an average) be selected; by default it is left out of "
                   "the choice as 'select' and 'plan' leave it out (still predicted and "
                   "scored); --scoring paper selects from every column")
    p.add_argument("--scoring", choices=SCORINGS, default="default",
                   help="cv/extrapolation R^2 bookkeeping: default scores every validation "
                   "model; paper follows the paper's published code (drops models with no "
                   "selected item observed, scores columns too sparse to model against the "
                   "training mean)")
    p.add_argument("--predictor", choices=list(COMPLETION_METHODS), default=None,
                   help="cv/extrapolation/frontier/dated: what predicts the unselected "
                   "benchmarks: "
                   f"{DEFAULT_PREDICTOR} (default: what 'predict' uses, scored as it prints "
                   "it) or another 'predict --method'; gaussian is the paper's protocol (the "
                   "conditional mean, no score bounds; fast). Any but gaussian costs a "
                   "completion per k and fold (auto: a dozen), so keep --k-max and "
                   "--objectives small")
    p.add_argument("--seed", type=_seed, default=0, help="seed for folds and random orders")
    p.add_argument("--splitter", choices=FOLD_SPLITTERS, default="default",
                   help="cv: how folds are drawn: default (benchsel's), or paper (the "
                   "published code's code/cv_split.py: round((1-p) M) training models, "
                   "each fold's drawn by its own seed; the paper's runs use --seed 42)")
    p.add_argument("--paper", action="store_true",
                   help="cv: the reference paper's whole protocol, Table 4 as its published "
                   "code runs it: --covariance paper --scoring paper --splitter paper "
                   "--predictor gaussian --seed 42")
    p.add_argument("--jobs", type=_jobs, default=1,
                   help="cv and complete folds (and lm-eval sample logs) in parallel (joblib; "
                   "-1 = all cores; results do not depend on it)")
    p.add_argument("--dask", metavar="SCHEDULER",
                   help="run cv and complete folds on a dask.distributed cluster (scheduler "
                   "address, or 'local' for a local cluster; needs benchsel[dask])")
    p.add_argument("--hide", type=_fraction, default=0.5,
                   help="complete: fraction of each model's scores hidden (default 0.5)")
    p.add_argument("--methods",
                   help="complete: comma-separated methods (default all: "
                   f"{', '.join(COMPLETION_METHODS)})")
    p.add_argument("--max-subsets", type=_whole_in(1, 10**9), default=50_000,
                   help="oracle: refuse a k with more subsets than this (default 50000)")
    p.add_argument("--quiet", "-q", action="store_true", help=_QUIET)
    _add_output(p)

    p = sub.add_parser("coreset", help="pick the questions to run on a new model")
    _add_data(p, model_options=False)
    p.add_argument("-n", type=_coreset_size, default=str(DEFAULT_QUESTIONS),
                   help="questions to pick, a count or a percentage such as 5%% (default 50)")
    p.add_argument("--method", default="default",
                   help=f"default ({DEFAULT_CORESET_METHOD}) or one of: "
                   f"{', '.join(CORESET_METHODS)}; append "
                   "+ or ++ to any for a ridge or kernel ridge refit")
    p.add_argument("--emit-lm-eval-samples", nargs=2, metavar=("TASK", "FILE"),
                   help="also write the selection as lm-eval's --samples JSON")
    p.add_argument("--seed", type=_seed, default=0, help="seed for the random questions")
    _add_log_readers(p)
    _add_output(p)

    p = sub.add_parser("coreset-eval",
                       help="compare question-level methods on held-out models")
    _add_data(p, model_options=False)
    p.add_argument("--split", choices=SPLITS, default="interpolation",
                   help="interpolation: random 75/25 models; extrapolation: weakest 50%% "
                   "source, strongest 30%% target; frontier: strongest 10%% (at least 5) "
                   "target, every other model source; stratified: --sources models spread "
                   "over 10 score bins, the rest targets (Bowyer et al.); dated: models "
                   "before --before (by --order) source, the later ones target")
    p.add_argument("-n", "--n", type=_coreset_size, default=str(DEFAULT_QUESTIONS), dest="n",
                   help="questions per coreset, a count or a percentage such as 5%% "
                   "(default 50)")
    p.add_argument("--sources", type=_positive_int,
                   help="stratified split: number of source models (the paper uses 15, 30, 50)")
    _add_dated(p)
    p.add_argument("--jobs", type=_positive_int, default=1,
                   help="trials (and lm-eval sample logs) read and run in parallel (default "
                   "1; results do not depend on it)")
    p.add_argument("--dask", metavar="SCHEDULER",
                   help="run the trials, and read lm-eval sample logs, on a dask.distributed "
                   "cluster (scheduler address, or 'local'; needs benchsel[dask])")
    p.add_argument("--trials", type=_whole_in(1, 100_000), default=10,
                   help="trials (default 10)")
    p.add_argument("--methods", default="all",
                   help=f"all, default, or comma-separated: {', '.join(CORESET_METHODS)}; append "
                   "+ or ++ to any for a ridge or kernel ridge refit (default all: these "
                   f"and {', '.join(PAPER_REFITS)})")
    p.add_argument("--seed", type=_seed, default=0)
    p.add_argument("--quiet", "-q", action="store_true", help=_QUIET)
    _add_output(p)

    p = sub.add_parser("diagnose", help="normality tests: Shapiro-Wilk per benchmark, Mardia")
    _add_data(p, model_options=False)
    p.add_argument("--alpha", type=_fraction, default=0.05,
                   help="false discovery rate for the Benjamini-Hochberg correction")
    p.add_argument("--show", type=_positive_int, default=15,
                   help="benchmarks listed in the table (lowest W first; --json has all)")
    _add_output(p)

    p = sub.add_parser(
        "discover",
        help="rank benchmarks by novelty (what the others do not explain) and by "
             "information about the rest")
    _add_data(p, intervals=False, transform=False)
    p.add_argument("--correlation", action="store_true",
                   help="DATA is a correlation matrix (CSV: benchmark names as first column "
                        "and header, symmetric, unit diagonal) instead of scores")
    p.add_argument("--new", metavar="NAMES",
                   help="comma-separated benchmarks to mark as new and summarize")
    p.add_argument("--bootstrap", type=_resamples, default=0, metavar="B",
                   help="resample the models B times for an interval of each novelty rank "
                        "and its top-3 share (default 0: none)")
    p.add_argument("--seed", type=_seed, default=0, help="seed for the resamples")
    p.add_argument("--quiet", "-q", action="store_true", help=_QUIET)
    _add_output(p)

    p = sub.add_parser(
        "budget",
        help="how many questions each selected benchmark needs, and a total budget's split")
    _add_data(p, intervals=False, transform=False)
    p.add_argument("-k", type=_positive_int, help="select k benchmarks (MI) and budget them")
    p.add_argument("--objective", choices=OBJECTIVES, default="mi",
                   help="objective of the -k selection (default mi)")
    p.add_argument("--select", metavar="NAMES",
                   help="comma-separated benchmarks to budget instead of -k")
    p.add_argument("--per-question", metavar="NAMES",
                   help="comma-separated benchmarks to budget although their name says "
                   "they are not a mean over questions (STS, clustering, ratings: left "
                   "without a count by default)")
    p.add_argument("--fraction", type=float, default=0.1,
                   help="sampling noise allowed, as a share of each benchmark's variance "
                   "given the other selected ones (default 0.1)")
    p.add_argument("--questions", metavar="FILE",
                   help="question count per benchmark (CSV 'benchmark,questions' or JSON); "
                   "caps the counts and corrects for sampling without replacement")
    p.add_argument("--total", type=_positive_int,
                   help="also spread this many questions over the selected benchmarks, "
                   "greedily lowering the rest's predictive variance")
    _add_output(p)

    p = sub.add_parser(
        "audit",
        help="flag scores that decouple from the rest of their model's row (contamination, "
             "gaming, broken runs) and benchmarks that drift")
    _add_data(p, intervals=False, transform=False)
    p.add_argument("--threshold", type=float, default=5.0,
                   help="flag cells whose robust leave-one-out z exceeds this (default 5)")
    p.add_argument("--order", metavar="FILE",
                   help="when each model came out, for the drift test (early half vs late "
                   "half): CSV 'model,order' or JSON {model: order}, a number or a date "
                   "(YYYY-MM-DD) per model; default the row order of DATA")
    _add_output(p)

    p = sub.add_parser(
        "compare",
        help="predicted difference of two models on every benchmark, with its error bar")
    _add_data(p, optional=True)
    p.add_argument("--models", metavar="A,B",
                   help="two models of DATA (each predicted from its own scores by a fit on "
                   "the other models), or the two of --observed to compare; B - A is reported")
    p.add_argument("--plan", metavar="PLAN.json",
                   help="compare two new models with a saved benchmark-level plan instead of "
                   "fitting DATA")
    p.add_argument("--observed", action="append", metavar="PATH",
                   help="with --plan: the two models' results (as for 'predict --observed': "
                   "a CSV of both, lm-eval output, repeat for several)")
    p.add_argument("--paired", action="store_true",
                   help="DATA is models x questions: the paired difference of A and B over "
                   "the questions both answered, with its standard error (and McNemar's test "
                   "for 0/1 scores); on by default with --lm-eval-task")
    p.add_argument("--questions", metavar="N or NAME=N,...", type=_questions,
                   help="questions behind each benchmark score (one count for all, or per "
                   "benchmark): an accuracy p measured on N questions has the standard error "
                   "sqrt(p(1-p)/N). Standard errors are also read from lm-eval's "
                   "*_stderr and DATA's '<benchmark>_stderr' columns; without any, a "
                   "difference both models "
                   "were run on gets no error bar")
    _add_coverage(p)
    _add_output(p)

    p = sub.add_parser(
        "report",
        help="one self-contained HTML page of what the leaderboard tells you, with plots")
    _add_data(p, optional=True)
    p.add_argument("-o", "--output", required=True, metavar="FILE.html",
                   help="the page to write (atomically; it loads nothing from the network)")
    p.add_argument("--plots", metavar="DIR",
                   help="also write every figure as DIR/<name>.png and DIR/<name>.svg")
    p.add_argument("--observed", action="append", metavar="PATH",
                   help="a new model's scores to predict and show against the leaderboard "
                   "(as for 'predict --observed')")
    p.add_argument("--plan", metavar="PLAN.json",
                   help="predict --observed with this saved plan; without DATA, its "
                   "leaderboard is the one reported")
    p.add_argument("--method", choices=list(COMPLETION_METHODS), default=None,
                   help="predictor of the new model (default auto, as in 'predict')")
    _add_bounds(p)
    p.add_argument("-k", type=_positive_int, default=5,
                   help="size of the selection shown (default 5)")
    p.add_argument("--folds", type=_positive_int, default=5,
                   help="cross-validation folds over models (default 5)")
    p.add_argument("--k-max", type=_positive_int, default=10,
                   help="largest k the cross-validation scores (default 10)")
    p.add_argument("--bootstrap", type=_resamples, default=0, metavar="B",
                   help="model resamples for the discover ranks' intervals (default 0; "
                   "each refits the model)")
    p.add_argument("--threshold", type=float, default=5.0,
                   help="audit threshold on the robust leave-one-out z (default 5)")
    _add_coverage(p)
    p.add_argument("--seed", type=_seed, default=0, help="seed of the folds and resamples")
    p.add_argument("--quiet", "-q", action="store_true", help=_QUIET)
    p.add_argument("--json", action="store_true",
                   help="print what was written as JSON (the page embeds the sections' JSON)")

    p = sub.add_parser("spectrum", help="eigenvalue decay vs greedy residual variance")
    _add_data(p, intervals=False)
    p.add_argument("--objective", choices=[o for o in OBJECTIVES if o != "random"],
                   default="mi",
                   help="the selection whose count is reported, as 'select --objective' "
                   "(default mi): how many benchmarks it needs to explain 90/95/99%% of the "
                   "variance, the number 'select --target-residual' and 'report' give")
    _add_output(p)
    for command in sub.choices.values():  # one --quiet, with one meaning, everywhere
        if not any("--quiet" in a.option_strings for a in command._actions):
            command.add_argument("--quiet", "-q", action="store_true", help=_QUIET)
        command.add_argument("--memory-budget", metavar="SIZE", type=_memory_size,
                             help=_MEMORY_BUDGET)
    return parser
