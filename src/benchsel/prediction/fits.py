"""Gaussian and low-rank models fitted on source rows, kept by what they were fitted on.

``auto``'s choice (:func:`~benchsel.prediction.choose_completer`) scores
each Gaussian-based and low-rank method as a new model meets it: fitted on
the models a fold keeps, predicting the held-out ones from their given
scores (:class:`GaussianFit` conditions a row, :class:`SvdFit` folds it
in). The models a fold keeps do not depend on which scores are given, so
one fit serves every set of given benchmarks on that board: a :class:`FitStore`
keeps each fit by the digest of the rows it was fitted on, and a fitted
:class:`~benchsel.models.GaussianModel` holds one (in its
:class:`~benchsel.prediction.memo.AutoMemo`) for all its predictions.
"""

from __future__ import annotations

import hashlib
import io
import json
import warnings

import numpy as np

from .._json import loads
from .._lowrank import FactorCovariance
from .._npz import CheckedNpz
from .._patterns import unique_rows
from ..cache_files import CacheWarning
from ..exceptions import ConvergenceWarning
from ..gaussian.conditional import conditional_moments
from ..gaussian.covariance import (
    em_affordable,
    estimate_covariance,
    fit_standardizer,
    resolve_auto,
    working_covariance,
)
from ..matrix import DataWarning, Standardizer
from ..outputs import write_text_atomic
from . import gp
from .latent import Completion, Latent, blend, column_prior, complete_mean, soft_impute

__all__ = ["INDUCTIVE", "FitStore", "GaussianFit", "SvdFit", "fitted_completion",
           "held_out_completion", "new_row_covariance"]


def new_row_covariance(source: np.ndarray, fits: FitStore | None = None) -> str:
    """The covariance ``gaussian`` completes a new row with, given its ``source`` rows.

    ``gaussian`` completes with ``auto``, which for a matrix with a
    missing cell (a new model's row has some) is ``em-shrink`` unless one
    EM iteration would cost more than
    :data:`~benchsel.gaussian.covariance.EM_MAX_FLOPS` or more memory than
    the budget (:func:`~benchsel.gaussian.covariance.em_affordable`): then
    ``factor``. Rows of a board too wide for EM
    (:attr:`FitStore.board_covariance`) take the board's ``factor``.
    """
    if fits is not None and fits.board_covariance is not None:
        return fits.board_covariance
    return "em-shrink" if em_affordable(~np.isnan(source)) else "factor"


#: Standardized scores of a row predicted from a fit are clipped to this many
#: standard deviations: only an absurd score reaches it (a 1e300 among scores
#: of 1e-7 overflowed to inf), and it keeps every prediction finite.
Z_MAX = 1e6


def _standardized(std, values: np.ndarray, columns=None) -> np.ndarray:
    """``std.transform(values, columns)`` clipped to ``±Z_MAX`` (NaN stays NaN)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.clip(std.transform(values, columns), -Z_MAX, Z_MAX)


class GaussianFit:
    """A Gaussian fitted on source rows, predicting other rows from their scores.

    Standardized on the source rows; ``cols`` are the columns that are not
    constant there (the others are predicted by their mean over the source
    rows that have them).

    Parameters
    ----------
    source : ndarray of shape (M, N)
        The rows the Gaussian is fitted on (NaN = missing).
    covariance : str
        Estimator (:func:`~benchsel.gaussian.covariance.estimate_covariance`).
        A ``factor`` fit keeps its factors
        (:class:`~benchsel._lowrank.FactorCovariance`) as ``covariance``:
        nothing ``N x N`` is formed to predict from it.
    """

    def __init__(self, source: np.ndarray, covariance: str, **options):
        self.std = fit_standardizer(source, covariance)
        self.cols = np.flatnonzero(~self.std.constant)
        # What a column the Gaussian cannot standardize predicts: its source mean and spread.
        self.fallback_mean, self.fallback_std = column_prior(source)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            # The rows of a fold or a split, or a board completed cell by cell: a part.
            est = estimate_covariance(self.z(source), covariance, whole_board=False,
                                      **options)
        self.mean, self.covariance = est.mean, working_covariance(est)

    #: What a fit is, as named arrays (:meth:`arrays`, :meth:`from_arrays`); a factor
    #: fit has ``loadings`` and ``noise`` in place of ``covariance``.
    FIELDS = ("std_mean", "std_scale", "std_constant", "fallback_mean", "fallback_std", "mean",
              "covariance")

    def arrays(self) -> dict[str, np.ndarray]:
        out = {"std_mean": self.std.mean, "std_scale": self.std.scale,
               "std_constant": self.std.constant, "fallback_mean": self.fallback_mean,
               "fallback_std": self.fallback_std, "mean": self.mean}
        if isinstance(self.covariance, FactorCovariance):
            return {**out, "loadings": self.covariance.loadings, "noise": self.covariance.noise}
        return {**out, "covariance": self.covariance}

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray]) -> GaussianFit:
        """Inverse of :meth:`arrays` (checked by :meth:`FitStore.load`)."""
        fit = cls.__new__(cls)
        fit.std = Standardizer(a["std_mean"], a["std_scale"], a["std_constant"].astype(bool))
        fit.cols = np.flatnonzero(~fit.std.constant)
        fit.fallback_mean, fit.fallback_std = a["fallback_mean"], a["fallback_std"]
        fit.mean = a["mean"]
        fit.covariance = (FactorCovariance(a["loadings"], a["noise"]) if "loadings" in a
                          else a["covariance"])
        return fit

    def z(self, values: np.ndarray) -> np.ndarray:
        return _standardized(self.std, values[:, self.cols], self.cols)

    def mismatch(self, source: np.ndarray, kind: str) -> str | None:
        """Why this fit, read from a file, is not one of ``source`` by ``kind``; None if
        it passes.

        The column statistics are recomputed (direct sums, equal to rounding).
        The mean and covariance are not: on a sparse board EM stops short of
        its fixed point (MERGED's fits are up to 0.14 standard deviations
        from the mean of what they predict for their own rows:
        ``benchmarks/cache_checks.py``), so no cheap
        recomputation tells a changed mean or covariance from a true one:
        in the cache, the entry's seal does (:mod:`benchsel.cache_files`).
        """
        std = fit_standardizer(source, kind)
        prior = column_prior(source)
        if not np.array_equal(self.std.constant, std.constant):
            return "std_constant: other columns are constant"
        for name, mine, own in (("std_mean", self.std.mean, std.mean),
                                ("std_scale", self.std.scale, std.scale),
                                ("fallback_mean", self.fallback_mean, prior[0]),
                                ("fallback_std", self.fallback_std, prior[1])):
            if not np.allclose(mine, own, rtol=1e-9, atol=0, equal_nan=True):
                return f"{name}: not the rows' own"
        return None

    def conditional(self, x: np.ndarray):
        """Conditional means and standard deviations of rows ``x`` given their scores.

        ``x`` has NaN where a score is not given. A given cell keeps its
        score (std 0); a column constant on the source rows gets its source
        mean and spread. Returns a
        :class:`~benchsel.prediction.latent.Completion` of ``x``'s shape.
        """
        mean = np.array(np.broadcast_to(self.fallback_mean, x.shape))
        sd = np.array(np.broadcast_to(self.fallback_std, x.shape))
        mu, var = conditional_moments(self.z(x), self.mean, self.covariance)
        mean[:, self.cols] = self.std.inverse(mu, self.cols)
        sd[:, self.cols] = np.sqrt(var) * self.std.scale[self.cols]
        given = ~np.isnan(x)
        return Completion(np.where(given, x, mean), np.where(given, 0.0, sd))

    def residual_process(self, values: np.ndarray, rows: np.ndarray):
        """``gp``'s prediction for ``rows`` of ``values``: this Gaussian plus
        :func:`~benchsel.prediction.gp.residual_process` on its residuals.

        The process trains on every row of ``values`` that has a predicted
        row's scores and more. A column constant on the source rows gets
        its mean and spread over the rows of ``values`` that have it.
        Returns a :class:`~benchsel.prediction.latent.Completion` of
        shape ``(len(rows), N)``.
        """
        fallback = complete_mean(values)
        mean, spread = fallback.mean[rows], fallback.std[rows]
        sigma = self.covariance
        if isinstance(sigma, FactorCovariance):  # the process works on the dense matrix
            sigma = sigma.dense("the covariance gp's residual process needs")
        mu, sd = gp.residual_process(self.z(values), self.mean, sigma, rows)
        cols = self.cols
        hit = ~np.isnan(mu)  # NaN exactly on the observed cells
        mean[:, cols] = np.where(hit, self.std.inverse(np.where(hit, mu, 0.0), cols),
                                 mean[:, cols])
        spread[:, cols] = np.where(hit, sd * self.std.scale[cols], spread[:, cols])
        return Completion(mean, spread)


class SvdFit:
    """``svd``'s low-rank model of source rows, folding in other rows.

    The source rows are completed by :func:`~benchsel.prediction.completers.complete_svd`'s
    soft-impute, in its latent units (logit of percentage-scale columns,
    standardized). A new row is folded in as probabilistic PCA does: its
    coordinates in the rank-``rank`` right singular subspace of the
    completed source are the posterior mean given its latent scores, under
    the spread of the source rows' coordinates and each column's residual
    variance (the mean square of the source rows' reconstruction residuals).
    A column's error bar is that model's predictive one: the coordinates'
    posterior variance along the column's loadings plus its residual
    variance. ``complete_svd`` gives the residual part alone, which left a
    row with one given score the error bar of a fully observed one: on
    MERGED's extrapolation split the calibration then multiplied it by
    5-20 (docs/experiments/reproduction.md). A plain least-squares fit of
    the coordinates blew up where a row gave as many scores as the rank on
    nearly collinear columns (9.5 standard deviations off on a MERGED model
    with two given scores).
    """

    def __init__(self, source: np.ndarray, rank: int = 2):
        self.latent = Latent(source)
        recon, self.rmse = soft_impute(self.latent.z, rank)
        rank = min(rank, *recon.shape)
        self.basis = np.linalg.svd(recon, full_matrices=False)[2][:rank].T  # N x rank
        coords = recon @ self.basis
        self.coord_mean = coords.mean(axis=0)
        self.coord_cov = np.atleast_2d(np.cov(coords, rowvar=False))

    def mismatch(self, source: np.ndarray, kind: str = "svd") -> str | None:
        """Why this fit, read from a file, is not one of ``source``; None if its
        column scales and standardization are the rows' own (recomputed)."""
        latent = Latent(source)
        own = latent.std
        if not np.array_equal(self.latent.scale, latent.scale, equal_nan=True):
            return "scale: not the rows' own"
        if not np.array_equal(self.latent.std.constant, own.constant):
            return "std_constant: other columns are constant"
        for name, mine, theirs in (("std_mean", self.latent.std.mean, own.mean),
                                   ("std_scale", self.latent.std.scale, own.scale)):
            if not np.allclose(mine, theirs, rtol=1e-9, atol=0, equal_nan=True):
                return f"{name}: not the rows' own"
        return None

    @property
    def empty(self) -> np.ndarray:
        """Columns no source row has (no residual, so no error bar): not predicted."""
        return np.isnan(self.rmse)

    FIELDS = ("scale", "std_mean", "std_scale", "std_constant", "rmse", "basis", "coord_mean",
              "coord_cov")

    def arrays(self) -> dict[str, np.ndarray]:
        std = self.latent.std
        return {"scale": self.latent.scale, "std_mean": std.mean, "std_scale": std.scale,
                "std_constant": std.constant, "rmse": self.rmse, "basis": self.basis,
                "coord_mean": self.coord_mean, "coord_cov": self.coord_cov}

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray]) -> SvdFit:
        """Inverse of :meth:`arrays` (checked by :meth:`FitStore.load`)."""
        fit = cls.__new__(cls)
        fit.latent = Latent.__new__(Latent)
        fit.latent.scale = a["scale"]
        fit.latent.logit = ~np.isnan(a["scale"])
        fit.latent.std = Standardizer(a["std_mean"], a["std_scale"],
                                      a["std_constant"].astype(bool))
        fit.rmse, fit.basis = a["rmse"], a["basis"]
        fit.coord_mean, fit.coord_cov = a["coord_mean"], a["coord_cov"]
        return fit

    def noise(self) -> np.ndarray:
        """Each column's residual variance in latent units (a column without
        residuals counts as unexplained, 1; none is below 1e-6)."""
        return np.maximum(np.nan_to_num(self.rmse**2, nan=1.0), 1e-6)

    def fold_in(self, x: np.ndarray):
        """Predictions of rows ``x`` (NaN = not given), as a
        :class:`~benchsel.prediction.latent.Completion` of ``x``'s shape."""
        z = _standardized(self.latent.std, self.latent._forward(x))
        given = ~np.isnan(z)
        noise = self.noise()
        coords = np.tile(self.coord_mean, (len(z), 1))
        # The coordinates' variance along each column's loadings: the prior's for
        # a row with nothing given, the posterior's below.
        spread = np.tile(np.einsum("jr,rs,js->j", self.basis, self.coord_cov, self.basis),
                         (len(z), 1))
        patterns, inverse = unique_rows(given)
        for g, pattern in enumerate(patterns):
            if not pattern.any():
                continue
            rows = np.flatnonzero(inverse == g)
            v = self.basis[pattern]  # given columns x rank
            # Coordinates' posterior mean: m + C V_g^T (V_g C V_g^T + D_g)^-1 (z_g - V_g m),
            # their covariance C - C V_g^T (V_g C V_g^T + D_g)^-1 V_g C.
            gain = np.linalg.solve(v @ self.coord_cov @ v.T + np.diag(noise[pattern]),
                                   v @ self.coord_cov).T
            coords[rows] += (z[np.ix_(rows, np.flatnonzero(pattern))]
                             - v @ self.coord_mean) @ gain.T
            post = self.coord_cov - gain @ v @ self.coord_cov
            spread[rows] = np.einsum("jr,rs,js->j", self.basis, post, self.basis)
        recon = coords @ self.basis.T
        mean = self.latent.back(recon)
        z_std = np.sqrt(np.maximum(spread, 0.0) + noise)
        std = self.latent.back_std(recon, z_std)
        mean[:, self.empty] = np.nan
        std[:, self.empty] = np.nan
        return Completion(np.where(given, x, mean), np.where(given, 0.0, std))


class FitStore:
    """Fits by kind and the bytes of their source rows.

    A kind is ``"svd"`` (:class:`SvdFit`) or a covariance estimator
    (:class:`GaussianFit`). A fit is a deterministic function of its
    source rows, so a request for rows fitted before returns that fit.
    Each entry holds an N x N covariance or an N x rank basis: keep a store
    as long as the board it serves.
    """

    def __init__(self):
        #: The rank and prior every ``factor`` fit takes: its board's own, where the
        #: board is a factor model (a fold choosing them again costs eight fits).
        self.factor_options: dict = {}
        #: ``"factor"`` where the board is too wide for EM (its own Gaussian is the
        #: factor model because EM's cost or memory rules it out): then every fit of
        #: its rows asked for as ``auto`` or by ``gaussian`` is the factor model too.
        #: A fold of two thirds of the rows can fall just within EM's cost cap and
        #: then takes hours where the factor model takes seconds (300 x 1,000, 30%
        #: missing). None: each fit decides on its own rows.
        self.board_covariance: str | None = None
        self._fits: dict = {}
        self._saved = 0  # fits read from or written to a file
        self._shipped: set = set()  # keys of fits read from the package: never written
        #: Fits read from a file and not yet checked against the rows they are keyed
        #: to (only :meth:`get` has those rows), by the file's name.
        self._unchecked: dict = {}

    def __len__(self) -> int:
        return len(self._fits)

    @property
    def unsaved(self) -> int:
        """Fits made since the store was read or written."""
        return len(self._fits) - self._saved

    def adopt(self, source: np.ndarray, kind: str, fit: GaussianFit) -> None:
        """Keep ``fit``, made elsewhere, as the ``kind`` fit of ``source`` (unless one
        is kept already). The caller vouches that it is the fit :meth:`get` would
        make: a model's own fit of its whole board, where it runs the same
        estimator on the same numbers.
        """
        self._fits.setdefault(_key(np.ascontiguousarray(source, dtype=float), kind), fit)

    def update(self, other: FitStore) -> None:
        """Take ``other``'s fits (as saved: they came from a file)."""
        new = [key for key in other._fits if key not in self._fits]
        self._fits.update((key, other._fits[key]) for key in new)
        self._shipped.update(key for key in new if key in other._shipped)
        self._unchecked.update((key, other._unchecked[key]) for key in new
                               if key in other._unchecked)
        self._saved += len(new)

    def get(self, source: np.ndarray, kind: str):
        """``SvdFit(source)`` or ``GaussianFit(source, kind)``, fitted on the first
        request only."""
        source = np.ascontiguousarray(source, dtype=float)
        if kind == "auto" and self.board_covariance is not None:
            kind = self.board_covariance
        key = _key(source, kind)
        kind = key[0]
        if key in self._unchecked:
            where = self._unchecked.pop(key)
            problem = self._fits[key].mismatch(source, kind)
            if problem is not None:
                warnings.warn(f"{where}: a {kind} fit is not one of the rows it is kept for "
                              f"({problem}); fitted again", CacheWarning, stacklevel=2)
                del self._fits[key]
                self._saved -= 1  # the fit made now is kept in the cache instead
                self._shipped.discard(key)
        if key not in self._fits:
            options = self.factor_options if kind == "factor" else {}
            self._fits[key] = (SvdFit(source) if kind == "svd"
                               else GaussianFit(source, kind, **options))
        return self._fits[key]

    # ------------------------------------------------------------------ file
    def dumps(self) -> bytes:
        """Every fit but the shipped ones (:meth:`loads` ``shipped=True``: a bundled
        board's come with the package), as a compressed ``.npz`` with no pickles."""
        index, arrays = [], {}
        mine = [(key, fit) for key, fit in self._fits.items() if key not in self._shipped]
        for i, ((kind, shape, digest), fit) in enumerate(mine):
            index.append([kind, list(shape), digest.hex()])
            arrays.update({f"{i}.{name}": a for name, a in fit.arrays().items()})
        buffer = io.BytesIO()
        np.savez_compressed(buffer, index=np.array(json.dumps(index)), **arrays)
        return buffer.getvalue()

    def mark_saved(self) -> None:
        """Every fit is now in a file (:meth:`unsaved` counts from here)."""
        self._saved = len(self._fits)

    def save(self, path) -> None:
        """Write :meth:`dumps` to ``path`` atomically."""
        write_text_atomic(path, self.dumps())
        self.mark_saved()

    @classmethod
    def load(cls, path, shipped: bool = False, n_items: int | None = None) -> FitStore:
        """Read a file written by :meth:`save` (at most :data:`MAX_FILE_BYTES`);
        as :meth:`loads`."""
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise ValueError(f"{path}: larger than a file of fits may be")
        return cls.loads(data, str(path), n_items, shipped=shipped)

    @classmethod
    def loads(cls, data: bytes, where: str, n_items: int | None = None,
              shipped: bool = False) -> FitStore:
        """The fits of :meth:`dumps`'s bytes, each checked before it is used.

        Every array's header is checked against the shape its fit needs
        before it is read (:class:`~benchsel._npz.CheckedNpz`), then its
        values (:func:`check_fit`). ``n_items``: the board's, which every
        fit must have. ``shipped``: the package's own fits of a bundled
        board, which :meth:`dumps` leaves out of a user's cache. Any damage
        is a ``ValueError`` naming ``where`` and the entry.
        """
        store = cls()
        with CheckedNpz(data, where) as f:
            text = f.array("index", shape=(), kinds="U", max_elements=len(data) // 2 + 512)
            index = loads(str(text[()]), f"{where}: index")
            if not isinstance(index, list):
                raise ValueError(f"{where}: index: expected a list")
            for i, entry in enumerate(index):
                at = f"{where}: fit {i}"
                if not (isinstance(entry, list) and len(entry) == 3
                        and entry[0] in KINDS and isinstance(entry[1], list)
                        and len(entry[1]) == 2
                        and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                for n in entry[1])
                        and isinstance(entry[2], str) and len(entry[2]) == 40
                        and set(entry[2]) <= set("0123456789abcdef")):
                    raise ValueError(f"{at}: expected [kind, [rows, columns], digest]")
                kind, (_, items), digest = entry
                if n_items is not None and items != n_items:
                    raise ValueError(f"{at}: fitted on {items} columns; the board has "
                                     f"{n_items}")
                arrays = _read_fit(f, i, kind, items, at)
                fit_type = SvdFit if kind == "svd" else GaussianFit
                store._fits[(kind, tuple(entry[1]), bytes.fromhex(digest))] = \
                    fit_type.from_arrays(arrays)
        store._saved = len(store._fits)
        store._unchecked = dict.fromkeys(store._fits, where)
        if shipped:
            store._shipped = set(store._fits)
        return store


def _key(source: np.ndarray, kind: str) -> tuple:
    """A fit's key in a :class:`FitStore`: the estimator it runs and its rows' bytes."""
    return (_runs(source, kind), source.shape,
            hashlib.blake2b(source.tobytes(), digest_size=20).digest())


def _runs(source: np.ndarray, kind: str) -> str:
    """The estimator a fit of ``kind`` on ``source`` runs: ``auto`` resolved.

    ``gaussian`` asks for its new-row estimator by name
    (:func:`new_row_covariance`) and ``gp``'s base for ``auto``; on the rows
    of a choice's fold they are the same fit, made once. ``auto`` reads the
    columns the fit standardizes (those not constant on ``source``).
    """
    if kind != "auto":
        return kind
    cols = ~fit_standardizer(source).constant
    with warnings.catch_warnings():
        # Said once where the board is fitted; a store is asked for its fits again and again.
        warnings.simplefilter("ignore", DataWarning)
        return resolve_auto(~np.isnan(source[:, cols]), whole_board=False)


#: The largest file of fits read (a board of 2,000 columns has fits of tens of MB).
MAX_FILE_BYTES = 1 << 30


#: The completion methods that are fitted on source rows and predict a new
#: row from its given scores alone: the Gaussian-based ones and the
#: low-rank ones. Their fits are most of the time ``auto`` takes, and on the
#: models a fold of its choice keeps they depend on the board alone.
INDUCTIVE = ("gaussian", "gaussian-em", "gp", "svd", "svd+ridge", "gaussian+svd")


def fitted_completion(source: np.ndarray, x: np.ndarray, method: str, fits: FitStore):
    """The part of an :data:`INDUCTIVE` method fitted on ``source``, for rows ``x``.

    ``gaussian`` (and ``gp``'s Gaussian) conditions each row on the
    Gaussian ``gaussian`` completes a new row with
    (:func:`new_row_covariance`), ``gaussian-em`` on the plain EM one,
    ``svd`` folds it in (:class:`SvdFit`), ``gaussian+svd`` averages the
    two; for ``svd+ridge`` the ``svd`` half. Returns a
    :class:`~benchsel.prediction.latent.Completion` of ``x``'s shape.
    """
    def gaussian(covariance):
        return fits.get(source, covariance).conditional(x)

    if method == "gaussian-em":
        if not em_affordable(~np.isnan(source)):  # as complete_gaussian_em: no prediction
            given = ~np.isnan(x)
            return Completion(np.where(given, x, np.nan), np.where(given, 0.0, np.nan))
        return gaussian("em")
    if method in ("svd", "svd+ridge"):
        return fits.get(source, "svd").fold_in(x)
    if method == "gaussian+svd":
        return blend(gaussian(new_row_covariance(source, fits)),
                     fits.get(source, "svd").fold_in(x))
    return gaussian(new_row_covariance(source, fits))


def held_out_completion(values: np.ndarray, held: np.ndarray, hidden: np.ndarray, method: str,
                        fits: FitStore, cache):
    """An :data:`INDUCTIVE` method's completion of the ``hidden`` cells, fitted without ``held``.

    The method is fitted on the rows not ``held`` (through ``fits``), and
    each row that hides cells is predicted from the rest of its row, as a
    new model is from its given scores (:func:`fitted_completion`).
    ``gp``'s residual process, and the ``ridge`` half of ``svd+ridge``
    (through ``cache``, a :class:`~benchsel.prediction.cache.CompletionCache`),
    read the matrix with the hidden cells removed, as the other methods do.

    Returns
    -------
    Completion
        Of the shape of ``values``: mean and std on the rows that hide
        cells, NaN elsewhere.
    """
    rows = np.flatnonzero(hidden.any(axis=1))
    x = np.where(hidden[rows], np.nan, values[rows])
    source = values[~held]
    mean, std = np.full(values.shape, np.nan), np.full(values.shape, np.nan)
    part = fitted_completion(source, x, method, fits)
    mean[rows], std[rows] = part.mean, part.std
    held_out = np.where(hidden, np.nan, values)
    if method == "svd+ridge":
        return blend(Completion(mean, std), cache.get(held_out, "ridge", hidden.any(axis=1)))
    if method == "gp":  # complete_gp's rule, with the base fitted on the kept rows
        todo = gp.process_rows(x)
        base = gp.base_rows(source)
        if todo.any() and len(base) >= gp.MIN_ROWS:
            some = rows[todo]
            part = fits.get(base, "auto").residual_process(held_out, some)
            mean[some], std[some] = part.mean, part.std
    return Completion(mean, std)


#: What a :class:`FitStore` holds: ``svd`` or a covariance estimator.
KINDS = ("svd", "auto", "em", "em-shrink", "pairwise", "factor", "paper")


def _read_fit(f, i: int, kind: str, n_items: int, at: str) -> dict[str, np.ndarray]:
    """Fit ``i``'s arrays from a :class:`~benchsel._npz.CheckedNpz`, each header checked
    against the shape the fit needs before it is read, then :func:`check_fit`."""
    def read(name, shape=None, kinds="fb", max_elements=None):
        return f.array(f"{i}.{name}", shape=shape, kinds=kinds, max_elements=max_elements,
                       label=f"fit {i}.{name}")

    vector = (n_items,)
    arrays = {"std_mean": read("std_mean", vector), "std_scale": read("std_scale", vector),
              "std_constant": read("std_constant", vector)}
    if kind == "svd":
        basis = read("basis", kinds="f", max_elements=n_items * n_items)
        if basis.ndim != 2 or basis.shape[0] != n_items or basis.shape[1] > n_items:
            raise ValueError(f"{at}.basis: shape {basis.shape}, expected ({n_items}, rank)")
        rank = basis.shape[1]
        arrays.update(scale=read("scale", vector), rmse=read("rmse", vector), basis=basis,
                      coord_mean=read("coord_mean", (rank,)),
                      coord_cov=read("coord_cov", (rank, rank)))
    else:
        n_cols = int(np.sum(arrays["std_constant"] == 0))
        arrays.update(fallback_mean=read("fallback_mean", vector),
                      fallback_std=read("fallback_std", vector), mean=read("mean", (n_cols,)))
        if kind == "factor":
            loadings = read("loadings", kinds="f", max_elements=n_cols * max(n_cols, 1))
            if loadings.ndim != 2 or loadings.shape[0] != n_cols:
                raise ValueError(f"{at}.loadings: shape {loadings.shape}, expected "
                                 f"({n_cols}, rank)")
            arrays.update(loadings=loadings, noise=read("noise", (n_cols,)))
        else:
            arrays["covariance"] = read("covariance", (n_cols,) * 2)
    check_fit(arrays, SvdFit if kind == "svd" else GaussianFit, at)
    return arrays


def check_fit(arrays: dict, fit_type, at: str) -> None:
    """The values of one stored fit, before it is used: ``ValueError`` naming ``at``
    and the array unless each is what a fit can hold.

    Scales are positive and finite on the columns the fit standardizes
    (a column no source row has may be NaN, never infinite); means,
    covariances and the basis are finite; covariances are symmetric, a
    Gaussian's positive definite, the coordinates' with no negative
    eigenvalue beyond rounding; the basis is orthonormal.
    """
    def fail(name, what):
        raise ValueError(f"{at}.{name}: {what}")

    for name, a in arrays.items():
        if np.isinf(a).any():
            fail(name, "holds an infinite value")
    live = arrays["std_constant"] == 0
    scale = arrays["std_scale"]
    if not (np.isfinite(scale[live]).all() and (scale[live] > 0).all()
            and np.isfinite(arrays["std_mean"][live]).all()):
        fail("std_scale", "expected a positive scale and a finite mean for every column "
                          "the fit standardizes")
    if fit_type is GaussianFit:
        if np.any(arrays["fallback_std"] < 0):
            fail("fallback_std", "negative")
        vectors, squares = {"mean": arrays["mean"]}, {}
        if "loadings" in arrays:  # W W^T + diag(noise) is positive definite with noise > 0
            vectors["loadings"] = arrays["loadings"]
            if not (np.isfinite(arrays["noise"]).all() and (arrays["noise"] > 0).all()):
                fail("noise", "expected a positive finite variance for every column")
        else:
            squares["covariance"] = arrays["covariance"]
    else:
        if np.any(arrays["scale"] <= 0) or np.any(arrays["rmse"] < 0):
            fail("scale", "a scale or residual that is not positive")
        basis = arrays["basis"]
        if not np.isfinite(basis).all() or \
                not np.allclose(basis.T @ basis, np.eye(basis.shape[1]), atol=1e-6):
            fail("basis", "not orthonormal")
        vectors, squares = {"coord_mean": arrays["coord_mean"]}, {"coord_cov":
                                                                  arrays["coord_cov"]}
    for name, a in vectors.items():
        if not np.isfinite(a).all():
            fail(name, "not finite")
    for name, a in squares.items():
        if not np.isfinite(a).all():
            fail(name, "not finite")
        if a.size:
            top = max(float(np.max(np.abs(a))), 1.0)
            if not np.allclose(a, a.T, rtol=0, atol=1e-9 * top):
                fail(name, "not symmetric")
            smallest = np.linalg.eigvalsh(a)[0]
            # Every covariance estimator floors its eigenvalues (psd_project): a Gaussian
            # fit's is positive definite; the coordinates' covariance may be singular.
            if smallest <= 0 if name == "covariance" else smallest < -1e-8 * top:
                fail(name, "is not positive definite" if name == "covariance" else
                     "has a negative eigenvalue")
