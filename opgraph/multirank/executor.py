"""Running the per-rank work: an embedded process pool (default) or a Dask cluster.

Both run the same picklable function per file and return only its compact result; with
Dask, ``distributed.Client(address)`` connects to an existing scheduler. No cluster code
lives here beyond that.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Sequence

from opgraph.errors import OpgraphInputError

Progress = Callable[[int, int], None]


def _noop(_done: int, _total: int) -> None:
    return None


def default_workers() -> int:
    """Worker processes of the embedded pool: every core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _context() -> mp.context.BaseContext:
    """``forkserver`` on Linux (children do not inherit the parent's threads or locks), or
    ``fork`` when the main module cannot be re-imported by a fresh interpreter (a script
    read from stdin)."""
    if not sys.platform.startswith("linux"):
        return mp.get_context()
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if main_file is not None and not os.path.isfile(main_file):
        return mp.get_context("fork")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["opgraph.multirank.worker"])
    return ctx


def run_pool(fn: Callable[..., Any], argsets: Sequence[tuple], workers: int | None = None,
             progress: Progress = _noop) -> list[Any]:
    """``[fn(*a) for a in argsets]`` in a ``ProcessPoolExecutor`` of ``workers`` processes
    (default: all cores), results in input order. Worker processes start with the
    ``forkserver`` method (safe when the parent holds threads); each reads one file.
    An :class:`OpgraphInputError` raised by a worker is raised here unchanged."""
    n = len(argsets)
    workers = min(workers or default_workers(), max(n, 1))
    ctx = _context()
    out: list[Any] = [None] * n
    # one file per worker process: a process reused for a second large rank starts from the
    # first one's fragmented heap and peaks higher than a single-rank build; a fresh
    # (forkserver-forked, modules preloaded) process costs ~50 ms
    extra = {"max_tasks_per_child": 1} if sys.version_info >= (3, 11) and ctx.get_start_method() != "fork" else {}
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, **extra) as ex:
        futs = {ex.submit(fn, *a): i for i, a in enumerate(argsets)}
        done = 0
        try:
            for f in as_completed(futs):
                out[futs[f]] = f.result()
                done += 1
                progress(done, n)
        except BaseException:
            for f in futs:
                f.cancel()
            raise
    return out


def run_dask(fn: Callable[..., Any], argsets: Sequence[tuple], scheduler: str,
             progress: Progress = _noop) -> list[Any]:
    """``[fn(*a) for a in argsets]`` on the Dask cluster at ``scheduler``
    (``tcp://host:8786``): one task per argument set, results gathered in input order."""
    try:
        from distributed import Client
    except ImportError:
        raise OpgraphInputError(scheduler, "--scheduler needs Dask: pip install 'opgraph[dask]'") from None
    try:
        client = Client(scheduler, timeout="20s", set_as_default=False)
    except (OSError, TimeoutError) as e:
        raise OpgraphInputError(scheduler, f"cannot connect to the Dask scheduler: {e}") from None
    try:
        futs = [client.submit(fn, *a, pure=False, key=f"opgraph-rank-{i}-{os.getpid()}-{id(argsets)}")
                for i, a in enumerate(argsets)]
        out: list[Any] = []
        for f in futs:  # all tasks run at once; results are collected in input order
            out.append(f.result())
            progress(len(out), len(futs))
            f.release()
        return out
    finally:
        client.close()


def run(fn: Callable[..., Any], argsets: Sequence[tuple], workers: int | None = None,
        scheduler: str | None = None, progress: Progress = _noop) -> list[Any]:
    """Dispatch to :func:`run_dask` when ``scheduler`` is given, else :func:`run_pool`."""
    if scheduler:
        return run_dask(fn, argsets, scheduler, progress)
    return run_pool(fn, argsets, workers, progress)
