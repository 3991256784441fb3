"""The documents of the HTML report's sections that are not an analysis's ``to_dict()`` with
the catalog's defaults (opgraph/catalog/entries.py names them in each entry's ``Section``):
they reuse the report's shared roofline, or the other sections' documents."""

from __future__ import annotations

from typing import Any

from opgraph.model.trace_graph import TraceGraph


def categories_section(G: TraceGraph, shared: Any) -> Any:
    """``opgraph categories --json``, over the report's shared roofline."""
    from opgraph.analysis.categories import gpu_categories
    return gpu_categories(G, shared.roofline(G)).to_dict()


def memory_section(G: TraceGraph, shared: Any) -> Any:
    """``opgraph memory --json`` without the series (the page draws tables only)."""
    from opgraph.analysis.memory_timeline import memory_timeline
    return memory_timeline(G, None).to_dict(series=False)


def shapes_section(G: TraceGraph, shared: Any) -> Any:
    """``opgraph shapes --json`` of the three families, over the shared roofline."""
    from opgraph.analysis.shapes import shapes
    return shapes(shared.roofline(G)).to_dict(None, ("gemm", "attention", "conv"))


def advise_section(G: TraceGraph, shared: Any) -> Any:
    """``opgraph advise --json``, reusing the documents of the other sections made with the
    same options (so it is computed after them)."""
    from opgraph.predict.recommendations import recommendations
    given = {"cp": shared.get("critical_path"), "launch": shared.get("launch_stats"), "overlap": shared.get("overlap"),
             "copies": shared.get("memory_bw"), "memory": shared.get("memory"), "shapes": shared.get("shapes")}
    return recommendations(G, given).to_dict()
