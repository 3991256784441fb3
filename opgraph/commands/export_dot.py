"""``opgraph export --dot / --svg / --png``: Graphviz pictures of a graph (docs/pictures.md).

    opgraph export g.gpickle --svg out.svg [--window REGEX|all] [--critical-only]
        [--collapse op|module] [--max-nodes 400]

Offered by ``opgraph export`` (:mod:`opgraph.commands.export` lists :data:`DOT_EXPORTERS`
and :data:`DOT_OPTIONS`; ``--window`` is the command's shared option, also used by
``--perfetto``).
"""

from __future__ import annotations

from typing import Any

import click

from opgraph.commands.exporters import Exporter, exporter
from opgraph.errors import OpgraphInputError
from opgraph.export.dot import COLLAPSE_MODES, DEFAULT_MAX_NODES, MISSING_DOT, dot_program
from opgraph.model.trace_graph import TraceGraph

_LAST: dict[str, Any] = {}


def _view(G: TraceGraph, opts: dict[str, Any]):
    """The view for these options (computed once when several formats are written)."""
    from opgraph.commands.window_option import window_errors
    from opgraph.export.dot import graph_view

    key = (id(G), opts.get("window"), bool(opts.get("critical_only")), opts.get("collapse"), opts.get("max_nodes"))
    if _LAST.get("key") == key and _LAST.get("G") is G:
        return _LAST["view"]
    try:
        with window_errors(opts.get("input"), "--window"):
            v = graph_view(G, window=opts.get("window"), critical_only=bool(opts.get("critical_only")),
                           collapse=opts.get("collapse"), max_nodes=opts.get("max_nodes"))
    except ValueError as e:
        raise OpgraphInputError(opts.get("input"), str(e)) from None
    _LAST.clear()
    _LAST.update(key=key, G=G, view=v)
    return v


def _writer(fmt: str):
    def run(G: TraceGraph, path: str, opts: dict[str, Any]) -> str:
        from opgraph.export.dot import GraphvizMissing, write_graphviz

        v = _view(G, opts)
        try:
            write_graphviz(G, path, fmt, view=v, inputs=(opts["input"],) if opts.get("input") else ())
        except GraphvizMissing:
            raise OpgraphInputError(path, MISSING_DOT) from None
        except OSError as e:
            raise OpgraphInputError(path, f"cannot write: {e.strerror or e}") from None
        except RuntimeError as e:
            raise OpgraphInputError(path, str(e)) from None
        return f"{path}: {v.summary()}"
    return run


def _need_dot(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """--svg / --png need Graphviz: say so before loading anything."""
    if value is not None and dot_program() is None:
        raise OpgraphInputError(str(value), MISSING_DOT)
    return value


#: The options of the pictures, declared on ``opgraph export``.
DOT_OPTIONS: list[click.Option] = [
    click.Option(["--critical-only"], is_flag=True, default=False,
                 help="--dot/--svg/--png: draw only the critical path and its one-hop neighbours."),
    click.Option(["--collapse"], type=click.Choice(COLLAPSE_MODES), default=None,
                 help="--dot/--svg/--png: draw sub-ops as their top-level op ('op') or innermost module range "
                      "('module')."),
    click.Option(["--max-nodes"], type=click.IntRange(min=0), default=DEFAULT_MAX_NODES, show_default=True,
                 help="--dot/--svg/--png: draw at most N nodes (critical path first, then the longest events; "
                      "0: no limit)."),
]

#: ``--dot``, ``--svg``, ``--png``.
DOT_EXPORTERS: list[Exporter] = [
    exporter("dot", "--dot", run=_writer("dot"), suffixes=(".dot", ".gv"),
             help="Graphviz DOT file (.dot/.gv): swim lanes per thread and stream, the critical path "
                  "highlighted (docs/pictures.md). Needs no Graphviz install."),
    exporter("svg", "--svg", run=_writer("svg"), suffixes=(".svg",), callback=_need_dot,
             help="The same picture rendered to SVG by Graphviz's `dot`."),
    exporter("png", "--png", run=_writer("png"), suffixes=(".png",), callback=_need_dot,
             help="The same picture rendered to PNG by Graphviz's `dot`."),
]
