#!/usr/bin/env python3
"""Run Holistic Trace Analysis (HTA), the peer tool, on a few Kineto traces.

HTA is NOT a dependency of opgraph. Run this script with the separate venv:

    python3 -m venv /work/hta-venv
    /work/hta-venv/bin/pip install holistictraceanalysis==0.5.0 pandas==2.3.3
    /work/hta-venv/bin/python benchmarks/peers/run_hta.py            # all traces
    /work/hta-venv/bin/python benchmarks/peers/run_hta.py --only hta_critical_path_alexnet

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
            err = f"{type(exc).__name__} at {where}: {_one_line(_scrub(str(exc)))}"
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
        rec["breakdown_total_us"] = _num(float(bd.duration.sum()))
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


def analyse(ta, plan: Dict[str, Any], only_instances: Optional[List[int]] = None) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    sym_table = ta.t.symbol_table.get_sym_table()
    df = ta.t.get_trace(0)
    ua_id = ta.t.symbol_table.get_sym_id_map().get("user_annotation", -1)
    out["user_annotations"] = dict(
        Counter(sym_table[int(n)] for n in df.loc[df["cat"].eq(ua_id), "name"])
    )
    out["n_events_in_hta_dataframe"] = int(len(df))
    out["hta_min_ts_us"] = _num(ta.t.min_ts)

    # ---- idle time breakdown
    res, wall, msgs, err, _ = timed(
        ta.get_idle_time_breakdown, ranks=[0], visualize=False, show_idle_interval_stats=True
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
        out["stream_busy_derived"] = stream_busy_table(ta)
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

    # ---- critical path
    cps: List[Dict[str, Any]] = []
    instances_seen: Dict[str, Any] = {}
    for spec in plan["cp"]:
        ann = spec["annotation"]
        if ann:
            inst = annotation_instances(ta, ann)
            instances_seen[ann] = inst
            ids = list(range(len(inst))) if spec["instances"] == "all" else spec["instances"]
        else:
            ids = spec["instances"]
        if only_instances is not None:
            ids = [i for i in ids if i in only_instances]
        for iid in ids:
            rec = run_critical_path(ta, ann, iid)
            if ann and isinstance(iid, int) and iid < len(instances_seen[ann]):
                rec["annotation_instance"] = instances_seen[ann][iid]
            cps.append(rec)
    out["annotation_instances"] = instances_seen
    out["critical_path"] = cps
    return out


def run_trace(name: str, plan: Dict[str, Any]) -> Dict[str, Any]:
    import hta
    import networkx
    import numpy
    import pandas

    path = TRACE_DIR / plan["file"]
    result: Dict[str, Any] = {
        "trace": name,
        "trace_file": str(path),
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
        "runs": [],
    }
    print(f"[{name}] loading (include_last_profiler_step=False)", file=sys.stderr)
    ta, load_info, _ = load(path, include_last_profiler_step=False)
    run: Dict[str, Any] = {"load": load_info}
    if ta is not None:
        run.update(analyse(ta, plan))
    result["runs"].append(run)

    # HTA drops the last ProfilerStep (and GPU work launched in it) by default when the
    # trace has >= 2 distinct ProfilerStep names. Re-run with it kept so the numbers can
    # be compared with a tool that keeps every step.
    n_steps = 0
    if ta is not None:
        n_steps = sum(1 for k in ta.t.symbol_table.get_sym_id_map() if "ProfilerStep" in k)
    if n_steps >= 2:
        print(f"[{name}] loading (include_last_profiler_step=True)", file=sys.stderr)
        ta2, load_info2, _ = load(path, include_last_profiler_step=True)
        run2: Dict[str, Any] = {"load": load_info2}
        if ta2 is not None:
            n_inst = len(annotation_instances(ta2, "ProfilerStep"))
            # Only the step(s) that the default load dropped need a new critical path.
            run2.update(analyse(ta2, plan, only_instances=list(range(n_inst))[-1:]))
        result["runs"].append(run2)

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
    return result


def _dist_version(dist: str) -> Optional[str]:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:  # noqa: BLE001
        return None


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", help="trace name(s) to run (default: all)")
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    args = ap.parse_args(argv)
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
    args.out.mkdir(parents=True, exist_ok=True)
    names = args.only or list(TRACES)
    for name in names:
        t0 = time.perf_counter()
        res = run_trace(name, TRACES[name])
        res["total_wall_s"] = round(time.perf_counter() - t0, 3)
        dest = args.out / f"{name}.json"
        dest.write_text(json.dumps(res, indent=1, sort_keys=False) + "\n")
        print(f"[{name}] wrote {dest} in {res['total_wall_s']} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
