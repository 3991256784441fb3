"""Columnar views of a typed graph, extracted once, for vectorised analyses.

Analyses that sweep millions of nodes work on these numpy arrays (ns, int codes) rather
than on per-node Python calls; the networkx graph stays the model users touch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable

import numpy as np
import pandas as pd

from opgraph.model.lanes import lanes
from opgraph.model.table import DEVICE_ACTIVITY_KINDS, HOST_KINDS


@dataclass
class GraphArrays:
    """Nodes of a graph as arrays indexed by position ``0..n-1``.

    ``eid`` maps positions to node keys; ``ts``/``end``/``dur`` are ns; ``kind`` is an
    object array of kind names; ``lane`` codes host threads (pid, tid) and device streams
    (device, stream) (different lanes never share a code), per rank: ``rank`` is the
    node's rank in a multi-rank job graph (docs/multirank.md), all zeros for a single-rank
    graph, and two ranks never share a lane. Edge arrays per kind hold positions (not eids).
    """

    eid: np.ndarray
    kind: np.ndarray
    name: np.ndarray
    ts: np.ndarray
    end: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    lane: np.ndarray
    edges: dict[str, tuple[np.ndarray, np.ndarray]]
    pos_of: dict[int, int]
    rank: np.ndarray | None = None
    #: Per edge kind, per-edge attributes beyond ``kind`` (aligned with ``edges[kind]``):
    #: ``inferred`` (bool), ``cat`` (flow category, object), ``evidence`` (what an inferred
    #: edge rests on, object: ``stream_wait_call``, ``stream_wait_work``, ``burst``, ...), and
    #: for ``handoff`` edges ``first`` / ``wait_from`` (positions, -1: none), ``wait_from_end`` / ``resume_end`` (bool).
    edge_attrs: dict[str, dict[str, np.ndarray]] | None = None
    #: ``name`` factorized once (codes, distinct names), for :meth:`names_match`.
    _name_codes: tuple[np.ndarray, list[str]] | None = field(default=None, init=False, repr=False)
    _derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @cached_property
    def multi_rank(self) -> bool:
        """The nodes belong to more than one rank (a multi-rank job graph)."""
        return self.rank is not None and bool(self.rank.any())

    @cached_property
    def lane_first(self) -> dict[int, int]:
        """Per lane code, the position of its first node (for labelling a lane)."""
        codes, first = np.unique(self.lane, return_index=True)
        return dict(zip(codes.tolist(), first.tolist()))

    def names_match(self, rx: re.Pattern[str]) -> np.ndarray:
        """Per node: ``rx.search(name)``, run once per distinct name (a missing name is "")."""
        if self._name_codes is None:
            codes, uniq = pd.factorize(self.name, use_na_sentinel=False)
            self._name_codes = (codes, [u if isinstance(u, str) else "" for u in uniq.tolist()])
        codes, uniq = self._name_codes
        if not len(codes):
            return np.zeros(0, dtype=bool)
        hit = np.fromiter((bool(rx.search(u)) for u in uniq), dtype=bool, count=len(uniq))
        return hit[codes]

    def __post_init__(self) -> None:
        if self.rank is None:
            self.rank = np.zeros(len(self.eid), dtype=np.int64)

    @property
    def n(self) -> int:
        return len(self.eid)

    @property
    def dur(self) -> np.ndarray:
        return self.end - self.ts

    def is_kind(self, *kinds: str) -> np.ndarray:
        return np.isin(self.kind, kinds)

    def derived(self, key: str, make: Callable[[], Any]) -> Any:
        """A structure a layer above derives from these arrays alone (the critical path's
        boundary edges, shared by the path and the what-if pricing), made once per view by
        ``make()`` and kept under ``key``. Callers must not modify it."""
        got = self._derived.get(key)
        if got is None:
            got = self._derived[key] = make()
        return got

    @cached_property
    def is_host(self) -> np.ndarray:
        """Per node position: a host event (:data:`HOST_KINDS`). Computed once, read-only."""
        return _frozen(self.is_kind(*HOST_KINDS))

    @cached_property
    def is_activity(self) -> np.ndarray:
        """Per node position: a device activity (kernel, memcpy, memset). Computed once,
        read-only."""
        return _frozen(self.is_kind(*DEVICE_ACTIVITY_KINDS))

    @cached_property
    def parent(self) -> np.ndarray:
        """Per node position: the position of its ``nest`` parent (-1: a root). Nesting is a
        forest (a node has at most one parent: tests/test_real_traces.py), computed once per
        view and read-only (docs/model.md, "Nesting")."""
        return self._source_by_target("nest")

    @cached_property
    def launcher(self) -> np.ndarray:
        """Per node position: the position of the runtime call that launched it (-1: none).
        A device activity has at most one launch (its correlation id links it to one call:
        docs/model.md, "launch"); computed once per view and read-only."""
        return self._source_by_target("launch")

    def _source_by_target(self, kind: str) -> np.ndarray:
        """Per node position: the source of its incoming ``kind`` edge (-1: none), read-only
        (for kinds a node has at most one of)."""
        out = np.full(self.n, -1, dtype=np.int64)
        s, d = self.out_edges(kind)
        out[d] = s
        return _frozen(out)

    @cached_property
    def host_parent(self) -> np.ndarray:
        """:attr:`parent` on the host only: -1 for device nodes and for a host event whose
        parent is not a host event. Read-only."""
        p, host = self.parent, self.is_host
        ok = host & (p >= 0)
        ok[ok] = host[p[ok]]
        parent = np.where(ok, p, -1)
        parent.flags.writeable = False
        return parent

    def out_edges(self, kind: str) -> tuple[np.ndarray, np.ndarray]:
        return self.edges.get(kind, (np.empty(0, np.int64), np.empty(0, np.int64)))

    def edge_attr(self, kind: str, name: str, default: object) -> np.ndarray:
        """Attribute ``name`` of the ``kind`` edges (aligned with :meth:`out_edges`), or
        ``default`` for every edge when no edge of the kind carries it."""
        got = (self.edge_attrs or {}).get(kind, {}).get(name)
        if got is not None:
            return got
        n = len(self.out_edges(kind)[0])
        return np.full(n, default, dtype=object if isinstance(default, str) or default is None else None)

    @classmethod
    def from_columns(cls, eid: np.ndarray, kind: np.ndarray, name: np.ndarray, ts: np.ndarray, dur: np.ndarray,
                     pid: np.ndarray, tid: np.ndarray, device: np.ndarray, stream: np.ndarray,
                     rank: np.ndarray | None, src: np.ndarray, dst: np.ndarray, edge_kind: np.ndarray,
                     rich: list[tuple[int, dict]]) -> "GraphArrays":
        """The arrays of node columns (one entry per node, ``ts``/``dur`` in ns, ``rank``
        None for a single-rank graph) and edge columns (``src``/``dst`` node keys,
        ``edge_kind`` object array, in the order a networkx graph iterates its edges;
        ``rich``: (edge index, attributes) of the edges that carry more than a kind)."""
        n = len(eid)
        pos_of = dict(zip(eid.tolist(), range(n)))
        # lanes: host (pid, tid); device (device, stream); per rank in a job graph
        is_dev = np.isin(kind, DEVICE_ACTIVITY_KINDS + ("gpu_annotation",))
        lane = lanes(pid, tid, device, stream, is_dev, rank)
        if rank is None:
            rank = np.zeros(n, dtype=np.int64)
        edges: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        if len(src):
            s_pos, d_pos = key_positions(eid, src), key_positions(eid, dst)
            codes, uniq = pd.factorize(edge_kind)
            per_kind = _edge_attrs(rich, len(src), codes, uniq, pos_of)
            for j, k in enumerate(uniq):
                m = codes == j
                edges[str(k)] = (s_pos[m], d_pos[m])
        else:
            per_kind = {}
        return cls(eid, kind, name, ts, ts + dur, pid, tid, device, stream, lane, edges, pos_of,
                   rank, per_kind)


def _frozen(x: np.ndarray) -> np.ndarray:
    x.flags.writeable = False
    return x


def key_positions(eid: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Positions in ``eid`` (node keys in node order) of the node keys ``keys``; -1 for a
    key that is not there. A lookup table when the keys are dense, else a sorted search."""
    keys = np.asarray(keys, dtype=np.int64)
    n = len(eid)
    out = np.full(len(keys), -1, dtype=np.int64)
    if not n or not len(keys):
        return out
    if eid.min() >= 0 and eid.max() < 4 * n + 1024:
        lut = np.full(int(eid.max()) + 1, -1, dtype=np.int64)
        lut[eid] = np.arange(n)
        ok = (keys >= 0) & (keys < len(lut))
        out[ok] = lut[keys[ok]]
        return out
    order = np.argsort(eid, kind="stable")
    at = np.minimum(np.searchsorted(eid[order], keys), n - 1)
    hit = eid[order][at] == keys
    out[hit] = order[at][hit]
    return out


def _edge_attrs(rich: list[tuple[int, dict]], n_edges: int, codes: np.ndarray, uniq: np.ndarray,
                pos_of: dict[int, int]) -> dict[str, dict[str, np.ndarray]]:
    """Per edge kind, the attribute arrays of :attr:`GraphArrays.edge_attrs`."""
    if not rich:
        return {}
    idx = np.array([j for j, _ in rich], dtype=np.int64)
    ds = [d for _, d in rich]
    full: dict[str, np.ndarray] = {}
    inferred = np.zeros(n_edges, dtype=bool)
    inferred[idx] = [bool(d.get("inferred", False)) for d in ds]
    full["inferred"] = inferred
    for nm in ("cat", "evidence"):
        if any(nm in d for d in ds):
            col = np.full(n_edges, None, dtype=object)
            col[idx] = [d.get(nm) for d in ds]
            full[nm] = col
    if any("wait_from" in d for d in ds):
        first = np.full(n_edges, -1, dtype=np.int64)
        wfrom = np.full(n_edges, -1, dtype=np.int64)
        wend = np.zeros(n_edges, dtype=bool)
        rend = np.zeros(n_edges, dtype=bool)
        first[idx] = [pos_of.get(d.get("first", -1), -1) for d in ds]
        wfrom[idx] = [pos_of.get(d.get("wait_from", -1), -1) for d in ds]
        wend[idx] = [d.get("wait_from_at") == "end" for d in ds]
        rend[idx] = [d.get("resume_at") == "end" for d in ds]
        full.update({"first": first, "wait_from": wfrom, "wait_from_end": wend, "resume_end": rend})
    out: dict[str, dict[str, np.ndarray]] = {}
    for j, k in enumerate(uniq):
        m = codes == j
        out[str(k)] = {nm: arr[m] for nm, arr in full.items()}
    return out
