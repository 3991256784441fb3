"""PyTorch execution traces (ET / execution graph) -> canonical event table + data edges.

Every schema is read (``schemas/et.schema.json``):

- the 2021 prototype: a bare list of nodes with ``parent``, flat ``inputs`` (tensor
  values are bare tensor ids), ``input_shapes``/``input_types``, ``outputs`` ...;
- ``1.0.0`` - ``1.0.1``: ``{"schema", "pid", "nodes"}``, nodes with ``parent``, ``rf_id``,
  ``tid``, ``scope`` and flat ``inputs``/``input_shapes``/``input_types`` (tensor values are
  ``[tensor_id, storage_id, offset, numel, itemsize(, device)]``);
- ``1.0.2-chakra.0.0.4`` - ``1.1.1-chakra.0.0.4``: nodes with ``ctrl_deps`` (parent),
  ``inputs``/``outputs`` ``{values, shapes, types, strides}`` and an ``attrs`` list (rf_id,
  tid, scope, seq_id, fw_parent, op_schema, collective attributes ...).

Rows: one per node (``eid`` = position in ``nodes``). Process roots
(``[pytorch|profiler|execution_graph|process]``, ``__ROOT_PROCESS__``) are ``meta`` rows;
user-scope record functions (``scope`` 7: thread roots, ``## forward ##`` labels,
``ProfilerStep#N``) and, for the prototype, label-named nodes without tensors are
``annotation``; the rest are ``cpu_op``. ``rf_id`` is the record-function id Kineto
writes as ``Record function id``. ``args`` is the node as written plus Kineto-style
``Input Dims`` / ``Input type`` / ``Output Dims`` / ``Output type`` (so the FLOP
counters work on ETs).

An ET has no timestamps. ``ts``/``dur`` are *ordinal*: a node starts at its id's rank
(ids are given at op start, across threads) and ends just after the largest id in its
subtree, 1 µs per step, so nesting, program order and producer-before-consumer hold; the
``et_ordinal_time`` health item says so.

Data edges (:func:`data_edges`): a tensor is identified by ``(tensor_id, storage_id)``
(prototype: ``(tensor_id, -1)``); each input of an op links from the op that most recently
*finished* producing that tensor (the latest-ending op listing it as an output, among the
ops that ended before the consumer started), so a tensor made inside ``aten::linear`` links
from ``aten::linear`` to the ops after it, never from a parent to its own children.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from opgraph.errors import OpgraphInputError
from opgraph.ingest.canon import make_table
from opgraph.ingest.source import SourceBytes
from opgraph.model.table import NONE_ID, EventTable

#: Nodes validated against the schema (the rest are checked while read).
SCHEMA_SAMPLE = 300
TICK_NS = 1_000
USER_SCOPE = 7
_PROCESS_ROOT = re.compile(r"^\[pytorch\|profiler\|execution_(graph|trace)\|process\]$|^__ROOT_PROCESS__$")
_THREAD_ROOT = re.compile(r"^\[pytorch\|profiler\|execution_(graph|trace)\|thread\]$|^__ROOT_THREAD__")
_LABEL = re.compile(r"^(##|__|module::|DLRM |\[|ProfilerStep#)")
_TENSOR_T = re.compile(r"^Tensor\((.*)\)$")


@dataclass
class EtNode:
    """One normalised ET node."""

    pos: int
    id: int
    name: str
    parent: int
    tid: int
    rf_id: int
    scope: int
    in_values: list
    in_shapes: list
    in_types: list
    out_values: list
    out_shapes: list
    out_types: list
    raw: dict


def _attrs(node: dict) -> dict[str, Any]:
    a = node.get("attrs")
    if isinstance(a, list):
        return {x.get("name"): x.get("value") for x in a if isinstance(x, dict)}
    return {}


def _io(node: dict, side: str) -> tuple[list, list, list]:
    v = node.get(side)
    if isinstance(v, dict):   # chakra schemas: {values, shapes, types, strides}
        return list(v.get("values") or []), list(v.get("shapes") or []), list(v.get("types") or [])
    pre = "input" if side == "inputs" else "output"
    return list(v or []), list(node.get(f"{pre}_shapes") or []), list(node.get(f"{pre}_types") or [])


def _int(v: Any, default: int) -> int:
    return v if type(v) is int else default


def normalise(path: str, doc: Any) -> tuple[list[EtNode], dict[str, Any]]:
    """(nodes, top-level metadata) of any ET schema."""
    if isinstance(doc, dict):
        nodes = doc.get("nodes")
        if not isinstance(nodes, list):
            raise OpgraphInputError(path, "execution trace without a 'nodes' list")
        top = {k: v for k, v in doc.items() if k != "nodes"}
    elif isinstance(doc, list):
        nodes, top = doc, {"schema": "prototype-2021"}
    else:
        raise OpgraphInputError(path, "not an execution trace (expected an object with 'nodes' or a list)")
    _validate(path, top, nodes)
    out: list[EtNode] = []
    for i, n in enumerate(nodes):
        if not isinstance(n, dict):
            raise OpgraphInputError(path, f"node is {type(n).__name__}, expected an object", event_index=i)
        nid, name = n.get("id"), n.get("name")
        if type(nid) is not int:
            raise OpgraphInputError(path, f"node 'id' is {type(nid).__name__}, expected an integer", event_index=i)
        if not isinstance(name, str):
            raise OpgraphInputError(path, "node 'name' is missing or not a string", event_index=i)
        try:
            a = _attrs(n)
            parent = n.get("ctrl_deps", n.get("parent", a.get("parent")))
            iv, ish, ity = _io(n, "inputs")
            ov, osh, oty = _io(n, "outputs")
        except (TypeError, ValueError, AttributeError) as e:
            raise OpgraphInputError(path, f"malformed node inputs/outputs/attrs ({e})", event_index=i) from None
        out.append(EtNode(i, nid, name, _int(parent, -1), _int(n.get("tid", a.get("tid")), 0),
                          _int(n.get("rf_id", a.get("rf_id")), NONE_ID), _int(n.get("scope", a.get("scope")), -1),
                          iv, ish, ity, ov, osh, oty, n))
    return out, top


def _validate(path: str, top: dict, nodes: list) -> None:
    from opgraph.ingest.validate import first_error

    err = first_error({**top, "nodes": nodes[:SCHEMA_SAMPLE]}, "et.schema.json")
    if err:
        m = re.match(r"^nodes/(\d+)", err)
        raise OpgraphInputError(path, f"not a valid execution trace: {err}",
                                event_index=int(m.group(1)) if m else None)


def kineto_type(t: Any) -> str:
    """An ET type string as Kineto's ``Input type`` writes it."""
    if not isinstance(t, str):
        return ""
    m = _TENSOR_T.match(t)
    if m:
        return m.group(1)
    if t.startswith("GenericList") or t.startswith("TensorList"):
        return "TensorList" if "Tensor" in t else "ScalarList"
    if t in ("Int", "Double", "Bool", "Float", "Long", "Scalar", "SymInt"):
        return "Scalar"
    if t == "None":
        return ""
    return t


def tensor_keys(values: list, types: list) -> list[tuple[int, int, int]]:
    """``(tensor_id, storage_id, position)`` of every tensor among op values (lists of
    tensors included); the prototype's bare tensor ids give storage -1."""
    out: list[tuple[int, int, int]] = []
    for j, (v, t) in enumerate(zip(values, types)):
        if not isinstance(t, str) or "Tensor" not in t or "nullptr" in t:
            continue
        if type(v) is int:
            out.append((v, -1, j))
        elif isinstance(v, list) and v:
            items = v if isinstance(v[0], list) else [v]
            for x in items:
                if isinstance(x, list) and len(x) >= 2 and type(x[0]) is int and type(x[1]) is int:
                    out.append((x[0], x[1], j))
                elif type(x) is int:
                    out.append((x, -1, j))
    return out


def node_kind(n: EtNode) -> str:
    """The canonical event kind of an execution-trace node: ``meta`` for the process root,
    ``annotation`` for thread roots, user scopes and bare labels, else ``cpu_op``."""
    if _PROCESS_ROOT.match(n.name):
        return "meta"
    if n.scope == USER_SCOPE or _THREAD_ROOT.match(n.name):
        return "annotation"
    if n.scope < 0 and _LABEL.match(n.name) and not n.in_values and not n.out_values:
        return "annotation"
    return "cpu_op"


def _ordinal_times(nodes: list[EtNode]) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) per node in ns: an op starts at ``rank(id) * TICK_NS`` and ends just
    before the next op outside its subtree starts (deeper ops end a little earlier than
    their parents, so a parent finishes after its children)."""
    n = len(nodes)
    ids = np.array([x.id for x in nodes], dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    pos_of = {x.id: i for i, x in enumerate(nodes)}
    parent = np.array([pos_of.get(x.parent, -1) for x in nodes], dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    for i in order.tolist():            # parents have smaller ids than their children
        p = parent[i]
        if p >= 0 and p != i:
            depth[i] = depth[p] + 1
    sub_max = rank.copy()
    for i in order[::-1].tolist():
        p = parent[i]
        if p >= 0 and p != i and sub_max[i] > sub_max[p]:
            sub_max[p] = sub_max[i]
    start = rank * TICK_NS
    end = sub_max * TICK_NS + TICK_NS - 1 - np.minimum(depth, TICK_NS - 2)
    return start, end


def read_et(src: SourceBytes, doc: Any) -> EventTable:
    """Read an execution trace into an :class:`EventTable` (ordinal times) whose
    ``meta['extra_edges']`` holds the data edges."""
    nodes, top = normalise(src.path, doc)
    table = et_table(nodes, top)
    table.meta.update({"file": src.path, "sha256": src.sha256})
    return table


def et_table(nodes: list[EtNode], top: dict[str, Any]) -> EventTable:
    n = len(nodes)
    start, end = _ordinal_times(nodes)
    kinds = [node_kind(x) for x in nodes]
    pid = top.get("pid", 0) if type(top.get("pid")) is int else 0
    args = []
    for x in nodes:
        a = dict(x.raw)
        a["Input Dims"] = x.in_shapes
        a["Input type"] = [kineto_type(t) for t in x.in_types]
        a["Output Dims"] = x.out_shapes
        a["Output type"] = [kineto_type(t) for t in x.out_types]
        args.append(a)
    table = make_table(n, kind=kinds, name=[x.name for x in nodes], ts_ns=start, dur_ns=end - start, pid=np.full(n, pid, dtype=object),
                       tid=[x.tid for x in nodes], args=args, cat="et_node", ph="X",
                       rf_id=[x.rf_id for x in nodes], has_ts=[k != "meta" for k in kinds])
    src_e, dst_e, cnt = data_edges(nodes, start, end)
    table.meta.update({
        "format": "pytorch-et", "device_properties": [], "distributed_info": {},
        "trace_metadata": {**top, "timing": "ordinal", "tick_ns": TICK_NS},
        "et_ids": np.array([x.id for x in nodes], dtype=np.int64),
    })
    # edges the graph builder adds as they are (eids = positions here)
    table.meta["extra_edges"] = {"data": {"src": src_e, "dst": dst_e, "attrs": {"tensors": cnt}}}
    table.warn("et_ordinal_time", n, 0 if n else None,
               "an execution trace has no timestamps: ts/dur are ordinal (1 µs per op, in id order), "
               "so durations and idle times are not real")
    return table


def data_edges(nodes: list[EtNode], start: np.ndarray, end: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Producer -> consumer pairs (positions), each with the number of tensors it carries.

    For every (consumer, input tensor), the producer is the op listing the tensor as an
    output whose end is latest among those that ended before the consumer started."""
    prod_k, prod_t, prod_n, cons_k, cons_t, cons_n = [], [], [], [], [], []
    key_of: dict[tuple[int, int], int] = {}
    for i, x in enumerate(nodes):
        if _PROCESS_ROOT.match(x.name):
            continue
        for tid_, sid, _ in tensor_keys(x.out_values, x.out_types):
            prod_k.append(key_of.setdefault((tid_, sid), len(key_of)))
            prod_t.append(end[i])
            prod_n.append(i)
        for tid_, sid, _ in tensor_keys(x.in_values, x.in_types):
            k = key_of.get((tid_, sid))
            if k is None:
                k = key_of.setdefault((tid_, sid), len(key_of))
            cons_k.append(k)
            cons_t.append(start[i])
            cons_n.append(i)
    empty = np.empty(0, dtype=np.int64)
    if not prod_k or not cons_k:
        return empty, empty, empty
    prod = pd.DataFrame({"key": prod_k, "t": np.asarray(prod_t, np.int64), "p": prod_n}).sort_values("t")
    cons = pd.DataFrame({"key": cons_k, "t": np.asarray(cons_t, np.int64), "c": cons_n}).sort_values("t")
    m = pd.merge_asof(cons, prod, on="t", by="key", direction="backward", allow_exact_matches=True)
    m = m.dropna(subset=["p"])
    m["p"] = m["p"].astype(np.int64)
    m = m[m["p"] != m["c"]]
    g = m.groupby(["p", "c"], sort=True).size().reset_index(name="n")
    return g["p"].to_numpy(np.int64), g["c"].to_numpy(np.int64), g["n"].to_numpy(np.int64)
