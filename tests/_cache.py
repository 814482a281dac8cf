"""Reading the cache's entries in tests, past their seal (benchsel.cache_files)."""

from __future__ import annotations

from pathlib import Path


def kept(path: Path) -> bytes:
    """The contents of a cache entry: what follows its seal line."""
    seal, newline, body = Path(path).read_bytes().partition(b"\n")
    assert seal.startswith(b"benchsel-cache-seal-1 ") and newline, path
    return body


def kept_fits(path: Path):
    """The :class:`~benchsel.prediction.fits.FitStore` a cache entry holds."""
    from benchsel.prediction.fits import FitStore

    return FitStore.loads(kept(path), str(path))
