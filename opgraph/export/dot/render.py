"""Rendering the Graphviz pictures (:mod:`opgraph.export.dot`) and writing them to files.

The DOT text (:func:`opgraph.export.dot.layout.dot_source`) needs no Graphviz install;
SVG and PNG are drawn by Graphviz's ``neato -n2``, which keeps the positions opgraph
computed and only routes the edges. Without the ``dot`` program :class:`GraphvizMissing`
says so in one line (:data:`MISSING_DOT`).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any


from opgraph.export.dot.layout import dot_source, to_pydot
from opgraph.export.dot.select import graph_view
from opgraph.export.dot.view import GraphView
from opgraph.model.trace_graph import TraceGraph


def dot_program() -> str | None:
    """Path of Graphviz's ``dot``, or None when it is not installed."""
    return shutil.which("dot")


class GraphvizMissing(RuntimeError):
    """The Graphviz ``dot`` program is not installed."""


MISSING_DOT = ("the Graphviz `dot` program is not installed (apt-get install graphviz, brew install graphviz); "
               "--dot still writes the DOT text without it")


def _run(prog: str, args: list[str], data: bytes, timeout: float | None) -> bytes:
    exe = shutil.which(prog)
    if exe is None:
        raise GraphvizMissing(MISSING_DOT)
    p = subprocess.run([exe, *args], input=data, capture_output=True, timeout=timeout)
    if p.returncode != 0 or not p.stdout:
        err = [x.strip() for x in p.stderr.decode("utf-8", "replace").splitlines() if x.strip()]
        raise RuntimeError(f"{prog} {' '.join(args)} failed: {' '.join(err[:3])[:300] if err else 'no output'}")
    return p.stdout


def render(dot_text: str, fmt: str, timeout: float | None = 600) -> bytes:
    """Draw a positioned DOT text (:func:`~opgraph.export.dot.layout.dot_source`) with
    ``neato -n2 -T<fmt>``: the node positions are kept and only the edges are routed."""
    if dot_program() is None:
        raise GraphvizMissing(MISSING_DOT)
    return _run("neato", ["-n2", f"-T{fmt}"], dot_text.encode("utf-8"), timeout)


def write_graphviz(G: TraceGraph, path: str | Path, fmt: str | None = None, *, view: GraphView | None = None,
                   inputs: tuple[str | Path, ...] = (), **view_opts: Any) -> GraphView:
    """Write ``G`` (through :func:`~opgraph.export.dot.select.graph_view` with ``view_opts``)
    as DOT, SVG or PNG (``fmt``, default from the file suffix); whole or not at all, never
    over one of ``inputs`` (:func:`opgraph.outfiles.write_atomic`)."""
    from opgraph.outfiles import write_atomic

    path = Path(path)
    fmt = fmt or path.suffix.lstrip(".").lower()
    if fmt == "gv":
        fmt = "dot"
    v = view if view is not None else graph_view(G, **view_opts)
    lay = to_pydot(v)
    data = lay.source().encode("utf-8") if fmt == "dot" else render(lay.source(), fmt)
    write_atomic(path, data, inputs)
    return v


def critical_path_svg(G: TraceGraph, window: str, max_nodes: int = 150, collapse: str | None = "op",
                      title: str | None = None) -> tuple[str, GraphView]:
    """SVG text of the critical path (with its one-hop neighbours) of ``window``, for
    embedding (the HTML report). Raises :class:`GraphvizMissing` without Graphviz."""
    v = graph_view(G, window=window, critical_only=True, collapse=collapse, max_nodes=max_nodes)
    svg = render(dot_source(v, title), "svg").decode("utf-8")
    return svg, v
