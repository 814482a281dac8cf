"""mRMR question selection (Bowyer et al. 2026, Sec. 2.1-2.2, App. A, E.1).

Each question is a feature: its scores across the M source models. The
target ``Y`` is each source model's full-benchmark mean. Greedy mRMR starts
from the most relevant question and then adds, one at a time, the question
maximizing

* MIQ (the paper's choice): ``I(X, Y) / mean_{c in C} I(X, X_c)``, or
* MID: ``I(X, Y) - mean_{c in C} I(X, X_c)``.

Mutual information (nats):

* binary scores (every entry 0 or 1) -- relevance by Ross's (2014)
  nearest-neighbour estimator for a discrete X and a continuous Y
  (:func:`ross_mi`, ``k = 5``, the paper's best for binary data);
  redundancy exactly from each pair's 2 x 2 table (:func:`binary_mi`);
* otherwise -- the KSG estimator (Kraskov et al. 2004, estimator 1) with
  Gao et al.'s (2015) PCA local non-uniformity correction (:func:`ksg_mi`,
  ``k = 8``, the paper's best for continuous data) for both.

Registry methods:

* ``mrmr`` -- MIQ selection; predicts with ridge regression fitted on the
  source models (the paper's d = 1 case, i.e. its "mRMR"/"mRMR+"; penalty
  by leave-one-out over the paper's grid, App. D.1). ``mrmr++`` (kernel
  ridge, the paper's headline method) comes from :mod:`.refit`.
* ``mrmr-mid`` -- the same with the MID criterion.

Both report the root mean squared leave-one-out residual of the ridge as
the prediction's standard deviation.

Cost: binary scores take O(N M (k + log M)) for all relevances at once (the
only neighbour search is along the sorted ``Y``); each greedy step costs one
M x N matrix-vector product (about 2 s for 50 of 50,000 questions from 82
models). Continuous scores take O(N M^2) per greedy step (brute-force
neighbours): about 0.25 s per step for 1,000 questions from 82 models.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import digamma, xlogy

from ._base import CoresetMethod
from .refit import is_binary, paper_alphas, ridge_loo

__all__ = [
    "METHODS",
    "MRMR",
    "MRMRMID",
    "MRMRSelection",
    "SCHEMES",
    "binary_mi",
    "ksg_mi",
    "mrmr_greedy",
    "mrmr_select",
    "ross_mi",
]

SCHEMES = ("miq", "mid")
BINARY_K = 5  # Sec. 2.2: best k for binary data
CONTINUOUS_K = 8  # Sec. 2.2: best k for continuous data
LNC_ALPHA = 0.25  # Gao et al.'s released default for the non-uniformity test
MIQ_FLOOR = 1e-10  # keeps the quotient finite when a question shares no information
_CHUNK = 4096  # questions per block in the Ross estimator
_KSG_BLOCK = 2_000_000  # float entries per block in the KSG estimator


def _digamma_table(size: int) -> np.ndarray:
    """``psi(i)`` for ``i = 0 .. size`` (``psi(0)`` is never read)."""
    table = np.full(size + 1, np.nan)
    table[1:] = digamma(np.arange(1, size + 1))
    return table


def _check_xy(x: np.ndarray, y) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y, dtype=float)
    if x.ndim != 2 or y.shape != (x.shape[0],):
        raise ValueError(
            f"need x of shape (samples, columns) and y of shape (samples,); "
            f"got {x.shape} and {y.shape}"
        )
    return x, y


# ---------------------------------------------------------------------------
# Mutual information estimators
# ---------------------------------------------------------------------------


def binary_mi(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Exact mutual information (nats) between binary ``v`` and each binary column of ``x``.

    Uses the empirical 2 x 2 table of each pair (Bowyer et al. eqs. 9-11);
    one matrix-vector product gives every co-occurrence count.

    Parameters
    ----------
    x : array_like of shape (n_samples, n_columns), entries 0 or 1
    v : array_like of shape (n_samples,), entries 0 or 1

    Returns
    -------
    ndarray of shape (n_columns,)
    """
    x = np.asarray(x, dtype=float)
    v = np.asarray(v, dtype=float)
    m = x.shape[0]
    n11 = v @ x
    n1_ = v.sum()
    n_1 = x.sum(axis=0)
    n10, n01 = n1_ - n11, n_1 - n11
    n00 = m - n1_ - n_1 + n11

    def plogp(c):  # sum over cells of c log c, with 0 log 0 = 0
        return xlogy(c, c)

    joint = plogp(n11) + plogp(n10) + plogp(n01) + plogp(n00)
    margins = plogp(n1_) + plogp(m - n1_) + plogp(n_1) + plogp(m - n_1)
    mi = (joint - margins + m * np.log(m)) / m
    return np.maximum(mi, 0.0)  # round-off can dip below 0 for independent pairs


def ross_mi(x: np.ndarray, y: np.ndarray, k: int = BINARY_K) -> np.ndarray:
    """Ross (2014) estimate of I(X_j; Y) for each binary column ``X_j`` and continuous ``y``.

    ``I = psi(N) - <psi(N_x)> + <psi(k)> - <psi(m)>``: for each sample,
    ``d`` is the distance (in ``y``) to its ``k``-th nearest neighbour
    within its own class, ``N_x`` the class size and ``m`` the number of
    other samples (any class) within ``d`` of it, the k-th neighbour
    included. As in scikit-learn, a class of size ``c <= k`` uses
    ``k = c - 1`` and samples alone in their class are left out. Estimates
    are clipped at 0.

    All columns are done at once: with ``y`` sorted, each class's samples
    are a sorted list, and the ``k`` nearest same-class neighbours of a
    sample form a window of ``k`` consecutive list entries around it, so the
    k-th distance is the smallest window radius over the ``k + 1`` window
    positions.

    Parameters
    ----------
    x : array_like of shape (n_samples, n_columns), entries 0 or 1
    y : array_like of shape (n_samples,)
    k : int, default 5

    Returns
    -------
    ndarray of shape (n_columns,)
    """
    x, y = _check_xy(np.asarray(x), y)
    if k < 1:
        raise ValueError(f"k must be >= 1; got {k}")
    order = np.argsort(y, kind="stable")
    ys = y[order]
    ones = np.asarray(x[order] > 0.5)
    table = _digamma_table(x.shape[0])
    out = np.empty(x.shape[1])
    for start in range(0, x.shape[1], _CHUNK):
        block = np.ascontiguousarray(ones[:, start:start + _CHUNK].T)
        out[start:start + block.shape[0]] = _ross_block(block, ys, k, table)
    return out


def _ross_block(ones: np.ndarray, ys: np.ndarray, k: int, table: np.ndarray) -> np.ndarray:
    """Ross estimates for the rows of ``ones`` (columns x samples, samples in ``ys`` order)."""
    n_cols, m = ones.shape
    n1 = ones.sum(axis=1)[:, None]
    # Class-sorted layout: row j lists the ones' positions, then the zeros', each ascending.
    pos = np.argsort(~ones, axis=1, kind="stable")
    z = ys[pos]
    q = np.arange(m)[None, :]
    in_one = q < n1
    lo = np.where(in_one, 0, n1)
    hi = np.where(in_one, n1, m)
    size = hi - lo
    k_eff = np.minimum(k, size - 1)
    keep = k_eff > 0  # samples alone in their class carry no neighbour information
    radius = np.full(z.shape, np.inf)
    for a in range(k + 1):  # window: a neighbours on the left, k_eff - a on the right
        left = q - a
        right = q + k_eff - a
        ok = keep & (a <= k_eff) & (left >= lo) & (right < hi)
        z_left = np.take_along_axis(z, np.clip(left, 0, m - 1), axis=1)
        z_right = np.take_along_axis(z, np.clip(right, 0, m - 1), axis=1)
        r = np.maximum(z - z_left, z_right - z)
        radius = np.where(ok, np.minimum(radius, r), radius)
    radius = np.where(keep, radius, 0.0)
    # A few ulps of slack so the k-th neighbour itself is always counted (Ross counts it).
    reach = radius + 4 * np.finfo(float).eps * max(1.0, float(np.abs(ys).max()))
    count = (np.searchsorted(ys, (z + reach).ravel(), side="right")
             - np.searchsorted(ys, (z - reach).ravel(), side="left")).reshape(z.shape) - 1
    # Samples alone in their class are left out of everyone's counts too.
    n1 = n1[:, 0]
    n0 = m - n1
    for alone, where in ((n1 == 1, 0), (n0 == 1, m - 1)):
        lone_y = z[:, where][:, None]
        count -= alone[:, None] & keep & (np.abs(z - lone_y) <= reach)
    n_kept = keep.sum(axis=1)
    safe = np.maximum(n_kept, 1)
    count = np.where(keep, count, 1)
    mi = (table[safe]
          - np.where(keep, table[np.maximum(size, 1)], 0.0).sum(axis=1) / safe
          + np.where(keep, table[np.maximum(k_eff, 1)], 0.0).sum(axis=1) / safe
          - np.where(keep, table[count], 0.0).sum(axis=1) / safe)
    return np.where(n_kept > 0, np.maximum(mi, 0.0), 0.0)


def ksg_mi(
    x: np.ndarray,
    y: np.ndarray,
    k: int = CONTINUOUS_K,
    *,
    correction: bool = True,
    alpha: float = LNC_ALPHA,
) -> np.ndarray:
    """KSG estimate of I(X_j; Y) for each continuous column ``X_j``, optionally PCA-corrected.

    Kraskov et al. (2004) estimator 1 with the max-norm in the joint space:
    ``I = psi(k) + psi(N) - <psi(n_x + 1) + psi(n_y + 1)>``, where
    ``n_x`` counts the samples strictly closer than the k-th joint
    neighbour in ``x`` alone (likewise ``n_y``).

    With ``correction`` (Gao et al. 2015, local non-uniformity correction):
    for each sample, its ``k`` joint neighbours are centred on it, rotated
    to their principal axes, and the volume of their bounding rectangle
    ``V_pca`` is compared with that of the axis-aligned one ``V``; where
    ``V_pca / V < alpha`` the estimate gains ``log(V / V_pca) / N``.

    Estimates are clipped at 0. Cost O(N M^2) for ``M`` samples and ``N``
    columns (brute-force neighbours, vectorized in blocks). Tied values make
    k-NN estimates degenerate; callers should add tiny noise first (see
    :class:`MRMR`).

    Parameters
    ----------
    x : array_like of shape (n_samples, n_columns)
    y : array_like of shape (n_samples,)
    k : int, default 8
    correction : bool, default True
    alpha : float, default 0.25
        Threshold of the non-uniformity test.

    Returns
    -------
    ndarray of shape (n_columns,)
    """
    x, y = _check_xy(np.asarray(x, dtype=float), y)
    m = x.shape[0]
    if not 1 <= k < m:
        raise ValueError(f"k must be in [1, {m - 1}] for {m} samples; got {k}")
    dy_signed = y[None, :] - y[:, None]
    dy = np.abs(dy_signed)
    np.fill_diagonal(dy, np.inf)  # a sample is not its own neighbour
    table = _digamma_table(m)
    step = max(1, _KSG_BLOCK // (m * m))
    out = np.empty(x.shape[1])
    for start in range(0, x.shape[1], step):
        cols = x[:, start:start + step].T  # (block, m)
        out[start:start + cols.shape[0]] = _ksg_block(cols, dy, dy_signed, k, table,
                                                      correction, alpha)
    return out


def _ksg_block(cols, dy, dy_signed, k, table, correction, alpha) -> np.ndarray:
    m = cols.shape[1]
    dx_signed = cols[:, None, :] - cols[:, :, None]  # [j, i, t] = x_t - x_i
    dx = np.abs(dx_signed)
    idx = np.arange(m)
    dx[:, idx, idx] = np.inf
    joint = np.maximum(dx, dy)
    nearest = np.argpartition(joint, k - 1, axis=2)[:, :, :k]
    eps = np.take_along_axis(joint, nearest, axis=2).max(axis=2)
    n_x = (dx < eps[:, :, None]).sum(axis=2)
    n_y = (dy[None] < eps[:, :, None]).sum(axis=2)
    mi = table[k] + table[m] - (table[n_x + 1] + table[n_y + 1]).mean(axis=1)
    if correction:
        ddx = np.take_along_axis(dx_signed, nearest, axis=2)
        ddy = dy_signed[idx[:, None], nearest]
        mi = mi + _lnc(ddx, ddy, alpha)
    return np.maximum(mi, 0.0)


def _lnc(ddx: np.ndarray, ddy: np.ndarray, alpha: float) -> np.ndarray:
    """Gao et al.'s correction, mean over samples, from neighbour offsets (block, M, k)."""
    sxx = (ddx * ddx).mean(axis=2)
    syy = (ddy * ddy).mean(axis=2)
    sxy = (ddx * ddy).mean(axis=2)
    theta = 0.5 * np.arctan2(2 * sxy, sxx - syy)  # principal axis of the 2 x 2 scatter
    c, s = np.cos(theta)[..., None], np.sin(theta)[..., None]
    u = np.abs(c * ddx + s * ddy).max(axis=2)
    v = np.abs(c * ddy - s * ddx).max(axis=2)
    box = np.abs(ddx).max(axis=2) * np.abs(ddy).max(axis=2)
    pca = u * v
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.log(pca) - np.log(box)
    # Degenerate neighbourhoods (all on one axis) have no volume to correct.
    apply = (box > 0) & (pca > 0) & (log_ratio < np.log(alpha))
    return np.where(apply, -log_ratio, 0.0).mean(axis=1)


# ---------------------------------------------------------------------------
# Greedy selection
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MRMRSelection:
    """Result of greedy mRMR.

    Attributes
    ----------
    selected : ndarray of int, shape (n,)
        Chosen columns in the order they were picked.
    gains : ndarray of shape (n,)
        Criterion value of each pick (the first is its relevance).
    relevance : ndarray of shape (n_columns,)
        ``I(X_j; Y)`` for every column.
    redundancy : ndarray of shape (n,)
        Mean MI of each pick with the columns picked before it (0 for the first).
    scheme : str
        ``"miq"`` or ``"mid"``.
    """

    selected: np.ndarray
    gains: np.ndarray
    relevance: np.ndarray
    redundancy: np.ndarray
    scheme: str


def mrmr_greedy(
    relevance: np.ndarray,
    redundancy: Callable[[int], np.ndarray],
    n: int,
    scheme: str = "miq",
) -> MRMRSelection:
    """Greedy mRMR (Bowyer et al. Algorithm 1) given relevances and a redundancy oracle.

    Parameters
    ----------
    relevance : ndarray of shape (n_columns,)
        ``I(X_j; Y)``.
    redundancy : callable
        ``redundancy(c)`` returns ``I(X_j; X_c)`` for every column ``j``
        (shape ``(n_columns,)``); called once per pick but the last.
    n : int
        Number of columns to pick, ``1 <= n <= n_columns``.
    scheme : {"miq", "mid"}
        Quotient ``rel / (mean_red + 1e-10)`` or difference ``rel - mean_red``.

    Returns
    -------
    MRMRSelection
        Ties go to the lowest column index.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}; got {scheme!r}")
    relevance = np.asarray(relevance, dtype=float)
    total = relevance.size
    if not 1 <= n <= total:
        raise ValueError(f"n must be in [1, {total}]; got {n}")
    chosen = [int(np.argmax(relevance))]
    gains, mean_reds = [float(relevance[chosen[0]])], [0.0]
    taken = np.zeros(total, bool)
    taken[chosen[0]] = True
    red_sum = np.zeros(total)
    for step in range(1, n):
        red_sum += redundancy(chosen[-1])
        mean_red = red_sum / step
        if scheme == "miq":
            score = relevance / (mean_red + MIQ_FLOOR)
        else:
            score = relevance - mean_red
        score[taken] = -np.inf
        pick = int(np.argmax(score))
        chosen.append(pick)
        taken[pick] = True
        gains.append(float(score[pick]))
        mean_reds.append(float(mean_red[pick]))
    return MRMRSelection(
        selected=np.array(chosen, dtype=int),
        gains=np.array(gains),
        relevance=relevance,
        redundancy=np.array(mean_reds),
        scheme=scheme,
    )


def _jitter(values: np.ndarray, rng) -> np.ndarray:
    scale = 1e-10 * max(1.0, float(np.abs(values).mean()))
    return values + scale * rng.standard_normal(values.shape)


def mrmr_select(
    x: np.ndarray,
    y: np.ndarray,
    n: int,
    *,
    scheme: str = "miq",
    k: int | None = None,
    correction: bool = True,
    rng=None,
) -> MRMRSelection:
    """mRMR on the columns of ``x`` against target ``y``, estimators chosen by score type.

    Binary ``x`` (every entry 0 or 1): :func:`ross_mi` relevance and exact
    :func:`binary_mi` redundancy; a column whose rarer answer is given by
    fewer than ``k + 1`` samples gets relevance 0 (too few samples in a
    class for a k-NN estimate; the authors' code does the same). Otherwise
    :func:`ksg_mi` (with Gao et al.'s correction unless ``correction`` is
    False) for both.

    Parameters
    ----------
    x : array_like of shape (n_samples, n_columns)
    y : array_like of shape (n_samples,)
    n : int
    scheme : {"miq", "mid"}, default "miq"
    k : int, optional
        Nearest neighbours; default 5 for binary and 8 for continuous
        scores, capped for small samples.
    correction : bool, default True
    rng : numpy.random.Generator, optional
        Source of the tie-breaking noise; default a fixed seed.

    Returns
    -------
    MRMRSelection

    Notes
    -----
    k-NN estimators need distinct values, but models often tie on the mean
    (whole blocks of models that always answer alike), and continuous
    scores tie on a question. Ties in ``y`` (and in continuous ``x``) are
    broken by Gaussian noise of relative size 1e-10, far below any real
    score difference, as Kraskov et al. advise; without it a block of tied
    models drives every relevance estimate to 0.
    """
    x, y = _check_xy(np.asarray(x, dtype=float), y)
    rng = np.random.default_rng(0) if rng is None else rng
    y = _jitter(y, rng)
    m = x.shape[0]
    if is_binary(x):
        k = BINARY_K if k is None else k
        k = max(1, min(k, m // 2 - 1))  # both classes need k + 1 samples somewhere
        relevance = ross_mi(x, y, k)
        ones = x.sum(axis=0)
        relevance[np.minimum(ones, m - ones) < k + 1] = 0.0
        return mrmr_greedy(relevance, lambda c: binary_mi(x, x[:, c]), n, scheme)
    x = _jitter(x, rng)
    k = CONTINUOUS_K if k is None else k
    k = max(1, min(k, m - 2))
    relevance = ksg_mi(x, y, k, correction=correction)
    return mrmr_greedy(relevance, lambda c: ksg_mi(x, x[:, c], k, correction=correction),
                       n, scheme)


# ---------------------------------------------------------------------------
# Registry methods
# ---------------------------------------------------------------------------


class MRMR(CoresetMethod):
    """mRMR (MIQ) questions, ridge prediction of the full-benchmark mean.

    The paper's "mRMR" (d = 1, identical to "mRMR+"); wrap it with
    :func:`benchsel.coreset.refit.make_refit` for ``mrmr++``.

    Parameters
    ----------
    n_questions : int, optional
    random_state : int, numpy.random.Generator or None, default None
        See :class:`~benchsel.coreset._base.CoresetMethod`; the generator
        draws the tie-breaking noise of :func:`mrmr_select`.
    scheme : {"miq", "mid"}, default "miq"
    k : int, optional
        Nearest neighbours of the MI estimators; default 5 (binary scores)
        or 8 (continuous), as tuned in the paper.
    correction : bool, default True
        Gao et al.'s PCA correction of KSG for continuous scores.

    Attributes
    ----------
    selected_ : ndarray of int
        Questions in pick order.
    selection_ : MRMRSelection
    model_ : RidgeFit
    sd_ : float
        Root mean squared leave-one-out residual of the ridge.
    """

    name = "mrmr"
    _min_models = 3

    def __init__(self, n_questions: int | None = None, *, random_state=None,
                 scheme: str = "miq", k: int | None = None, correction: bool = True):
        super().__init__(n_questions, random_state=random_state)
        self.scheme = scheme
        self.k = k
        self.correction = correction

    def _check_params(self) -> None:
        if self.scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}; got {self.scheme!r}")

    def _fit(self, source: np.ndarray, n: int, rng) -> None:
        self.selection_ = mrmr_select(source, source.mean(axis=1), n, scheme=self.scheme,
                                      k=self.k, correction=self.correction, rng=rng)
        self.selected_ = self.selection_.selected
        self.model_ = ridge_loo(source[:, self.selected_], source.mean(axis=1),
                                paper_alphas(source))
        self.sd_ = self.model_.sd

    def _predict(self, x: np.ndarray):
        mean = self.model_.predict(x)
        return mean, np.full(mean.shape, self.sd_)


class MRMRMID(MRMR):
    """mRMR with the MID criterion (relevance minus mean redundancy), ridge prediction.

    Parameters as :class:`MRMR`, with ``scheme="mid"`` by default.
    """

    name = "mrmr-mid"

    def __init__(self, n_questions: int | None = None, *, random_state=None,
                 scheme: str = "mid", k: int | None = None, correction: bool = True):
        super().__init__(n_questions, random_state=random_state, scheme=scheme, k=k,
                         correction=correction)


METHODS = (MRMR, MRMRMID)
