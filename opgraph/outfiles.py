"""Writing output files safely: whole or not at all, never over an input, never into a FIFO.

Every writer of the project goes through :func:`write_atomic` (bytes) or
:func:`open_atomic` (a stream): the data goes to a temporary file beside the target, which
is renamed over the target only once complete, so a killed or failed write leaves the
previous file intact and never a truncated one. Missing parent folders are created.
Problems become :class:`opgraph.errors.OpgraphInputError` (one line, exit 2).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Iterator

from opgraph.errors import OpgraphInputError


def check_output_path(path: str | os.PathLike[str], inputs: tuple[str | os.PathLike[str], ...] = ()) -> Path:
    """``path`` as a :class:`Path` after checking it can be a regular output file: not one of
    ``inputs`` (the same file under any name), not a folder, not a FIFO or device."""
    p = Path(path)
    if p.exists():
        st = p.stat()
        if stat.S_ISDIR(st.st_mode):
            raise OpgraphInputError(str(p), "is a folder, not an output file")
        if not stat.S_ISREG(st.st_mode):
            raise OpgraphInputError(str(p), "is not a regular file (a FIFO or device); refusing to write to it")
        for q in inputs:
            try:
                if Path(q).exists() and os.path.samefile(p, q):
                    raise OpgraphInputError(str(p), "is the input file; choose another output name")
            except OSError:
                continue
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
