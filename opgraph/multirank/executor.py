"""Running the per-rank work: an embedded process pool (default) or a Dask cluster.

Both run the same picklable function per file and return only its compact result; with
Dask, ``distributed.Client(address)`` connects to an existing scheduler. No cluster code
lives here beyond that.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import re
import sys
import threading
from multiprocessing import popen_forkserver, spawn
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


_PREP_LOCK = threading.Lock()


class _NoMainPopen(popen_forkserver.Popen):
    """A forkserver child that does not import the parent's ``__main__``. multiprocessing
    re-runs the main script in each child (as ``__mp_main__``) so that functions defined
    there can be unpickled; the pool runs opgraph's own functions only, and re-running a
    user's script without an ``if __name__ == "__main__":`` guard ran its body again in
    every worker (``opgraph.load(folder)`` then died with ``BrokenProcessPool``)."""

    def _launch(self, process_obj: Any) -> None:
        real = spawn.get_preparation_data

        def without_main(name: str) -> dict[str, Any]:
            d = real(name)
            d.pop("init_main_from_path", None)
            d.pop("init_main_from_name", None)
            return d

        with _PREP_LOCK:
            spawn.get_preparation_data = without_main
            try:
                super()._launch(process_obj)
            finally:
                spawn.get_preparation_data = real


class _Process(mp.context.ForkServerProcess):
    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        return _NoMainPopen(process_obj)


class _Context(mp.context.ForkServerContext):
    """``forkserver`` whose processes never import ``__main__`` (:class:`_NoMainPopen`)."""

    Process = _Process


def _context() -> mp.context.BaseContext:
    """``forkserver`` on Linux (children do not inherit the parent's threads or locks, and
    never re-run the user's main script: :class:`_NoMainPopen`), or ``fork`` when
    forkserver is not available."""
    if not sys.platform.startswith("linux") or "forkserver" not in mp.get_all_start_methods():
        return mp.get_context()
    ctx = _Context()
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


#: Seconds to wait for a scheduler to accept the connection and to send the first bytes of
#: its handshake (a Dask server sends it at once); a silent port fails within this bound.
PROBE_TIMEOUT_S = 10.0
#: The largest first message a Dask scheduler's handshake can plausibly be (its length
#: prefix); an HTTP banner read as a length asks for exabytes.
_MAX_HANDSHAKE_BYTES = 1 << 24
_ADDRESS_RE = re.compile(r"(?:tcp://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})")


def parse_scheduler(address: str) -> tuple[str, int]:
    """``(host, port)`` of a ``tcp://HOST:PORT`` (or ``HOST:PORT``; IPv6 in brackets)
    scheduler address; any other form is an :class:`OpgraphInputError` naming it."""
    m = _ADDRESS_RE.fullmatch(address.strip()) if isinstance(address, str) else None
    if m is None or not 0 < int(m.group(2)) < 65536:
        raise OpgraphInputError(f"--scheduler {address!r}", "expected a Dask scheduler address tcp://HOST:PORT "
                                                            "(e.g. tcp://10.0.0.5:8786 or tcp://[::1]:8786)")
    return m.group(1).strip("[]"), int(m.group(2))


def probe_scheduler(address: str, timeout: float | None = None) -> str:
    """Check, within ``timeout`` seconds (default :data:`PROBE_TIMEOUT_S`), that a Dask
    scheduler answers at ``address``: the port accepts a TCP connection and sends the
    length prefix of a Dask handshake. Returns ``tcp://HOST:PORT``; anything else (refused,
    unreachable, silent, another protocol such as HTTP) is one :class:`OpgraphInputError`
    line naming the address, instead of a hang or the client's traceback."""
    import socket
    import struct
    import time

    host, port = parse_scheduler(address)
    where = f"--scheduler {address!r}"
    limit = PROBE_TIMEOUT_S if timeout is None else timeout
    try:
        sock = socket.create_connection((host, port), timeout=limit)
    except OSError as e:
        raise OpgraphInputError(where, f"cannot connect to the Dask scheduler: {e.strerror or e}") from None
    try:
        got = b""
        deadline = time.monotonic() + limit
        while len(got) < 8:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout
            sock.settimeout(left)
            chunk = sock.recv(8 - len(got))
            if not chunk:
                raise OpgraphInputError(where, "the server closed the connection without a Dask handshake "
                                               "(not a Dask scheduler?)")
            got += chunk
    except socket.timeout:
        raise OpgraphInputError(where, f"no Dask handshake within {limit:g} s: the port accepts connections but "
                                       "does not answer (not a Dask scheduler?)") from None
    except OSError as e:
        raise OpgraphInputError(where, f"cannot talk to the Dask scheduler: {e.strerror or e}") from None
    finally:
        sock.close()
    (n,) = struct.unpack("<Q", got)
    if not 0 < n <= _MAX_HANDSHAKE_BYTES:
        raise OpgraphInputError(where, f"the server does not speak the Dask protocol (it sent {got!r})")
    return f"tcp://[{host}]:{port}" if ":" in host else f"tcp://{host}:{port}"


def run_dask(fn: Callable[..., Any], argsets: Sequence[tuple], scheduler: str,
             progress: Progress = _noop) -> list[Any]:
    """``[fn(*a) for a in argsets]`` on the Dask cluster at ``scheduler``
    (``tcp://host:8786``): one task per argument set, results gathered in input order.
    The address is checked first (:func:`probe_scheduler`): a bad one is one line within
    :data:`PROBE_TIMEOUT_S` seconds."""
    try:
        from distributed import Client
    except ImportError:
        raise OpgraphInputError(scheduler, "--scheduler needs Dask: pip install 'opgraph[dask]'") from None
    address = probe_scheduler(scheduler)
    try:
        client = Client(address, timeout="20s", set_as_default=False)
    except Exception as e:  # noqa: BLE001 - whatever the client raises is the scheduler's answer, one line
        raise OpgraphInputError(f"--scheduler {scheduler!r}",
                                f"cannot connect to the Dask scheduler: {type(e).__name__}: {' '.join(str(e).split())[:200]}"
                                ) from None
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
