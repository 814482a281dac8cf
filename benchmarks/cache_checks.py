"""What the checks of read-back fits cost, and why EM's fixed point is not one of them.

Two figures behind ``docs/architecture.md`` (the cache section) and
:meth:`benchsel.prediction.fits.GaussianFit.mismatch`:

1. The cost of checking what is read back (``check_fit`` on load, the
   column statistics recomputed at first use, the seal): ``predict`` on a
   bundled board (shipped fits) and on a board of one's own with a warm
   cache, timed in this process with the checks as shipped and with them
   switched off, interleaved.
2. How far each board's EM fits are from EM's fixed point: the largest gap,
   in standard deviations, between a fit's mean and the mean of what the fit
   predicts for its own rows. Small boards sit at rounding; sparse ones do
   not, so the fixed point cannot tell a changed mean from a true one.
3. ``--rebuild``: how far fits made on this machine now are from the shipped
   ones (largest difference per kind and array, in the arrays' own units),
   the figure behind the tolerance of
   ``tests/test_fits.py::test_the_shipped_fits_are_what_each_board_gives_today``
   (run it with ``OMP_NUM_THREADS=1`` for another BLAS path).

    python benchmarks/cache_checks.py                 # 1 and 2, MERGED and HELM Lite
    python benchmarks/cache_checks.py --repeats 5 --boards merged,mteb
    OMP_NUM_THREADS=1 python benchmarks/cache_checks.py --rebuild --boards merged,helm_lite
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import tempfile
import time
import warnings

import numpy as np

import benchsel
from benchsel.cli import main as cli
from benchsel.gaussian.conditional import conditional_moments
from benchsel.prediction import fits as fits_module
from benchsel.prediction.fits import FitStore, GaussianFit
from benchsel.prediction.shipped import board_fits


def _predict(data: str, spec: str) -> float:
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert cli(["predict", data, "--observed", spec, "--json"]) == 0
    return time.perf_counter() - start


@contextlib.contextmanager
def _checks_off():
    """check_fit and the first-use recomputation as no-ops (the seal stays: it is a hash)."""
    saved = (fits_module.check_fit, GaussianFit.mismatch, fits_module.SvdFit.mismatch)
    fits_module.check_fit = lambda *a, **k: None
    GaussianFit.mismatch = fits_module.SvdFit.mismatch = lambda *a, **k: None
    try:
        yield
    finally:
        fits_module.check_fit, GaussianFit.mismatch, fits_module.SvdFit.mismatch = saved


def cost(board: str, repeats: int) -> None:
    scores = benchsel.load_dataset(board)
    spec = f"{scores.items[1]}=0.5"
    with tempfile.TemporaryDirectory() as tmp:
        own = os.path.join(tmp, "own.csv")
        scores.subset(models=list(range(1, scores.n_models))).to_frame().to_csv(own)
        os.environ["BENCHSEL_CACHE_DIR"] = os.path.join(tmp, "cache")
        _predict(own, spec)  # fills the cache
        for data, what in ((board, "bundled (shipped fits)"), (own, "own board, warm cache")):
            times = {"checked": [], "unchecked": []}
            for _ in range(repeats):  # interleaved, so load drifts hit both alike
                times["checked"].append(_predict(data, spec))
                with _checks_off():
                    times["unchecked"].append(_predict(data, spec))
            med = {k: float(np.median(v)) for k, v in times.items()}
            print(f"{board:12s} {what:24s} checked {med['checked']:.3f} s, unchecked "
                  f"{med['unchecked']:.3f} s (median of {repeats})")


def drift(board: str) -> None:
    """Largest |fit mean - mean of its predictions for its own rows| per EM kind."""
    class Watch(FitStore):
        def get(self, source, kind):
            fit = super().get(source, kind)
            if isinstance(fit, GaussianFit) and len(fit.cols) and id(fit) not in seen:
                seen.add(id(fit))
                mu, _ = conditional_moments(fit.z(np.asarray(source, float)), fit.mean,
                                            fit.covariance)
                gaps.setdefault(kind, []).append(float(np.max(np.abs(mu.mean(0) - fit.mean))))
            return fit

    seen, gaps = set(), {}
    model = benchsel.GaussianModel().fit(benchsel.load_dataset(board))
    model.auto_memo.fits = Watch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        board_fits(model)
    print(f"{board:12s} fixed-point gap (std units), largest per kind: " + ", ".join(
        f"{kind} {max(v):.1e} ({len(v)} fits)" for kind, v in sorted(gaps.items())))


def rebuild(board: str) -> None:
    """Largest |fresh - shipped| per fit kind and array, over every fit of the board."""
    from benchsel.prediction.shipped import shipped_fits

    scores = benchsel.load_dataset(board)
    shipped = shipped_fits(scores)
    fresh = benchsel.GaussianModel().fit(scores)
    fresh.auto_memo.fits = FitStore()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = board_fits(fresh)
    worst: dict = {}
    for key, fit in store._fits.items():
        if key not in shipped._fits:
            continue
        theirs = shipped._fits[key].arrays()
        for name, mine in fit.arrays().items():
            gap = float(np.nanmax(np.abs(mine.astype(float) - theirs[name].astype(float)),
                                  initial=0.0))
            worst[(key[0], name)] = max(worst.get((key[0], name), 0.0), gap)
    print(f"{board:12s} fresh vs shipped, largest difference: " + ", ".join(
        f"{kind}.{name} {gap:.1e}" for (kind, name), gap in sorted(worst.items()) if gap > 0))


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boards", default="merged,helm_lite")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rebuild", action="store_true",
                        help="only: fresh fits against the shipped ones")
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = parse()
    if args.rebuild:
        for name in args.boards.split(","):
            rebuild(name)
        raise SystemExit(0)
    for name in args.boards.split(","):
        cost(name, args.repeats)
    for name in args.boards.split(","):
        drift(name)
