"""Validation of a loaded column payload (a ``.gpickle`` read as a
:class:`~opgraph.model.trace_graph.TraceGraph`): the same guarantees :func:`check_graph` gives a
``DiGraph`` (graph attributes, node kinds, integer times that fit int64, ids with event
rows, edge endpoints and kinds, attribute bounds, acyclic edge kinds), checked on arrays
before any per-node object exists. Each refusal is one
:class:`~opgraph.errors.OpgraphInputError` line naming the file.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opgraph.errors import OpgraphInputError
from opgraph.model.attr_bounds import check_table_bounds
from opgraph.model.cycles import has_cycle
from opgraph.model.packed_args import ARGS_KEY, JSON_ARGS_KEY, check_json_packed, check_packed
from opgraph.model.payload import NODE_KEYS, PICKLE_MAGIC
from opgraph.model.validate import CYCLIC_EDGE_KINDS, check_graph_attrs
from opgraph.model.table import ALL_KINDS

#: Node columns stored as int64 arrays (ns for ``ts``/``dur``).
INT_NODE_COLS = ("ts", "dur", "device", "stream", "correlation", "external_id")
#: Node columns stored as (distinct values, codes), with the types their values may have.
CODED_NODE_COLS = {"kind": ({str}, "one of the event kinds"),
                   "name": ({str, type(None), float}, "a string"),
                   "pid": ({int, np.int64, str, float, type(None)}, "a number or a string"),
                   "tid": ({int, np.int64, str, float, type(None)}, "a number or a string")}


def _int_array(x: Any, n: int | None, what: str, path: str) -> np.ndarray:
    if type(x) is not np.ndarray or x.ndim != 1 or x.dtype != np.int64 or (n is not None and len(x) != n):
        raise OpgraphInputError(path, f"corrupt graph columns: {what} is not a{'' if n is None else f' {n}-long'} "
                                      "int64 array")
    return x


def _coded(x: Any, n: int, what: str, path: str) -> tuple[np.ndarray, np.ndarray]:
    ok = (type(x) is tuple and len(x) == 2 and type(x[0]) is np.ndarray and x[0].ndim == 1
          and type(x[1]) is np.ndarray and x[1].ndim == 1 and len(x[1]) == n and np.issubdtype(x[1].dtype, np.integer))
    if not ok:
        raise OpgraphInputError(path, f"corrupt graph columns: {what} is not (values, codes)")
    uniq, codes = x
    if n and (int(codes.min()) < 0 or int(codes.max()) >= len(uniq)):
        raise OpgraphInputError(path, f"corrupt graph columns: {what} codes out of range")
    return uniq, codes


def check_columns(payload: Any, path: str, file_size: int) -> None:
    """Refuse a column payload opgraph cannot analyse, with one line naming ``path``.

    Same rules as :func:`opgraph.model.validate.check_graph`;
    scans are whole-array (numpy), the culprit is named from the first bad position."""
    if type(payload) is not dict or payload.get("magic") != PICKLE_MAGIC:
        raise OpgraphInputError(path, "corrupt graph columns: not an opgraph column payload")
    gr = payload.get("graph")
    if type(gr) is not dict:
        raise OpgraphInputError(path, "corrupt graph columns: the graph attributes are not a dict")
    packed = ARGS_KEY in payload or JSON_ARGS_KEY in payload
    check_graph_attrs(gr, path, args_packed=packed)
    ev = gr["events"]
    if ARGS_KEY in payload and JSON_ARGS_KEY in payload:
        raise OpgraphInputError(path, "corrupt graph columns: the event args are packed twice")
    if ARGS_KEY in payload:
        check_packed(payload[ARGS_KEY], ev, path)
    elif packed:
        check_json_packed(payload[JSON_ARGS_KEY], ev, path)
    ids = _int_array(payload.get("nodes"), None, "the node ids", path)
    n = len(ids)
    cols = payload.get("node_cols")
    if type(cols) is not dict:
        raise OpgraphInputError(path, "corrupt graph columns: the node columns are not a dict")
    want = set(NODE_KEYS) - {"args"}
    if not want <= cols.keys() or not cols.keys() <= want | {"rank"}:
        raise OpgraphInputError(path, f"corrupt graph columns: node columns {sorted(map(str, cols))} "
                                      f"(expected {sorted(want)}, and 'rank' in a job graph)")
    for k in INT_NODE_COLS + (("rank",) if "rank" in cols else ()):
        _int_array(cols[k], n, f"node column {k!r}", path)
    for k, (types, what) in CODED_NODE_COLS.items():
        uniq, codes = _coded(cols[k], n, f"node column {k!r}", path)
        vals = uniq.tolist()
        used = np.bincount(codes, minlength=len(vals)).astype(bool).tolist() if n else [False] * len(vals)
        bad = [i for i, v in enumerate(vals) if used[i] and (
               type(v) not in types or (k == "kind" and v not in ALL_KINDS)
               or (type(v) is float and k == "name" and v == v)
               or (type(v) is int and not -(2**63) <= v < 2**63))]
        if bad:
            node = int(ids[int(np.flatnonzero(codes == bad[0])[0])])
            if k == "kind":
                raise OpgraphInputError(path, f"node {node}: 'kind' is {vals[bad[0]]!r:.60}, expected one of the "
                                              "event kinds")
            raise OpgraphInputError(path, f"node {node}: {k!r} is {vals[bad[0]]!r:.60}, expected {what}")
    if n:
        bad = (ids < 0) | (ids >= len(ev))
        if bad.any():
            raise OpgraphInputError(path, f"node {int(ids[bad][0])} has no row in the event table "
                                          f"({len(ev)} rows; node ids are event ids)")
        mark = np.zeros(len(ev), dtype=bool)
        mark[ids] = True
        if int(np.count_nonzero(mark)) != n:
            raise OpgraphInputError(path, "corrupt graph columns: a node id is listed twice")
        ts, du = cols["ts"], cols["dur"]
        hi = np.iinfo(np.int64).max
        bad = (du < -1) | (du > hi - np.maximum(ts, 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise OpgraphInputError(path, f"node {int(ids[i])}: ts {int(ts[i])} / dur {int(du[i])} ns out of range "
                                          "(ts + dur must fit int64)")
    b = check_table_bounds(gr, path, file_size, track=False)
    src = _int_array(payload.get("src"), None, "the edge sources", path)
    dst = _int_array(payload.get("dst"), len(src), "the edge targets", path)
    ku, kc = _coded(payload.get("edge_kind"), len(src), "the edge kinds", path)
    kinds = ku.tolist()
    if not {str}.issuperset(map(type, kinds)):
        raise OpgraphInputError(path, f"corrupt graph columns: an edge kind is {next(k for k in kinds if type(k) is not str)!r:.60}, "
                                      "expected a string")
    extra = payload.get("edge_extra")
    if type(extra) is not dict or not {int}.issuperset(map(type, extra)) or not {dict}.issuperset(map(type, extra.values())):
        raise OpgraphInputError(path, "corrupt graph columns: the edge attributes are not {edge index: dict}")
    if extra and (min(extra) < 0 or max(extra) >= len(src)):
        raise OpgraphInputError(path, "corrupt graph columns: attributes of an edge that does not exist")
    if extra:
        b.column(path, "edge attributes", list(extra), list(extra.values()))
    if not len(src):
        return
    is_node = np.zeros(len(ev), dtype=bool)   # node ids are event rows (checked above)
    is_node[ids] = True
    for what, end in (("source", src), ("target", dst)):
        inside = (end >= 0) & (end < len(ev))
        miss = ~inside
        miss[inside] = ~is_node[end[inside]]
        if miss.any():
            j = int(np.flatnonzero(miss)[0])
            raise OpgraphInputError(path, f"corrupt graph: edge {int(src[j])} -> {int(dst[j])}: its {what} is not a "
                                          "node of the graph")
    pair = np.sort(src * np.int64(len(ev)) + dst)   # ids are event rows: the key fits int64
    if (pair[1:] == pair[:-1]).any():
        raise OpgraphInputError(path, "corrupt graph columns: a node pair is linked twice")
    cyclic_ok = np.array([k in CYCLIC_EDGE_KINDS for k in kinds], dtype=bool)
    keep = ~cyclic_ok[kc]
    t_of = np.zeros(len(ev), dtype=np.int64)   # node ids are event rows
    t_of[ids] = cols["ts"]
    if has_cycle(src[keep], dst[keep], t_of):
        import networkx as nx

        ek = np.asarray(kinds, dtype=object)[kc[keep]]
        H = nx.DiGraph()
        H.add_edges_from((u, v, {"kind": k}) for u, v, k in zip(src[keep].tolist(), dst[keep].tolist(), ek.tolist()))
        cyc = nx.find_cycle(H)
        kinds_in = sorted({H.edges[u, v]["kind"] for u, v, *_ in cyc})
        raise OpgraphInputError(path, f"the graph has a cycle through nodes {[u for u, *_ in cyc][:8]} "
                                      f"(edge kinds {', '.join(kinds_in)}), which must be acyclic")


__all__ = ["INT_NODE_COLS", "CODED_NODE_COLS", "check_columns"]
