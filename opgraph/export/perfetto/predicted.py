"""The predicted timeline of ``opgraph predict --perfetto`` as a Chrome/Perfetto trace
(:mod:`opgraph.predict.simulation` computes the times; this module writes them)."""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np

from opgraph.model.arrays import GraphArrays
from opgraph.export.perfetto.chrome import write_trace


def write_predicted_trace(G: nx.DiGraph, pa: GraphArrays, removed: np.ndarray, path: str,
                          info: dict[str, Any] | None = None) -> int:
    """Write the predicted timeline as a Chrome/Perfetto trace next to the original.

    Every node event is written with its predicted ``ts``/``dur`` (removed events are
    left out); metadata, instant and other events are kept as they are; the trace-span
    event covers the predicted timeline. Flow events are rebuilt from the graph's
    ``launch`` edges (``ac2g``) and ``flow`` edges (their original ``cat``), from the
    predicted start of one end to the predicted start of the other; ``cuda_sync`` marker
    events are left out (their times no longer hold). ``info`` goes into the trace's
    top-level ``opgraph_predict`` key. Returns the number of events written."""
    ev = G.graph["events"]
    n_ev = len(ev)
    eids = ev["eid"].to_numpy()
    row_of = np.full(int(eids.max()) + 1 if n_ev else 0, -1, dtype=np.int64)
    row_of[eids] = np.arange(n_ev)
    ts = ev["ts_ns"].to_numpy().copy()
    dur = ev["dur_ns"].to_numpy().copy()
    rows = row_of[pa.eid]
    ts[rows] = pa.ts
    dur[rows] = pa.end - pa.ts
    kind = ev["kind"].to_numpy(dtype=object)
    keep = ~np.isin(kind, ("flow_start", "flow_end", "cuda_sync"))
    keep[rows[removed]] = False
    live = ~removed & (pa.is_host | pa.is_activity | (pa.kind == "gpu_annotation"))
    span_rows = np.flatnonzero(kind == "trace_span")
    if len(span_rows) and live.any():
        lo, hi = int(pa.ts[live].min()), int(pa.end[live].max())
        ts[span_rows] = lo
        dur[span_rows] = np.where(dur[span_rows] >= 0, hi - lo, dur[span_rows])
    out = ev.iloc[np.flatnonzero(keep)].copy()
    out["ts_ns"] = ts[keep]
    out["dur_ns"] = dur[keep]
    # flows from the graph's edges, at the predicted times
    pid_o = ev["pid"].to_numpy(dtype=object)
    tid_o = ev["tid"].to_numpy(dtype=object)
    extra: list[dict[str, Any]] = []
    fid = int(ev["flow_id"].max()) + 1 if n_ev and (ev["flow_id"] >= 0).any() else 1
    ls, ld = pa.out_edges("launch")
    pairs = [(ls, ld, np.full(len(ls), "ac2g", dtype=object))]
    fs, fd = pa.out_edges("flow")
    if len(fs):
        fe = np.array([(G._succ[u][v].get("cat") or "flow") for u, v in zip(pa.eid[fs].tolist(), pa.eid[fd].tolist())],
                      dtype=object)
        pairs.append((fs, fd, fe))
    for s_, d_, cats in pairs:
        ok = ~removed[s_] & ~removed[d_]
        for u, v, c in zip(s_[ok].tolist(), d_[ok].tolist(), cats[ok].tolist()):
            ru, rv = int(rows[u]), int(rows[v])
            extra.append({"ph": "s", "id": fid, "cat": c, "name": c, "pid": pid_o[ru], "tid": tid_o[ru],
                          "ts": int(pa.ts[u])})
            extra.append({"ph": "f", "id": fid, "bp": "e", "cat": c, "name": c, "pid": pid_o[rv],
                          "tid": tid_o[rv], "ts": int(pa.ts[v])})
            fid += 1
    H = nx.DiGraph()
    H.graph.update(G.graph)
    H.graph["events"] = out
    meta = dict(G.graph.get("trace_metadata") or {})
    meta["opgraph_predict"] = info or {"predicted": True}
    H.graph["trace_metadata"] = meta
    write_trace(H, path, extra_events=extra)
    return int(len(out) + len(extra))
