"""Writing results: atomically (a temporary file beside the target, then a rename), never
over an input the command reads, never through a link the user did not name."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "write_text_atomic",
    "write_json_atomic",
    "check_output_path",
    "check_output_folder",
]

def _resolve_link(path: Path) -> Path:
    """The file a symbolic link points to (followed to its end), or an error naming ``path``."""
    try:
        return path.resolve()
    except (RuntimeError, OSError) as err:  # RuntimeError up to Python 3.12, OSError after
        raise ValueError(f"{path}: is a symbolic link that leads back to itself (a loop); "
                         "remove it or choose another path") from err


def _read_only(path: Path) -> bool:
    """No write permission: for this user, or (as root, who may write anyway) for anyone."""
    return not os.access(path, os.W_OK) or not path.stat().st_mode & 0o222


def _refuse_inputs(target: Path, shown: str, protect: Iterable | None, same: str) -> None:
    """An error (``"{shown}: {same}"``) where ``target`` is one of the ``protect`` files,
    or lies inside one of its folders."""
    for other in protect or ():
        if other is None or not Path(other).exists():
            continue
        other = Path(other)
        if target.exists() and target.samefile(other):
            raise ValueError(f"{shown}: {same}")
        if other.is_dir() and _resolve_link(target).is_relative_to(other.resolve()):
            raise ValueError(f"{shown}: refusing to write inside the input folder {other}")


def check_output_path(path: str | os.PathLike, *, protect: Iterable | None = None,
                      flag: str | None = None) -> Path:
    """Refuse an output file that cannot or must not be written; return the path to write.

    The rules of :func:`write_text_atomic`, checked on their own so that the
    command line can refuse a bad target before any work.

    Parameters
    ----------
    path : path-like
        The file the user named.
    protect : iterable of path-like, optional
        Input files that must never be overwritten, and input folders that
        must not be written into.
    flag : str, optional
        The option that named ``path`` (``-o``), for the empty-name error.

    Returns
    -------
    Path
        Where to write: ``path``, or the file a symbolic link points to
        (written through, the link kept).

    Raises
    ------
    ValueError
        An empty name, a symbolic link loop, a folder, a read-only file, an
        input file or a path inside an input folder; the message names ``path``.
    FileNotFoundError
        The folder the file would go in does not exist.
    """
    if str(path) == "":
        raise ValueError(f"{flag + ': ' if flag else ''}an empty file name; give the name "
                         "of a file to write")
    named = Path(path)
    target = _resolve_link(named) if named.is_symlink() else named
    shown = str(named) if target == named else f"{named} (a link to {target})"
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise FileNotFoundError(f"{shown}: cannot write it, the folder {directory} does not "
                                "exist; create it first or choose another path")
    _refuse_inputs(target, shown, protect, "refusing to overwrite an input file")
    if target.is_dir():
        raise ValueError(f"{shown}: is a folder; give the name of a file to write")
    if target.is_file() and _read_only(target):
        # As the shell's '>' does: a file without write permission is not replaced.
        raise PermissionError(f"{shown}: is read-only; make it writable or choose another "
                              "path")
    if not target.exists() and not os.access(directory, os.W_OK | os.X_OK):
        raise PermissionError(f"{shown}: cannot write it, the folder {directory} is not "
                              "writable")
    return target


def check_output_folder(path: str | os.PathLike, *, protect: Iterable | None = None,
                        flag: str | None = None) -> Path:
    """Refuse a folder to write files into that cannot or must not be used.

    The folder may be missing (it is then created, with its parents); an
    existing one must be a writable folder, not a file, and neither an
    input nor inside an input folder. Errors name ``path``.
    """
    if str(path) == "":
        raise ValueError(f"{flag + ': ' if flag else ''}an empty folder name; give the "
                         "folder to write the files into")
    named = Path(path)
    target = _resolve_link(named) if named.is_symlink() else named
    _refuse_inputs(target, str(named), protect, "is an input; refusing to write files into it")
    existing = target
    while not existing.exists() and not existing.is_symlink():
        if existing.parent == existing:
            break
        existing = existing.parent
    if existing.is_symlink() and not existing.exists():
        raise ValueError(f"{named}: {existing} is a dangling symbolic link; cannot create "
                         "the folder through it")
    if not existing.is_dir():
        what = "exists and is not a folder" if existing == target else \
            f"cannot be created: {existing} is a file, not a folder"
        raise ValueError(f"{named}: {what}; give a folder for the files")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PermissionError(f"{named}: the folder {existing} is not writable")
    return target


def write_text_atomic(
    path: str | os.PathLike, text: str | bytes, *, protect: Iterable | None = None
) -> None:
    """Write ``text`` (or ``bytes``) to ``path`` atomically.

    Parameters
    ----------
    protect : iterable of path-like, optional
        Input files that must never be overwritten, and input folders that
        must not be written into; either is an error. A target that exists
        and is not a regular file (``/dev/null``, a FIFO) is written to, not
        replaced; a symbolic link is written through (the file it points to
        is replaced atomically, the link kept); a folder, a read-only file,
        a symbolic link loop, an empty name, or a path in a missing folder
        is an error that says so (:func:`check_output_path`). Any error
        names ``path``, never the temporary file.
    """
    mode = "wb" if isinstance(text, bytes) else "w"
    target = check_output_path(path, protect=protect)
    try:
        if target.exists() and not target.is_file():
            # A device or pipe the user named (/dev/null, /dev/stdout, a FIFO): write to
            # it, never replace it.
            with target.open(mode) as fh:
                fh.write(text)
            return
        _replace(target, text, mode)
    except OSError as err:
        # The temporary file's name means nothing to the user: say which of theirs failed.
        # Same class (a BrokenPipeError stays one), the user's path in the message.
        reason = err.strerror or str(err)
        raise type(err)(f"{path}: cannot write it ({reason})") from None


def _replace(path: Path, text: str | bytes, mode: str) -> None:
    """Write a temporary file beside ``path``, then rename it over ``path``."""
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, mode) as fh:
            fh.write(text)
        # mkstemp creates 0600; give the file the mode a plain open() would
        # (or keep the mode of the file it replaces).
        if path.exists():
            permissions = path.stat().st_mode & 0o777
        else:
            umask = os.umask(0)
            os.umask(umask)
            permissions = 0o666 & ~umask
        os.chmod(tmp, permissions)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | os.PathLike, obj, *, protect=None,
                      allow_nan: bool = True) -> None:
    """Write ``obj`` as indented JSON to ``path`` atomically.

    ``allow_nan=False`` refuses NaN and infinities (strict JSON) instead of
    writing them as ``NaN``/``Infinity``.
    """
    write_text_atomic(path, json.dumps(obj, indent=2, allow_nan=allow_nan) + "\n",
                      protect=protect)
