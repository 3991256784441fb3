"""Opening an input file safely: a regular file (never a FIFO, device or socket, which would
block or never end) no larger than the input cap (:func:`max_decompressed_bytes`), read
whole, each refusal one :class:`~opgraph.errors.OpgraphInputError` line naming the file.
Every reader goes through :func:`read_regular_file`: traces, capture and model files
(through :mod:`opgraph.ingest.source`) and the user device files (:mod:`opgraph.devices`);
a saved graph is unpickled straight from the file :func:`open_regular_file` opens after
the same checks (its arrays are read into place, not copied out of the whole file)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import BinaryIO

from opgraph.errors import OpgraphInputError

#: Default cap on the decompressed size of a gzip input (8 GiB); a larger expansion is
#: refused with one line before memory runs out (a "gzip bomb" of a few MB can expand to
#: many GB). Override with the environment variable :data:`MAX_DECOMPRESSED_ENV` (bytes).
DEFAULT_MAX_DECOMPRESSED_BYTES = 8 * 1024 ** 3
MAX_DECOMPRESSED_ENV = "OPGRAPH_MAX_DECOMPRESSED_BYTES"


def max_decompressed_bytes(path: str | None = None) -> int:
    """The decompressed-size cap in bytes: ``$OPGRAPH_MAX_DECOMPRESSED_BYTES`` when set
    (a positive integer; ``8GiB``-style suffixes KiB/MiB/GiB/TiB accepted), else 8 GiB."""
    v = os.environ.get(MAX_DECOMPRESSED_ENV, "").strip()
    if not v:
        return DEFAULT_MAX_DECOMPRESSED_BYTES
    m = re.fullmatch(r"(\d+)\s*([KMGT]i?B?)?", v, flags=re.IGNORECASE)
    if not m or int(m.group(1)) <= 0:
        raise OpgraphInputError(path, f"{MAX_DECOMPRESSED_ENV}={v!r}: expected a positive number of bytes "
                                      "(e.g. 17179869184 or 16GiB)")
    unit = (m.group(2) or "").upper()[:1]
    return int(m.group(1)) * 1024 ** " KMGT".index(unit or " ")


def size_text(n: int) -> str:
    """``n`` bytes as text: ``1.5 GiB``, ``12 KiB``, ``7 bytes``."""
    for unit, k in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if n >= k:
            return f"{n / k:.4g} {unit}"
    return f"{n} bytes"


def open_regular_file(path: str | Path) -> tuple[BinaryIO, int]:
    """``path`` opened for reading (binary, buffered) and its size in bytes; it must be a
    regular file no larger than the input cap (:func:`max_decompressed_bytes`): a FIFO,
    device or socket would block or never end, and a file over the cap would exhaust
    memory. Each refusal is an :class:`OpgraphInputError` naming the file."""
    p = Path(path)
    try:
        st = os.stat(p)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError
        if not stat.S_ISREG(st.st_mode):
            raise OpgraphInputError(str(p), "is not a regular file (a FIFO, device or socket): opgraph reads trace "
                                            "files (save the stream to a file first)")
        cap = max_decompressed_bytes(str(p))
        if st.st_size > cap:
            raise OpgraphInputError(str(p), f"is {size_text(st.st_size)}, over the {size_text(cap)} input cap (set "
                                            f"{MAX_DECOMPRESSED_ENV} to raise it)")
        return open(p, "rb", buffering=1 << 20), st.st_size
    except FileNotFoundError:
        raise OpgraphInputError(str(p), "no such file") from None
    except IsADirectoryError:
        raise OpgraphInputError(str(p), "is a directory, expected a trace file") from None
    except OSError as e:
        raise OpgraphInputError(str(p), f"cannot read: {e.strerror or e}") from None


def read_regular_file(path: str | Path) -> bytes:
    """The bytes of ``path`` (:func:`open_regular_file`'s checks first)."""
    fh, _size = open_regular_file(path)
    try:
        with fh:
            return fh.read()
    except OSError as e:
        raise OpgraphInputError(str(Path(path)), f"cannot read: {e.strerror or e}") from None
