"""Comparisons of results that two numerically equal computations may round differently.

Two runs that take different BLAS or numpy paths (another release, another
number of threads, a fit refitted instead of read back) agree to rounding,
not to the bit: results are compared at a tolerance, never with ``==``.
"""

from __future__ import annotations

import math


def assert_json_close(got, want, rel: float = 1e-9, where: str = "$") -> None:
    """Assert two JSON values are equal, floats to within ``rel`` of the larger.

    Every key, string, boolean, null and list length must match exactly; a
    number may differ by ``rel`` times the larger magnitude (or ``rel``
    absolutely, near zero). ``where`` is the JSON path named in a failure.
    """
    number = (int, float)
    if isinstance(want, number) and not isinstance(want, bool):
        assert isinstance(got, number) and not isinstance(got, bool), f"{where}: {got!r}"
        assert math.isclose(got, want, rel_tol=rel, abs_tol=rel), \
            f"{where}: {got!r} differs from {want!r} by more than {rel:g}"
    elif isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), \
            f"{where}: keys {sorted(got) if isinstance(got, dict) else got!r} != {sorted(want)}"
        for key in want:
            assert_json_close(got[key], want[key], rel, f"{where}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_json_close(g, w, rel, f"{where}[{i}]")
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"
