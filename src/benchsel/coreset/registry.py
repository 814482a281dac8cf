"""The registry of question-level methods: every method by name, and the refits.

Each family module (:mod:`~benchsel.coreset.methods` for the sampling and
Gaussian methods, :mod:`~benchsel.coreset.random_search`,
:mod:`~benchsel.coreset.lasso`, :mod:`~benchsel.coreset.double_optimize`,
:mod:`~benchsel.coreset.pca_impute`, :mod:`~benchsel.coreset.anchor`,
:mod:`~benchsel.coreset.irt`, :mod:`~benchsel.coreset.mrmr`) lists its
classes in ``METHODS``; :data:`METHODS` here maps their registry names to
them, in that order, and :func:`make_method` builds any of them, or a refit
of any (``+``, ``++``), by name.
"""

from __future__ import annotations

from .. import names
from . import anchor, double_optimize, irt, lasso, methods, mrmr, pca_impute, random_search
from ._base import CoresetMethod
from .refit import make_refit

__all__ = ["METHODS", "DEFAULT_METHOD", "PAPER_REFITS", "make_method", "method_names"]


METHODS = {
    cls.name: cls
    for cls in (
        *methods.METHODS,
        *random_search.METHODS, *lasso.METHODS, *double_optimize.METHODS, *pca_impute.METHODS,
        *anchor.METHODS, *irt.METHODS, *mrmr.METHODS,
    )
}
DEFAULT_METHOD = names.DEFAULT_CORESET_METHOD
REFIT_KINDS = ("++", "+")  # suffixes: any method's questions, (kernel) ridge predictor
PAPER_REFITS = names.PAPER_REFITS


def method_names(which: str = "all") -> list[str]:
    """``all``: every registered method and the papers' refits; ``default``: the default."""
    if which == "all":
        return [*METHODS, *PAPER_REFITS]
    if which == "default":
        return [DEFAULT_METHOD]
    raise ValueError(f"expected 'all' or 'default'; got {which!r}")


def make_method(name: str, **params) -> CoresetMethod:
    """An unfitted method by registry name, its parameters set from ``params``.

    ``default`` is :data:`DEFAULT_METHOD`; a name ending in ``+`` or ``++``
    is that method's questions with a ridge or degree-2 polynomial kernel
    ridge predictor (Bowyer et al.'s refits, :class:`~benchsel.coreset.refit.Refit`),
    e.g. ``anchor-points-weighted++``.

    Parameters
    ----------
    name : str
        A registry name (:func:`method_names`), ``default`` or a refit.
    **params
        Constructor parameters, e.g. ``n_questions=50, random_state=0``, set
        with ``set_params``: a refit takes its own (``n_questions``,
        ``random_state``, ``alphas``, ``gamma``) and its selector's as
        ``estimator__<name>``.

    Returns
    -------
    CoresetMethod

    Examples
    --------
    >>> make_method("mrmr++", n_questions=50, random_state=0, estimator__scheme="mid")
    Refit(estimator=MRMR(scheme='mid'), kind='++', n_questions=50, random_state=0)
    """
    if name == "default":
        name = DEFAULT_METHOD
    if name in METHODS:
        return METHODS[name]().set_params(**params)
    for kind in REFIT_KINDS:
        base = name[: -len(kind)]
        if name.endswith(kind) and base in METHODS:
            return make_refit(METHODS[base](), kind).set_params(**params)
    raise ValueError(
        f"unknown coreset method {name!r}; methods: default, {', '.join(METHODS)} "
        "(append + or ++ to any for a ridge or kernel ridge refit)"
    )
