"""An NPZ archive read member by member, each checked before it is allocated.

``numpy.load`` trusts an archive: a member whose header declares 10^12
elements is a memory error of terabytes, a truncated file a
``zipfile.BadZipFile``, a pickled member code to run. benchsel's own
archives (cached and shipped fits) are read through :class:`CheckedNpz`
instead: every member's header is read first, its dtype must be a plain
number, boolean or text, and its shape the one the caller expects, so
nothing is allocated that the caller did not ask for; every failure of a
damaged archive is a ``ValueError`` naming it.
"""

from __future__ import annotations

import io
import math
import zipfile
import zlib

import numpy as np

__all__ = ["DAMAGED", "CheckedNpz"]

#: What a damaged archive raises while numpy or zipfile reads it (a bad CRC, a
#: truncated or garbled member, a header declaring an absurd shape, an unsupported
#: zip version, a flipped bit that marks a member encrypted: zipfile's RuntimeError).
DAMAGED = (OSError, EOFError, KeyError, TypeError, AttributeError, NotImplementedError,
           SyntaxError, UnicodeDecodeError, OverflowError, RuntimeError, MemoryError,
           zipfile.BadZipFile, zlib.error)


class CheckedNpz:
    """The members of an NPZ archive held in ``data``, read on request.

    Parameters
    ----------
    data : bytes
        The archive.
    where : str
        Names the archive in messages.
    """

    def __init__(self, data: bytes, where: str):
        self.where = where
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(data))
            self.names = {info.filename.removesuffix(".npy") for info in self._zip.infolist()}
        except DAMAGED as err:
            raise ValueError(f"{where}: not a readable NPZ archive ({type(err).__name__})") \
                from None

    def __enter__(self) -> CheckedNpz:
        return self

    def __exit__(self, *exc) -> None:
        self._zip.close()

    def array(self, name: str, shape: tuple | None = None, kinds: str = "fb",
              max_elements: int | None = None, label: str | None = None) -> np.ndarray:
        """The member ``name``, if its header declares ``shape`` (when None, any shape
        of at most ``max_elements`` float64s' worth of bytes) and a dtype of a kind in
        ``kinds``; ``label`` names it in messages (``name`` by default)."""
        at = f"{self.where}: {label or name}"
        if name not in self.names:
            raise ValueError(f"{at}: missing")
        try:
            with self._zip.open(f"{name}.npy") as fh:
                version = np.lib.format.read_magic(fh)
                if version == (1, 0):
                    declared, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
                elif version == (2, 0):
                    declared, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
                else:
                    raise ValueError(f"{at}: NPY format version {version} is not read")
                if dtype.kind not in kinds or dtype.hasobject:
                    raise ValueError(f"{at}: dtype {dtype}, expected "
                                     f"{' or '.join(_KINDS[k] for k in kinds)}")
                if shape is not None and tuple(declared) != tuple(shape):
                    raise ValueError(f"{at}: shape {tuple(declared)}, expected {tuple(shape)}")
                count = math.prod(declared)
                if max_elements is not None and count * max(dtype.itemsize, 1) > \
                        max_elements * 8:
                    raise ValueError(f"{at}: declares {count} elements of {dtype}, more "
                                     "than it may hold")
                raw = fh.read(count * dtype.itemsize)
            if len(raw) != count * dtype.itemsize:
                raise ValueError(f"{at}: truncated")
            flat = np.frombuffer(raw, dtype=dtype)
            out = flat.reshape(declared[::-1]).T if fortran else flat.reshape(declared)
            return np.array(out)  # writable, native order, its own memory
        except ValueError as err:  # numpy's, on a garbled header, names no file
            text = str(err)
            raise ValueError(text if text.startswith(self.where) else f"{at}: {text}") \
                from None
        except DAMAGED as err:
            raise ValueError(f"{at}: damaged ({type(err).__name__})") from None


_KINDS = {"f": "floats", "b": "booleans", "i": "integers", "u": "unsigned integers",
          "U": "text"}
