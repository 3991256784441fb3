"""One rank of a multi-rank job graph as an ordinary single-rank graph (``--rank N``).

:func:`rank_subgraph` cuts rank ``r`` out of a job graph built by ``opgraph build DIR``
(docs/multirank.md): its nodes with their local ids (the ids its own file gives them), its
intra-rank edges (no ``collective`` edge), its rows of the event table and the graph
attributes its file was built with, times on its own clock (or on the job's aligned clock).

The cut is made on the columns (:func:`rank_payload`): the job's
:class:`~opgraph.model.trace_graph.TraceGraph` gives a ``TraceGraph`` of the rank without one
Python dict per node or edge.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from opgraph.model.edge_kinds import renumbered
from opgraph.model.trace_graph import TraceGraph
from opgraph.model.payload import PICKLE_MAGIC


def is_job(G: TraceGraph) -> bool:
    """True for a multi-rank job graph."""
    return isinstance(G.graph.get("job"), dict)


def _refactorized(col: tuple[np.ndarray, np.ndarray], keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values, codes) of a factorized node column cut to the rows ``keep``
    (a bool mask), with only the values those rows use, in their order of first use."""
    uniq, codes = col
    sub = codes[keep]
    used, first = np.unique(sub, return_index=True)
    used = used[np.argsort(first, kind="stable")]
    lut = np.full(len(uniq), -1, dtype=np.int32)
    lut[used] = np.arange(len(used), dtype=np.int32)
    return uniq[used], lut[sub]


def rank_events(ev_all: pd.DataFrame, off: int, n_ev: int, shift: int) -> pd.DataFrame:
    """Rows ``[off, off + n_ev)`` of a job's event table as the rank's own table: event ids
    from 0, categories cut to the values used (``kind`` keeps its fixed categories) and
    ``ts_ns`` moved back by ``shift`` (ns; 0 keeps the aligned clock)."""
    ev = ev_all.iloc[off:off + n_ev].copy(deep=False).reset_index(drop=True)
    ev["eid"] = ev["eid"].to_numpy(np.int64) - off
    for c in ev.columns:
        if isinstance(ev[c].dtype, pd.CategoricalDtype) and c != "kind":
            ev[c] = ev[c].cat.remove_unused_categories()
    if shift:
        ev["ts_ns"] = ev["ts_ns"].to_numpy(np.int64) - shift
    return ev


def rank_payload(payload: dict[str, Any], graph: dict[str, Any], r: int, aligned: bool = False) -> dict[str, Any]:
    """The column payload (:mod:`opgraph.model.payload`) of rank ``r`` of the job whose
    payload is ``payload`` and graph attributes ``graph`` (read once: a loaded graph's
    event table). Node ids are local, ``ts`` on the rank's clock unless ``aligned``, the
    ``rank`` column dropped; edges are the rank's own, ``collective`` ones left out, in the
    job's order, their node-id attributes taken back to local ids. Raises ``KeyError`` when
    the rank is not in the job or was not kept in full."""
    row = _rank_row_of(graph, r)
    off, n_ev = int(row["node_offset"]), int(row["n_events"])
    shift = 0 if aligned else int(row["clock_offset_ns"])
    hi = off + n_ev
    g: dict[str, Any] = dict(row.get("graph", {}))
    g["events"] = rank_events(graph["events"], off, n_ev, shift)
    if not aligned and "span_ns" in g:
        g["span_ns"] = tuple(g["span_ns"])
    nodes = payload["nodes"]
    keep = (nodes >= off) & (nodes < hi)
    cols: dict[str, Any] = {}
    for k, col in payload["node_cols"].items():
        if k == "rank":
            continue
        cols[k] = _refactorized(col, keep) if isinstance(col, tuple) else col[keep]
    if shift:
        cols["ts"] = cols["ts"] - shift
    src, dst = payload["src"], payload["dst"]
    ku, kc = payload["edge_kind"]
    coll = np.flatnonzero(ku == "collective")
    ekeep = (src >= off) & (src < hi) & (dst >= off) & (dst < hi)
    if len(coll):
        ekeep &= ~np.isin(kc, coll)
    epos = np.flatnonzero(ekeep)
    new_pos = np.full(len(src), -1, dtype=np.int64)
    new_pos[epos] = np.arange(len(epos))
    extra = {int(new_pos[j]): renumbered(a, -off) for j, a in sorted(payload["edge_extra"].items())
             if new_pos[j] >= 0}
    return {"magic": PICKLE_MAGIC, "graph": g, "nodes": nodes[keep] - off, "node_cols": cols,
            "src": src[epos] - off, "dst": dst[epos] - off, "edge_kind": _refactorized((ku, kc), ekeep),
            "edge_extra": extra}


def _rank_row_of(graph: dict[str, Any], r: int) -> dict[str, Any]:
    row = next((x for x in graph["job"]["ranks"] if int(x["rank"]) == int(r)), None)
    if row is None:
        raise KeyError(f"rank {r} is not in this job")
    if not row["full"]:
        raise KeyError(f"rank {r} was not kept in full (see --keep)")
    return row


def rank_subgraph(G: TraceGraph, r: int, aligned: bool = False) -> TraceGraph:
    """Rank ``r`` of a job graph as an ordinary single-rank graph: its nodes (local ids),
    its intra-rank edges, its events table and graph attributes as built from its file
    (module docstring).

    Times are on the rank's own clock (as in its file) unless ``aligned`` (then the job's
    aligned clock). Raises ``KeyError`` when the rank is not in the job or was not kept
    in full."""
    return TraceGraph(rank_payload(G.payload, G.graph, r, aligned))


__all__ = ["is_job", "rank_events", "rank_payload", "rank_subgraph"]
