"""The look of the Graphviz pictures (:mod:`opgraph.export.dot`): colours, node shapes and
edge styles per kind, and the text helpers every part of the picture uses (durations,
names cut and cleaned for DOT, quoted DOT attributes).

Nothing here knows what is drawn: the view (:mod:`opgraph.export.dot.view`) and the
writer (:mod:`opgraph.export.dot.labels`, :mod:`opgraph.export.dot.layout`) use it.
"""

from __future__ import annotations

#: Colour of the critical path (nodes' borders and edges).
CRITICAL_COLOR = "#ff7f0e"
FONT = "Helvetica,Arial,sans-serif"

#: Node look per kind: (shape, extra style, fill colour, legend text).
NODE_STYLE: dict[str, tuple[str, str, str, str]] = {
    "annotation": ("note", "", "#e4d7f5", "annotation"),
    "python": ("box", "dashed", "#f1efe2", "python frame"),
    "cpu_op": ("box", "", "#cfe2f3", "CPU op"),
    "runtime": ("cds", "", "#fde0bd", "runtime call"),
    "kernel": ("box", "rounded", "#c9ebc4", "kernel"),
    "memcpy": ("parallelogram", "", "#fff0a0", "memcpy"),
    "memset": ("hexagon", "", "#f6cfd3", "memset"),
    "gpu_annotation": ("note", "", "#e6e6e6", "GPU annotation"),
}
#: Edge look per kind: attributes, legend glyph and text.
EDGE_STYLE: dict[str, tuple[dict[str, str], str, str]] = {
    "nest": ({"color": "#b0b0b0", "arrowsize": "0.4", "penwidth": "0.7"}, "──▸", "nest (parent → child)"),
    "host_seq": ({"color": "#444444", "arrowsize": "0.5", "penwidth": "0.8"}, "──▸", "program order"),
    "stream_seq": ({"color": "#2e8b57", "arrowsize": "0.5", "penwidth": "0.8"}, "──▸", "stream order"),
    "launch": ({"color": "#1f5fbf", "style": "dashed", "arrowsize": "0.6"}, "╌╌▸", "launch"),
    "sync": ({"color": "#d62728", "arrowsize": "0.6", "penwidth": "1.2"}, "──▸", "sync (GPU → waiting call)"),
    "event_wait": ({"color": "#7b3fb0", "style": "bold", "penwidth": "2.5", "arrowsize": "0.7"}, "━━▸",
                   "event wait (stream → stream)"),
    "flow": ({"color": "#8c564b", "style": "dotted", "arrowsize": "0.5"}, "┈┈▸", "flow (e.g. fwd → bwd)"),
    "data": ({"color": "#17a2b8", "style": "dotted", "arrowsize": "0.5"}, "┈┈▸", "data (tensor)"),
    "critical": ({"color": CRITICAL_COLOR, "style": "bold", "penwidth": "3.5", "arrowsize": "0.8"}, "━━▸",
                 "critical path (orange: any edge on it)"),
}

#: Names longer than this are cut (with "…") before any other work on them: Graphviz
#: rejects attributes over 16,384 characters, and a 5 MB kernel name used to take 45 s.
MAX_NAME_CHARS = 200


def fmt_us(ns: int | float) -> str:
    """A duration for a label: µs with 2 decimals below 10, 1 below 1000, else whole µs
    (ms above 100 ms)."""
    us = ns / 1000.0
    if us >= 100_000:
        return f"{us / 1000.0:,.1f} ms"
    if us >= 1000:
        return f"{us:,.0f} µs"
    if us >= 10:
        return f"{us:.1f} µs"
    return f"{us:.2f} µs"


def safe_name(name: object, limit: int = MAX_NAME_CHARS) -> str:
    """``name`` for a DOT label or tooltip: cut to ``limit`` characters (+ "…") first, then
    control characters (NUL, ESC, C1, bidi overrides, newlines) shown as visible escapes
    (:func:`opgraph.export.text.console.clean`), which XML and Graphviz accept."""
    from opgraph.export.text.console import clean

    s = name if isinstance(name, str) else str(name)
    if len(s) > limit:
        s = s[:limit] + "…"
    return clean(s)


def dot_str(s: str) -> str:
    """Text for a quoted DOT attribute: backslashes doubled (``\\N``-style escapes off),
    newlines as ``\\n``, and never read as an HTML label."""
    s = s.replace("\\", "\\\\").replace("\n", "\\n")
    return s if not s.startswith("<") else " " + s
