"""Run independent pieces of work (folds, trials, log files) serially or through joblib.

Every protocol that fans out does it through :func:`map_tasks`, so the
choice between a plain loop, joblib's processes and a Dask cluster (joblib's
``dask`` backend, once a ``dask.distributed`` client exists) is made in one
place, and results always come back in task order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable

from threadpoolctl import threadpool_limits

__all__ = ["map_tasks", "one_blas_thread"]


class one_blas_thread(contextlib.ContextDecorator):  # noqa: N801 - used like a function
    """One BLAS thread inside: ``with one_blas_thread():`` or ``@one_blas_thread()``.

    The one convention for pinning threads. For work on small matrices, where
    BLAS threads cost more in start-up and contention than they save (about 3x
    slower with two threads on a busy two-core machine), and for a fold or
    trial that must round alike in this process and in a joblib worker (which
    gets one thread per job), so that ``n_jobs`` does not change a digit.

    Parameters
    ----------
    user_api : {"blas", None}, default "blas"
        None pins OpenMP pools too (scikit-learn's).
    """

    def __init__(self, user_api: str | None = "blas"):
        self.user_api = user_api
        self._limits = []

    def _recreate_cm(self):  # each decorated call gets its own (threads may share fn)
        return type(self)(self.user_api)

    def __enter__(self):
        self._limits.append(threadpool_limits(1, user_api=self.user_api))
        return self

    def __exit__(self, *exc) -> bool:
        self._limits.pop().restore_original_limits()
        return False


def map_tasks(
    fn: Callable,
    tasks: Iterable[tuple],
    *,
    n_jobs: int = 1,
    backend: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list:
    """``[fn(*task) for task in tasks]``, in parallel unless ``n_jobs == 1``.

    Parameters
    ----------
    fn : callable
        A module-level function (joblib pickles it for its workers).
    tasks : iterable of tuple
        Positional arguments of each call.
    n_jobs : int, default 1
        Workers; ``-1`` is every core. With ``1`` and no ``backend`` the
        calls run in this process, one after another (joblib is not
        imported).
    backend : str, optional
        A joblib backend, e.g. ``"dask"`` (default ``"loky"``).
    progress : callable, optional
        ``progress(done, total)`` after each call, in task order.

    Returns
    -------
    list
        The results, in the order of ``tasks``.
    """
    tasks = list(tasks)
    results: list = []

    def collect(outputs) -> list:
        for out in outputs:
            results.append(out)
            if progress is not None:
                progress(len(results), len(tasks))
        return results

    if n_jobs == 1 and backend is None:
        return collect(fn(*task) for task in tasks)
    from joblib import Parallel, delayed, parallel_config

    with parallel_config(backend=backend or "loky", n_jobs=n_jobs):
        return collect(Parallel(return_as="generator")(delayed(fn)(*task) for task in tasks))
