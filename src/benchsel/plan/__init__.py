"""The plan: what to run on a new model, and everything needed to predict the rest.

``benchsel plan`` decides; a :class:`Plan` records the decision and is what
``benchsel predict --plan`` reads, at both levels:

* **benchmarks** -- the selected benchmarks of a leaderboard, and the Gaussian
  model that predicts the others;
* **questions** -- per lm-eval task, the questions to run (by ``doc_id``) and
  the question-level method that predicts the full-task score.

A plan is self-contained: it embeds the source score matrices it was fitted
on (with their sha256 fingerprints) and the options of the fit, and
prediction rebuilds the fitted predictor from them. Every fit in benchsel is
deterministic given its data, options and seed; a rebuilt predictor is
checked against the selection and the predictions the plan recorded when it
was made, so a plan that does not reproduce (another benchsel or numpy
version, a damaged file) fails loudly instead of predicting something else.
Refitting rather than serializing each predictor's internals keeps one
format for every method, and the embedded source is needed anyway: the
extrapolation check compares a new model with the models fitted on.
"""


from ._plan import Plan, load_plan
from .allocation import MIN_PER_TASK, allocate_questions, error_curve
from .parts import BenchmarkPlan, TaskPlan
from .planners import plan_benchmarks, plan_mixed, plan_questions

__all__ = [
    "Plan",
    "BenchmarkPlan",
    "TaskPlan",
    "load_plan",
    "plan_benchmarks",
    "plan_questions",
    "plan_mixed",
    "allocate_questions",
    "error_curve",
    "MIN_PER_TASK",
]
