"""The "+" and "++" refits: any coreset's scores -> full-benchmark mean by (kernel) ridge.

Bowyer et al. (2026, Sec. 2.3-2.4 "Refitting Ridge", App. B and D.1) keep a
selector's questions and replace its predictor:

* ``+`` -- ridge regression from the coreset scores to the full-benchmark
  mean, with an unpenalized intercept (their eq. 12);
* ``++`` -- kernel ridge regression (their eq. 13, no intercept) with the
  degree-2 polynomial kernel ``(gamma <x, x'> + 1)^2``.

The penalty is chosen by exact leave-one-out RMSE over the paper's grid
(App. D.1): ``{10^-1, 10^-0.5, ..., 10}`` when every score is 0 or 1,
``{10^-2, 10^-1.5, ..., 10^2}`` otherwise, by benchsel's one ridge
implementation (:mod:`benchsel._ridge`: one SVD, or one eigendecomposition
of the M x M kernel, serves every penalty; :func:`ridge_loo` and
:func:`kernel_ridge_loo` are re-exported here). The prediction's standard
deviation is the root mean squared leave-one-out residual.

Kernel scale: eq. 16 writes ``(<x, x'> + 1)^d`` with no scale, but the
authors' released code fits scikit-learn's ``KernelRidge(kernel="poly",
degree=2, coef0=1)``, whose default ``gamma`` is ``1 / n_features``; the
grid above was tuned for that scale (with ``gamma = 1`` a 50-question kernel
reaches ~2,600 and every penalty on the grid is negligible). benchsel uses
``gamma = 1 / n`` by default.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone

from .._ridge import KernelRidgeFit, RidgeFit, kernel_ridge_loo, polynomial_kernel, ridge_loo
from ._base import CoresetMethod, inner_settings

__all__ = [
    "BINARY_ALPHAS",
    "CONTINUOUS_ALPHAS",
    "KINDS",
    "KernelRidgeFit",
    "Refit",
    "RidgeFit",
    "is_binary",
    "kernel_ridge_loo",
    "make_refit",
    "paper_alphas",
    "polynomial_kernel",
    "ridge_loo",
]

BINARY_ALPHAS = np.logspace(-1, 1, 5)  # App. D.1, binary metrics
CONTINUOUS_ALPHAS = np.logspace(-2, 2, 9)  # App. D.1, continuous metrics
KINDS = ("+", "++")


def is_binary(values: np.ndarray) -> bool:
    """True when every entry of ``values`` is exactly 0 or 1."""
    values = np.asarray(values)
    return bool(np.all((values == 0) | (values == 1)))


def paper_alphas(values: np.ndarray) -> np.ndarray:
    """The paper's penalty grid for these scores: binary or continuous (App. D.1)."""
    return BINARY_ALPHAS if is_binary(values) else CONTINUOUS_ALPHAS


class Refit(CoresetMethod):
    """A selector's questions with a (kernel) ridge predictor of the full-benchmark mean.

    Parameters
    ----------
    estimator : CoresetMethod
        The selector; only its questions are used. ``fit`` fits a clone of
        it (:func:`sklearn.base.clone`) with this method's ``n_questions``
        and ``random_state``.
    kind : {"+", "++"}
        ``"+"``: ridge (:func:`ridge_loo`); ``"++"``: degree-2 polynomial
        kernel ridge (:func:`kernel_ridge_loo`).
    n_questions : int, optional
        Questions to pick; None takes the estimator's.
    random_state : int, numpy.random.Generator or None, default None
        Seeds the selector; None takes the estimator's.
    alphas : array_like, optional
        Penalties to search; default the paper's grid for the source scores
        (:func:`paper_alphas`).
    gamma : float, optional
        Kernel scale for ``"++"``; default ``1 / n``.

    Attributes
    ----------
    name : str
        ``estimator.name + kind``, e.g. ``"mrmr++"``.
    estimator_ : CoresetMethod
        The fitted selector.
    selected_ : ndarray of int
        The selector's questions, in its order.
    model_ : RidgeFit or KernelRidgeFit
    sd_ : float
        Root mean squared leave-one-out residual, the standard deviation
        ``predict`` reports for every model.
    """

    def __init__(self, estimator, kind: str, *, n_questions: int | None = None,
                 random_state=None, alphas=None, gamma: float | None = None):
        super().__init__(n_questions, random_state=random_state)
        self.estimator = estimator
        self.kind = kind
        self.alphas = alphas
        self.gamma = gamma

    @property
    def name(self) -> str:
        return f"{self.estimator.name}{self.kind}"

    def _check_params(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(map(repr, KINDS))}; "
                             f"got {self.kind!r}")

    def _fit_settings(self):
        return inner_settings(self)

    def _fit(self, source: np.ndarray, n: int, rng) -> None:
        self.estimator_ = clone(self.estimator).set_params(n_questions=n, random_state=rng)
        self.estimator_.fit(source)
        self.selected_ = np.asarray(self.estimator_.selected_, dtype=int)
        alphas = paper_alphas(source) if self.alphas is None else self.alphas
        x, y = source[:, self.selected_], source.mean(axis=1)
        if self.kind == "+":
            self.model_ = ridge_loo(x, y, alphas)
        else:
            self.model_ = kernel_ridge_loo(x, y, alphas, degree=2, gamma=self.gamma)
        self.sd_ = self.model_.sd

    def _predict(self, x: np.ndarray):
        mean = self.model_.predict(x)
        return mean, np.full(mean.shape, self.sd_)


def make_refit(base_method, kind: str, **options) -> Refit:
    """Wrap a method to predict with ridge (``"+"``) or kernel ridge (``"++"``).

    ``base_method`` is a :class:`~benchsel.coreset._base.CoresetMethod` (a
    class is instantiated with no arguments); ``options`` go to
    :class:`Refit` (``n_questions``, ``random_state``, ``alphas``,
    ``gamma``).
    """
    if isinstance(base_method, type):
        base_method = base_method()
    return Refit(base_method, kind, **options)
