"""The fits ``auto`` makes on each bundled leaderboard, shipped with the package.

``auto``'s choice and calibration fit every Gaussian-based and low-rank
method on the models each of their folds keeps
(:mod:`benchsel.prediction.fits`). Those fits depend on the board alone, and
on a board as sparse as MERGED they take most of a first prediction's time
(seconds of EM), so for the bundled leaderboards they are made once, by
``python scripts/build_fits.py``, and shipped under ``datasets/fits``. A
model fitted on a bundled board (recognized by the fingerprint of its
matrix, not by its name) starts from them; a fit is found by the bytes of
the rows it was fitted on, so a shipped fit is only ever used for exactly
those rows, and a fresh computation gives the same predictions, to what
EM's stopping rule can promise (``tests/test_fits.py`` recomputes some of
each file). A file written under other :data:`~benchsel.prediction.memo.RULES`
is not read, and every file is checked as a cached one is
(:meth:`~benchsel.prediction.fits.FitStore.loads`).
"""

from __future__ import annotations

import functools
import re
import warnings
from importlib import resources

import numpy as np

from .._arrays import fingerprint
from .._json import loads
from ..cache_files import READ_FAILURES, CacheWarning
from .choice import choose_completer
from .fits import INDUCTIVE, FitStore
from .memo import RULES
from .registry import complete_new_rows
from .residuals import completion_residuals

__all__ = ["board_fits", "shipped_fits"]

#: The folder of the shipped fits, and its index (fingerprint -> file).
FOLDER = ("benchsel.datasets", "fits")
INDEX = "index.json"


def board_fits(model) -> FitStore:
    """Every fit ``auto`` may make on a fitted model's training matrix.

    The choice's folds for a new model inside the sources' range and
    beyond it; the calibration's strength splits and the
    fit on the whole matrix, for every method of
    :data:`~benchsel.prediction.fits.INDUCTIVE`; the Gaussian's calibration
    splits and frontier split, where they are ``auto``'s fits
    (:class:`~benchsel.models.calibrator.GaussianCalibrator`'s
    ``shared``). They do not depend on the benchmarks given (one is given
    here), so this is every fit any prediction on the board needs. Slow:
    what the shipped files save.
    """
    values = model.scores_.values
    store = model.auto_memo.fits
    given = np.zeros(values.shape[1], dtype=bool)
    given[0] = True
    for split in ("random", "near"):
        choose_completer(values, given=given, split=split, fits=store)
    row = np.where(given, np.nanmean(values, axis=0), np.nan)[None, :]
    for method in INDUCTIVE:
        completion_residuals(values, method, given=given, fits=store)
        complete_new_rows(values, row, method, fits=store)
    if model.calibration != "none":
        model._calibrator_for_predict().frontier_shift(given)
    return store


def _folder():
    return resources.files(FOLDER[0]).joinpath(FOLDER[1])


def shipped_fits(scores) -> FitStore | None:
    """The shipped fits of the bundled board whose matrix ``scores`` is, else None.

    None too when the files were made under other rules, or cannot be
    read or fail the checks every stored fit passes
    (:meth:`~benchsel.prediction.fits.FitStore.loads`): a damaged install
    is only slower, after one :class:`~benchsel.cache_files.CacheWarning`
    naming the file.
    """
    where = f"{FOLDER[0]}/{FOLDER[1]}/{INDEX}"
    try:
        index = _index()
        name = index["boards"].get(fingerprint(scores.models, scores.items, scores.values))
        if name is None or index.get("rules") != RULES:
            return None
        if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9_]+\.npz", name):
            raise ValueError(f"names {name!r}, not a file of fits in its folder")
        where = f"{FOLDER[0]}/{FOLDER[1]}/{name}"
        with resources.as_file(_folder().joinpath(name)) as path:
            where = str(path)
            return FitStore.load(path, shipped=True, n_items=scores.n_items)
    except (OSError, *READ_FAILURES) as err:
        warnings.warn(f"{where}: the shipped fits are damaged and not used ({err}); "
                      "reinstall benchsel to predict faster", CacheWarning, stacklevel=2)
        return None


@functools.lru_cache(maxsize=1)
def _index() -> dict:
    """The shipped index, read once per process (a protocol fits a model per fold)."""
    index = loads(_folder().joinpath(INDEX).read_bytes(), INDEX, strict=True)
    if not isinstance(index, dict) or not isinstance(index.get("boards"), dict):
        raise ValueError("expected an object with 'boards'")
    return index
