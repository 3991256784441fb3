"""PyTorch execution traces in the graph: tensor ``data`` edges, and linking an ET to a
Kineto trace of the same run (``opgraph build trace.json --et et.json``).

Linking ET nodes to Kineto ``cpu_op`` / ``user_annotation`` events:

1. ``Record function id``: when the Kineto trace carries it (PyTorch >= 2.1), ET ``rf_id``
   == Kineto ``Record function id`` is an exact join (names are checked; a pair whose names
   differ is not a match).
2. ``External id``: older traces only have Kineto's own op counter, which drifts from the
   ET's record-function ids wherever one profiler saw ops the other did not (the 2023 PARAM
   pairs drift by 1 to hundreds). First the exact join ``rf_id == External id`` is tried;
   when it does not match (with equal names) at least :data:`EXACT_ENOUGH` of the ET ops,
   the ops are aligned instead: per thread (ET ``tid`` -> Kineto ``tid`` chosen by a
   first, global alignment), the ET ops in id order against the Kineto ops in time order,
   restricted to the External-id window of the ET, by a longest-matching-blocks sequence
   alignment on names (:class:`difflib.SequenceMatcher`). Only equal names match.

The report (``G.graph['et_link']``, and the line ``build`` prints) gives the method, the
ET ops, how many matched, and how many were *covered* (their name occurs among the
Kineto ops of the window: an op the Kineto trace never recorded cannot match).

The merged table gains the ET's data edges between matched ops (dropped when an end is
unmatched, or when the Kineto times put the consumer before the producer) and, in the
args of every matched event, ``et_id``, ``et_input_shapes`` / ``et_input_types`` /
``et_output_shapes`` / ``et_output_types`` (and ``Input Dims`` / ``Input type`` /
``Output Dims`` when the Kineto event had none, so FLOP counting works on traces recorded
without ``record_shapes``). The event's own args are copied, never changed in place.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from opgraph.graph.linking import Edges
from opgraph.model.table import NONE_ID, EventTable

#: Share of ET ops the exact External-id join must match before alignment is skipped.
EXACT_ENOUGH = 0.98
#: External ids this far outside the ET's rf_id range still belong to the window.
WINDOW_SLACK = 1000
_ROOT = re.compile(r"^\[pytorch\|profiler\|execution_(graph|trace)\|(thread|process)\]$|^__ROOT_")
_OP_KINDS = ("cpu_op", "annotation")


# --------------------------------------------------------------------------- build hook
def add_extra_edges(edges: dict[str, list[Edges]], extra: dict[str, Any] | None) -> None:
    """Add edges a reader or linker computed (``{kind: {src, dst, attrs}}``, eids) to the
    builder's edge lists. A pair another kind already links (consecutive ops passing a
    tensor are also ``host_seq``) keeps that kind and gains the attributes instead (a
    DiGraph holds one edge per pair)."""
    if not extra:
        return
    for ek, e in extra.items():
        src = np.asarray(e["src"], dtype=np.int64)
        dst = np.asarray(e["dst"], dtype=np.int64)
        attrs = {k: np.asarray(v) for k, v in (e.get("attrs") or {}).items()}
        if not len(src):
            continue
        new_idx = pd.MultiIndex.from_arrays([src, dst])
        taken = np.zeros(len(src), dtype=bool)
        for k, lst in edges.items():
            if k == ek:
                continue
            for j, E in enumerate(list(lst)):
                if not len(E) or E.attrs:
                    continue
                pos = new_idx.get_indexer(pd.MultiIndex.from_arrays([E.src, E.dst]))
                hit = pos >= 0
                if not hit.any():
                    continue
                taken[pos[hit]] = True
                keep = Edges(E.src[~hit], E.dst[~hit])
                marked = Edges(E.src[hit], E.dst[hit], {a: v[pos[hit]] for a, v in attrs.items()})
                lst[j] = keep
                lst.append(marked)
        rest = ~taken
        edges.setdefault(ek, []).append(Edges(src[rest], dst[rest], {a: v[rest] for a, v in attrs.items()}))


# --------------------------------------------------------------------------- linking
def _ops(ev: pd.DataFrame) -> pd.DataFrame:
    m = ev["kind"].isin(_OP_KINDS).to_numpy()
    if "has_ts" in ev:
        m = m & ev["has_ts"].to_numpy()
    return ev.loc[m, ["eid", "name", "ts_ns", "dur_ns", "tid", "external_id", "rf_id"]].astype(
        {"name": object, "tid": object})


def _align(a_names: list, b_names: list) -> list[tuple[int, int]]:
    """Index pairs (i, j) of equal names in the longest-matching-blocks alignment."""
    if not a_names or not b_names:
        return []
    codes, _ = pd.factorize(pd.Series(a_names + b_names, dtype=object))
    a = codes[:len(a_names)].tolist()
    b = codes[len(a_names):].tolist()
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    out = []
    for blk in sm.get_matching_blocks():
        out.extend((blk.a + k, blk.b + k) for k in range(blk.size))
    return out


def match_et(kineto: EventTable, et: EventTable) -> tuple[dict[int, int], dict[str, Any]]:
    """ET eid -> Kineto eid for matched ops, and the match report."""
    kev = kineto.events
    eev = et.events
    ko = _ops(kev)
    eo = _ops(eev)
    eo = eo[~eo["name"].astype(str).str.match(_ROOT)]
    et_ids = et.meta.get("et_ids")
    eo = eo.assign(et_id=np.asarray(et_ids)[eo["eid"].to_numpy()] if et_ids is not None else eo["eid"].to_numpy())
    n_et = len(eo)
    report: dict[str, Any] = {"et_ops": int(n_et), "kineto_ops": int(len(ko))}
    mapping: dict[int, int] = {}
    has_rfid = bool((ko["rf_id"] >= 0).any())
    rf = eo["rf_id"].to_numpy()
    if has_rfid:
        report["method"] = "record_function_id"
        m = eo.merge(ko, left_on="rf_id", right_on="rf_id", suffixes=("_et", "_k"))
        same = m["name_et"].astype(str).to_numpy() == m["name_k"].astype(str).to_numpy()
        report["name_mismatch"] = int((~same).sum())
        m = m[same].drop_duplicates("eid_et").drop_duplicates("eid_k")
        mapping = dict(zip(m["eid_et"].tolist(), m["eid_k"].tolist()))
        window = ko
    else:
        m = eo[eo["rf_id"] >= 0].merge(ko[ko["external_id"] >= 0], left_on="rf_id", right_on="external_id",
                                       suffixes=("_et", "_k"))
        m = m[m["name_et"].astype(str).to_numpy() == m["name_k"].astype(str).to_numpy()]
        m = m.drop_duplicates("eid_et").drop_duplicates("eid_k")
        if n_et and len(m) >= EXACT_ENOUGH * n_et:
            report["method"] = "external_id"
            mapping = dict(zip(m["eid_et"].tolist(), m["eid_k"].tolist()))
            window = ko
        else:
            report["method"] = "external_id_aligned"
            window = ko
            if (rf >= 0).any() and (ko["external_id"] >= 0).any():
                lo, hi = int(rf[rf >= 0].min()), int(rf.max())
                slack = max(WINDOW_SLACK, n_et)
                x = ko["external_id"].to_numpy()
                window = ko[(x >= lo - slack) & (x <= hi + slack)]
            mapping, report["threads"] = _align_threads(eo, window)
    matched = len(mapping)
    k_names = set(window["name"].astype(str).tolist())
    covered = int(eo["name"].astype(str).isin(k_names).sum())
    report.update({
        "matched": int(matched), "matched_pct": round(100.0 * matched / n_et, 2) if n_et else 0.0,
        "covered": covered, "matched_of_covered_pct": round(100.0 * matched / covered, 2) if covered else 0.0,
    })
    cpu = eo[eev["kind"].to_numpy()[eo["eid"].to_numpy()] == "cpu_op"]
    report["et_operators"] = int(len(cpu))
    report["operators_matched"] = int(cpu["eid"].isin(list(mapping)).sum())
    cov_cpu = cpu[cpu["name"].astype(str).isin(k_names)]
    report["operators_covered"] = int(len(cov_cpu))
    report["operators_matched_of_covered_pct"] = (
        round(100.0 * int(cov_cpu["eid"].isin(list(mapping)).sum()) / len(cov_cpu), 2) if len(cov_cpu) else 0.0)
    return mapping, report


def _align_threads(eo: pd.DataFrame, ko: pd.DataFrame) -> tuple[dict[int, int], dict[str, Any]]:
    """Per-thread name alignment (ET id order vs Kineto time order); threads are paired by
    a first global alignment (ET rf_id / id order vs Kineto External id / time order)."""
    e_g = eo.sort_values(["rf_id", "et_id"]) if (eo["rf_id"] >= 0).any() else eo.sort_values("et_id")
    k_g = (ko.sort_values(["external_id", "ts_ns"]) if (ko["external_id"] >= 0).any()
           else ko.sort_values(["ts_ns", "eid"]))
    votes: Counter = Counter()
    et_t = e_g["tid"].tolist()
    k_t = k_g["tid"].tolist()
    for i, j in _align(e_g["name"].astype(str).tolist(), k_g["name"].astype(str).tolist()):
        votes[(et_t[i], k_t[j])] += 1
    tmap: dict[Any, Any] = {}
    for (a, b), _ in votes.most_common():
        if a not in tmap and b not in tmap.values():
            tmap[a] = b
    mapping: dict[int, int] = {}
    for a, b in tmap.items():
        ea = eo[eo["tid"] == a].sort_values("et_id")
        kb = ko[ko["tid"] == b].sort_values(["ts_ns", "dur_ns", "eid"], ascending=[True, False, True])
        ee, ke = ea["eid"].tolist(), kb["eid"].tolist()
        for i, j in _align(ea["name"].astype(str).tolist(), kb["name"].astype(str).tolist()):
            mapping[ee[i]] = ke[j]
    return mapping, {str(a): (b if isinstance(b, (int, str)) else str(b)) for a, b in tmap.items()}


#: Below this share (%) of the ET ops in the trace's time span matched, an ET is not of the
#: trace's run: :func:`attach_et` refuses it (the ET of the same run matches 95-100 %;
#: another run's ET matches 0-2 % by coincidence of ids and names).
ET_MISMATCH_PCT = 20.0


def attach_et(kineto: EventTable, et: EventTable, et_path: str | None = None) -> dict[str, Any]:
    """Link ``et`` into ``kineto`` (in place): ET shapes into the matched events' args and
    the ET's data edges between matched events into ``meta['extra_edges']``. Returns the
    report (also stored in ``meta['trace_metadata']['et_link']``).

    An ET that does not match the trace (under :data:`ET_MISMATCH_PCT` of its ops in the
    trace's time span matched) raises :class:`~opgraph.errors.OpgraphInputError` naming
    ``et_path`` (default: the ET's file), before ``kineto`` is changed."""
    from opgraph.errors import OpgraphInputError

    mapping, report = match_et(kineto, et)
    if report["et_ops"] and report["matched_of_covered_pct"] < ET_MISMATCH_PCT:
        # next to nothing in common: the few "matches" are coincidences of ids and names
        raise OpgraphInputError(et_path or et.meta.get("file") or "execution trace",
                                f"does not match {kineto.meta.get('file') or 'the trace'}: "
                                f"{report['matched']} of {report['et_ops']} ET ops matched a Kineto op "
                                f"by {report['method']} ({report['matched_of_covered_pct']:.1f}% of the "
                                f"{report['covered']} in the trace's time span, under {ET_MISMATCH_PCT:g}%);"
                                " is it the same run and rank?")
    kev = kineto.events
    eev = et.events
    et_ids = et.meta.get("et_ids")
    args = kev["args"].to_numpy(dtype=object).copy()
    e_args = eev["args"].to_numpy(dtype=object)
    for e_eid, k_eid in mapping.items():
        ea = e_args[e_eid] or {}
        a = dict(args[k_eid] or {})
        a["et_id"] = int(et_ids[e_eid]) if et_ids is not None else int(e_eid)
        for src_k, dst_k in (("Input Dims", "et_input_shapes"), ("Input type", "et_input_types"),
                             ("Output Dims", "et_output_shapes"), ("Output type", "et_output_types")):
            if src_k in ea:
                a[dst_k] = ea[src_k]
        if "op_schema" in ea and ea["op_schema"]:
            a["et_op_schema"] = ea["op_schema"]
        if "Input Dims" not in a and "Input dims" not in a and "Input Dims" in ea:
            a["Input Dims"] = ea["Input Dims"]
            a["Input type"] = ea.get("Input type", [])
        if "Output Dims" not in a and "Output Dims" in ea:
            a["Output Dims"] = ea["Output Dims"]
        args[k_eid] = a
    kev["args"] = args
    # data edges between matched events, forward in Kineto time
    d = (et.meta.get("extra_edges") or {}).get("data")
    n_in = n_unmatched = n_backward = 0
    src_k = dst_k = np.empty(0, dtype=np.int64)
    tensors = np.empty(0, dtype=np.int64)
    if d is not None and len(d["src"]):
        s = np.asarray(d["src"], dtype=np.int64)
        t = np.asarray(d["dst"], dtype=np.int64)
        cnt = np.asarray((d.get("attrs") or {}).get("tensors", np.ones(len(s))), dtype=np.int64)
        n_in = len(s)
        lut = np.full(len(eev), NONE_ID, dtype=np.int64)
        if mapping:
            lut[np.fromiter(mapping.keys(), dtype=np.int64)] = np.fromiter(mapping.values(), dtype=np.int64)
        ks, kt = lut[s], lut[t]
        ok = (ks >= 0) & (kt >= 0) & (ks != kt)
        n_unmatched = int((~ok).sum())
        ks, kt, cnt = ks[ok], kt[ok], cnt[ok]
        ts = kev["ts_ns"].to_numpy()
        end = ts + np.maximum(kev["dur_ns"].to_numpy(), 0)
        fwd = (end[ks] <= ts[kt]) & (ts[ks] < ts[kt])
        n_backward = int((~fwd).sum())
        pairs = pd.DataFrame({"s": ks[fwd], "t": kt[fwd], "n": cnt[fwd]}).groupby(["s", "t"], sort=True)["n"].sum()
        src_k = pairs.index.get_level_values(0).to_numpy(np.int64)
        dst_k = pairs.index.get_level_values(1).to_numpy(np.int64)
        tensors = pairs.to_numpy(np.int64)
    extra = dict(kineto.meta.get("extra_edges") or {})
    extra["data"] = {"src": src_k, "dst": dst_k, "attrs": {"tensors": tensors}}
    kineto.meta["extra_edges"] = extra
    report.update({"et_data_edges": int(n_in), "data_edges": int(len(src_k)),
                   "data_edges_unmatched_end": n_unmatched, "data_edges_backward_in_time": n_backward,
                   "et_file": et.meta.get("file"), "et_schema": (et.meta.get("trace_metadata") or {}).get("schema")})
    tm = dict(kineto.meta.get("trace_metadata") or {})
    tm["et_link"] = report
    kineto.meta["trace_metadata"] = tm
    if report["et_ops"] and report["matched_pct"] < 50:
        kineto.warn("et_link_low", report["et_ops"] - report["matched"], None,
                    f"only {report['matched']} of {report['et_ops']} execution-trace ops matched Kineto events "
                    "(is it the same run?)")
    return report


def attach_et_file(kineto: EventTable, et_path: str) -> dict[str, Any]:
    """Read the ET at ``et_path`` and :func:`attach_et` it to ``kineto`` (which refuses an
    ET that does not match the trace, :data:`ET_MISMATCH_PCT`, with one line)."""
    from opgraph.errors import OpgraphInputError
    from opgraph.ingest.readers import read_trace

    et = read_trace(et_path)
    if et.meta.get("format") != "pytorch-et":
        raise OpgraphInputError(et_path, f"--et expects a PyTorch execution trace, this is {et.meta.get('format')}")
    return attach_et(kineto, et, et_path)


def report_line(report: dict[str, Any]) -> str:
    """One line for ``opgraph build --et``."""
    return (f"{report.get('et_file')}: {report['matched']}/{report['et_ops']} ET ops matched "
            f"({report['matched_pct']:.1f}%; {report['matched_of_covered_pct']:.1f}% of the "
            f"{report['covered']} the Kineto trace covers) by {report['method']}; "
            f"{report['data_edges']} data edges")
