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
* an entry is sealed: its first line is an HMAC-SHA256 of its name and
  contents under a random key kept in the cache folder (``key``, mode
  0600), so an entry changed by anything but benchsel on this account (a
  hand edit, a copy from another machine, a damaged disk) is skipped,
  whatever it holds; what is read is then checked as well, as a plan is;
* an entry is written as a new file in the same folder, then renamed over
  the old name: a link, FIFO or device in its place is replaced, never
  written through.

Every failure here (a missing, damaged, foreign or unreadable entry, a name
too long for the file system) makes the cache only slower, never an error.
The seal is no defence against the user's own account, which can read the
key (and change the code): only the folder's ownership is.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import tempfile
import warnings
from pathlib import Path

__all__ = ["READ_FAILURES", "CacheFolder", "CacheWarning"]

#: What reading back a damaged entry may raise. The readers check what they read and
#: say why in a ValueError; any other is a check missed, and still only a slower run
#: (the warning names the error's type, for a bug report).
READ_FAILURES = (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError,
                 RecursionError, UnicodeDecodeError, MemoryError)

#: The first line of a sealed entry: this, the hex HMAC, a newline.
_SEAL = b"benchsel-cache-seal-1 "
_KEY = "key"
_KEY_BYTES = 32


class CacheWarning(UserWarning):
    """A cache folder or entry was not used (the run goes on without it)."""


def _mine(st: os.stat_result) -> bool:
    """Owned by this user and writable by no one else (group or others)."""
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _refuse(folder: Path, why: str) -> None:
    warnings.warn(f"{folder}: {why}; the cache is not used for this run", CacheWarning,
                  stacklevel=4)


def _ignore(path: Path, why: str) -> None:
    warnings.warn(f"{path}: {why}; ignored", CacheWarning, stacklevel=4)


def _read_private(path: Path, max_bytes: int) -> bytes | None:
    """The bytes of ``path`` if it is a regular file of this user's of at most
    ``max_bytes``; None if there is none; ``OSError`` or ``ValueError`` saying why not."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError:
        if path.is_symlink():  # ELOOP, from O_NOFOLLOW
            raise ValueError("a link, not a cache file") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _mine(st):
            raise ValueError("not a regular file of yours")
        if st.st_size > max_bytes:
            raise ValueError(f"{st.st_size} bytes, more than it may be ({max_bytes})")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(max_bytes + 1)  # bounded even if it grew since fstat
        if len(data) > max_bytes:
            raise ValueError(f"more than {max_bytes} bytes")
        return data
    finally:
        os.close(fd)


def _replace(path: Path, data: bytes) -> None:
    """A private temporary file beside ``path``, renamed over it (``OSError`` if not)."""
    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)  # replaces whatever has the name; follows no link
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class CacheFolder:
    """One private folder of the cache, its entries sealed with the cache's key.

    Made by :meth:`open`, which checks the folders; :meth:`read` and
    :meth:`write` never raise.
    """

    def __init__(self, path: Path, key: bytes):
        self.path = path
        self._key = key

    @classmethod
    def open(cls, root: Path, name: str) -> CacheFolder | None:
        """The folder ``root/name``, created private if missing, with the cache's key
        (created on first use); None, after one warning, when it cannot be trusted.

        ``root`` is the folder the user named (``BENCHSEL_CACHE_DIR``) or the
        default one: a link there is followed, as the user chose it. ``root``
        must be this user's and writable by no one else; ``name`` below it
        and the key must not be links, and be the same. Missing folders are
        created with mode 0700 (``root``'s parents as ``mkdir -p`` would).
        """
        try:
            if not root.exists():
                root.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = root.stat()
            if not stat.S_ISDIR(st.st_mode):
                _refuse(root, "is not a folder")
                return None
            if not _mine(st):
                _refuse(root, "belongs to another user or others can write it (chmod go-w "
                              "it, or set BENCHSEL_CACHE_DIR to a folder of your own)")
                return None
            folder = root / name
            try:
                os.mkdir(folder, 0o700)
            except FileExistsError:
                pass
            st = folder.lstat()
            if not stat.S_ISDIR(st.st_mode) or not _mine(st):
                _refuse(folder, "is not a private folder of yours (a link, a file, or "
                                "writable by others); remove it")
                return None
            key = cls._key(root / _KEY)
        except ValueError as err:
            _refuse(root / _KEY, f"{err}; remove it")
            return None
        except OSError as err:
            _refuse(root, f"cannot be used ({err.strerror or err})")
            return None
        return cls(folder, key)

    @staticmethod
    def _key(path: Path) -> bytes:
        """The cache's key, made (0600, exclusively) if there is none."""
        key = _read_private(path, _KEY_BYTES)
        if key is None:
            key = secrets.token_bytes(_KEY_BYTES)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
            try:
                fd = os.open(path, flags, 0o600)
            except FileExistsError:  # another run made it first: use theirs
                key = _read_private(path, _KEY_BYTES)
            else:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(key)
        if key is None or len(key) != _KEY_BYTES:
            raise ValueError("not a key benchsel made")
        return key

    def _tag(self, name: str, data: bytes) -> bytes:
        mac = hmac.new(self._key, name.encode() + b"\0", hashlib.sha256)
        mac.update(data)
        return mac.hexdigest().encode()

    def read(self, name: str, max_bytes: int) -> bytes | None:
        """The contents of entry ``name``, or None: none there, or not a regular file of
        this user's (a link is not followed, a FIFO not waited on), larger than
        ``max_bytes``, unreadable, or not sealed by this cache's key (each of these
        named in a :class:`CacheWarning`)."""
        path = self.path / name
        try:
            data = _read_private(path, max_bytes + len(_SEAL) + 65)
        except ValueError as err:
            _ignore(path, str(err))
            return None
        except OSError as err:
            _ignore(path, f"cannot be read ({err.strerror or err})")
            return None
        if data is None:
            return None
        head, _, body = data.partition(b"\n")
        if not (head.startswith(_SEAL) and
                hmac.compare_digest(head[len(_SEAL):], self._tag(name, body))):
            _ignore(path, "not sealed by this cache's key (changed since benchsel wrote it, "
                          "or not written by benchsel on this account)")
            return None
        return body

    def write(self, name: str, data: bytes) -> bool:
        """Seal ``data`` and write it as entry ``name``: a private temporary file in the
        folder, renamed over the entry. Returns whether it was written (a cache is never
        worth an error)."""
        try:
            _replace(self.path / name, _SEAL + self._tag(name, data) + b"\n" + data)
            return True
        except OSError:
            return False
