"""Deterministic fits computed once within a scope and reused.

Several question-level methods repeat the same expensive fit on the same
source models: anchor-points-weighted, anchor-points-predictor and the
papers' refits of the first cluster the questions identically (same data,
same generator state), and p-irt, gp-irt and gp-irt++ fit the same IRT
model. Inside ``with reuse_fits():`` (one trial of
:func:`benchsel.evaluation.questions.evaluate_coresets`) such a fit is computed
once; outside any scope nothing is kept, so a library user's memory never
grows behind their back.

A fit is keyed by a digest of its input arrays, its parameters and, when it
draws random numbers, the state of its generator before the call; a reuse
leaves the generator in the state the computation left it in, so everything
drawn afterwards is what it would have been.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

import numpy as np

__all__ = ["reuse_fits", "reused"]

T = TypeVar("T")
_SCOPE: ContextVar[dict | None] = ContextVar("benchsel_reused_fits", default=None)


@contextmanager
def reuse_fits():
    """A scope within which :func:`reused` computes each distinct fit once."""
    token = _SCOPE.set({})
    try:
        yield
    finally:
        _SCOPE.reset(token)


def _digest(a) -> tuple:
    a = np.ascontiguousarray(a)
    return a.shape, a.dtype.str, hashlib.blake2b(a.tobytes(), digest_size=20).digest()


def reused(kind: str, compute: Callable[[], T], *arrays, rng=None, **params) -> T:
    """``compute()``, or a copy of its result from earlier in the scope.

    Parameters
    ----------
    kind : str
        What is computed (part of the key).
    compute : callable
        Computes the fit from ``arrays``, ``params`` and ``rng`` alone.
    *arrays : array-like
        Its input arrays (keyed by content).
    rng : numpy.random.Generator, optional
        The generator ``compute`` draws from. Any other source of randomness
        is not reusable: ``compute()`` is then always called.
    **params
        Its other arguments (hashable).
    """
    scope = _SCOPE.get()
    if scope is None or (rng is not None and not isinstance(rng, np.random.Generator)):
        return compute()
    state = None if rng is None else repr(rng.bit_generator.state)
    key = (kind, tuple(_digest(a) for a in arrays), tuple(sorted(params.items())), state)
    if key in scope:
        result, after = scope[key]
        if rng is not None:
            rng.bit_generator.state = after
        return copy.deepcopy(result)
    result = compute()
    # A copy: the caller may modify what it gets.
    scope[key] = (copy.deepcopy(result), None if rng is None else rng.bit_generator.state)
    return result
