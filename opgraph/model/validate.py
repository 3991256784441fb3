"""Validation of a loaded graph (``.gpickle`` or node-link JSON): :func:`check_structure`
(the ``DiGraph`` instance data has the shapes networkx builds) and :func:`check_graph`
(what the analyses need: graph attributes, the event table's columns, every node's
``kind`` and integer ``ts``/``dur`` in ns, attribute bounds (:mod:`opgraph.model.attr_bounds`),
edge kinds, and no cycle among the kinds that must be acyclic). Each refusal is one
:class:`~opgraph.errors.OpgraphInputError` line naming the file.
"""

from __future__ import annotations

from itertools import chain, repeat
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from opgraph.errors import OpgraphInputError
from opgraph.model.attr_bounds import check_bounds
from opgraph.model.cycles import has_cycle
from opgraph.model.node_link import EVENT_INT_COLS
from opgraph.model.table import ALL_KINDS

if TYPE_CHECKING:
    import networkx as nx

#: Edge kinds that must form a DAG (docs/model.md): every kind but ``collective``, which
#: links matched kernels of different ranks in both directions.
CYCLIC_EDGE_KINDS = frozenset({"collective"})
#: The instance attributes of a ``DiGraph`` that are its data (the rest are cached views).
DIGRAPH_STATE = ("graph", "_node", "_adj", "_pred", "_succ")


def check_structure(G: nx.DiGraph, path: str) -> None:
    """A ``DiGraph`` whose instance data has the shapes networkx itself builds (a pickle can
    set ``__dict__`` to anything): dicts of dicts, ``_adj`` the same object as ``_succ``,
    and every node of the adjacency listed in ``_node``."""
    d = G.__dict__
    for k in DIGRAPH_STATE:
        if type(d.get(k)) is not dict:
            raise OpgraphInputError(path, f"corrupt graph: DiGraph attribute {k!r} is "
                                          f"{type(d.get(k)).__name__}, expected a dict")
    if d["_adj"] is not d["_succ"]:
        raise OpgraphInputError(path, "corrupt graph: DiGraph adjacency '_adj' is not '_succ'")
    node, succ, pred = d["_node"], d["_succ"], d["_pred"]
    for what, m in (("node attributes", node.values()), ("successors", succ.values()), ("predecessors", pred.values())):
        if not {dict}.issuperset(map(type, m)):
            raise OpgraphInputError(path, f"corrupt graph: DiGraph {what} that are not dicts")
    if not (node.keys() == succ.keys() == pred.keys()):
        raise OpgraphInputError(path, "corrupt graph: DiGraph node, successor and predecessor tables differ")
    for nb in succ.values():
        if not {dict}.issuperset(map(type, nb.values())) or not nb.keys() <= node.keys():
            raise OpgraphInputError(path, "corrupt graph: an edge to a node that is not in the graph, or edge "
                                          "attributes that are not a dict")


#: The largest rank id a job may hold: a million ranks (0..999,999), ten times the largest
#: jobs run today (about 100,000 GPUs), and the size of the widest --keep / --ranks
#: selection. Larger ids (2**31, 2**62) made 32-bit Perfetto pids overflow and per-rank
#: arrays of 4 EiB.
MAX_RANK_ID = 999_999


#: Columns of the event table the analyses read (``events_from_columns`` restores dtypes).
_REQUIRED_EVENT_COLS = ("eid", "kind", "name", "ts_ns", "dur_ns", "pid", "tid", "args")
#: Graph attributes and the types the analyses expect of them (when present).
_GRAPH_ATTR_TYPES = {"trace_metadata": dict, "device_properties": list, "distributed_info": dict,
                     "health": list, "span_ns": (tuple, list), "opgraph_version": str}


def check_graph(G: nx.DiGraph, path: str, file_size: int) -> None:
    """Refuse a loaded graph opgraph cannot analyse, with one line naming ``path``:
    missing graph attributes, nodes without a valid ``kind``/``ts``/``dur``, attributes
    nested too deeply or expanding to far more than the file holds, and a cycle among the
    edge kinds that must be acyclic (docs/model.md)."""
    import networkx as nx

    gr = G.graph
    check_graph_attrs(gr, path)
    ev = gr["events"]
    _check_nodes(G, path)
    if G._node:
        ids = np.fromiter(G._node, dtype=np.int64, count=len(G._node))
        bad = (ids < 0) | (ids >= len(ev))
        if bad.any():
            raise OpgraphInputError(path, f"node {int(ids[bad][0])} has no row in the event table "
                                          f"({len(ev)} rows; node ids are event ids)")
    check_bounds(G, path, file_size)
    edata = chain.from_iterable(map(dict.values, G._succ.values()))   # every edge's attribute dict, in C
    ekind_list = list(map(dict.get, edata, repeat("kind")))
    if not {str}.issuperset(map(type, ekind_list)):
        u, v, d = next((u, v, d) for u, nbrs in G._succ.items() for v, d in nbrs.items()
                       if type(d.get("kind")) is not str)
        if "kind" not in d:
            raise OpgraphInputError(path, f"edge {u} -> {v}: attribute 'kind' missing")
        raise OpgraphInputError(path, f"edge {u} -> {v}: 'kind' is {d['kind']!r:.60}, expected a string")
    # acyclic edge kinds: Kahn's algorithm over int arrays (build's check), networkx only to
    # name a cycle once one is known to exist
    if G.number_of_edges():
        src = np.fromiter(chain.from_iterable(repeat(u, len(nb)) for u, nb in G._succ.items()), dtype=np.int64,
                          count=len(ekind_list))
        dst = np.fromiter(chain.from_iterable(G._succ.values()), dtype=np.int64, count=len(ekind_list))
        keep = ~np.isin(np.asarray(ekind_list, dtype=object), list(CYCLIC_EDGE_KINDS))
        if has_cycle(src[keep], dst[keep]):
            H = G.edge_subgraph((u, v) for u, v, d in G.edges(data=True) if d["kind"] not in CYCLIC_EDGE_KINDS)
            cyc = nx.find_cycle(H)
            kinds_in = sorted({H.edges[u, v]["kind"] for u, v, *_ in cyc})
            raise OpgraphInputError(path, f"the graph has a cycle through nodes {[u for u, *_ in cyc][:8]} "
                                          f"(edge kinds {', '.join(kinds_in)}), which must be acyclic")


def check_graph_attrs(gr: dict, path: str, args_packed: bool = False) -> None:
    """The graph attributes the analyses need (``events``, ``source``, ``schema_version``,
    the typed optional ones, a job's tables), or one line naming ``path``. ``args_packed``:
    the event table's ``args`` column is saved apart (:mod:`opgraph.model.packed_args`)."""
    missing = [k for k in ("events", "source", "schema_version") if k not in gr]
    if missing:
        raise OpgraphInputError(path, "not an opgraph graph: graph attribute(s) " + ", ".join(map(repr, missing))
                                + " missing (save graphs with opgraph build or opgraph.save_graph)")
    if not isinstance(gr["events"], pd.DataFrame):
        raise OpgraphInputError(path, f"not an opgraph graph: graph attribute 'events' is a "
                                      f"{type(gr['events']).__name__}, expected the event table")
    if not isinstance(gr["source"], dict):
        raise OpgraphInputError(path, f"not an opgraph graph: graph attribute 'source' is a "
                                      f"{type(gr['source']).__name__}, expected an object")
    if type(gr["schema_version"]) is not int:
        raise OpgraphInputError(path, "not an opgraph graph: graph attribute 'schema_version' is not an integer")
    for k, t in _GRAPH_ATTR_TYPES.items():
        if k in gr and not isinstance(gr[k], t):
            raise OpgraphInputError(path, f"graph attribute {k!r} is a {type(gr[k]).__name__}, expected "
                                          f"{'a list' if t is list else 'a string' if t is str else 'an object' if t is dict else 'a pair'}")
    if not {str, type(None)}.issuperset(map(type, gr["source"].values())):
        raise OpgraphInputError(path, "graph attribute 'source' must hold strings")
    ev = gr["events"]
    lack = [c for c in _REQUIRED_EVENT_COLS if c not in ev.columns and not (args_packed and c == "args")]
    if lack:
        raise OpgraphInputError(path, f"the event table lacks column(s) {', '.join(lack)}")
    for c in EVENT_INT_COLS:
        if c in ev.columns and not pd.api.types.is_integer_dtype(ev[c].dtype):
            raise OpgraphInputError(path, f"event table column {c!r} is {ev[c].dtype}, expected integers")
    job = gr.get("job")
    if job is not None:
        if not isinstance(job, dict) or not isinstance(job.get("ranks"), list):
            raise OpgraphInputError(path, "graph attribute 'job' must be an object with a 'ranks' list")
        coll = job.get("collectives")
        if not isinstance(coll, pd.DataFrame):
            raise OpgraphInputError(path, "graph attribute 'job' has no 'collectives' table")
        lack = [c for c in ("coll_id", "rank", "node") if c not in coll.columns]
        if lack:
            raise OpgraphInputError(path, f"job 'collectives' table lacks column(s) {', '.join(lack)}")
        if any(not isinstance(r, dict) or "rank" not in r for r in job["ranks"]):
            raise OpgraphInputError(path, "job 'ranks' rows must be objects with a 'rank'")
        bad = [r["rank"] for r in job["ranks"] if type(r["rank"]) is not int or not 0 <= r["rank"] <= MAX_RANK_ID]
        if bad:
            raise OpgraphInputError(path, f"job rank id {bad[0]!r:.40} is not an integer in 0..{MAX_RANK_ID:,}")


def _check_nodes(G: nx.DiGraph, path: str) -> None:
    """Every node has an integer id, a known ``kind`` and integer ``ts``/``dur`` (ns) whose
    sum fits int64. Type scans run in C (map/set); the per-node walk only finds the culprit."""
    nodes = G._node
    lo, hi = -(2**63), 2**63 - 1   # what the readers accept (ts + dur must fit int64)
    ok_int = {int, np.int64}
    ids = list(nodes)
    vals = list(nodes.values())

    def first_bad(pred) -> Any:
        return next(n for n, d in zip(ids, vals) if pred(n, d))
    if not {int, np.int64}.issuperset(map(type, ids)):
        n = next(n for n in ids if type(n) not in ok_int)
        raise OpgraphInputError(path, f"node {n!r}: node ids must be integers")
    for k in ("kind", "ts", "dur"):
        col = list(map(dict.get, vals, repeat(k, len(vals))))
        if k == "kind":
            if not set(ALL_KINDS).issuperset(col) or not {str}.issuperset(map(type, col)):
                n = first_bad(lambda n, d: type(d.get("kind")) is not str or d.get("kind") not in ALL_KINDS)
                if "kind" not in nodes[n]:
                    raise OpgraphInputError(path, f"node {n}: attribute 'kind' missing")
                raise OpgraphInputError(path, f"node {n}: 'kind' is {nodes[n]['kind']!r}, expected one of the "
                                              "event kinds")
        elif not ok_int.issuperset(map(type, col)):
            n = first_bad(lambda n, d: type(d.get(k)) not in ok_int)
            if k not in nodes[n]:
                raise OpgraphInputError(path, f"node {n}: attribute {k!r} missing")
            raise OpgraphInputError(path, f"node {n}: {k!r} is {nodes[n][k]!r}, expected an integer (ns)")
    absent = object()
    for k, ok, what in (("device", ok_int, "an integer"), ("stream", ok_int, "an integer"),
                        ("correlation", ok_int, "an integer"), ("external_id", ok_int, "an integer"),
                        ("name", {str, type(None), float}, "a string"),   # NaN: no name
                        ("pid", {int, np.int64, str, float, type(None)}, "a number or a string"),
                        ("tid", {int, np.int64, str, float, type(None)}, "a number or a string")):
        col = list(map(dict.get, vals, repeat(k, len(vals)), repeat(absent, len(vals))))
        types = set(map(type, col)) - {object}
        bad_big = False
        if types <= ok and ok is ok_int and int in types:
            bad_big = any(type(v) is int and not -(2**63) <= v < 2**63 for v in col)
        if k == "name" and float in types:
            bad_big = any(type(v) is float and v == v for v in col)
        if not types <= ok or bad_big:
            n = first_bad(lambda n, d: k in d and (type(d[k]) not in ok or (
                type(d[k]) is int and ok is ok_int and not -(2**63) <= d[k] < 2**63) or (
                k == "name" and type(d[k]) is float and d[k] == d[k])))
            raise OpgraphInputError(path, f"node {n}: {k!r} is {nodes[n][k]!r:.60}, expected {what}"
                                    + (" that fits int64" if ok is ok_int else ""))
    ts = np.fromiter(map(dict.get, vals, repeat("ts", len(vals))), dtype=object, count=len(vals))
    du = np.fromiter(map(dict.get, vals, repeat("dur", len(vals))), dtype=object, count=len(vals))
    try:
        t64, d64 = ts.astype(np.int64), du.astype(np.int64)
        bad = (t64 < lo) | (t64 > hi) | (d64 < -1) | (d64 > hi) | (d64 > hi - np.maximum(t64, 0))
    except OverflowError:
        bad = np.array([not (lo <= t <= hi and -1 <= d <= hi - t) for t, d in zip(ts.tolist(), du.tolist())])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise OpgraphInputError(path, f"node {ids[i]}: ts {ts[i]} / dur {du[i]} ns out of range "
                                      "(ts + dur must fit int64)")


__all__ = ["CYCLIC_EDGE_KINDS", "DIGRAPH_STATE", "check_structure", "check_graph", "check_graph_attrs"]
