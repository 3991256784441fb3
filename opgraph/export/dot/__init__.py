"""Graphviz pictures of a graph: ``opgraph export --dot/--svg/--png`` (docs/pictures.md).

``graph_view(G, ...)`` picks what to draw: the events of a window, optionally collapsed
into their top-level op or module, optionally only the critical path and its one-hop
neighbours, and at most ``max_nodes`` of them (critical path first, then the longest
events). ``to_pydot(view)`` lays it out as swim lanes:

* one cluster per CPU thread and one per GPU stream, side by side; time runs down, and
  inside a CPU lane each nesting depth is indented, so a lane reads like a flame chart;
* node shape and colour by kind, edge style by kind (launch dashed, sync red, event_wait
  bold, nest grey, ...), the critical path in thick orange, durations in the labels, and a
  legend in the graph's title.

``render(dot_text, fmt)`` runs Graphviz (SVG, PNG); the DOT text itself needs no Graphviz
install.

This module is the entry point; the parts live in:

* :mod:`~opgraph.export.dot.select`: the view selection (:func:`graph_view`: window,
  ``--critical-only``, ``--max-nodes``, the drawn edges);
* :mod:`~opgraph.export.dot.collapse`: ``--collapse op|module``;
* :mod:`~opgraph.export.dot.critical`: the critical path, from the analysis
  (:func:`opgraph.analysis.critical_path.critical_path`);
* :mod:`~opgraph.export.dot.view`: the view's dataclasses;
* :mod:`~opgraph.export.dot.layout`: the swim-lane layout and the DOT text;
* :mod:`~opgraph.export.dot.labels`: labels, tooltips, lane titles, the legend;
* :mod:`~opgraph.export.dot.style`: colours, shapes and edge styles, name and duration text;
* :mod:`~opgraph.export.dot.render`: Graphviz (``neato -n2``) and writing files.
"""

from __future__ import annotations

from opgraph.export.dot.collapse import COLLAPSE_MODES
from opgraph.export.dot.critical import ViewPath, view_path
from opgraph.export.dot.layout import DotLayout, dot_source, to_pydot
from opgraph.export.dot.render import (
    MISSING_DOT, GraphvizMissing, critical_path_svg, dot_program, render, write_graphviz,
)
from opgraph.export.dot.select import DEFAULT_MAX_NODES, graph_view
from opgraph.export.dot.style import CRITICAL_COLOR, EDGE_STYLE, FONT, MAX_NAME_CHARS, NODE_STYLE, safe_name
from opgraph.export.dot.view import EmptySelection, GraphView, ViewEdge, ViewNode

__all__ = [
    "COLLAPSE_MODES", "DEFAULT_MAX_NODES", "CRITICAL_COLOR", "FONT", "NODE_STYLE", "EDGE_STYLE", "MAX_NAME_CHARS",
    "ViewNode", "ViewEdge", "GraphView", "EmptySelection", "ViewPath", "DotLayout", "GraphvizMissing", "MISSING_DOT",
    "graph_view", "view_path", "to_pydot", "dot_source", "safe_name", "dot_program", "render",
    "write_graphviz", "critical_path_svg",
]
