"""The nesting depth of JSON text, measured without decoding it (the bound every JSON
reader applies, :mod:`opgraph.ingest.depth_limit`, and the check of args packed as JSON
text in a saved graph, :mod:`opgraph.model.packed_args`)."""

from __future__ import annotations

import numpy as np

_NOT_QUOTES_OR_BRACKETS = bytes(i for i in range(256) if i not in b'{}[]"')
#: Quotes and brackets scanned per step by :func:`raw_max_depth`.
_DEPTH_CHUNK = 1 << 20


def raw_max_depth(data: bytes) -> int:
    """The nesting depth of the JSON text ``data`` as a parser sees it: brackets inside
    strings do not count. Exact for valid JSON (an invalid text is refused by the decoder
    anyway). Escaped backslashes and quotes are taken out first (a run of backslashes is
    read in pairs from the left, as a parser reads it), then only quotes and brackets are
    kept: a bracket is inside a string after an odd number of quotes."""
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    a = np.frombuffer(data.translate(None, _NOT_QUOTES_OR_BRACKETS), dtype=np.uint8)
    lut = np.zeros(256, dtype=np.int8)
    lut[ord("{")] = lut[ord("[")] = 1
    lut[ord("}")] = lut[ord("]")] = -1
    depth, best, quotes = 0, 0, 0
    for lo in range(0, len(a), _DEPTH_CHUNK):   # a chunk at a time: small temporaries
        c = a[lo:lo + _DEPTH_CHUNK]
        pos = np.flatnonzero(c != ord('"'))   # the brackets, among the quotes
        if len(pos):
            # quotes before each bracket (in the text so far): even = outside strings
            outside = (pos - np.arange(len(pos)) + quotes) % 2 == 0
            d = lut[c[pos[outside]]]
            if len(d):
                run = np.cumsum(d, dtype=np.int32) + depth
                best = max(best, int(run.max()))
                depth = int(run[-1])
        quotes += len(c) - len(pos)
    return best
