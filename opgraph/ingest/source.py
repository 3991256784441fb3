"""Reading a file's bytes: plain or gzip (detected by magic bytes), capped, with one-line
errors: traces (:func:`read_source`) and every other JSON input (:func:`read_json`)."""

from __future__ import annotations

import hashlib
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from opgraph.errors import OpgraphInputError
from opgraph.infiles import (  # noqa: F401 - re-exported: the readers' cap and checks live there
    DEFAULT_MAX_DECOMPRESSED_BYTES, MAX_DECOMPRESSED_ENV, max_decompressed_bytes, read_regular_file, size_text,
)

GZIP_MAGIC = b"\x1f\x8b"
SQLITE_MAGIC = b"SQLite format 3\x00"

_IN_STEP = 1 << 20  # compressed bytes fed per call (bounds the unconsumed tail)
_OUT_STEP = 64 << 20  # decompressed bytes produced per call at most
_NONZERO = re.compile(rb"[^\x00]")


def decompress_gzip(raw: bytes, path: str, limit: int | None = None) -> bytes:
    """Decompress gzip data (one or more members, zero padding between them allowed, as
    :func:`gzip.decompress`) incrementally, refusing to produce more than ``limit`` bytes
    (default :func:`max_decompressed_bytes`): :class:`OpgraphInputError` naming ``path``
    as soon as the cap is passed, so memory never holds more than the cap plus one step."""
    cap = max_decompressed_bytes(path) if limit is None else limit
    view = memoryview(raw)
    n = len(raw)
    chunks: list[bytes] = []
    total = 0
    pos = 0
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        while True:
            if d.unconsumed_tail:
                inp = d.unconsumed_tail
            elif pos < n:
                inp = view[pos:pos + _IN_STEP]
                pos += len(inp)
            else:
                break
            out = d.decompress(inp, max(1, min(_OUT_STEP, cap - total + 1)))
            total += len(out)
            if total > cap:
                raise OpgraphInputError(path, f"decompresses to more than {size_text(cap)} (the cap on "
                                              f"decompressed size; set {MAX_DECOMPRESSED_ENV} to raise it)")
            chunks.append(out)
            if d.eof:
                start = pos - len(d.unused_data)
                nz = _NONZERO.search(raw, start)
                if nz is None:
                    return b"".join(chunks)
                start = nz.start()
                if raw[start:start + 2] != GZIP_MAGIC:
                    raise OpgraphInputError(path, f"corrupt gzip data (Not a gzipped file "
                                                  f"({bytes(raw[start:start + 2])!r}) after the "
                                                  f"end of the compressed stream)")
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                pos = start
    except zlib.error as e:
        raise OpgraphInputError(path, f"corrupt gzip data ({e})") from None
    raise OpgraphInputError(path, "corrupt gzip data (Compressed file ended before the end-of-stream "
                                  "marker was reached)")


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
    raw = read_regular_file(p)
    sha = _Digest(raw)
    compressed = raw[:2] == GZIP_MAGIC
    if compressed:
        data = decompress_gzip(raw, str(p))
    else:
        data = raw
    if not data.strip():
        raise OpgraphInputError(str(p), "empty file")
    return SourceBytes(str(p), data, sha, compressed)


def read_json(path: str | Path, what: str = "") -> Any:
    """The decoded JSON of ``path`` (plain or gzip; a regular file under the input cap,
    decompression capped). Every failure is one :class:`OpgraphInputError` naming the
    file, ``what`` it is (e.g. ``"overheads"``) and the problem."""
    prefix = f"{what}: " if what else ""
    try:
        raw = read_regular_file(path)
        if raw[:2] == GZIP_MAGIC:
            raw = decompress_gzip(raw, str(path))  # capped: a gzip bomb is refused, not expanded
    except OpgraphInputError as e:
        raise OpgraphInputError(str(path), prefix + e.problem) from None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise OpgraphInputError(str(path), f"{prefix}not valid JSON ({e})") from None
