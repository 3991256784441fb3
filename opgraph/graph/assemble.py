"""The builder's last step: its edge lists (per kind) and the event table to the column
payload (:mod:`opgraph.model.payload`) that ``.gpickle`` files hold: node columns for the
events that are nodes (times in ns), one ``src``/``dst``/kind-code array for all edges,
per-edge extra attributes, and a pair linked twice kept once (health ``parallel_edge``).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd

from opgraph.model.edge_kinds import EDGE_KINDS
from opgraph.graph.linking import Edges


def category_codes(col: pd.Series, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(uniques, codes) of a categorical column restricted to rows ``idx`` (missing -> None)."""
    cat = col.array
    codes = np.asarray(cat.codes)[idx].astype(np.int32)
    uniq = np.append(np.asarray(cat.categories, dtype=object), None).astype(object)
    codes = np.where(codes < 0, len(uniq) - 1, codes).astype(np.int32)
    return uniq, codes


def assemble_payload(ev: pd.DataFrame, is_node: np.ndarray, eid: np.ndarray, ts: np.ndarray, dur: np.ndarray,
                     device: np.ndarray, stream: np.ndarray, corr: np.ndarray, edges: dict[str, list[Edges]],
                     health_dup: Callable[..., None]) -> dict[str, Any]:
    """The graph as columns (the form it is pickled in, see :mod:`opgraph.graph.io`)."""
    from opgraph.model.payload import PICKLE_MAGIC

    idx = np.flatnonzero(is_node)
    cols: dict[str, Any] = {
        "ts": ts[idx], "dur": dur[idx], "device": device[idx], "stream": stream[idx], "correlation": corr[idx],
        "external_id": ev["external_id"].to_numpy()[idx],
    }
    for k in ("kind", "name", "pid", "tid"):
        cols[k] = category_codes(ev[k], idx)
    src_l, dst_l, kind_l, attr_l = [], [], [], []
    for j, ek in enumerate(EDGE_KINDS):
        for e in edges[ek]:
            if not len(e):
                continue
            src_l.append(e.src)
            dst_l.append(e.dst)
            kind_l.append(np.full(len(e), j, dtype=np.int32))
            attr_l.append(e.attrs if e.attrs else None)
    if src_l:
        src = np.concatenate(src_l)
        dst = np.concatenate(dst_l)
        kcode = np.concatenate(kind_l)
    else:
        src = dst = np.empty(0, np.int64)
        kcode = np.empty(0, np.int32)
    # per-edge extra attributes, keyed by position in the concatenated arrays
    extra: dict[int, dict[str, Any]] = {}
    off = 0
    for s_, attrs in zip(src_l, attr_l):
        if attrs:
            names_ = list(attrs)
            vals = [v.tolist() for v in attrs.values()]
            for j in range(len(s_)):
                extra[off + j] = {nm: vv[j] for nm, vv in zip(names_, vals)}
        off += len(s_)
    # a pair linked twice keeps its first edge
    if len(src):
        dup = pd.DataFrame({"s": src, "d": dst}).duplicated().to_numpy()
        if dup.any():
            health_dup("parallel_edge", int(dup.sum()), int(src[dup][0]),
                       "node pairs linked twice; the first edge kind was kept")
            keep = np.flatnonzero(~dup)
            remap = {int(o): n for n, o in enumerate(keep.tolist())}
            extra = {remap[j]: a for j, a in extra.items() if j in remap}
            src, dst, kcode = src[keep], dst[keep], kcode[keep]
    return {"magic": PICKLE_MAGIC, "graph": {}, "nodes": eid[idx], "node_cols": cols, "src": src, "dst": dst,
            "edge_kind": (np.array(EDGE_KINDS, dtype=object), kcode), "edge_extra": extra}


__all__ = ["category_codes", "assemble_payload"]
