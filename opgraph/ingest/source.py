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


class _Digest:
    """SHA-256 of the raw file computed in a background thread (hashlib releases the GIL
    on large buffers, so it overlaps with JSON decoding on a second core)."""

    def __init__(self, raw: bytes):
        import threading

        self._value: str | None = None
        self._thread = threading.Thread(target=self._run, args=(raw,), daemon=True)
        self._thread.start()

    def _run(self, raw: bytes) -> None:
        self._value = hashlib.sha256(raw).hexdigest()

    def result(self) -> str:
        self._thread.join()
        assert self._value is not None
        return self._value


@dataclass(frozen=True)
class SourceBytes:
    """The decompressed bytes of a trace file and where they came from."""

    path: str
    data: bytes
    digest: _Digest
    compressed: bool

    @property
    def sha256(self) -> str:
        """Hex SHA-256 of the file as stored (compressed bytes for .gz)."""
        return self.digest.result()


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
    sha = _Digest(raw)
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
