"""The column form of a graph (what ``.gpickle`` files hold and ``opgraph build`` makes
without building millions of dicts): node columns, edge arrays with kind codes, the
graph's attributes, and the conversions to and from ``networkx.DiGraph``.

Both the builder (:mod:`opgraph.graph.build`) and the loaders (:mod:`opgraph.graph.io`)
speak it; this module imports neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    import networkx as nx

#: Node attributes of an opgraph-built graph (+ ``rank`` on every node of a multi-rank job graph).
NODE_KEYS = ("kind", "name", "ts", "dur", "pid", "tid", "device", "stream", "correlation", "external_id", "args")
#: Marks a column payload.
PICKLE_MAGIC = "opgraph-columns-v1"


def payload_to_digraph(payload: dict) -> nx.DiGraph:
    """The ``DiGraph`` of a column payload (inverse of :func:`graph_to_payload`)."""
    import networkx as nx

    if payload.get("magic") != PICKLE_MAGIC:
        raise ValueError("not an opgraph column payload")
    G = nx.DiGraph()
    G.graph.update(payload["graph"])
    ids = payload["nodes"].tolist()
    cols = payload["node_cols"]
    ev = G.graph.get("events")
    args = ev["args"].to_numpy(dtype=object)[payload["nodes"]].tolist() if ev is not None else [None] * len(ids)
    kind_u, kind_c = cols["kind"]
    name_u, name_c = cols["name"]
    pid_u, pid_c = cols["pid"]
    tid_u, tid_c = cols["tid"]
    kinds = kind_u[kind_c].tolist()
    names = name_u[name_c].tolist()
    pids = pid_u[pid_c].tolist()
    tids = tid_u[tid_c].tolist()
    if "rank" in cols:  # a multi-rank job graph (docs/multirank.md): every node has its rank
        G._node.update(zip(ids, [
            {"kind": k, "name": n, "ts": t, "dur": d, "pid": p, "tid": ti, "device": dv, "stream": st,
             "correlation": c, "external_id": x, "args": a, "rank": r}
            for k, n, t, d, p, ti, dv, st, c, x, a, r in zip(
                kinds, names, cols["ts"].tolist(), cols["dur"].tolist(), pids, tids, cols["device"].tolist(),
                cols["stream"].tolist(), cols["correlation"].tolist(), cols["external_id"].tolist(), args,
                cols["rank"].tolist())]))
    else:
        G._node.update(zip(ids, [
            {"kind": k, "name": n, "ts": t, "dur": d, "pid": p, "tid": ti, "device": dv, "stream": st,
             "correlation": c, "external_id": x, "args": a}
            for k, n, t, d, p, ti, dv, st, c, x, a in zip(
                kinds, names, cols["ts"].tolist(), cols["dur"].tolist(), pids, tids, cols["device"].tolist(),
                cols["stream"].tolist(), cols["correlation"].tolist(), cols["external_id"].tolist(), args)]))
    G._succ.update({n: {} for n in ids})
    G._pred.update({n: {} for n in ids})
    succ, pred = G._succ, G._pred
    ekinds_u, ekinds_c = payload["edge_kind"]
    src = payload["src"].tolist()
    dst = payload["dst"].tolist()
    ek = ekinds_u[ekinds_c].tolist()
    extra = payload["edge_extra"]  # {position: {attr: value}}
    for j, (u, v, k) in enumerate(zip(src, dst, ek)):
        d = {"kind": k}
        succ[u][v] = d
        pred[v][u] = d
    for j, attrs in extra.items():
        succ[src[j]][dst[j]].update(attrs)
    return G


#: What a node attribute left out of a hand-built graph reads as (:func:`completed_payload`).
NODE_DEFAULTS: dict[str, Any] = {"name": "", "pid": None, "tid": None, "device": -1, "stream": -1,
                                 "correlation": -1, "external_id": -1, "args": None}


def completed_payload(G: nx.DiGraph) -> dict:
    """Column payload of a ``DiGraph`` made by hand with the node attributes of
    docs/model.md: ``kind``, ``ts`` and ``dur`` (int ns) required on every node, the others
    read as :data:`NODE_DEFAULTS`; every edge has a string ``kind``. Without an ``events``
    table in ``G.graph`` one is made from the nodes (event id = node id; ids that are not
    nodes are rows of kind ``other``). ``G`` is not changed. ``ValueError`` names what does
    not fit (a node id that is not a non-negative int, a missing or extra attribute)."""
    import networkx as nx

    nodes = list(G._node)
    if not all(type(n) is int and n >= 0 for n in nodes):
        raise ValueError("node ids must be non-negative ints (event ids)")
    n = len(nodes)
    size = max(nodes) + 1 if n else 0
    if size > 4 * n + 1024:
        raise ValueError(f"node ids up to {size - 1:,} for {n:,} nodes: too sparse for an event table")
    has_rank = bool(n) and all("rank" in d for d in G._node.values())
    keys = set(NODE_KEYS) | ({"rank"} if has_rank else set())
    done: list[dict[str, Any]] = []
    for i, d in G._node.items():
        missing = [k for k in ("kind", "ts", "dur") if k not in d]
        extra = sorted(set(d) - keys)
        if missing or extra:
            what = f"lacks {', '.join(missing)}" if missing else f"has attributes opgraph does not hold: {', '.join(extra)}"
            raise ValueError(f"node {i} {what}")
        done.append({**NODE_DEFAULTS, **d})
    ev = G.graph.get("events")
    if isinstance(ev, pd.DataFrame) and "args" in ev and len(ev) >= size:
        args = ev["args"].to_numpy(dtype=object)
        for i, d in zip(nodes, done):
            d["args"] = args[i]
    else:
        rows = dict(zip(nodes, done))
        col = lambda k, fill: [rows[i][k] if i in rows else fill for i in range(size)]  # noqa: E731
        args = np.empty(size, dtype=object)
        args[:] = col("args", None)
        ev = pd.DataFrame({
            "eid": np.arange(size, dtype=np.int64), "kind": col("kind", "other"), "cat": [""] * size,
            "ph": ["X"] * size, "name": col("name", ""), "ts_ns": np.array(col("ts", 0), dtype=np.int64),
            "dur_ns": np.array(col("dur", 0), dtype=np.int64), "pid": col("pid", None), "tid": col("tid", None),
            **{k: np.array(col(k, -1), dtype=np.int64) for k in ("device", "stream", "correlation", "external_id")},
            "rf_id": np.full(size, -1, dtype=np.int64), "flow_id": np.full(size, -1, dtype=np.int64),
            "rank": np.array(col("rank", -1), dtype=np.int64) if has_rank else np.full(size, -1, dtype=np.int64),
            "args": args})
        for i, d in zip(nodes, done):
            d["args"] = args[i]
    for u, v, d in G.edges(data=True):
        if not isinstance(d.get("kind"), str):
            raise ValueError(f"edge {u} -> {v} has no kind")
    H = nx.DiGraph()
    H.graph.update(G.graph)
    H.graph["events"] = ev
    H.add_nodes_from(zip(nodes, done))
    H.add_edges_from(G.edges(data=True))
    got = graph_to_payload(H)
    if got is None:
        raise ValueError("node attributes of the wrong type (ts, dur, device, stream, correlation, external_id: ints)")
    return got


def factorize_values(values: list) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values, int32 codes) of ``values`` (None kept as a value)."""
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=False)
    return np.asarray(uniques, dtype=object), codes.astype(np.int32)


def graph_to_payload(G: nx.DiGraph) -> dict | None:
    """Column payload of an opgraph-built graph, or None when the graph has other shapes
    (then it pickles the ordinary way)."""
    ev = G.graph.get("events")
    if not isinstance(ev, pd.DataFrame) or "args" not in ev:
        return None
    nodes = list(G._node)
    attrs = list(G._node.values())
    if not all(type(n) is int for n in nodes):
        return None
    has_rank = bool(attrs) and "rank" in attrs[0]
    n_keys = len(NODE_KEYS) + (1 if has_rank else 0)
    if any(len(d) != n_keys for d in attrs):
        return None
    try:
        node_arr = np.array(nodes, dtype=np.int64)
        args_col = ev["args"].to_numpy(dtype=object)[node_arr]
        if not all(d["args"] is a for d, a in zip(attrs, args_col)):
            return None
        cols: dict[str, Any] = {}
        for k in ("ts", "dur", "device", "stream", "correlation", "external_id") + (("rank",) if has_rank else ()):
            cols[k] = np.array([d[k] for d in attrs], dtype=np.int64)
        for k in ("kind", "name", "pid", "tid"):
            cols[k] = factorize_values([d[k] for d in attrs])
    except (KeyError, TypeError, ValueError, OverflowError, IndexError):
        return None
    succ = G._succ
    src = [u for u, nbrs in succ.items() for _v in nbrs]
    dst = [v for nbrs in succ.values() for v in nbrs]
    dl = [d for nbrs in succ.values() for d in nbrs.values()]
    ek = [d.get("kind") for d in dl]
    if not {str}.issuperset(map(type, ek)):  # edges without a (string) kind: pickle the ordinary way
        return None
    lens = np.fromiter(map(len, dl), dtype=np.int64, count=len(dl))
    extra = {}
    for j in np.flatnonzero(lens != 1).tolist():
        extra[j] = {k: val for k, val in dl[j].items() if k != "kind"}
    graph = dict(G.graph)
    return {"magic": PICKLE_MAGIC, "graph": graph, "nodes": node_arr, "node_cols": cols,
            "src": np.array(src, dtype=np.int64), "dst": np.array(dst, dtype=np.int64),
            "edge_kind": factorize_values(ek), "edge_extra": extra}
