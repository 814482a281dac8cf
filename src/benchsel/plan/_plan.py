"""The :class:`Plan`: a decision saved to a file, read back checked, and predicted from."""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from .._version import __version__
from ..matrix import ScoreMatrix
from ..observations import Observations, observe
from ..outputs import write_json_atomic
from ._format import FORMAT, FORMAT_VERSION
from ._format import read_plan_json as _read_plan_json
from ._schema import LEVELS
from .parts import BenchmarkPlan, TaskPlan
from .prediction import predict_mixed, task_estimates

__all__ = ["Plan", "load_plan"]


@dataclass
class Plan:
    """A saved plan (see the module docstring).

    Attributes
    ----------
    level : {"benchmarks", "questions", "mixed"}
    benchmarks : BenchmarkPlan or None
    tasks : dict task -> TaskPlan
    columns : dict task -> str
        Mixed plans: the leaderboard column each question-level task estimates.
    seed : int
    command : str or None
        The command line that made the plan.
    allocation : str or None
        Questions: ``per-task`` or ``total``.
    source_description : str or None
        Where the source data came from.
    benchsel_version, created : str
    """

    level: str
    benchmarks: BenchmarkPlan | None = None
    tasks: dict = field(default_factory=dict)
    columns: dict = field(default_factory=dict)
    seed: int = 0
    command: str | None = None
    allocation: str | None = None
    source_description: str | None = None
    benchsel_version: str = __version__
    created: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc)
                         .isoformat(timespec="seconds"))

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {', '.join(LEVELS)}; got {self.level!r}")
        if self.level in ("benchmarks", "mixed") and self.benchmarks is None:
            raise ValueError(f"a {self.level} plan needs its benchmark part")
        if self.level in ("questions", "mixed") and not self.tasks:
            raise ValueError(f"a {self.level} plan needs at least one task")
        if self.level == "mixed" and set(self.columns) != set(self.tasks):
            raise ValueError("a mixed plan needs the leaderboard column of every task")

    @property
    def run_in_full(self) -> list[str]:
        """Benchmarks to run in full (none for a question-level plan)."""
        if self.benchmarks is None:
            return []
        sampled = set(self.columns.values())
        return [b for b in self.benchmarks.selected if b not in sampled]

    @property
    def questions(self) -> dict[str, list[int]]:
        """``{task: sorted doc ids}`` to run (empty for a benchmark-level plan)."""
        return self.lm_eval_samples()

    def lm_eval_samples(self) -> dict[str, list[int]]:
        """``{task: sorted doc ids}``: lm-eval's ``--samples`` for a question-level plan."""
        return {task: sorted(part.selected) for task, part in self.tasks.items()}

    def to_frame(self):
        """What the plan asks to run as a :class:`pandas.DataFrame`, one row per thing to run.

        Benchmarks to run in full come first, in selection order, with their
        ``gain`` and the ``residual_variance`` left once they are run; then
        each task to sample, with the ``questions`` to run ``of`` how many, its
        ``source_models`` and ``method``. Index ``run``: the benchmark or task.
        """
        import pandas as pd

        columns = ["what", "gain", "residual_variance", "questions", "of", "source_models",
                   "method"]
        rows, index = [], []
        if self.benchmarks is not None:
            sel, full = self.benchmarks.selection, set(self.run_in_full)
            for name, gain, rest in zip(sel["selected"], sel["gains"],
                                        sel["residual_variance"]):
                if name in full:
                    index.append(name)
                    rows.append(["in full", float(gain), float(rest), None, None,
                                 self.benchmarks.source.n_models, None])
        for task, part in self.tasks.items():
            index.append(task)
            rows.append(["questions", None, None, part.n, len(part.doc_ids),
                         part.source.n_models, part.method])
        return pd.DataFrame(rows, columns=columns, index=pd.Index(index, name="run"))

    def summary(self) -> dict:
        """What the plan asks to run, as JSON (no arrays)."""
        out = {"level": self.level, "benchsel_version": self.benchsel_version,
               "created": self.created, "seed": self.seed}
        if self.benchmarks is not None:
            out["run_in_full"] = self.run_in_full
            out["selection"] = self.benchmarks.selection
            out["options"] = self.benchmarks.options
            out["source"] = {"models": self.benchmarks.source.n_models,
                             "benchmarks": self.benchmarks.source.n_items}
        if self.tasks:
            out["allocation"] = self.allocation
            out["tasks"] = {
                t: {"method": p.method, "n": p.n, "questions": len(p.doc_ids),
                    "source_models": p.source.n_models, "metric": p.metric,
                    "filter": p.filter, "doc_ids": sorted(p.selected)}
                for t, p in self.tasks.items()}
        return out

    # ----------------------------------------------------------------- file
    def to_json(self) -> dict:
        out = {"format": FORMAT, "format_version": FORMAT_VERSION,
               "benchsel_version": self.benchsel_version, "created": self.created,
               "command": self.command, "seed": self.seed, "level": self.level,
               "source": self.source_description}
        if self.benchmarks is not None:
            out["benchmarks"] = self.benchmarks.to_json()
        if self.tasks:
            out["allocation"] = self.allocation
            out["tasks"] = {t: p.to_json() for t, p in self.tasks.items()}
        if self.columns:
            out["columns"] = self.columns
        return out

    def save(self, path: str | os.PathLike, *, protect=None) -> None:
        """Write the plan as JSON, atomically (never over a file in ``protect``)."""
        write_json_atomic(path, self.to_json(), protect=protect, allow_nan=False)

    @classmethod
    def load(cls, path: str | os.PathLike, *, max_decoded_bytes: int | None = None) -> Plan:
        """Read a plan, checking its schema, format, version and source fingerprints.

        Parameters
        ----------
        path : path-like
        max_decoded_bytes : int, optional
            Largest total size of the plan's arrays once decoded: 1 GiB, or the
            environment's ``BENCHSEL_MAX_PLAN_BYTES``. A plan from someone else
            is checked against it before anything is inflated.
        """
        obj = _read_plan_json(path, max_decoded_bytes=max_decoded_bytes)
        try:
            return cls._from_json(obj, str(path))
        except (ValueError, TypeError, AttributeError) as err:
            text = str(err)
            raise ValueError(text if text.startswith(str(path)) else f"{path}: {text}") from None

    @classmethod
    def _from_json(cls, obj: dict, where: str) -> Plan:
        for key, kind in (("tasks", dict), ("columns", dict), ("seed", int)):
            if key in obj and not isinstance(obj[key], kind):
                raise ValueError(f"{where}: {key!r} must be a JSON {kind.__name__}")
        level = obj.get("level")
        if level not in LEVELS:
            raise ValueError(f"{where}: level {level!r}; expected one of {', '.join(LEVELS)}")
        bench = obj.get("benchmarks")
        tasks = obj.get("tasks") or {}
        columns = obj.get("columns") or {}
        if bench is not None:
            items = set(bench["source"]["items"])
            for task, column in columns.items():
                if column not in items:
                    raise ValueError(f"{where}: columns.{task}: {column!r} is not a benchmark "
                                     "of the plan's source")
        return cls(
            level=level,
            benchmarks=None if bench is None else BenchmarkPlan.from_json(
                bench, f"{where}: benchmarks"),
            tasks={t: TaskPlan.from_json(t, p, f"{where}: tasks.{t}") for t, p in tasks.items()},
            columns=dict(obj.get("columns") or {}),
            seed=int(obj.get("seed", 0)), command=obj.get("command"),
            allocation=obj.get("allocation"), source_description=obj.get("source"),
            benchsel_version=str(obj.get("benchsel_version")), created=str(obj.get("created")))

    # -------------------------------------------------------------- predict
    def predict(self, observations, *, coverage: float = 0.9, method: str | None = None,
                observed_std=None):
        """Predict what new model(s) were not run on, for every kind of plan.

        Parameters
        ----------
        observations : Observations, or anything :func:`benchsel.observe` reads
            The new model's results: an lm-eval output folder, a mapping
            ``{benchmark: score}`` or ``{task: {doc_id: score}}``, a file...
        coverage : float in (0, 1), default 0.9
            Coverage of the central interval ``[low, high]``.
        method : str, optional
            Benchmark-level plans: the predictor (default
            :data:`benchsel.names.DEFAULT_PREDICTOR`, as ``benchsel predict``).
            Question-level and mixed plans predict with the methods they were
            made with.
        observed_std : ndarray, optional
            Benchmark-level plans: the observed scores' standard errors over the
            plan's benchmarks (``GaussianModel.predict``): the Gaussian conditions
            on them with that noise.

        Returns
        -------
        benchsel.models.Prediction
            ``.to_frame()``: one row per benchmark (or task), columns
            ``mean, std, low, high, observed``; ``.to_dict()``: the JSON of
            ``benchsel predict --json``.
        """
        obs = observations if isinstance(observations, Observations) else \
            observe(self, observations)
        if self.level == "benchmarks":
            if obs.benchmarks is None:
                raise ValueError("no benchmark score of any new model was given")
            return self.predict_benchmarks(obs.benchmarks, level=coverage, method=method,
                                           observed_std=observed_std)
        if method is not None:
            raise ValueError(f"method applies to benchmark-level prediction; a {self.level} "
                             "plan predicts with the methods it was made with")
        if observed_std is not None:
            raise ValueError(f"observed_std applies to benchmark scores; a {self.level} plan "
                             "knows the questions each task score comes from")
        if self.level == "questions":
            return self.predict_questions(obs.questions, level=coverage)
        return self.predict_mixed(obs.benchmarks, obs.questions, level=coverage)

    def predict_benchmarks(self, observed, *, level: float = 0.9, method: str | None = None,
                           observed_std=None):
        """Predict the unrun benchmarks of new model(s) (see ``GaussianModel.predict``)."""
        if self.level != "benchmarks":
            raise ValueError(f"this is a {self.level}-level plan: give per-question results "
                             "(an lm-eval output folder or sample logs)")
        return self.benchmarks.model().predict(observed, level=level, method=method,
                                               observed_std=observed_std)

    def predict_questions(self, observed: Mapping[str, Mapping[str, Mapping[int, float]]],
                          *, level: float = 0.9):
        """Predict full-task scores from the planned questions' scores.

        Parameters
        ----------
        observed : mapping model -> task -> {doc_id: score}
            Per-question scores of each new model, matched to the plan by
            doc id. A model must cover every planned question of every task
            of the plan; extra questions of a partial run are ignored with a
            warning; a full run of a task is reported as observed (its score
            is known).
        level : float, default 0.9

        Returns
        -------
        benchsel.models.Prediction
            Items are the plan's tasks.
        """
        if self.level != "questions":
            raise ValueError(f"this is a {self.level}-level plan: "
                             + ("give benchmark scores" if self.level == "benchmarks" else
                                "use predict_mixed"))
        return task_estimates(self, observed, level)

    def predict_mixed(self, full: ScoreMatrix | None,
                      questions: Mapping[str, Mapping[str, Mapping[int, float]]],
                      *, level: float = 0.9):
        """Predict every benchmark from full runs and the planned questions.

        Parameters
        ----------
        full : ScoreMatrix or None
            Full-task scores of the new models (columns named as the
            leaderboard's, e.g. the benchmarks the plan runs in full).
        questions : mapping model -> task -> {doc_id: score}
            As in :meth:`predict_questions`.
        level : float, default 0.9

        Returns
        -------
        benchsel.models.Prediction
            Over the leaderboard's benchmarks; the sampled tasks are
            predicted too (their sample estimate combined with the rest).
        """
        return predict_mixed(self, full, questions, level)


def load_plan(path: str | os.PathLike, *, max_decoded_bytes: int | None = None) -> Plan:
    """Read a plan file, checked before use (see :meth:`Plan.load`)."""
    return Plan.load(path, max_decoded_bytes=max_decoded_bytes)

