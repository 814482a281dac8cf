"""Plain-text tables, as the command line prints them and the results explain themselves."""

from __future__ import annotations

import math

__all__ = ["text_table"]


def text_table(headers: list[str], rows: list[list]) -> str:
    """Columns padded to their widest cell, a dashed rule under the header.

    A float is written with four significant digits (``-`` for NaN); anything
    else as ``str`` gives it.
    """
    def cell(v) -> str:
        if isinstance(v, float):
            return "-" if math.isnan(v) else f"{v:.4g}"
        return str(v)

    cells = [[str(h) for h in headers]] + [[cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
