"""``--jobs`` and ``--dask``: the workers a command fans its work out to."""

from __future__ import annotations

import contextlib


def _fan_out(args) -> dict:
    """``n_jobs`` and ``backend`` for the library: ``--jobs`` workers, or every Dask worker."""
    if getattr(args, "dask", None) is not None:
        return {"n_jobs": -1, "backend": "dask"}
    return {"n_jobs": getattr(args, "jobs", 1), "backend": None}


@contextlib.contextmanager
def _workers(args):
    """:func:`_fan_out`'s keywords, with the client of ``--dask`` alive for the block."""
    client = _dask_client(getattr(args, "dask", None))
    try:
        yield _fan_out(args)
    finally:
        if client is not None:
            client.close()


def _dask_client(address: str | None):
    """A dask.distributed client for ``--dask`` (``local`` starts a local cluster)."""
    if address is None:
        return None
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ValueError(
            "--dask needs dask.distributed; install it with 'pip install benchsel[dask]'"
        ) from None
    if address == "local":
        return Client(LocalCluster(processes=True, dashboard_address=None))
    return Client(address)
