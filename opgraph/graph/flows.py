"""Flow events (Chrome-trace ``s``/``f`` pairs: launch flows, ``fwdbwd``, ...) to edges
between the events they bind to; launch flows only fill in the ``launch`` edges that
correlation ids leave out. Times in ns.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from opgraph.graph.linking import LAUNCH_FLOW_CATS, Edges, bind_points
from opgraph.graph.nesting import NEST_TOLERANCE_NS
from opgraph.model.table import DEVICE_ACTIVITY_KINDS


def link_flows(ev: pd.DataFrame, kind: np.ndarray, lane: np.ndarray, ts: np.ndarray, end: np.ndarray,
                eid: np.ndarray, is_node: np.ndarray, launch: Edges
                ) -> tuple[Edges, Edges, tuple[int, int], tuple[int, int]]:
    """Pair the flow events (``flow_start``/``flow_end`` rows with a ``flow_id``, times in
    ns) by category and id, bind each end point to its event (:func:`~opgraph.graph.linking.bind_points`), and
    cross-check the launch flows (``ac2g``, ...) against the correlation-id ``launch``
    edges.

    Returns ``(flow_edges, launch_edges, disagree, unbound)``: the ``flow`` edges of the
    other categories (attribute ``cat``), the launch edges the flows add for activities
    ``launch`` lacks, and ``(count, example event)`` of launch flows that contradict the
    correlation link and of end points that bind to no event (example -1 when none)."""
    fl = np.flatnonzero(np.isin(kind, ("flow_start", "flow_end")) & (ev["flow_id"].to_numpy() >= 0))
    if not len(fl):
        return Edges.empty(), Edges.empty(), (0, -1), (0, -1)
    nodes = np.flatnonzero(is_node | (kind == "cuda_sync"))
    bound = bind_points(lane[nodes], ts[nodes], end[nodes], eid[nodes], lane[fl], ts[fl],
                        ev["correlation"].to_numpy()[nodes], ev["flow_id"].to_numpy()[fl])
    cats = ev["cat"].to_numpy(dtype=object)[fl]
    df = pd.DataFrame({"cat": pd.Series(cats).astype(str).to_numpy(), "id": ev["flow_id"].to_numpy()[fl],
                       "start": kind[fl] == "flow_start", "ev": bound, "ts": ts[fl], "fe": eid[fl]})
    unb = df["ev"] < 0
    unbound = (int(unb.sum()), int(df.loc[unb, "fe"].iloc[0]) if unb.any() else -1)
    df = df[~unb]
    s = df[df["start"]][["cat", "id", "ev", "ts"]]
    f = df[~df["start"]][["cat", "id", "ev", "ts"]]
    m = s.merge(f, on=["cat", "id"], suffixes=("_s", "_f"))
    # opgraph's own overlay flows (critical path) are not dependencies of the program
    m = m[~m["cat"].str.startswith("opgraph.")]
    if m.duplicated(["cat", "ev_f"]).any():
        m = (m[m["ts_s"] <= m["ts_f"] + NEST_TOLERANCE_NS].sort_values("ts_s", kind="stable")
             .drop_duplicates(["cat", "ev_f"], keep="last"))
    m = m[m["ev_s"] != m["ev_f"]]
    # flows to cuda_sync events mirror the sync correlation, handled by the sync linker
    m = m[(kind[m["ev_s"].to_numpy()] != "cuda_sync") & (kind[m["ev_f"].to_numpy()] != "cuda_sync")]
    is_launch_flow = m["cat"].isin(LAUNCH_FLOW_CATS).to_numpy()
    lf = m[is_launch_flow]
    other = m[~is_launch_flow]
    # keep only launch flows from a runtime call to a device activity
    k_s = kind[lf["ev_s"].to_numpy()]
    k_f = kind[lf["ev_f"].to_numpy()]
    lf = lf[(k_s == "runtime") & np.isin(k_f, DEVICE_ACTIVITY_KINDS)]
    have = pd.Series(launch.src, index=launch.dst)
    have = have[~have.index.duplicated()]
    known = lf["ev_f"].isin(have.index)
    lf_known = lf[known]
    mismatch = have.reindex(lf_known["ev_f"]).to_numpy() != lf_known["ev_s"].to_numpy()
    # a CUDA-graph launch reaches many kernels: a flow to any of them agrees
    disagree = (int(mismatch.sum()), int(lf_known["ev_s"].to_numpy()[mismatch][0]) if mismatch.any() else -1)
    new = lf[~known].drop_duplicates("ev_f")
    flow_edges = Edges(other["ev_s"].to_numpy(np.int64), other["ev_f"].to_numpy(np.int64),
                       {"cat": other["cat"].to_numpy(dtype=object)})
    return (flow_edges, Edges(new["ev_s"].to_numpy(np.int64), new["ev_f"].to_numpy(np.int64)),
            disagree, unbound)


__all__ = ["link_flows"]
