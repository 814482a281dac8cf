"""Distinct rows of a boolean mask, fast: missingness patterns.

``np.unique(mask, axis=0)`` sorts whole rows as opaque records, which is
slow when it runs thousands of times (once per conditional solve in the
protocols). Packing each row into bits first gives short keys -- one
integer when the row has at most 64 columns -- that sort the same way:
with the first column in the most significant bit, byte-wise comparison of
the packed rows is the lexicographic order of the boolean rows, so the
patterns come out in ``np.unique``'s order.
"""

from __future__ import annotations

import numpy as np

__all__ = ["unique_rows"]


def unique_rows(mask) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of a boolean matrix, sorted, and each row's pattern.

    Parameters
    ----------
    mask : array-like of bool, shape (R, N)

    Returns
    -------
    patterns : ndarray of bool, shape (G, N)
        As ``np.unique(mask, axis=0)``.
    inverse : ndarray of int, shape (R,)
        ``patterns[inverse]`` equals ``mask``.
    """
    mask = np.asarray(mask, dtype=bool)
    if mask.ndim != 2:
        raise ValueError(f"mask must be 2-D; got shape {mask.shape}")
    if mask.shape[0] == 0:
        return mask.copy(), np.zeros(0, dtype=np.intp)
    packed = np.packbits(mask, axis=1)
    if packed.shape[1] <= 8:
        wide = np.zeros((mask.shape[0], 8), dtype=np.uint8)
        wide[:, : packed.shape[1]] = packed
        keys = wide.view(">u8").ravel()  # big-endian: byte order is numeric order
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(packed, axis=0, return_index=True, return_inverse=True)
    return mask[first], inverse.reshape(-1)
