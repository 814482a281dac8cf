"""The names of every option value, in a module that imports nothing.

The command line builds its parser from these, so that ``benchsel --help``
and a usage error never import numpy's heavier neighbours (scipy, pandas,
scikit-learn). The modules that implement each option take their names from
here; ``tests/test_names.py`` checks that the registries (completion methods,
question-level methods) list exactly these.
"""

#: Input file formats (``--input-format``).
INPUT_FORMATS = ("wide", "long", "npz", "parquet")
#: Covariance estimators (:mod:`benchsel.gaussian.covariance`).
COVARIANCE_METHODS = ("auto", "em-shrink", "em", "pairwise", "factor", "paper")
#: Per-column transforms (:mod:`benchsel.transforms`).
TRANSFORMS = ("none", "logit")
#: Interval calibration of :class:`~benchsel.models.GaussianModel`.
CALIBRATIONS = ("conformal", "none")
#: Selection objectives (:mod:`benchsel.selection.greedy`).
OBJECTIVES = ("mi", "entropy", "random")
#: Fold rules of the cv protocol (:mod:`benchsel.splits`).
FOLD_SPLITTERS = ("default", "paper")
#: Which cells the cross-validated R^2 counts (:mod:`benchsel.evaluation.cv`).
SCORINGS = ("default", "paper")
#: The reference paper's cv protocol (Smola 2026, Table 4, run as its published code
#: runs it): what ``cross_validate(paper=True)`` and ``evaluate --paper`` set.
PAPER_PROTOCOL = {"covariance": "paper", "scoring": "paper", "splitter": "paper",
                  "predictor": "gaussian", "seed": 42}
#: Completion methods (:data:`benchsel.prediction.COMPLETERS`).
COMPLETION_METHODS = ("mean", "gaussian-em", "gaussian", "svd", "ridge", "svd+ridge",
                      "gaussian+svd", "gp", "auto")
#: The held-out models ``auto`` chooses its method on (:mod:`benchsel.prediction.choice`):
#: random ones, for a new model inside the sources' range; the strongest and weakest
#: 10%, for one beyond it.
CHOICE_SPLITS = ("random", "near")
#: Splits of choices that plans written before may hold (30% tails, for a new model
#: far beyond the range): no model is chosen for on them now, so they are skipped.
FORMER_CHOICE_SPLITS = ("strength",)
#: The benchmark-level predictor of ``predict``, ``Plan.predict`` and
#: ``GaussianModel.predict``: one default for the library and the CLI.
DEFAULT_PREDICTOR = "auto"
#: Questions per task of a question-level plan or coreset when no count is given
#: (``plan_questions`` and ``benchsel plan --kind questions`` / ``coreset`` alike).
DEFAULT_QUESTIONS = 50
#: The largest subset size ``evaluate --protocol oracle`` / ``oracle_subsets`` score by
#: default: every subset of each size is fitted, so the count grows combinatorially.
ORACLE_K_MAX = 3
#: Question-level methods (:data:`benchsel.coreset.registry.METHODS`).
CORESET_METHODS = ("random-sampling", "stratified-sampling", "random-sampling-learn", "aipw",
                   "gaussian-greedy", "gaussian-dr", "guarded-ensemble", "random-search-learn",
                   "lasso", "double-optimize", "pca", "anchor-points-weighted",
                   "anchor-points-predictor", "p-irt", "gp-irt", "mrmr", "mrmr-mid")
#: The question-level default (beats aipw in both splits; see docs/experiments/question-level.md).
DEFAULT_CORESET_METHOD = "guarded-ensemble"
#: The refits Bowyer et al. report, evaluated with "all" beside the base methods.
PAPER_REFITS = ("mrmr++", "anchor-points-weighted+", "anchor-points-weighted++", "gp-irt++")
#: Question-level splits of the source models (:mod:`benchsel.evaluation.questions`).
SPLITS = ("interpolation", "extrapolation", "frontier", "stratified", "dated")
