"""The two parts a plan is made of, as saved: a benchmark part and a task part.

:class:`BenchmarkPlan` holds a leaderboard's selection and the options of the
Gaussian model that predicts the rest; :class:`TaskPlan` one lm-eval task's
planned questions and its question-level method. Each writes and reads its
JSON and rebuilds its fitted predictor from the source scores it embeds,
checked against the predictions it recorded when the plan was made.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from .._arrays import decode_array, encode_array, fingerprint
from .._version import __version__
from ..bounds import resolve_bounds
from ..matrix import DataWarning, ScoreMatrix, _short_list
from ..models import GaussianModel
from ..prediction.memo import AutoMemo

__all__ = ["BenchmarkPlan", "TaskPlan"]

_CHECK_ROWS = 20  # source models whose predictions a plan records to verify a rebuild
_RTOL, _ATOL = 1e-6, 1e-9



def _matrix_to_json(scores: ScoreMatrix) -> dict:
    return {
        "models": list(scores.models),
        "items": list(scores.items),
        "values": encode_array(scores.values),
        "fingerprint": fingerprint(scores.models, scores.items, scores.values),
    }


def _matrix_from_json(obj, where: str) -> ScoreMatrix:
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected an object with models, items and values")
    values = decode_array(obj.get("values"), f"{where}.values")
    models, items = obj.get("models"), obj.get("items")
    if not isinstance(models, list) or not isinstance(items, list) or \
            values.shape != (len(models), len(items)):
        raise ValueError(f"{where}: {len(models or [])} models and {len(items or [])} items "
                         f"do not match the values' shape {values.shape}")
    if fingerprint(models, items, values) != obj.get("fingerprint"):
        raise ValueError(f"{where}: the source matrix does not match its fingerprint; the "
                         "plan file is damaged or was edited")
    return ScoreMatrix(values, models, items)


@contextmanager
def _named(where: str):
    """Errors raised within, prefixed with ``where`` (a plan part's file and JSON path):
    a plan's predictor is rebuilt when it is first used, long after the file was read."""
    try:
        yield
    except ValueError as err:
        text = str(err)
        raise ValueError(text if text.startswith(where) else f"{where}: {text}") from None


def _check_rebuild(recorded, rebuilt) -> None:
    recorded = np.asarray(recorded, dtype=float)
    rebuilt = np.asarray(rebuilt, dtype=float)
    same = recorded.shape == rebuilt.shape and np.allclose(
        recorded, rebuilt, rtol=_RTOL, atol=_ATOL, equal_nan=True)
    if not same:
        raise ValueError(
            f"the predictor rebuilt from the plan does not reproduce the plan's "
            f"recorded predictions (this benchsel is {__version__}); make the plan again "
            "with this version"
        )


# ----------------------------------------------------------------- benchmarks
@dataclass
class BenchmarkPlan:
    """Benchmark level: the selection and the Gaussian model's fit options.

    Attributes
    ----------
    source : ScoreMatrix
        The leaderboard the model was fitted on (as cleaned for the fit).
    options : dict
        ``GaussianModel`` parameters (``covariance``, ``transform``, ``bounds``).
    selection : dict
        :meth:`benchsel.models.Selection.to_dict` of the selection.
    check : ndarray
        Predicted means of the first source models from the selected
        benchmarks, recorded to verify the rebuilt model.
    auto : dict or None
        ``auto``'s decisions for a new model run on the selection
        (:meth:`benchsel.prediction.memo.AutoMemo.to_json`): made when the
        plan was, so that prediction only completes the new rows.
    """

    source: ScoreMatrix
    options: dict
    selection: dict
    check: np.ndarray
    auto: dict | None = None
    where: str | None = field(default=None, repr=False, compare=False)  # file: JSON path
    _model: object = field(default=None, repr=False)

    @property
    def selected(self) -> list[str]:
        return list(self.selection["selected"])

    def model(self):
        """The fitted :class:`~benchsel.models.GaussianModel` (rebuilt once, verified).

        A failure names the plan part: ``where``, its file and JSON path."""
        if self._model is None:
            with _named(self.where or "the benchmark plan"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DataWarning)  # said once, when planning
                    model = _fit_gaussian(self.source, self.options)
                if self.auto is not None:  # before the check, whose calibration they hold

                    model.auto_memo = AutoMemo.from_json(
                        self.auto, model.items_, f"{self.where or 'benchmarks'}.auto")
                _check_rebuild(self.check, _benchmark_check(model, self.selected))
            self._model = model
        return self._model

    def to_json(self) -> dict:
        out = {"source": _matrix_to_json(self.source), "options": self.options,
               "selection": self.selection, "check": encode_array(self.check)}
        if self.auto is not None:
            out["auto"] = self.auto
        return out

    @classmethod
    def from_json(cls, obj: dict, where: str) -> BenchmarkPlan:
        try:
            part = cls(source=_matrix_from_json(obj["source"], f"{where}.source"),
                       options=dict(obj["options"]), selection=dict(obj["selection"]),
                       check=decode_array(obj["check"], f"{where}.check"),
                       auto=obj.get("auto"), where=where)
        except (KeyError, TypeError) as err:
            raise ValueError(f"{where}: missing or malformed entry {err}") from None
        if "bounds" in part.options:  # the schema checks its type; its text is read here

            with _named(f"{where}.options.bounds"):
                resolve_bounds(part.options["bounds"], part.source.items, part.source.values)
        unknown = [b for b in part.selected if b not in set(part.source.items)]
        if unknown:
            raise ValueError(f"{where}.selection.selected: {unknown[0]!r} is not a benchmark "
                             f"of the plan's source ({_short_list(part.source.items)})")
        if part.auto is not None:  # checked now, used when the model is rebuilt

            AutoMemo.from_json(part.auto, part.source.items, f"{where}.auto")
        return part


def _fit_gaussian(source: ScoreMatrix, options: dict):
    return GaussianModel(**options).fit(source)


def _benchmark_check(model, selected: list[str]) -> np.ndarray:
    rows = model.scores_.subset(models=np.arange(min(_CHECK_ROWS, model.scores_.n_models)))
    keep = rows.item_indices(selected, "benchmark")
    observed = rows.subset(items=keep)
    with warnings.catch_warnings():
        # Source models without the selected scores are part of the check.
        warnings.filterwarnings("ignore", "'.*no observed score", DataWarning)
        mean = model.predict(observed, method="gaussian").mean
    return np.where(np.isnan(mean), 0.0, mean)


def _gaussian_options(model) -> dict:
    """The model's constructor parameters, checked to be plain JSON values."""
    options = model.get_params()
    for name, value in options.items():
        if not _jsonable(value):
            raise ValueError(
                f"a plan records the model's options as JSON; {name}={value!r} is not a plain "
                "JSON value (for bounds use text such as '0,100', '-inf,0' or 'none')")
    return options


def _jsonable(value) -> bool:
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return bool(np.isfinite(value))
    if isinstance(value, list | tuple):
        return all(_jsonable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _jsonable(v) for k, v in value.items())
    return False


# ------------------------------------------------------------------ questions
@dataclass
class TaskPlan:
    """Question level, one task: the questions to run and the method that predicts.

    Attributes
    ----------
    task : str
        lm-eval leaf task name.
    metric, filter : str or None
        The per-sample metric and filter the scores are of.
    doc_ids : ndarray of int
        Every question of the task (the source matrix's columns), ascending.
    source : ScoreMatrix
        Source models' complete per-question scores.
    method : str
        Registry name of the question-level method.
    n : int
        Questions to run.
    seed : int
        Seed of the method's random choices for this task.
    selected : list of int
        Doc ids to run, in the order the method takes their scores.
    check : ndarray
        The method's predictions for the first source models, recorded to
        verify the rebuilt method.
    """

    task: str
    metric: str | None
    filter: str | None
    doc_ids: np.ndarray
    source: ScoreMatrix
    method: str
    n: int
    seed: int
    selected: list
    check: np.ndarray
    where: str | None = field(default=None, repr=False, compare=False)  # file: JSON path
    _fitted: object = field(default=None, repr=False)

    @property
    def bounds(self) -> tuple[float, float]:
        """Range of the task score: [0, 1] for per-sample scores in [0, 1], else none."""
        v = self.source.values
        return (0.0, 1.0) if v.min() >= 0 and v.max() <= 1 else (-np.inf, np.inf)

    @property
    def source_range(self) -> tuple[float, float]:
        means = self.source.values.mean(axis=1)
        return float(means.min()), float(means.max())

    def check_run(self, scores, where: str) -> None:
        """Refuse a run of this task (``{doc_id: score}``) that lacks a planned question,
        or has a score outside the task's :attr:`bounds` ([0, 1] where every source
        model's scores lie in it); ``where`` names the run in the message."""
        missing = [d for d in self.selected if d not in scores]
        if missing:
            raise ValueError(
                f"{where}: the run lacks {len(missing)} of the {len(self.selected)} planned "
                f"questions (doc ids {_ids(missing)}); run lm-eval with the plan's --samples "
                "file")
        low, high = self.bounds
        outside = [d for d, v in scores.items() if not low <= v <= high]
        if outside:
            d = outside[0]
            more = f" ({len(outside)} such scores)" if len(outside) > 1 else ""
            raise ValueError(f"{where}, doc {d}: score {scores[d]!r}; expected a number in "
                             f"[{low:g}, {high:g}], as every source model's per-question "
                             f"score of the task is{more}")

    def fitted(self):
        """The fitted question-level method (rebuilt once, verified).

        A failure names the plan part: ``where``, its file and JSON path."""
        if self._fitted is None:
            with _named(self.where or f"task {self.task!r}"):
                method = _fit_method(self.method, self.source.values, self.n, self.seed,
                                     calibrate=True)
                chosen = [int(self.doc_ids[j]) for j in method.selected_]
                if chosen != list(self.selected):
                    raise ValueError(
                        f"the method rebuilt from the plan chose other questions than the "
                        f"plan records (this benchsel is {__version__}); make the plan again "
                        "with this version"
                    )
                _check_rebuild(self.check, _task_check(method, self.source))
            self._fitted = method
        return self._fitted

    def to_json(self) -> dict:
        return {"metric": self.metric, "filter": self.filter,
                "doc_ids": [int(d) for d in self.doc_ids], "source": _matrix_to_json(self.source),
                "method": self.method, "n": self.n, "seed": self.seed,
                "selected": [int(d) for d in self.selected], "check": encode_array(self.check)}

    @classmethod
    def from_json(cls, task: str, obj: dict, where: str) -> TaskPlan:
        try:
            part = cls(task=task, metric=obj["metric"], filter=obj["filter"],
                       doc_ids=np.asarray(obj["doc_ids"], dtype=np.int64),
                       source=_matrix_from_json(obj["source"], f"{where}.source"),
                       method=str(obj["method"]), n=_whole(obj["n"], "n"),
                       seed=_whole(obj["seed"], "seed"),
                       selected=[int(d) for d in obj["selected"]],
                       check=decode_array(obj["check"], f"{where}.check"), where=where)
        except (KeyError, TypeError) as err:
            raise ValueError(f"{where}: missing or malformed entry {err}") from None
        if part.source.n_items != len(part.doc_ids):
            raise ValueError(f"{where}: {len(part.doc_ids)} doc ids for the source's "
                             f"{part.source.n_items} questions")
        if len(part.selected) != part.n:
            raise ValueError(f"{where}.selected: {len(part.selected)} doc ids; n is {part.n}")
        unknown = sorted(set(part.selected) - set(part.doc_ids.tolist()))
        if unknown:
            raise ValueError(f"{where}.selected: doc id {unknown[0]} is not one of the task's "
                             f"doc ids ({_ids(part.doc_ids)})")
        return part


def _whole(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number; got {value!r}")
    return value


def _fit_method(name: str, values: np.ndarray, n: int, seed, *, calibrate: bool = False):
    """A fitted question-level method; ``seed`` is an int or a Generator.

    With ``calibrate`` its error bars are calibrated on the source models
    (:class:`~benchsel.coreset.calibrated.Calibrated`; the same questions and
    means).
    """
    # Here: the question-level methods bring in scikit-learn (about a second), which
    # a benchmark-level plan never needs.
    from ..coreset.calibrated import Calibrated
    from ..coreset.registry import make_method

    method = make_method(name, n_questions=n, random_state=seed)
    return (Calibrated(method) if calibrate else method).fit(values)


def _task_check(method, source: ScoreMatrix) -> np.ndarray:
    rows = source.values[:_CHECK_ROWS]
    mean, sd = method.predict(rows[:, method.selected_])
    return np.column_stack([mean, np.zeros_like(mean) if sd is None else sd])


def _ids(doc_ids, limit: int = 10) -> str:
    """Sorted doc ids for a message, the first ``limit`` of them."""
    doc_ids = sorted(doc_ids)
    more = f", ... ({len(doc_ids) - limit} more)" if len(doc_ids) > limit else ""
    return ", ".join(str(d) for d in doc_ids[:limit]) + more
