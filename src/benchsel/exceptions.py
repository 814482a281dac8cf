"""Exceptions shared by benchsel's estimators.

Kept free of heavy imports: the benchmark-level commands raise these without
loading scikit-learn (about a second to import), which only the
question-level methods need.
"""

from __future__ import annotations

__all__ = ["ConvergenceWarning", "NotFittedError"]


class ConvergenceWarning(UserWarning):
    """An iterative fit (EM, factor EM) stopped at its cap before meeting its tolerance."""


class NotFittedError(ValueError, AttributeError):
    """An estimator used before ``fit``.

    It has the two bases of :class:`sklearn.exceptions.NotFittedError`, so
    code that expects scikit-learn's behaviour (``except ValueError``,
    ``except AttributeError``, ``hasattr`` on a fitted attribute) works
    alike; it is not a subclass of it, since that would import scikit-learn
    wherever a model can raise it.
    """
