#!/usr/bin/env python3
"""Run Holistic Trace Analysis (HTA), the peer tool, on Kineto traces.

HTA is NOT a dependency of opgraph. Run this script with the separate venv:

    python3 -m venv /work/hta-venv
    /work/hta-venv/bin/pip install holistictraceanalysis==0.5.0 pandas==2.3.3
    /work/hta-venv/bin/python benchmarks/peers/run_hta.py            # the four traces of the first run
    /work/hta-venv/bin/python benchmarks/peers/run_hta.py --only hta_critical_path_alexnet
    /work/hta-venv/bin/python benchmarks/peers/run_hta.py --all      # every A_kineto trace with kernels
    /work/hta-venv/bin/python benchmarks/peers/run_hta.py --summarize  # rebuild the summary only

``--all`` takes every file in A_kineto that has an event with ``cat`` kernel/Kernel, smallest
(uncompressed) first, and runs each in its own process as
``timeout 600 <python> run_hta.py --only <trace>``; traces over ``--max-raw-mb`` (150) are
recorded as skipped, a killed process as timed_out (windows finished before are kept from
the checkpoint file), any other non-zero exit as crashed. The four traces of the first run
keep their fixed plans; any other trace gets ``annotation="ProfilerStep"`` with every
instance when it has ProfilerStep#N, else ``annotation=""`` / ``instance_id=None`` (whole
trace). It then writes ``critical_path_all.md`` and ``critical_path_all.json``.

(pandas 3.x breaks HTA 0.5.0's critical path; pin pandas 2.3.3.)

For every trace it writes ``docs/peers/hta/<trace>.json`` with:
  * idle time breakdown per CUDA stream (host wait / kernel wait / other, µs) from
    ``TraceAnalysis.get_idle_time_breakdown(ranks=[0], visualize=False,
    show_idle_interval_stats=True)`` plus per-stream busy/span derived from HTA's own
    dataframe with HTA's own kernel filter;
  * the GPU temporal breakdown from ``get_temporal_breakdown(visualize=False)``;
  * one critical path per annotation instance (``critical_path_analysis``), with its
    length, ``get_critical_path_breakdown()`` summed by ``bound_by`` and edge type,
    ``summary()`` (percent), number of edges and the event ids on the path;
  * wall time of every call and every HTA warning / Python warning / exception, each
    as one line.

All times are in µs: HTA keeps Kineto's µs in its dataframe (ns-resolution traces are
rounded to whole µs: ts up with ceil, end down with floor). Trace files are never copied:
each is symlinked alone into a temporary directory, as TraceAnalysis(trace_dir=...) needs.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

TRACE_DIR = Path("/work/shared/traces/A_kineto")
REPO = Path(__file__).resolve().parents[2]
OUT_DIR = REPO / "docs" / "peers" / "hta"

# name -> critical-path plan. "annotation": the string handed to HTA (substring match on
# every symbol); "instances": list of instance ids, or "all" = every instance HTA can see.
ALEXNET_ANNOTATION = "[param|pytorch.model.alex_net|0|0|0|measure|forward]"
TRACES: Dict[str, Dict[str, Any]] = {
    "hta_critical_path_alexnet": {
        "file": "hta_critical_path_alexnet.json.gz",
        # HTA tests/test_critical_path_analysis.py uses this annotation with instance_id=1
        # (the trace has no ProfilerStep).
        "cp": [{"annotation": ALEXNET_ANNOTATION, "instances": "all"}],
        # Re-run HTA's own test configuration to check we reproduce its expectation
        # (test sets CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE=1 and asserts 149 path nodes).
        "cp_test_repro": {
            "annotation": ALEXNET_ANNOTATION,
            "instance_id": 1,
            "env": {"CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE": "1"},
            "hta_test_expects_path_nodes": 149,
        },
    },
    "hta_cuda_event_sync_multi_stream": {
        "file": "hta_cuda_event_sync_multi_stream.json.gz",
        # No user annotation at all: HTA's test uses annotation="" and instance_id=None,
        # which means "the whole trace".
        "cp": [{"annotation": "", "instances": [None]}],
    },
    "param_dlrm_8gpu_rank0": {
        "file": "param_dlrm_8gpu_rank0.pt.trace.json.gz",
        "cp": [{"annotation": "ProfilerStep", "instances": "all"}],
    },
    "hta_ns_resolution_rank0": {
        "file": "hta_ns_resolution_rank0.pt.trace.json.gz",
        "cp": [{"annotation": "ProfilerStep", "instances": "all"}],
    },
}


# --------------------------------------------------------------------------- capture
class _ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.records: List[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _one_line(s: str, limit: int = 1500) -> str:
    s = re.sub(r"\s+", " ", str(s)).strip()
    return s if len(s) <= limit else s[: limit - 3] + "..."


_TMP_RE = re.compile(r"/tmp/[^\s'\"]*?/")
_PID_RE = re.compile(r"PID:\s*\d+")


def _scrub(s: str) -> str:
    """Replace the per-run temporary directory and process id so outputs are stable."""
    return _PID_RE.sub("PID:<pid>", _TMP_RE.sub("<tmpdir>/", s))


@contextlib.contextmanager
def capture(messages: List[str], stdout_sink: Optional[List[str]] = None):
    """Collect HTA log records (WARNING and above) and Python warnings, one line each.
    HTA's INFO chatter is silenced; stdout is captured (summary() prints)."""
    hta_logger = logging.getLogger("hta")
    handler = _ListHandler()
    hta_logger.addHandler(handler)
    buf = io.StringIO()
    with warnings.catch_warnings(record=True) as wlist:
        warnings.simplefilter("always")
        try:
            with contextlib.redirect_stdout(buf):
                yield
        finally:
            hta_logger.removeHandler(handler)
            counts: Counter = Counter()
            order: List[str] = []
            for r in handler.records:
                line = f"hta {r.levelname} {r.filename}:L{r.lineno}: {_one_line(_scrub(r.getMessage()))}"
                if line not in counts:
                    order.append(line)
                counts[line] += 1
            for w in wlist:
                line = (
                    f"python {w.category.__name__} {Path(w.filename).name}:L{w.lineno}: "
                    f"{_one_line(_scrub(str(w.message)))}"
                )
                if line not in counts:
                    order.append(line)
                counts[line] += 1
            for line in order:
                n = counts[line]
                messages.append(line if n == 1 else f"{line} (x{n})")
            if stdout_sink is not None:
                # HTA's console handler prints to stdout too; keep only non-log lines.
                for ln in buf.getvalue().splitlines():
                    if ln.strip() and " - hta - " not in ln:
                        stdout_sink.append(_one_line(ln))


def timed(fn, *args, **kwargs) -> Tuple[Any, float, List[str], Optional[str], List[str]]:
    """Run fn; return (result, wall seconds, warnings, error line or None, stdout lines)."""
    msgs: List[str] = []
    out: List[str] = []
    err: Optional[str] = None
    result = None
    t0 = time.perf_counter()
    with capture(msgs, out):
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - we record crashes, verbatim
            tb = traceback.extract_tb(exc.__traceback__)
            where = f"{Path(tb[-1].filename).name}:L{tb[-1].lineno}" if tb else "?"
            msg = _one_line(_scrub(str(exc)))
            if not msg and tb and tb[-1].line:  # bare `assert x`: show the failing source line
                msg = f"`{_one_line(tb[-1].line)}`"
            err = f"{type(exc).__name__} at {where}: {msg}"
    wall = time.perf_counter() - t0
    return result, wall, msgs, err, out


# --------------------------------------------------------------------------- helpers
def _num(x: Any) -> Any:
    """JSON-friendly scalar (numpy -> python; NaN -> None)."""
    try:
        import numpy as np

        if isinstance(x, np.generic):
            x = x.item()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(x, float):
        if x != x:  # NaN
            return None
        if x.is_integer():
            return int(x)
        return round(x, 4)
    return x


def _records(df) -> List[Dict[str, Any]]:
    if df is None:
        return []
    df = df.reset_index()
    return [{str(k): _num(v) for k, v in row.items()} for row in df.to_dict(orient="records")]


def _merged_busy(intervals: List[Tuple[float, float]]) -> float:
    total = 0.0
    cur_s = cur_e = None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


KERNEL_CATS = ["kernel", "Kernel", "gpu_memset", "Memset", "gpu_memcpy", "Memcpy", "mtia_ccp_events"]


def stream_busy_table(ta, rank: int = 0) -> Dict[str, Dict[str, Any]]:
    """Per-stream span/busy derived from HTA's dataframe with the same event filter as
    BreakdownAnalysis.get_idle_time_breakdown (stream != -1 and cat in KERNEL_CATS)."""
    df = ta.t.get_trace(rank)
    sym = ta.t.symbol_table.get_sym_id_map()
    cat_ids = [sym.get(c, -1000) for c in KERNEL_CATS]
    k = df[df["stream"].ne(-1) & df["cat"].isin(cat_ids)]
    out: Dict[str, Dict[str, Any]] = {}
    for stream, g in k.groupby("stream"):
        iv = list(zip(g["ts"].tolist(), (g["ts"] + g["dur"]).tolist()))
        span = max(e for _, e in iv) - min(s for s, _ in iv)
        busy = _merged_busy(iv)
        out[str(int(stream))] = {
            "n_events": int(len(g)),
            "span_us": _num(float(span)),
            "busy_us": _num(float(busy)),
            "idle_us": _num(float(span - busy)),
            "sum_dur_us": _num(float(g["dur"].sum())),
        }
    # Whole-GPU view with HTA's temporal-breakdown filter (stream != -1: this also keeps
    # cuda_sync events such as "Stream Sync" / "Stream Wait Event") vs kernels only.
    all_dev = df[df["stream"].ne(-1)]
    iv_all = list(zip(all_dev["ts"].tolist(), (all_dev["ts"] + all_dev["dur"]).tolist()))
    iv_k = list(zip(k["ts"].tolist(), (k["ts"] + k["dur"]).tolist()))
    out["_gpu_kernels_only"] = {
        "n_events": int(len(k)),
        "span_us": _num(float(max(e for _, e in iv_k) - min(s for s, _ in iv_k))) if iv_k else None,
        "busy_us": _num(float(_merged_busy(iv_k))),
    }
    out["_gpu_stream_ne_minus1"] = {
        "n_events": int(len(all_dev)),
        "span_us": _num(float(max(e for _, e in iv_all) - min(s for s, _ in iv_all))) if iv_all else None,
        "busy_us": _num(float(_merged_busy(iv_all))),
    }
    return out


def annotation_instances(ta, annotation: str, rank: int = 0) -> List[Dict[str, Any]]:
    """The rows HTA's critical_path_analysis slices with instance_id (same selection and
    order: every event whose name contains `annotation`, in dataframe order)."""
    df = ta.t.get_trace(rank)
    sym_index = ta.t.symbol_table.get_sym_id_map()
    sym_table = ta.t.symbol_table.get_sym_table()
    ids = [v for k, v in sym_index.items() if annotation in k]
    a = df[df["name"].isin(ids)]
    return [
        {
            "instance_id": i,
            "name": sym_table[int(r.name)],
            "cat": sym_table[int(r.cat)] if 0 <= int(r.cat) < len(sym_table) else None,
            "event_index": int(r.index),
            "ts_us_aligned": _num(r.ts),
            "dur_us": _num(r.dur),
        }
        for i, r in enumerate(a.itertuples(index=False))
    ]


def _edge_list(cp_graph) -> List[Tuple[Any, Any]]:
    nodes = cp_graph.critical_path_nodes
    return [(u, v) for u, v in zip(nodes[:-1], nodes[1:])]


def run_critical_path(ta, annotation: str, instance_id: Union[int, None, Tuple[int, int]],
                      rank: int = 0) -> Dict[str, Any]:
    rec: Dict[str, Any] = {"annotation": annotation, "instance_id": instance_id, "rank": rank}
    try:
        rec["window"] = hta_window(ta, annotation, instance_id, rank)
    except Exception as exc:  # noqa: BLE001
        rec["window"] = {"error": _one_line(f"{type(exc).__name__}: {exc}")}
    res, wall, msgs, err, _ = timed(
        ta.critical_path_analysis, rank=rank, annotation=annotation, instance_id=instance_id
    )
    rec["wall_s"] = {"critical_path_analysis": round(wall, 4)}
    rec["warnings"] = {"critical_path_analysis": msgs}
    if err is None and res is None:
        err = "critical_path_analysis returned None (annotation not found / bad instance_id)"
    if err is not None:
        rec["error"] = err
        rec["success"] = False
        return rec
    cp_graph, success = res
    rec["success"] = bool(success)
    rec["graph"] = {
        "n_nodes": cp_graph.number_of_nodes(),
        "n_edges": cp_graph.number_of_edges(),
        "edge_types": dict(Counter(cp_graph.edges[u, v]["object"].type.value for u, v in cp_graph.edges)),
        "n_events_clipped": int(len(cp_graph.trace_df)),
    }
    if not success:
        rec["error"] = "critical_path() returned False"
        return rec

    path_edges = _edge_list(cp_graph)
    nodes = cp_graph.critical_path_nodes
    first, last = cp_graph.node_list[nodes[0]], cp_graph.node_list[nodes[-1]]
    nx_len = sum(cp_graph.edges[u, v]["weight"] for u, v in path_edges)
    obj_len = sum(cp_graph.edges[u, v]["object"].weight for u, v in path_edges)
    rec["path"] = {
        "n_nodes": len(nodes),
        "n_edges": len(cp_graph.critical_path_edges_set),
        "length_us": _num(float(nx_len)),  # sum of networkx 'weight' (what dag_longest_path maximised)
        "length_us_from_edge_objects": _num(float(obj_len)),  # CPEdge.weight (used by the breakdown)
        "start_ts_us_aligned": _num(first.ts),
        "end_ts_us_aligned": _num(last.ts),
        "span_us": _num(float(last.ts - first.ts)),
        "first_event_index": int(first.ev_idx),
        "last_event_index": int(last.ev_idx),
        "n_events": len(cp_graph.critical_path_events_set),
        "event_indices": sorted(int(e) for e in cp_graph.critical_path_events_set),
    }

    bd, wall_b, msgs_b, err_b, _ = timed(cp_graph.get_critical_path_breakdown)
    rec["wall_s"]["get_critical_path_breakdown"] = round(wall_b, 4)
    rec["warnings"]["get_critical_path_breakdown"] = msgs_b
    if err_b is not None:
        rec["error_breakdown"] = err_b
    elif bd is not None:
        bd = bd.copy()
        bd["bound_by"] = bd["bound_by"].replace("", "(zero-weight dependency/sync)")
        by = bd.groupby("bound_by").duration.agg(["sum", "count"])
        rec["breakdown_by_bound_by_us"] = {k: _num(float(v)) for k, v in by["sum"].items()}
        rec["breakdown_by_bound_by_edges"] = {k: int(v) for k, v in by["count"].items()}
        bt = bd.groupby("type").duration.agg(["sum", "count"])
        rec["breakdown_by_edge_type_us"] = {k: _num(float(v)) for k, v in bt["sum"].items()}
        rec["breakdown_by_edge_type_edges"] = {k: int(v) for k, v in bt["count"].items()}
        total = float(bd.duration.sum())
        rec["breakdown_total_us"] = _num(total)
        # Same formula as cp_graph.summary() (share of the summed edge weights), for both keys.
        rec["breakdown_by_bound_by_pct"] = {
            k: (_num(round(float(v) / total * 100, 4)) if total else None) for k, v in by["sum"].items()
        }
        rec["breakdown_by_edge_type_pct"] = {
            k: (_num(round(float(v) / total * 100, 4)) if total else None) for k, v in bt["sum"].items()
        }
        # Events with the most critical-path time attributed to them.
        att = bd[bd["event_idx"].notna()].groupby(["event_idx", "s_name", "bound_by"]).duration.sum()
        top = att.sort_values(ascending=False).head(10)
        rec["top_attributed_events"] = [
            {"event_index": int(i), "name": _one_line(n, 120), "bound_by": b, "duration_us": _num(float(d))}
            for (i, n, b), d in top.items()
        ]

    sm, wall_s, msgs_s, err_s, out_s = timed(cp_graph.summary)
    rec["wall_s"]["summary"] = round(wall_s, 4)
    rec["warnings"]["summary"] = msgs_s
    rec["summary_stdout"] = out_s
    if err_s is not None:
        rec["error_summary"] = err_s
    elif sm is not None:
        rec["summary_pct"] = {
            (k if k != "" else "(zero-weight dependency/sync)"): _num(round(float(v), 4))
            for k, v in sm.items()
        }
    return rec


def load(trace_path: Path, include_last_profiler_step: bool):
    from hta.trace_analysis import TraceAnalysis

    tmp = tempfile.mkdtemp(prefix="hta_")
    link = Path(tmp) / trace_path.name
    link.symlink_to(trace_path)
    ta, wall, msgs, err, _ = timed(
        TraceAnalysis, trace_dir=tmp, include_last_profiler_step=include_last_profiler_step
    )
    return ta, {
        "include_last_profiler_step": include_last_profiler_step,
        "wall_s": round(wall, 4),
        "warnings": msgs,
        "error": err,
    }, tmp


def analyse(ta, plan: Dict[str, Any], skip_event_indices: Optional[set] = None,
            out: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Idle, temporal and critical-path analyses of one loaded trace. Results are written
    into `out` as they are produced (so a checkpoint taken mid-way holds the finished
    windows). `skip_event_indices`: annotation instances (by traceEvents index) that an
    earlier load already analysed."""
    out = {} if out is None else out
    # HTA keys traces by distributedInfo.rank (0 when absent); a single-file trace of
    # another rank (e.g. rank 1) must be analysed under that rank.
    rank = sorted(ta.t.traces.keys())[0] if ta.t.traces else 0
    out["rank"] = rank
    sym_table = ta.t.symbol_table.get_sym_table()
    df = ta.t.get_trace(rank)
    ua_id = ta.t.symbol_table.get_sym_id_map().get("user_annotation", -1)
    out["user_annotations"] = dict(
        Counter(sym_table[int(n)] for n in df.loc[df["cat"].eq(ua_id), "name"])
    )
    out["n_events_in_hta_dataframe"] = int(len(df))
    out["hta_min_ts_us"] = _num(ta.t.min_ts)

    # ---- idle time breakdown
    res, wall, msgs, err, _ = timed(
        ta.get_idle_time_breakdown, ranks=[rank], visualize=False, show_idle_interval_stats=True
    )
    idle: Dict[str, Any] = {"wall_s": round(wall, 4), "warnings": msgs}
    if err:
        idle["error"] = err
    else:
        idle_df, stats_df = res
        idle["rows"] = [{k: v for k, v in r.items() if k != "index"} for r in _records(idle_df)]
        idle["interval_stats"] = _records(stats_df)
        per: Dict[str, Dict[str, Any]] = {}
        for r in idle["rows"]:
            s = per.setdefault(str(r["stream"]), {"host_wait_us": 0, "kernel_wait_us": 0, "other_us": 0})
            s[f"{r['idle_category']}_us"] = r["idle_time"]
        for s in per.values():
            s["idle_total_us"] = _num(float(s["host_wait_us"] + s["kernel_wait_us"] + s["other_us"]))
        idle["per_stream"] = per
    out["idle_time_breakdown"] = idle
    try:
        out["stream_busy_derived"] = stream_busy_table(ta, rank)
    except Exception as exc:  # noqa: BLE001
        out["stream_busy_derived"] = {"error": _one_line(f"{type(exc).__name__}: {exc}")}

    # ---- temporal breakdown
    res, wall, msgs, err, _ = timed(ta.get_temporal_breakdown, visualize=False)
    tb: Dict[str, Any] = {"wall_s": round(wall, 4), "warnings": msgs}
    if err:
        tb["error"] = err
    else:
        tb["rows"] = _records(res.set_index("rank"))
    out["temporal_breakdown"] = tb
    _checkpoint()

    # ---- critical path
    cps: List[Dict[str, Any]] = []
    instances_seen: Dict[str, Any] = {}
    out["annotation_instances"] = instances_seen
    out["critical_path"] = cps
    for spec in plan["cp"]:
        ann = spec["annotation"]
        if ann:
            inst = annotation_instances(ta, ann, rank)
            instances_seen[ann] = inst
            ids = list(range(len(inst))) if spec["instances"] == "all" else spec["instances"]
            if skip_event_indices is not None:
                ids = [i for i in ids if inst[i]["event_index"] not in skip_event_indices]
        else:
            ids = spec["instances"]
            if skip_event_indices is not None:
                ids = []
        for iid in ids:
            print(f"  critical path {ann!r} [{iid}]", file=sys.stderr, flush=True)
            rec = run_critical_path(ta, ann, iid, rank)
            if ann and isinstance(iid, int) and iid < len(instances_seen[ann]):
                rec["annotation_instance"] = instances_seen[ann][iid]
            cps.append(rec)
            _checkpoint()
    return out


def hta_window(ta, annotation: str, instance_id: Union[int, None, Tuple[int, int]],
               rank: int = 0) -> Dict[str, Any]:
    """The [start, end] window critical_path_analysis clips to, computed with its own rule
    (annotation "" = whole dataframe; else min ts / max end of the chosen instance rows)."""
    df = ta.t.get_trace(rank)
    if annotation == "":
        start, end = df.ts.min(), (df.ts + df.dur).max()
    else:
        sym_index = ta.t.symbol_table.get_sym_id_map()
        ids = [v for k, v in sym_index.items() if annotation in k]
        a = df[df.name.isin(ids)]
        lo, hi = (instance_id if isinstance(instance_id, tuple)
                  else (0, 0) if instance_id is None else (instance_id, instance_id))
        a = a.iloc[lo: hi + 1]
        start, end = a.ts.min(), (a.ts + a.dur).max()
    return {"start_ts_us_aligned": _num(start), "end_ts_us_aligned": _num(end),
            "span_us": _num(float(end - start))}


# Set by run_trace: writes the result so far (status "incomplete") so that a trace killed by
# `timeout` still leaves the windows it finished.
_CHECKPOINT_FN = None


def _checkpoint() -> None:
    if _CHECKPOINT_FN is not None:
        _CHECKPOINT_FN()


def run_trace(name: str, plan: Dict[str, Any], dest: Optional[Path] = None) -> Dict[str, Any]:
    global _CHECKPOINT_FN
    import hta
    import networkx
    import numpy
    import pandas

    path = TRACE_DIR / plan["file"]
    result: Dict[str, Any] = {
        "trace": name,
        "trace_file": str(path),
        "status": "incomplete",
        "versions": {
            "holistictraceanalysis": getattr(hta, "__version__", None) or _dist_version("HolisticTraceAnalysis"),
            "pandas": pandas.__version__,
            "networkx": networkx.__version__,
            "numpy": numpy.__version__,
            "python": platform.python_version(),
        },
        "units": "microseconds (HTA dataframe units)",
        "env": {k: os.environ.get(k) for k in (
            "CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE", "HTA_DISABLE_NS_ROUNDING",
            "CRITICAL_PATH_STRICT_NEGATIVE_WEIGHT_CHECKS")},
        "plan": {k: v for k, v in plan.items() if k not in ("file", "cp_test_repro")},
        "runs": [],
    }
    if dest is not None:
        def _write() -> None:
            tmp = dest.with_suffix(".json.part")
            tmp.write_text(json.dumps(result, indent=1, sort_keys=False) + "\n")
            tmp.replace(dest)
        _CHECKPOINT_FN = _write
    print(f"[{name}] loading (include_last_profiler_step=False)", file=sys.stderr, flush=True)
    ta, load_info, _ = load(path, include_last_profiler_step=False)
    run: Dict[str, Any] = {"load": load_info}
    result["runs"].append(run)
    _checkpoint()
    if ta is not None:
        try:
            analyse(ta, plan, out=run)
        except Exception as exc:  # noqa: BLE001 - a crash in this script's own code
            run["error"] = _one_line(f"{type(exc).__name__}: {exc}") or type(exc).__name__

    # HTA drops the last ProfilerStep (and GPU work launched in it) by default when the
    # trace has >= 2 distinct ProfilerStep names. Re-run with it kept so the numbers can
    # be compared with a tool that keeps every step.
    n_steps = 0
    if ta is not None:
        n_steps = sum(1 for k in ta.t.symbol_table.get_sym_id_map() if "ProfilerStep" in k)
    uses_steps = any(spec["annotation"] == "ProfilerStep" for spec in plan["cp"])
    if n_steps >= 2 and uses_steps:
        print(f"[{name}] loading (include_last_profiler_step=True)", file=sys.stderr, flush=True)
        seen = {i["event_index"] for i in run.get("annotation_instances", {}).get("ProfilerStep", [])}
        keep_first = ta if plan.get("cp_test_repro") else None
        del ta  # free the first load before the second (unless the repro below needs it)
        ta2, load_info2, _ = load(path, include_last_profiler_step=True)
        run2: Dict[str, Any] = {"load": load_info2}
        result["runs"].append(run2)
        if ta2 is not None:
            # Only the step(s) that the default load dropped need a new critical path.
            try:
                analyse(ta2, plan, skip_event_indices=seen, out=run2)
            except Exception as exc:  # noqa: BLE001
                run2["error"] = _one_line(f"{type(exc).__name__}: {exc}") or type(exc).__name__
        ta2 = None
        ta = keep_first

    repro = plan.get("cp_test_repro")
    if repro and ta is not None:
        print(f"[{name}] HTA-test reproduction {repro['env']}", file=sys.stderr)
        saved = {k: os.environ.get(k) for k in repro["env"]}
        os.environ.update(repro["env"])
        try:
            rec = run_critical_path(ta, repro["annotation"], repro["instance_id"])
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        rec["env"] = repro["env"]
        rec["hta_test_expects_path_nodes"] = repro["hta_test_expects_path_nodes"]
        rec.get("path", {}).pop("event_indices", None)
        result["hta_test_reproduction"] = rec
    result["status"], result["failures"] = trace_status(result)
    _CHECKPOINT_FN = None
    return result


def trace_status(result: Dict[str, Any]) -> Tuple[str, List[str]]:
    """"ok" when the load, the idle breakdown and every critical path succeeded; otherwise
    "load_failed" or "hta_error", with one line per failed call."""
    fails: List[str] = []
    runs = result.get("runs", [])
    if not runs or runs[0]["load"].get("error"):
        return "load_failed", [runs[0]["load"]["error"] if runs else "not loaded"]
    for k, run in enumerate(runs):
        tag = "keep-last-step load" if run["load"].get("include_last_profiler_step") else "default load"
        if run["load"].get("error"):
            fails.append(f"{tag}: TraceAnalysis: {run['load']['error']}")
            continue
        if run.get("error"):
            fails.append(f"{tag}: analysis: {run['error']}")
        for key in ("idle_time_breakdown", "temporal_breakdown"):
            if run.get(key, {}).get("error"):
                fails.append(f"{tag}: {key}: {run[key]['error']}")
        for cp in run.get("critical_path", []):
            for ek in ("error", "error_breakdown", "error_summary"):
                if cp.get(ek):
                    fails.append(f"{tag}: critical_path {cp['annotation']!r}[{cp['instance_id']}] "
                                 f"{ek}: {cp[ek]}")
    return ("ok" if not fails else "hta_error"), fails


def _dist_version(dist: str) -> Optional[str]:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:  # noqa: BLE001
        return None


# --------------------------------------------------------------------------- all traces
_SUFFIXES = (".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json")
STEP_RE = re.compile(r"ProfilerStep#(\d+)")
KERNEL_CATS_FILE = ("kernel", "Kernel")  # the `cat` values that count as "has GPU kernels"
DEFAULT_TIMEOUT_S = 600
DEFAULT_MAX_RAW_MB = 150.0


def trace_name(file_name: str) -> str:
    for suf in _SUFFIXES:
        if file_name.endswith(suf):
            return file_name[: -len(suf)]
    return file_name


def trace_info(path: Path) -> Dict[str, Any]:
    """Kernel count, ProfilerStep#N names and uncompressed size, read with the stdlib only."""
    import gzip

    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:
        raw = fh.read()
    doc = json.loads(raw)
    events = doc if isinstance(doc, list) else doc.get("traceEvents", [])
    n_kernels = 0
    steps = set()
    for e in events:
        if not isinstance(e, dict):
            continue
        if e.get("cat") in KERNEL_CATS_FILE:
            n_kernels += 1
        nm = e.get("name")
        if isinstance(nm, str):
            m = STEP_RE.match(nm)
            if m:
                steps.add(nm)
    return {
        "file": path.name,
        "bytes": path.stat().st_size,
        "raw_bytes": len(raw),
        "n_events": len(events),
        "n_kernel_events": n_kernels,
        "profiler_steps": sorted(steps, key=lambda x: int(STEP_RE.match(x).group(1))),
    }


def plan_for(name: str, info: Dict[str, Any]) -> Dict[str, Any]:
    """The four traces of the first run keep their fixed plans. Any other trace: every
    `ProfilerStep` instance when it has ProfilerStep#N, else the whole trace."""
    if name in TRACES:
        plan = dict(TRACES[name])
        plan["reason"] = "fixed plan of the first four-trace run (see README)"
    elif info["profiler_steps"]:
        plan = {"file": info["file"], "cp": [{"annotation": "ProfilerStep", "instances": "all"}],
                "reason": f"{len(info['profiler_steps'])} ProfilerStep#N name(s): every instance"}
    else:
        plan = {"file": info["file"], "cp": [{"annotation": "", "instances": [None]}],
                "reason": "no ProfilerStep#N: whole trace (annotation '', instance_id None)"}
    plan["trace_info"] = info
    return plan


def find_trace(name: str) -> Path:
    if name in TRACES:
        return TRACE_DIR / TRACES[name]["file"]
    for f in sorted(TRACE_DIR.iterdir()):
        if trace_name(f.name) == name:
            return f
    raise SystemExit(f"no trace named {name!r} in {TRACE_DIR}")


def _stub(name: str, info: Dict[str, Any], status: str, reason: str) -> Dict[str, Any]:
    plan = plan_for(name, info)
    return {
        "trace": name,
        "trace_file": str(TRACE_DIR / info["file"]),
        "status": status,
        "failures": [reason],
        "plan": {k: v for k, v in plan.items() if k not in ("file", "cp_test_repro")},
        "runs": [],
    }


def run_all(out: Path, timeout_s: int, max_raw_mb: float, budget_s: Optional[float],
            log_dir: Path, only: Optional[List[str]] = None) -> None:
    """Every trace in TRACE_DIR with kernel events, smallest first, each in its own
    process under `timeout`; then write the summary."""
    t_start = time.perf_counter()
    infos = []
    for f in sorted(TRACE_DIR.iterdir()):
        if f.is_file():
            infos.append((trace_name(f.name), trace_info(f)))
    with_k = sorted(((n, i) for n, i in infos if i["n_kernel_events"] > 0), key=lambda x: x[1]["raw_bytes"])
    without = [n for n, i in infos if i["n_kernel_events"] == 0]
    print(f"{len(with_k)} traces with kernel events; without: {without}", file=sys.stderr, flush=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    for name, info in with_k:
        if only and name not in only:
            continue
        dest = out / f"{name}.json"
        elapsed = time.perf_counter() - t_start
        if info["raw_bytes"] > max_raw_mb * 1e6:
            res = _stub(name, info, "skipped",
                        f"{info['raw_bytes'] / 1e6:.0f} MB uncompressed > {max_raw_mb:.0f} MB limit")
        elif budget_s is not None and elapsed > budget_s:
            res = _stub(name, info, "not_run", f"overall time budget of {budget_s:.0f} s used up")
        else:
            dest.unlink(missing_ok=True)
            cmd = ["timeout", str(timeout_s), sys.executable, str(Path(__file__).resolve()),
                   "--only", name, "--out", str(out)]
            print(f"[{name}] {info['raw_bytes'] / 1e6:.1f} MB ...", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            with open(log_dir / f"{name}.log", "w") as log:
                rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
            wall = time.perf_counter() - t0
            tail = [ln for ln in (log_dir / f"{name}.log").read_text(errors="replace").splitlines() if ln.strip()]
            if dest.exists():
                res = json.loads(dest.read_text())
            else:
                res = _stub(name, info, "crashed", "no output")
            if rc == 124:
                res["status"] = "timed_out"
                res.setdefault("failures", []).insert(0, f"killed by timeout after {timeout_s} s "
                                                         "(windows finished before that are kept)")
            elif rc != 0:
                res["status"] = "crashed"
                res.setdefault("failures", []).insert(
                    0, f"process exit code {rc}: {_one_line(_scrub(tail[-1])) if tail else ''}")
            res["process"] = {
                "command": f"timeout {timeout_s} /work/hta-venv/bin/python benchmarks/peers/run_hta.py "
                           f"--only {name}",
                "exit_code": rc,
                "wall_s": round(wall, 2),
                "timeout_s": timeout_s,
            }
            print(f"[{name}] rc={rc} status={res['status']} {wall:.1f} s", file=sys.stderr, flush=True)
        dest.write_text(json.dumps(res, indent=1, sort_keys=False) + "\n")
    summarize(out, [n for n, _ in with_k], without)


# --------------------------------------------------------------------------- summary
BOUND_BY_COLS = [
    ("cpu_bound", "cpu_bound"),
    ("gpu_compute_bound", "gpu_compute_bound"),
    ("gpu_communication_bound", "gpu_communication_bound"),
    ("gpu_kernel_launch_overhead", "gpu_kernel_launch_overhead"),
    ("gpu_kernel_kernel_overhead", "gpu_kernel_kernel_overhead"),
    ("(zero-weight dependency/sync)", '"" (dependency / sync)'),
]


def _window_summary(cp: Dict[str, Any], load_kind: str) -> Dict[str, Any]:
    inst = cp.get("annotation_instance") or {}
    name = inst.get("name") if cp["annotation"] else "whole trace"
    w: Dict[str, Any] = {
        "name": name,
        "annotation": cp["annotation"],
        "instance_id": cp["instance_id"],
        "annotation_cat": inst.get("cat"),
        "load": load_kind,
        "success": bool(cp.get("success")) and not cp.get("error"),
        "error": cp.get("error"),
        "window_span_us": (cp.get("window") or {}).get("span_us"),
        "length_us": (cp.get("path") or {}).get("length_us"),
        "path_span_us": (cp.get("path") or {}).get("span_us"),
        "path_edges": (cp.get("path") or {}).get("n_edges"),
        "graph_nodes": (cp.get("graph") or {}).get("n_nodes"),
        "breakdown_us": cp.get("breakdown_by_bound_by_us"),
        "breakdown_pct": cp.get("breakdown_by_bound_by_pct", cp.get("summary_pct")),
        "edge_type_us": cp.get("breakdown_by_edge_type_us"),
        "edge_type_pct": cp.get("breakdown_by_edge_type_pct"),
        "wall_s": (cp.get("wall_s") or {}).get("critical_path_analysis"),
    }
    return w


def _idle_summary(run: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    idle = run.get("idle_time_breakdown")
    if idle is None:
        return None
    if idle.get("error"):
        return {"error": idle["error"], "streams": {}, "total": None}
    streams = idle.get("per_stream", {})
    tot = {k: _num(float(sum(s[k] for s in streams.values())))
           for k in ("host_wait_us", "kernel_wait_us", "other_us", "idle_total_us")}
    return {"error": None, "streams": streams, "total": tot, "wall_s": idle.get("wall_s")}


def summarize_one(res: Dict[str, Any]) -> Dict[str, Any]:
    plan = res.get("plan", {})
    info = plan.get("trace_info", {})
    windows: List[Dict[str, Any]] = []
    for run in res.get("runs", []):
        kind = "keep_last_step" if run["load"].get("include_last_profiler_step") else "default"
        for cp in run.get("critical_path", []):
            windows.append(_window_summary(cp, kind))
    runs = res.get("runs", [])
    load_walls = [r["load"].get("wall_s") for r in runs]
    out = {
        "status": res.get("status"),
        "error": (res.get("failures") or [None])[0],
        "failures": res.get("failures", []),
        "file": info.get("file"),
        "raw_bytes": info.get("raw_bytes"),
        "n_kernel_events": info.get("n_kernel_events"),
        "profiler_steps": info.get("profiler_steps"),
        "annotation": [c["annotation"] for c in plan.get("cp", [])],
        "plan_reason": plan.get("reason"),
        "hta_version": (res.get("versions") or {}).get("holistictraceanalysis"),
        "windows": windows,
        "idle": _idle_summary(runs[0]) if runs else None,
        "idle_keep_last_step": _idle_summary(runs[1]) if len(runs) > 1 else None,
        "load_wall_s": load_walls,
        "process_wall_s": (res.get("process") or {}).get("wall_s"),
    }
    return out


def _fmt(x: Any, pct: bool = False) -> str:
    if x is None:
        return "—"
    if pct:
        return f"{x:.1f}"
    if isinstance(x, float) and not x.is_integer():
        return f"{x:,.1f}"
    return f"{int(x):,}"


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|")


def summarize(out: Path, names: List[str], without_kernels: List[str]) -> None:
    data: Dict[str, Any] = {}
    versions = None
    for name in names:
        f = out / f"{name}.json"
        if not f.exists():
            continue
        res = json.loads(f.read_text())
        versions = versions or res.get("versions")
        data[name] = summarize_one(res)
    (out / "critical_path_all.json").write_text(json.dumps(data, indent=1) + "\n")

    L: List[str] = []
    L.append("# HTA critical path and idle time on every A_kineto trace with GPU kernels")
    L.append("")
    L.append("Generated by `benchmarks/peers/run_hta.py --all`; do not edit by hand. "
             "Per-trace details are in `<trace>.json` beside this file; "
             "`critical_path_all.json` holds the same numbers in machine-readable form.")
    L.append("")
    if versions:
        L.append("**Versions:** " + ", ".join(f"{k} {v}" for k, v in versions.items())
                 + ". No `HTA_*` / `CRITICAL_PATH_*` variable set.")
        L.append("")
    L.append("**Commands:**")
    L.append("")
    L.append("```bash")
    L.append("python3 -m venv /work/hta-venv")
    L.append("/work/hta-venv/bin/pip install holistictraceanalysis==0.5.0 pandas==2.3.3")
    L.append("cd /work/main")
    L.append("/work/hta-venv/bin/python benchmarks/peers/run_hta.py --all      # every trace, then this summary")
    L.append("# which runs, one trace at a time, smallest first:")
    L.append("#   timeout 600 /work/hta-venv/bin/python benchmarks/peers/run_hta.py --only <trace>")
    L.append("/work/hta-venv/bin/python benchmarks/peers/run_hta.py --summarize  # rebuild this file from the JSONs")
    L.append("```")
    L.append("")
    L.append("**Selection.** A trace is included when it has at least one event with `cat` `kernel` or "
             "`Kernel`. Not included (no kernel events): " + ", ".join(f"`{n}`" for n in without_kernels) + ".")
    L.append("")
    L.append("**Windows.** `critical_path_analysis(rank, annotation=\"ProfilerStep\", instance_id=i)` (rank = the "
             "trace's own `distributedInfo.rank`, the only rank HTA loads; 0 when absent) for every "
             "instance HTA sees when the trace has `ProfilerStep#N` (HTA matches the substring against every name, "
             "so a `gpu_user_annotation` copy of a step is an instance of its own); otherwise "
             "`annotation=\"\"`, `instance_id=None` (the whole trace). The four traces of the first run keep "
             "their plans (alexnet: its `measure|forward` annotation). HTA's default load drops the last "
             "step when there are ≥ 2; the script loads such traces again with "
             "`include_last_profiler_step=True` and analyses only the instance(s) the first load dropped "
             "(marked †).")
    L.append("")
    L.append("**Columns.** *CP* = sum of edge weights on HTA's longest path; *window* = HTA's window "
             "(min ts … max end of the annotation instance, or the whole dataframe); both summed over the "
             "windows that succeeded. Breakdown % = share of the summed path weight per HTA `bound_by` "
             "class (the `cp_graph.summary()` formula); `\"\"` is HTA's class for dependency and sync "
             "edges, whose weight is always 0. Idle = `get_idle_time_breakdown` of the default load, summed "
             "over the streams (per stream in the JSON). *wall* = the whole process (both loads, every "
             "analysis). µs throughout. Nested or overlapping windows (alexnet's two instances, a step and "
             "its `gpu_user_annotation` copy) are each counted in the sums.")
    L.append("")
    hdr = ["trace", "raw MB", "status", "windows ok / run", "CP µs", "window µs", "CP / window"]
    hdr += [lbl + " %" for _, lbl in BOUND_BY_COLS] + ["other %"]
    hdr += ["streams", "idle host wait µs", "idle kernel wait µs", "idle other µs", "wall s", "failure"]
    L.append("| " + " | ".join(hdr) + " |")
    L.append("|" + "|".join(["---", "--:", "---", "--:", "--:", "--:", "--:"] + ["--:"] * (len(BOUND_BY_COLS) + 1)
                            + ["--:", "--:", "--:", "--:", "--:", "---"]) + "|")
    known = {k for k, _ in BOUND_BY_COLS}
    for name, d in data.items():
        ws = d["windows"]
        ok = [w for w in ws if w["success"]]
        cp = sum(w["length_us"] or 0 for w in ok)
        span = sum(w["window_span_us"] or 0 for w in ok)
        agg: Dict[str, float] = {}
        for w in ok:
            for k, v in (w["breakdown_us"] or {}).items():
                agg[k] = agg.get(k, 0.0) + (v or 0)
        tot = sum(agg.values())
        pct = {k: (v / tot * 100 if tot else None) for k, v in agg.items()}
        other = sum(v for k, v in pct.items() if k not in known and v is not None) if tot else None
        idle = d["idle"] or {}
        it = idle.get("total") or {}
        fail = d["error"] or ""
        row = [
            f"`{name}`",
            f"{(d['raw_bytes'] or 0) / 1e6:.1f}",
            d["status"],
            f"{len(ok)} / {len(ws)}",
            _fmt(cp) if ok else "—",
            _fmt(span) if ok else "—",
            f"{cp / span:.2f}" if ok and span else "—",
        ]
        row += [(_fmt(pct.get(k, 0.0), pct=True) if tot else "—") for k, _ in BOUND_BY_COLS]
        row += [(_fmt(other, pct=True) if tot else "—")]
        row += [
            str(len(idle.get("streams") or {})) if idle else "—",
            _fmt(it.get("host_wait_us")), _fmt(it.get("kernel_wait_us")), _fmt(it.get("other_us")),
            _fmt(d["process_wall_s"]),
            _md_escape(_one_line(fail, 200)),
        ]
        L.append("| " + " | ".join(row) + " |")
    L.append("")
    L.append("## Per window")
    L.append("")
    L.append("| trace | window | load | CP µs | window µs | path span µs | path edges | "
             + " | ".join(lbl + " %" for _, lbl in BOUND_BY_COLS) + " | other % | wall s | error |")
    L.append("|---|---|---|--:|--:|--:|--:|" + "--:|" * (len(BOUND_BY_COLS) + 1) + "--:|---|")
    for name, d in data.items():
        for w in d["windows"]:
            nm = w["name"] or "?"
            if w["annotation"] and w["instance_id"] is not None:
                nm = f"{nm} [{w['instance_id']}]"
            if w["annotation_cat"] and w["annotation_cat"] not in ("user_annotation",):
                nm += f" ({w['annotation_cat']})"
            if w["load"] == "keep_last_step":
                nm += " †"
            pct = w["breakdown_pct"] or {}
            other = sum(v for k, v in pct.items() if k not in known and v is not None)
            row = [f"`{name}`", _md_escape(nm), w["load"],
                   _fmt(w["length_us"]), _fmt(w["window_span_us"]), _fmt(w["path_span_us"]),
                   _fmt(w["path_edges"])]
            row += [(_fmt(pct.get(k, 0.0), pct=True) if w["success"] and pct else "—") for k, _ in BOUND_BY_COLS]
            row += [(_fmt(other, pct=True) if w["success"] and pct else "—"),
                    (f"{w['wall_s']:.2f}" if w["wall_s"] is not None else "—"),
                    _md_escape(_one_line(w["error"] or "", 200))]
            L.append("| " + " | ".join(row) + " |")
    L.append("")
    (out / "critical_path_all.md").write_text("\n".join(L) + "\n")
    print(f"wrote {out / 'critical_path_all.md'} and critical_path_all.json", file=sys.stderr)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", help="trace name(s) to run (default: the four "
                    "traces of the first run; with --all: restrict the sweep)")
    ap.add_argument("--all", action="store_true", help="every trace in A_kineto with kernel events, "
                    "each in its own process under `timeout`, then the summary")
    ap.add_argument("--summarize", action="store_true", help="only rebuild critical_path_all.{md,json}")
    ap.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S, help="per-trace seconds (--all)")
    ap.add_argument("--max-raw-mb", type=float, default=DEFAULT_MAX_RAW_MB,
                    help="skip traces bigger than this uncompressed (--all)")
    ap.add_argument("--budget", type=float, default=None, help="overall seconds for --all; "
                    "traces not started by then are recorded as not_run")
    ap.add_argument("--log-dir", type=Path, default=Path(tempfile.gettempdir()) / "hta_logs",
                    help="per-trace process logs (--all); outside the repo")
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.all:
        run_all(args.out, args.timeout, args.max_raw_mb, args.budget, args.log_dir, args.only)
        return 0
    if args.summarize:
        infos = [(trace_name(f.name), trace_info(f)) for f in sorted(TRACE_DIR.iterdir()) if f.is_file()]
        with_k = [n for n, i in sorted(infos, key=lambda x: x[1]["raw_bytes"]) if i["n_kernel_events"] > 0]
        summarize(args.out, with_k, [n for n, i in infos if i["n_kernel_events"] == 0])
        return 0
    try:
        import hta  # noqa: F401
    except ImportError:
        print("HTA is not installed in this interpreter; use /work/hta-venv/bin/python "
              "(see the module docstring).", file=sys.stderr)
        return 2
    # HTA's default logging prints INFO to stdout; keep the console quiet.
    logging.getLogger("hta").setLevel(logging.WARNING)
    logging.getLogger("hta").propagate = False
    for h in logging.getLogger("hta").handlers:
        h.setLevel(logging.CRITICAL + 1)
    names = args.only or list(TRACES)
    for name in names:
        t0 = time.perf_counter()
        if name in TRACES:
            plan = plan_for(name, trace_info(TRACE_DIR / TRACES[name]["file"]))
        else:
            plan = plan_for(name, trace_info(find_trace(name)))
        dest = args.out / f"{name}.json"
        res = run_trace(name, plan, dest=dest)
        res["total_wall_s"] = round(time.perf_counter() - t0, 3)
        dest.write_text(json.dumps(res, indent=1, sort_keys=False) + "\n")
        print(f"[{name}] wrote {dest} in {res['total_wall_s']} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
