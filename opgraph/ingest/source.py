"""Reading a trace file's bytes: plain or gzip (detected by magic bytes), with one-line errors."""

from __future__ import annotations

import gzip
import hashlib
import zlib
from dataclasses import dataclass
from pathlib import Path

from opgraph.errors import OpgraphInputError

GZIP_MAGIC = b"\x1f\x8b"
SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass(frozen=True)
class SourceBytes:
    """The decompressed bytes of a trace file and where they came from."""

    path: str
    data: bytes
    sha256: str
    compressed: bool


def read_source(path: str | Path) -> SourceBytes:
    """Read ``path`` (gzip or plain) into memory.

    Raises :class:`OpgraphInputError` for a missing, empty or corrupt file.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise OpgraphInputError(str(p), "no such file") from None
    except IsADirectoryError:
        raise OpgraphInputError(str(p), "is a directory, expected a trace file") from None
    except OSError as e:
        raise OpgraphInputError(str(p), f"cannot read: {e.strerror or e}") from None
    sha = hashlib.sha256(raw).hexdigest()
    compressed = raw[:2] == GZIP_MAGIC
    if compressed:
        try:
            data = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise OpgraphInputError(str(p), f"corrupt gzip data ({e})") from None
    else:
        data = raw
    if not data.strip():
        raise OpgraphInputError(str(p), "empty file")
    return SourceBytes(str(p), data, sha, compressed)
