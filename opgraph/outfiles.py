"""Writing output files safely: whole or not at all, never over an input, never into a FIFO.

Every writer of the project goes through :func:`write_atomic` (bytes) or
:func:`open_atomic` (a stream): the data goes to a temporary file beside the target, which
is renamed over the target only once complete, so a killed or failed write leaves the
previous file intact and never a truncated one. Missing parent folders are created.
Problems become :class:`opgraph.errors.OpgraphInputError` (one line, exit 2).

No output replaces an input: :func:`check_output_path` (which every writer calls, through
:func:`open_atomic`) refuses a target that is, after resolving links, the same file as one
of the writer's ``inputs`` or one of the user device files in force
(:func:`protected_inputs`), whatever flag or API call names it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Iterator

from opgraph.errors import OpgraphInputError


def protected_inputs(inputs: "tuple[str | os.PathLike[str], ...] | list[str | os.PathLike[str]]" = ()
                     ) -> tuple[str, ...]:
    """The files no output may replace: ``inputs`` (the trace, graph, capture, model files a
    writer read) and the user device files in force (``--device-file``, ``$OPGRAPH_DEVICES``;
    :func:`opgraph.devices.active_device_files`)."""
    from opgraph.devices.peaks import active_device_files

    return tuple(os.fspath(q) for q in inputs) + active_device_files()


def check_output_path(path: str | os.PathLike[str], inputs: tuple[str | os.PathLike[str], ...] = ()) -> Path:
    """``path`` as a :class:`Path` after checking it can be a regular output file: not one of
    :func:`protected_inputs` (``inputs`` and the device files in force; the same file under
    any name: symlink, hard link, another spelling), not a folder, not a FIFO or device."""
    p = Path(path)
    if p.exists():
        st = p.stat()
        if stat.S_ISDIR(st.st_mode):
            raise OpgraphInputError(str(p), "is a folder, not an output file")
        if not stat.S_ISREG(st.st_mode):
            raise OpgraphInputError(str(p), "is not a regular file (a FIFO or device); refusing to write to it")
        device_files = set(protected_inputs()) - {os.fspath(q) for q in inputs}
        for q in protected_inputs(inputs):
            try:
                same = Path(q).exists() and os.path.samefile(p, q)
            except OSError:
                continue
            if same:
                what = "a device file in force" if q in device_files else "the input file"
                raise OpgraphInputError(str(p), f"is {what}; choose another output name")
    return p


@contextlib.contextmanager
def open_atomic(path: str | os.PathLike[str], inputs: tuple[str | os.PathLike[str], ...] = ()) -> Iterator[IO[bytes]]:
    """A binary stream whose content replaces ``path`` only when the block ends without error."""
    p = check_output_path(path, inputs)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".part", dir=str(p.parent))
    except OSError as e:
        raise OpgraphInputError(str(p), f"cannot write: {e.strerror or e}") from None
    ok = False
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp makes the file 0600; give it the permissions a plain open() would (umask)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, p)
        ok = True
    except OSError as e:
        raise OpgraphInputError(str(p), f"cannot write: {e.strerror or e}") from None
    finally:
        if not ok:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def write_atomic(path: str | os.PathLike[str], data: bytes,
                 inputs: tuple[str | os.PathLike[str], ...] = ()) -> Path:
    """Write ``data`` to ``path`` whole (see :func:`open_atomic`); returns the path."""
    with open_atomic(path, inputs) as fh:
        fh.write(data)
    return Path(path)
