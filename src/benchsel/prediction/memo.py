"""``auto``'s decisions on one training matrix, made once and kept.

For a pattern of given items, ``auto`` cross-validates every completion
method on the training models (:func:`~benchsel.prediction.choose_completer`)
and calibrates the winner's intervals on held-out models
(:func:`~benchsel.prediction.residuals.completion_residuals`), and on a large
board measures the winner's frontier shift
(:func:`~benchsel.prediction.frontier.completion_frontier_shift`): tens of
completions of the whole matrix, seconds to a minute, while completing the
new model's row with the winner takes one. All depend only on the training
matrix, the pattern and the method, so an :class:`AutoMemo` keeps them: a fitted
:class:`~benchsel.models.GaussianModel` holds one, a plan stores the
decisions for its selection (:meth:`AutoMemo.to_json`), so that ``predict
--plan`` only completes, and ``benchsel predict DATA`` keeps them in a cache
folder between runs (:func:`load_cached`, :func:`save_cached`).
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from .._arrays import decode_array, encode_array, fingerprint
from .._json import loads
from .._version import __version__
from ..cache_files import READ_FAILURES, CacheFolder, CacheWarning
from ..names import CHOICE_SPLITS, FORMER_CHOICE_SPLITS
from .choice import MethodChoice, rank_methods
from .fits import FitStore
from .registry import COMPLETERS

__all__ = ["CACHE_ENV", "GAUSSIAN_CONDITIONAL", "AutoMemo", "cache_dir", "load_cached",
           "save_cached"]

#: The key of the Gaussian conditional's own held-out residuals (those of
#: :class:`~benchsel.models.GaussianCalibrator`, which refits the covariance
#: on five splits of the sources): not a completion method's.
GAUSSIAN_CONDITIONAL = "gaussian-conditional"

#: The rules by which auto chooses and calibrates. A kept decision is valid
#: only under the rules that made it, and the package version does not move
#: between releases: raise this whenever :mod:`.choice`, :mod:`.holdout`,
#: :mod:`.residuals` or a fit of :mod:`.fits` would decide differently, so that
#: cache files made by the old rules are not read (and rebuild the shipped
#: fits: ``python scripts/build_fits.py``).
RULES = 10


#: What a held-out calibration keeps: residuals, the method's own std, regime excess.
Residuals = tuple  # (residual, std, excess), three 1-D arrays of one length


def _key(pattern) -> tuple[int, ...]:
    return tuple(int(j) for j in np.flatnonzero(np.asarray(pattern, dtype=bool)))


class AutoMemo:
    """Method choices and calibration residuals by pattern of given items."""

    def __init__(self):
        self._choices: dict[tuple, object] = {}
        self._residuals: dict[tuple, Residuals] = {}
        #: Each method's frontier shift by pattern (one value per item; the Gaussian
        #: conditional's, under GAUSSIAN_CONDITIONAL, in its standard deviations).
        self._shifts: dict[tuple, np.ndarray] = {}
        #: The fits the choice and calibration make on the sources (one set per
        #: board, shared by every pattern; kept in the cache folder, not in plans).
        self.fits = FitStore()

    def __len__(self) -> int:
        """Decisions kept (the fits are not decisions)."""
        return len(self._choices) + len(self._residuals) + len(self._shifts)

    def choice(self, pattern, split: str, compute: Callable):
        """The :class:`~benchsel.prediction.MethodChoice` of ``split`` for ``pattern``."""
        key = (_key(pattern), split)
        if key not in self._choices:
            self._choices[key] = compute()
        return self._choices[key]

    def residuals(self, method: str, pattern, compute: Callable) -> Residuals:
        """``method``'s held-out (residual, std, excess) for ``pattern``."""
        key = (_key(pattern), method)
        if key not in self._residuals:
            self._residuals[key] = tuple(np.asarray(a, dtype=float) for a in compute())
        return self._residuals[key]

    def frontier_shift(self, method: str, pattern, compute: Callable) -> np.ndarray:
        """``method``'s frontier shift for ``pattern`` (one value per item)."""
        key = (_key(pattern), method)
        if key not in self._shifts:
            self._shifts[key] = np.asarray(compute(), dtype=float)
        return self._shifts[key]

    # ------------------------------------------------------------------ file
    def to_json(self, items: Sequence[str]) -> dict:
        """JSON of every decision, patterns by item name (``items``: the model's)."""
        def names(key):
            return [items[j] for j in key]

        return {
            "choices": [{"given": names(k), "split": split, **choice.to_dict()}
                        for (k, split), choice in self._choices.items()],
            "residuals": [{"given": names(k), "method": method,
                           **{part: encode_array(a) for part, a in
                              zip(("residual", "std", "excess"), arrays)}}
                          for (k, method), arrays in self._residuals.items()],
            "shifts": [{"given": names(k), "method": method, "shift": encode_array(shift)}
                       for (k, method), shift in self._shifts.items()],
        }

    @classmethod
    def from_json(cls, obj, items: Sequence[str], where: str) -> AutoMemo:
        """Inverse of :meth:`to_json`, checked; ``where`` names the entry in messages."""
        if not isinstance(obj, dict) or set(obj) - {"choices", "residuals", "shifts"}:
            raise ValueError(f"{where}: expected an object with 'choices', 'residuals' and "
                             "'shifts'")
        index = {name: j for j, name in enumerate(items)}

        def pattern(entry, at: str) -> np.ndarray:
            given = entry.get("given")
            if not isinstance(given, list) or not given or \
                    any(not isinstance(g, str) or g not in index for g in given):
                raise ValueError(f"{at}.given: expected a list of the model's benchmarks")
            out = np.zeros(len(items), dtype=bool)
            out[[index[g] for g in given]] = True
            return out

        def method(name, at: str, conditional: bool = False) -> str:
            if conditional and name == GAUSSIAN_CONDITIONAL:
                return name
            if not isinstance(name, str) or name not in COMPLETERS or name == "auto":
                raise ValueError(f"{at}: {name!r} is not a completion method")
            return name

        memo = cls()
        for i, entry in enumerate(_entries(obj, "choices", where)):
            at = f"{where}.choices[{i}]"
            split = entry.get("split")
            if split in FORMER_CHOICE_SPLITS:
                continue
            if split not in CHOICE_SPLITS:
                raise ValueError(f"{at}.split: {split!r}; expected one of "
                                 f"{', '.join(map(repr, CHOICE_SPLITS))}")
            fallbacks = entry.get("fallbacks")
            cells = entry.get("cells")
            if not isinstance(fallbacks, list) or isinstance(cells, bool) or \
                    not isinstance(cells, int) or cells < 0:
                raise ValueError(f"{at}: expected 'fallbacks' (a list) and 'cells' (a count)")
            figures = {}
            for part in ("medape", "coverage"):
                value = entry.get(part)
                if not isinstance(value, dict) or any(
                        v is not None and (isinstance(v, bool) or
                                           not isinstance(v, (int, float)))
                        for v in value.values()):
                    raise ValueError(f"{at}.{part}: expected method -> number")
                figures[part] = {method(m, f"{at}.{part}"): np.nan if v is None else float(v)
                                 for m, v in value.items()}
            choice = MethodChoice(
                method(entry.get("method"), f"{at}.method"),
                tuple(method(m, f"{at}.fallbacks") for m in fallbacks),
                figures["medape"], figures["coverage"], cells, split)
            if figures["medape"].keys() != figures["coverage"].keys():
                raise ValueError(f"{at}: expected 'medape' and 'coverage' of the same methods")
            # The choice is the one its own figures make (choice.rank_methods): a method
            # named by hand, not by the figures, is not a decision auto made.
            ranked = rank_methods(figures["medape"], figures["coverage"])
            if (choice.method, choice.fallbacks) != ranked:
                raise ValueError(f"{at}.method: {choice.method!r} is not what its figures "
                                 f"choose ({ranked[0]!r})")
            memo._choices[(_key(pattern(entry, at)), split)] = choice
        for i, entry in enumerate(_entries(obj, "residuals", where)):
            at = f"{where}.residuals[{i}]"
            arrays = tuple(decode_array(entry.get(part), f"{at}.{part}")
                           for part in ("residual", "std", "excess"))
            if any(a.ndim != 1 or a.shape != arrays[0].shape or not np.isfinite(a).all()
                   for a in arrays):
                raise ValueError(f"{at}: residual, std and excess must be finite 1-D arrays "
                                 "of one length")
            key = (_key(pattern(entry, at)),
                   method(entry.get("method"), f"{at}.method", conditional=True))
            memo._residuals[key] = arrays
        for i, entry in enumerate(_entries(obj, "shifts", where)):
            at = f"{where}.shifts[{i}]"
            shift = decode_array(entry.get("shift"), f"{at}.shift")
            if shift.shape != (len(items),) or not np.isfinite(shift).all():
                raise ValueError(f"{at}.shift: expected {len(items)} finite values, one per "
                                 f"benchmark; got shape {list(shift.shape)}")
            key = (_key(pattern(entry, at)),
                   method(entry.get("method"), f"{at}.method", conditional=True))
            memo._shifts[key] = shift
        return memo


def _entries(obj: dict, name: str, where: str) -> list:
    entries = obj.get(name, [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ValueError(f"{where}.{name}: expected a list of objects")
    return entries


# ------------------------------------------------------------- on disk
#: Where ``predict DATA`` keeps auto's decisions between runs: this variable's
#: folder, else ``$XDG_CACHE_HOME/benchsel`` or ``~/.cache/benchsel``; ``off``
#: (or empty) keeps nothing.
CACHE_ENV = "BENCHSEL_CACHE_DIR"


def cache_dir() -> Path | None:
    """The folder of kept decisions, or None when caching is off."""
    value = os.environ.get(CACHE_ENV)
    if value is not None:
        return None if value.strip().lower() in ("", "off", "0", "no") else Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "benchsel"


def _cache_key(model, options: bool) -> str | None:
    """Digest of the model's training matrix, the version and the rules (and, with
    ``options``, the model's options); None when caching is off."""
    if cache_dir() is None:
        return None
    scores = model.scores_
    h = hashlib.sha256()
    h.update(fingerprint(scores.models, scores.items, scores.values).encode())
    h.update(json.dumps({"benchsel": __version__, "rules": RULES,
                         "options": model.get_params() if options else None},
                        sort_keys=True, default=str).encode())
    return h.hexdigest()[:32]


def _entry(model, folder: str, options: bool, suffix: str):
    """``(CacheFolder, name)`` of ``model``'s entry in ``folder`` (``auto`` or ``fits``);
    None when caching is off or the folder cannot be trusted
    (:meth:`~benchsel.cache_files.CacheFolder.open`)."""
    key = _cache_key(model, options=options)
    if key is None:
        return None
    where = CacheFolder.open(cache_dir(), folder)
    return None if where is None else (where, f"{key}{suffix}")


def _decisions_entry(model):
    """Where the decisions are kept: by training matrix and options."""
    return _entry(model, "auto", True, ".json")


def _fits_entry(model):
    """Where the fits (:class:`~benchsel.prediction.fits.FitStore`) are kept: by training
    matrix alone, whatever the options."""
    return _entry(model, "fits", False, ".npz")


_MAX_CACHE_BYTES = 256 << 20  # a board's decisions take kilobytes; more is not ours


def _read(entry) -> tuple[bytes | None, str]:
    """The contents of a cache entry (None if there are none to use), and its path."""
    if entry is None:
        return None, ""
    folder, name = entry
    return folder.read(name, _MAX_CACHE_BYTES), str(folder.path / name)


def _ignored(path: str, err: Exception) -> None:
    why = str(err) if isinstance(err, ValueError) else f"{type(err).__name__}: {err}"
    warnings.warn(f"{path}: ignored, not what benchsel keeps for this board ({why}); "
                  "made again", CacheWarning, stacklevel=3)


def load_cached(model) -> None:
    """Give a fitted model the decisions kept for its training matrix and options,
    and the fits kept for its training matrix.

    An entry is read only as :meth:`~benchsel.cache_files.CacheFolder.read`
    allows (a sealed regular file of the user's), then checked as a plan's
    decisions and fits are (schema, shapes against this board, finite
    values, known methods, a choice its figures make): a missing entry is as
    good as none, a damaged one too, after one
    :class:`~benchsel.cache_files.CacheWarning` naming it. The decisions are
    then made again (and the entry rewritten).
    """
    raw, path = _read(_decisions_entry(model))
    if raw is not None:
        try:
            obj = loads(raw, path, strict=True)
            fits = model.auto_memo.fits  # the shipped ones, for a bundled board
            memo = AutoMemo.from_json(obj, model.items_, path)
            memo.fits = fits
            model.auto_memo = memo
        except READ_FAILURES as err:
            _ignored(path, err)
    raw, path = _read(_fits_entry(model))
    if raw is not None:
        try:
            model.auto_memo.fits.update(FitStore.loads(raw, path, model.scores_.n_items))
        except READ_FAILURES as err:
            _ignored(path, err)


def save_cached(model) -> None:
    """Keep the model's decisions, and the fits they were made with, for the next run
    (nothing when caching is off or the folder cannot be trusted or written: a cache
    is never worth an error). The fits are kept by board alone: another set of given
    benchmarks, or other options, reuse them. Each entry is sealed and written by
    :meth:`~benchsel.cache_files.CacheFolder.write`: never through a link."""
    memo = model.auto_memo
    if len(memo):
        entry = _decisions_entry(model)
        try:
            text = json.dumps(memo.to_json(model.items_), indent=2, allow_nan=False) + "\n"
        except ValueError:  # a non-finite figure: strict JSON cannot keep it, nor can we
            entry = None
        if entry is not None:
            entry[0].write(entry[1], text.encode())
    if memo.fits.unsaved:
        entry = _fits_entry(model)
        if entry is not None and entry[0].write(entry[1], memo.fits.dumps()):
            memo.fits.mark_saved()
