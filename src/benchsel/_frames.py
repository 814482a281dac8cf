"""Result rows as pandas DataFrames: the ``to_frame()`` of every table a command prints.

pandas is imported only when a frame is asked for: the command line's
start-up does not pay for it.
"""

from __future__ import annotations

from dataclasses import fields


def rows_frame(rows, index, row_type):
    """The dataclass ``rows`` as a DataFrame, one column per field, indexed by ``index``.

    Parameters
    ----------
    rows : sequence of dataclass instances
    index : str or list of str
        The field(s) that name a row (``"method"``, ``["objective", "k"]``).
    row_type : type
        The rows' dataclass: its fields are the columns, also of an empty table.
    """
    import pandas as pd

    columns = [f.name for f in fields(row_type)]
    records = [[getattr(row, name) for name in columns] for row in rows]
    return pd.DataFrame(records, columns=columns).set_index(index)
