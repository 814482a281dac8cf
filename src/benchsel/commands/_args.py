"""What the parsed arguments name, as the library's objects: item names, costs,
the data matrix, a fitted model; the files a command must not overwrite; and
the usage errors found on the way."""

from __future__ import annotations

import contextlib
from pathlib import Path

from ..datasets import bundled_path, resolve_data
from ..inputs import model_order_keys, read_costs, read_model_order
from ..lmeval import parse_per_task
from ..models import GaussianModel
from ..observations import as_items
from ..outputs import check_output_folder, check_output_path
from ..sources import as_scores, is_lm_eval_data, task_sources
from ._workers import _fan_out


def _names(text: str | None) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()] if text else []


def _item_names(text: str | None, items) -> list[str]:
    """Comma-separated item names, where a name may itself hold commas.

    lm-eval columns are ``<task>/<metric>,<filter>``: pieces are joined back
    while they form a known name, and a bare task name stands for its one
    column. Unknown names pass through (the model rejects them by name).
    """
    known = set(items)
    pieces, out, i = _names(text), [], 0
    while i < len(pieces):
        for j in range(len(pieces), i, -1):
            name = ",".join(pieces[i:j])
            if name in known:
                break
        else:
            name, j = as_items([pieces[i]], items)[0], i + 1
        out.append(name)
        i = j
    return out


def _costs(args, items) -> dict[str, float] | None:
    """``--costs``, a bare lm-eval task name standing for its one column."""
    if not args.costs:
        return None
    costs = read_costs(args.costs)
    return dict(zip(as_items(list(costs), items), costs.values()))


@contextlib.contextmanager
def _as_flags(**flags):
    """Library errors that begin with a parameter's name, told with the CLI's flag."""
    try:
        yield
    except ValueError as err:
        text = str(err)
        for param, flag in flags.items():
            if text.startswith((param + " ", param + ":")):
                raise ValueError(flag + text[len(param):]) from None
        raise


class UsageError(ValueError):
    """A usage error found after parsing (exit code 2)."""


def _inputs(args) -> list:
    """Files the command reads, which ``--output`` must never overwrite."""
    paths = [getattr(args, name, None) for name in ("data", "costs", "plan", "order",
                                                    "questions")]
    paths += list(getattr(args, "observed", None) or [])
    data = getattr(args, "data", None)
    if data is not None and bundled_path(data) is not None:
        paths.append(bundled_path(data))
    return paths


#: ``-o -`` means standard output.
STDOUT = "-"
#: Commands whose ``-o`` is a file of their own (a plan, an HTML page), never printed.
WRITES_A_FILE = ("plan", "report")


def check_outputs(args) -> None:
    """Refuse every output target of the command before any work is done.

    ``-o``, ``--emit-lm-eval-samples`` and ``--plots`` are checked with the
    writers' own rules (:func:`benchsel.outputs.check_output_path` and
    :func:`~benchsel.outputs.check_output_folder`), so a read-only file, a
    symbolic link loop, an input or a folder that is a file is refused at
    once instead of after minutes of fitting.
    """
    inputs = _inputs(args)
    files = []
    if getattr(args, "output", None) is not None:
        files.append(("-o/--output", args.output))
    samples = getattr(args, "emit_lm_eval_samples", None)
    if samples is not None:  # plan: FILE; coreset: TASK FILE
        files.append(("--emit-lm-eval-samples", samples if isinstance(samples, str)
                      else samples[-1]))
    for flag, path in list(files):
        if path == "":
            raise UsageError(f"{flag}: an empty file name; give the name of a file to write"
                             + (", or leave -o out to print" if flag.startswith("-o") else ""))
        if path == STDOUT and flag.startswith("-o"):
            # `-o -` prints, as the Unix convention has it -- where the command prints.
            if getattr(args, "command", None) in WRITES_A_FILE:
                raise UsageError(f"-o -: {args.command} writes a file; give its name")
            files.remove((flag, path))
            continue
        check_output_path(path, protect=inputs)
    plots = getattr(args, "plots", None)
    if plots is not None:
        if plots == "":
            raise UsageError("--plots: an empty folder name; give the folder to write the "
                             "figures into")
        for flag, path in files:
            if Path(path).resolve() == Path(plots).resolve():
                raise UsageError(f"--plots {plots} and {flag} name the same path; the "
                                 "figures go into a folder of their own")
        check_output_folder(plots, protect=inputs)


def _read_options(args) -> dict:
    opts = {}
    for name in ("input_format", "sep", "model_column", "item_column", "score_column"):
        value = getattr(args, name, None)
        if value is not None:
            opts["format" if name == "input_format" else name] = value
    return opts


def _load(args):
    """The DATA argument as a score matrix: a file, a bundled name, or lm-eval output."""
    metric = parse_per_task(getattr(args, "lm_eval_metric", None), "--lm-eval-metric")
    filt = parse_per_task(getattr(args, "lm_eval_filter", None), "--lm-eval-filter")
    task = getattr(args, "lm_eval_task", None)
    if is_lm_eval_data(args.data):
        if task:
            if "," in task:
                raise ValueError(f"--lm-eval-task {task!r}: this command reads one task; "
                                 "'benchsel plan --kind questions' takes several")
            return task_sources(args.data, task, metric=metric, filter=filt,
                                fan_out=_fan_out(args)).scores[task]
        return as_scores(args.data, metric=metric, filter=filt)
    if task and not str(args.data).lower().endswith(".npz"):
        raise ValueError(f"--lm-eval-task needs DATA to be a folder of lm-eval runs; "
                         f"{args.data} is not one")
    return resolve_data(args.data, **_read_options(args))


def _fit(args, scores) -> GaussianModel:
    return GaussianModel(covariance=args.covariance,
                         transform=getattr(args, "transform", "none"),
                         calibration=getattr(args, "calibration", "conformal"),
                         bounds=getattr(args, "bounds", "infer")).fit(scores)


def _refuse_fit_options(args, message: str) -> None:
    """Usage error for a model option given where no model is fitted."""
    for flag, value, default in (("--covariance", args.covariance, "auto"),
                                 ("--transform", args.transform, "none"),
                                 ("--calibration", args.calibration, "conformal")):
        if value != default:
            raise UsageError(message.format(flag=flag))


def _dated_cut(args, scores, dated: bool, needs: str):
    """``--order`` keys aligned with the models and the ``--before`` cut, for a dated split.

    ``dated``: whether the command runs one; ``needs``: its flag, for the
    errors (``--split dated``, ``--protocol dated``). ``(None, None)`` otherwise.
    """
    if not dated:
        if args.order or args.before:
            raise UsageError(f"--order and --before are for {needs}")
        return None, None
    if not (args.order and args.before):
        raise UsageError(f"{needs} needs --order FILE (when each model came out) and "
                         "--before DATE")

    return model_order_keys(scores.models, read_model_order(args.order), args.before,
                            where=f"{args.order} ({args.data})", cut_name="--before")
