"""Completions already computed, by method and matrix content (:class:`CompletionCache`).

:mod:`.memo` keeps what ``auto`` chose and measured across runs (``AutoMemo``);
this cache keeps completions within one fold.
"""

from __future__ import annotations

import hashlib

import numpy as np

from .completers import METHODS, complete_gp
from .fits import held_out_completion
from .latent import Completion, blend

__all__ = ["CompletionCache"]


#: Blends by their parts, so that comparing methods completes each part once.
_BLENDS = {"svd+ridge": ("svd", "ridge"), "gaussian+svd": ("gaussian", "svd")}
#: Methods that can predict some rows only (``CompletionCache.get``'s ``rows``).
_BY_ROWS = ("ridge",)


class CompletionCache:
    """Completions already computed, by method and matrix content.

    Choosing a method, calibrating it and completing with it complete the
    same matrices again and again: :func:`choose_completer`'s first fold
    hides exactly the cells :func:`completion_residuals` hides (same
    ``hide`` and ``seed``), ``auto`` completes with a method already
    compared, a blend repeats its parts, and ``gp`` starts from
    ``gaussian``. Every completer is a deterministic function of the
    matrix, so a completion is keyed by the
    method and a digest of the matrix's bytes and computed once. Keep a
    cache no longer than the matrices it serves (one fold of a protocol):
    each entry holds two arrays the size of the matrix.
    """

    def __init__(self):
        self._done: dict[tuple, Completion] = {}
        self._held: dict[tuple, _HeldRows] = {}

    def get(self, values: np.ndarray, method: str, rows=None) -> Completion:
        """``complete(values, method)`` for a method of
        :data:`~benchsel.prediction.completers.METHODS`, computed on the first request only.

        ``rows`` (a boolean mask or indices of rows, or None for all): the
        only rows the caller reads. ``ridge`` predicts the missing cells of those rows
        only, from fits on every row (:func:`complete_ridge`); every other
        method completes the whole matrix, kept for any caller.
        """
        if method not in METHODS:
            raise ValueError(f"{method!r} is not a method the cache completes with (one of "
                             f"{', '.join(METHODS)}); 'auto' chooses among them: "
                             "benchsel.prediction.complete(values, 'auto', cache=cache)")
        values = np.ascontiguousarray(values, dtype=float)
        parts = _BLENDS.get(method)
        if rows is not None and not set(parts or (method,)) & set(_BY_ROWS):
            rows = None  # the method completes every row: one entry serves all callers
        digest = hashlib.blake2b(values.tobytes(), digest_size=20)
        if rows is not None:
            rows = np.asarray(rows)
            if rows.dtype != bool:  # indices
                mask = np.zeros(values.shape[0], dtype=bool)
                mask[rows] = True
                rows = mask
            digest.update(np.packbits(rows).tobytes())
        key = (method, rows is not None, values.shape, digest.digest())
        if key not in self._done:
            if parts:
                done = blend(self.get(values, parts[0], rows), self.get(values, parts[1], rows))
            elif rows is not None:
                done = METHODS[method](values, rows=rows)
            elif method == "gp":  # auto compares it with gaussian: fit that once
                done = complete_gp(values, self.get(values, "gaussian"))
            else:
                done = METHODS[method](values)
            self._done[key] = done
        return self._done[key]

    def remember(self, values: np.ndarray, method: str, make) -> Completion:
        """``make()``, a completion of all of ``values`` by ``method``, computed on the
        first request only: for a method this module does not know (``auto``, which
        chooses among the others with this cache, :mod:`.registry`)."""
        values = np.ascontiguousarray(values, dtype=float)
        key = (method, False, values.shape,
               hashlib.blake2b(values.tobytes(), digest_size=20).digest())
        if key not in self._done:
            self._done[key] = make()
        return self._done[key]

    def held_out(self, values: np.ndarray, held: np.ndarray, hidden: np.ndarray, method: str,
                 fits) -> Completion:
        """:func:`~benchsel.prediction.fits.held_out_completion`, computed on the first
        request only (the choice's first random fold is the calibration's)."""
        values = np.ascontiguousarray(values, dtype=float)
        digest = hashlib.blake2b(values.tobytes(), digest_size=20)
        digest.update(np.packbits(held).tobytes())
        digest.update(np.packbits(hidden).tobytes())
        key = ("held out", method, values.shape, digest.digest())
        if key in self._held:
            return self._held[key].expand()
        done = held_out_completion(values, held, hidden, method, fits, self)
        self._held[key] = _HeldRows.keep(done, hidden)
        return done


class _HeldRows:
    """A held-out completion's rows that hide cells, the only ones its callers read.

    A held-out completion predicts the ``hidden`` cells of a few held-out
    rows; kept whole, each cost two arrays the size of the board, and the
    choice makes one per method and split (2000 x 3000 scores: 2.3 GB held
    at once). :meth:`expand` gives the full-shape completion back, NaN
    outside those rows.
    """

    def __init__(self, shape, rows, mean, std):
        self.shape, self.rows, self.mean, self.std = shape, rows, mean, std

    @classmethod
    def keep(cls, done: Completion, hidden: np.ndarray) -> _HeldRows:
        rows = np.flatnonzero(np.asarray(hidden).any(axis=1))
        return cls(done.mean.shape, rows, done.mean[rows], done.std[rows])

    def expand(self) -> Completion:
        mean, std = np.full(self.shape, np.nan), np.full(self.shape, np.nan)
        mean[self.rows], std[self.rows] = self.mean, self.std
        return Completion(mean, std)
