"""Files in the user's cache folder, trusted no further than the user's own.

``benchsel predict DATA`` keeps auto's decisions and fits in a cache folder
(:mod:`benchsel.prediction.memo`). Whoever else can write into that folder
could plant a symbolic link that the next run writes through, a FIFO that
hangs it, or a file that changes its answers. So:

* a folder benchsel creates there is private (mode 0700);
* a folder is used only when it is a folder (below the one the user named:
  not a link to one), owned by this user and writable by nobody else;
  otherwise the cache is off for the run, with one warning saying why;
* an entry is read only when it is a regular file owned by this user,
  opened without following a link and without blocking, and no larger
  than its caller allows;
* an entry is written as a new file in the same folder, then renamed over
  the old name: a link, FIFO or device in its place is replaced, never
  written through.

Every failure here (a missing, damaged, foreign or unreadable entry, a name
too long for the file system) makes the cache only slower, never an error.
"""

from __future__ import annotations

import os
import stat
import tempfile
import warnings
from pathlib import Path

__all__ = ["CacheWarning", "cache_folder", "read_entry", "write_entry"]


class CacheWarning(UserWarning):
    """A cache folder or entry was not used (the run goes on without it)."""


def _mine(st: os.stat_result) -> bool:
    """Owned by this user and writable by no one else (group or others)."""
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _refuse(folder: Path, why: str) -> None:
    warnings.warn(f"{folder}: {why}; the cache is not used for this run", CacheWarning,
                  stacklevel=3)


def cache_folder(root: Path, name: str) -> Path | None:
    """The folder ``root/name``, created private if missing; None when it cannot be trusted.

    ``root`` is the folder the user named (``BENCHSEL_CACHE_DIR``) or the
    default one: a link there is followed, as the user chose it. ``root``
    must be this user's and writable by no one else; ``name`` below it
    must be a folder, not a link, and the same. Missing folders are created
    with mode 0700 (``root``'s parents as ``mkdir -p`` would).
    """
    try:
        if not root.exists():
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = root.stat()
        if not stat.S_ISDIR(st.st_mode):
            _refuse(root, "is not a folder")
            return None
        if not _mine(st):
            _refuse(root, "belongs to another user or others can write it (chmod go-w it, "
                          "or set BENCHSEL_CACHE_DIR to a folder of your own)")
            return None
        folder = root / name
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        st = folder.lstat()
        if not stat.S_ISDIR(st.st_mode) or not _mine(st):
            _refuse(folder, "is not a private folder of yours (a link, a file, or writable "
                            "by others); remove it")
            return None
        return folder
    except OSError as err:
        _refuse(root, f"cannot be used ({err.strerror or err})")
        return None


def read_entry(path: Path, max_bytes: int) -> bytes | None:
    """The bytes of the cache entry ``path``, or None.

    None when there is no such entry, or it is not a regular file of this
    user's (a link is not followed, a FIFO not waited on), or it is larger
    than ``max_bytes``, or it cannot be read; a foreign entry is named in a
    :class:`CacheWarning`.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as err:
        # ELOOP: a symbolic link in the entry's place (O_NOFOLLOW).
        why = "a link, not a cache file" if path.is_symlink() else \
            f"cannot be read ({err.strerror or err})"
        warnings.warn(f"{path}: {why}; ignored", CacheWarning, stacklevel=2)
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _mine(st):
            warnings.warn(f"{path}: not a regular file of yours; ignored", CacheWarning,
                          stacklevel=2)
            return None
        if st.st_size > max_bytes:
            warnings.warn(f"{path}: {st.st_size} bytes, more than a cache entry may be "
                          f"({max_bytes}); ignored", CacheWarning, stacklevel=2)
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(max_bytes + 1)  # bounded even if it grew since fstat
        return data if len(data) <= max_bytes else None
    except OSError:
        return None
    finally:
        os.close(fd)


def write_entry(path: Path, data: bytes) -> bool:
    """Write ``data`` as the cache entry ``path``: a private temporary file in the same
    folder, renamed over ``path``. Returns whether it was written (a cache is never
    worth an error)."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)  # replaces whatever has the name; follows no link
        return True
    except OSError:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        return False
