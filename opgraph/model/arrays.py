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

from opgraph.model.lanes import lanes_of_codes
from opgraph.model.table import DEVICE_ACTIVITY_KINDS, HOST_KINDS
from opgraph.names import annotation_like, names_where


#: A coded column: (distinct values, codes), as the saved graph holds it.
Coded = tuple[np.ndarray, np.ndarray]


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
    rank: np.ndarray | None = None
    #: Per edge kind, per-edge attributes beyond ``kind`` (aligned with ``edges[kind]``):
    #: ``inferred`` (bool), ``cat`` (flow category, object), ``evidence`` (what an inferred
    #: edge rests on, object: ``stream_wait_call``, ``stream_wait_work``, ``burst``, ...), and
    #: for ``handoff`` edges ``first`` / ``wait_from`` (positions, -1: none), ``wait_from_end`` / ``resume_end`` (bool).
    edge_attrs: dict[str, dict[str, np.ndarray]] | None = None
    #: ``kind`` as (distinct kinds, codes) when the columns came coded: :meth:`is_kind` reads it.
    kind_coded: Coded | None = field(default=None, repr=False, compare=False)
    #: ``name`` as (distinct names, codes) when the columns came coded: :attr:`name_codes`.
    name_coded: Coded | None = field(default=None, repr=False, compare=False)
    _derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @cached_property
    def multi_rank(self) -> bool:
        """The nodes belong to more than one rank (a multi-rank job graph)."""
        return self.rank is not None and bool(self.rank.any())

    @cached_property
    def pos_of(self) -> dict[int, int]:
        """Node key (event id) -> position; a dict made on first use."""
        return dict(zip(self.eid.tolist(), range(len(self.eid))))

    @cached_property
    def lane_first(self) -> dict[int, int]:
        """Per lane code, the position of its first node (for labelling a lane)."""
        codes, first = np.unique(self.lane, return_index=True)
        return dict(zip(codes.tolist(), first.tolist()))

    @cached_property
    def name_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """``name`` as (codes, distinct names): the coded column it came from, or factorized
        once (a missing name has a code of its own). Read-only."""
        if self.name_coded is not None:
            uniq, codes = self.name_coded
            return _frozen(np.asarray(codes)), uniq
        codes, uniq = pd.factorize(self.name, use_na_sentinel=False)
        return _frozen(codes), np.asarray(uniq, dtype=object)

    def names_match(self, rx: re.Pattern[str]) -> np.ndarray:
        """Per node: ``rx.search(name)``, run once per distinct name (a missing name is "")."""
        codes, uniq = self.name_codes
        if not len(codes):
            return np.zeros(0, dtype=bool)
        hit = np.fromiter((bool(rx.search(u if isinstance(u, str) else "")) for u in uniq.tolist()),
                          dtype=bool, count=len(uniq))
        return hit[codes]

    def names_where(self, test: Callable[[str], object]) -> np.ndarray:
        """Per node: :func:`opgraph.names.names_where` (a missing name is False)."""
        return names_where(self.name_codes, test)

    @cached_property
    def annotation_like(self) -> np.ndarray:
        """Per node: :func:`opgraph.names.annotation_like` (an annotation, or a ``cpu_op``
        that is a ``record_function`` label). Computed once, read-only."""
        return _frozen(annotation_like(self.kind, self.name_codes))

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
        """Per node position: its kind is one of ``kinds``."""
        if self.kind_coded is not None:
            uniq, codes = self.kind_coded
            return np.isin(uniq, kinds)[codes]
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
    def from_columns(cls, eid: np.ndarray, kind: Coded, name: Coded, ts: np.ndarray, dur: np.ndarray, pid: Coded,
                     tid: Coded, device: np.ndarray, stream: np.ndarray, rank: np.ndarray | None, src: np.ndarray,
                     dst: np.ndarray, edge_kind: Coded, rich: tuple[np.ndarray, list[dict]]) -> "GraphArrays":
        """The arrays of node columns (one entry per node, ``ts``/``dur`` in ns, ``kind``,
        ``name``, ``pid`` and ``tid`` as (distinct values, codes), ``rank`` None for a single-rank
        graph) and edge columns (``src``/``dst`` node keys, ``edge_kind`` as (distinct kinds,
        codes), in the order a networkx graph iterates its edges; ``rich``: the indices, in
        increasing order, and attributes of the edges that carry more than a kind)."""
        n = len(eid)
        k_uniq, k_codes = kind
        kind_obj = k_uniq[k_codes]
        # lanes: host (pid, tid); device (device, stream); per rank in a job graph
        is_dev = np.isin(k_uniq, DEVICE_ACTIVITY_KINDS + ("gpu_annotation",))[k_codes]
        pc, _ = _value_codes(*pid)
        tc, tu = _value_codes(*tid)
        lane = lanes_of_codes(pc, tc, len(tu), device, stream, is_dev, rank)
        if rank is None:
            rank = np.zeros(n, dtype=np.int64)
        edges: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        per_kind: dict[str, dict[str, np.ndarray]] = {}
        if len(src):
            s_pos, d_pos = key_positions(eid, src), key_positions(eid, dst)
            e_codes, e_uniq = _value_codes(*edge_kind)   # (a job's columns repeat a kind per rank)
            masks = [(e_codes == j) for j in range(len(e_uniq))]
            # kinds in order of their first edge (as a factorize of the kind column numbers them)
            seen = sorted((int(m.argmax()), j) for j, m in enumerate(masks) if m.any())
            for _, j in seen:
                edges[str(e_uniq[j])] = (s_pos[masks[j]], d_pos[masks[j]])
            per_kind = _edge_attrs(rich, e_codes, [(str(e_uniq[j]), j, masks[j]) for _, j in seen], eid)
        return cls(eid, kind_obj, name[0][name[1]], ts, ts + dur, pid[0][pid[1]], tid[0][tid[1]], device, stream,
                   lane, edges, rank, per_kind, kind_coded=kind, name_coded=name)


def _value_codes(uniq: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, distinct values) of a coded column as :func:`pandas.factorize` of its values
    gives them, up to numbering: equal values one code (a job's columns may list a value
    once per rank), a missing value -1."""
    vc, vu = pd.factorize(uniq)
    return vc[codes], np.asarray(vu, dtype=object)


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


def _edge_attrs(rich: tuple[np.ndarray, list[dict]], codes: np.ndarray, kinds: list[tuple[str, int, np.ndarray]],
                eid: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """Per edge kind, the attribute arrays of :attr:`GraphArrays.edge_attrs` (``kinds``:
    each kind's name, code and edge mask; ``codes`` the kind code of every edge)."""
    idx, ds = rich
    if not len(idx):
        return {}

    def ints(key: str) -> np.ndarray:
        vals = [d.get(key, -1) for d in ds]
        return key_positions(eid, np.array([v if isinstance(v, (int, np.integer)) else -1 for v in vals],
                                           dtype=np.int64))

    # the attributes of the rich edges, then spread over each kind's edges
    sparse: dict[str, tuple[np.ndarray, Any]] = {
        "inferred": (np.array([bool(d.get("inferred", False)) for d in ds], dtype=bool), False)}
    for nm in ("cat", "evidence"):
        if any(nm in d for d in ds):
            sparse[nm] = (np.array([d.get(nm) for d in ds] + [None], dtype=object)[:-1], None)
    if any("wait_from" in d for d in ds):
        sparse["first"] = (ints("first"), -1)
        sparse["wait_from"] = (ints("wait_from"), -1)
        sparse["wait_from_end"] = (np.array([d.get("wait_from_at") == "end" for d in ds], dtype=bool), False)
        sparse["resume_end"] = (np.array([d.get("resume_at") == "end" for d in ds], dtype=bool), False)
    rich_code = codes[idx]
    out: dict[str, dict[str, np.ndarray]] = {}
    for k, j, m in kinds:
        mine = rich_code == j
        if not mine.any():   # a kind without attributes reads its defaults (:meth:`GraphArrays.edge_attr`)
            continue
        at = (np.cumsum(m) - 1)[idx[mine]]   # each rich edge's index among its kind's edges
        cols: dict[str, np.ndarray] = {}
        for nm, (vals, default) in sparse.items():
            col = np.full(int(m.sum()), default, dtype=vals.dtype)
            col[at] = vals[mine]
            cols[nm] = col
        out[k] = cols
    return out
