"""The completion methods by name, ``auto`` among them, and the two ways to call them.

:data:`COMPLETERS` is :data:`~benchsel.prediction.completers.METHODS` (the
methods that complete a matrix on their own) plus ``auto``, which chooses
among them (:func:`~benchsel.prediction.choice.complete_auto`). It sits
above the choice, which sits above the methods and the
:class:`~benchsel.prediction.cache.CompletionCache`, so that no module
below needs the choice.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._patterns import unique_rows
from . import gp
from .cache import CompletionCache
from .choice import complete_auto
from .completers import METHODS
from .fits import INDUCTIVE, FitStore, fitted_completion
from .latent import Completion, blend, column_prior

__all__ = ["COMPLETERS", "complete", "complete_new_rows"]

COMPLETERS: dict[str, Callable[[np.ndarray], Completion]] = {
    **METHODS, "auto": lambda values: complete_auto(values)}


def complete(
    values: np.ndarray, method: str = "gaussian", *, cache: CompletionCache | None = None,
    rows=None,
) -> Completion:
    """Complete ``values`` with the named method (see :data:`COMPLETERS`).

    With ``cache`` a completion of the same matrix by the same method is
    computed once (see :class:`CompletionCache`). ``rows``: the only rows
    the caller reads; a method may leave the others' missing cells NaN
    (``ridge`` does, :meth:`CompletionCache.get`).
    """
    if method not in COMPLETERS:
        raise ValueError(
            f"completion method must be one of {', '.join(COMPLETERS)}; got {method!r}"
        )
    values = np.asarray(values, dtype=float)
    if cache is None and rows is None:
        return COMPLETERS[method](values)
    if cache is None:
        cache = CompletionCache()
    if method == "auto":
        return cache.remember(values, "auto", lambda: complete_auto(values, cache=cache))
    return cache.get(values, method, rows)


def complete_new_rows(
    train: np.ndarray, new: np.ndarray, method: str, *, cache: CompletionCache | None = None,
    fits: FitStore | None = None,
) -> Completion:
    """Predict the missing cells of ``new`` rows from the ``train`` rows.

    Inductive: what one new model gets does not depend on which other new
    models came with it. Stacked together, new models took part in each
    other's fit: under the extrapolation protocol (30% of the rows new, all
    strong) they lifted each other's predictions on MTEB and dragged them on
    HELM Lite (docs/experiments/reproduction.md). The Gaussian-based and
    low-rank methods (:data:`~benchsel.prediction.fits.INDUCTIVE`) are fitted
    on ``train`` once (kept in ``fits``) and each new row is conditioned on
    that Gaussian or folded into that low-rank model
    (:func:`~benchsel.prediction.fits.fitted_completion`), as
    :class:`~benchsel.models.GaussianModel` does and as ``auto``'s choice
    scored them (``ridge``, half of ``svd+ridge``, regresses on ``train``
    stacked on the row); ``gp`` then corrects a row with at most
    :data:`~benchsel.prediction.gp.MAX_INPUTS` scores by its residual
    process, fitted on ``train``'s rows with more scores, one stack per
    pattern of observed items (rows of one pattern cannot train each
    other's process). The other methods complete ``train`` stacked on each
    new row alone.

    A row with no score at all gets, whatever the method, the mean of the
    ``train`` models that have each score and their spread
    (:func:`complete_mean`): nothing places that model among the others
    (where intervals are calibrated, :func:`~benchsel.calibration.unknown_calibration`
    widens that spread to what a model beyond their range needs).
    The Gaussian's answer there would be its EM mean, the mean of a
    population in which every model had every score; on a sparse board the
    models that have a score are not that population. In the cv protocol
    on MERGED at k = 1, where half of the scored variance is on validation
    models with none of the selected scores, the EM mean gave R^2 -0.42 on
    those models and the observed means 0 (docs/experiments/reproduction.md).
    """
    train = np.asarray(train, dtype=float)
    new = np.asarray(new, dtype=float)
    if new.ndim != 2 or new.shape[1] != train.shape[1]:
        raise ValueError(f"new rows must have {train.shape[1]} columns; got shape {new.shape}")
    mean, std = np.full(new.shape, np.nan), np.full(new.shape, np.nan)
    blank = np.isnan(new).all(axis=1)
    if blank.any():
        mean[blank], std[blank] = column_prior(train)
    rows = np.flatnonzero(~blank)
    if method in INDUCTIVE and rows.size:
        fits = FitStore() if fits is None else fits
        part = fitted_completion(train, new[rows], method, fits)
        mean[rows], std[rows] = part.mean, part.std
        if method == "svd+ridge":
            part = blend(part, complete_new_rows(train, new[rows], "ridge"))
            mean[rows], std[rows] = part.mean, part.std
        elif method == "gp":
            # Rows of one pattern cannot train each other's process: one stack
            # per pattern, all on the same Gaussian fitted on ``train``'s source rows.
            todo = rows[gp.process_rows(new[rows])]
            source = gp.base_rows(train)
            if todo.size and len(source) >= gp.MIN_ROWS:  # else the Gaussian stands
                base = fits.get(source, "auto")
                patterns, inverse = unique_rows(~np.isnan(new[todo]))
                for g in range(len(patterns)):
                    members = todo[inverse == g]
                    stack = np.vstack([train, new[members]])
                    part = base.residual_process(stack, np.arange(len(train), len(stack)))
                    mean[members], std[members] = part.mean, part.std
        return Completion(mean, std)
    # One completion per row, not kept: a file of many new models would
    # fill the cache with copies of the training matrix.
    for i in rows:
        res = complete(np.vstack([train, new[i:i + 1]]), method)
        mean[i], std[i] = res.mean[-1], res.std[-1]
    return Completion(mean, std)
