"""dv/dt OpenCL profiler JSON (dividiti/dvdt-prof, cjson mode) -> canonical event table.

Input: a list of call records (``call``, ``errcode``, ``timestamp: {start, end}`` as
ISO-8601 host wall-clock strings with µs resolution, plus per-call fields), or a CK
experiment holding one such list per repetition in
``characteristics_list[i].run.dvdt_prof``. Validated by ``schemas/dvdt.schema.json``.

Mapping:
- every call -> a ``runtime`` row (``name`` = the API call, host times; ``pid`` = the
  repetition, ``tid`` 0; ``correlation`` = the row's eid; ``args`` = the record as written);
- every enqueue with device ``profiling: {queued, submit, start, end}`` (ns, device clock)
  -> a device row: ``clEnqueueNDRangeKernel`` -> ``kernel`` (named by the kernel function),
  ``clEnqueueRead/Write/CopyBuffer`` (and ``*Rect``/``*Image``) -> ``memcpy``,
  ``clEnqueueFillBuffer`` -> ``memset``. Queues become streams (in order of first use),
  the device of a queue comes from its ``clCreateCommandQueue``;
- ``clFinish`` and blocking reads/writes -> ``cuda_sync`` "Stream Sync" rows on the queue;
  ``clWaitForEvents`` -> "Event Sync" rows on the enqueue that produced each event.

Device clock: the profiling times are converted to the host clock with one offset per
repetition, the one that puts every command's ``queued`` time inside its enqueue call
(``host start <= queued + offset <= host end``; the earliest such offset). When no single
offset satisfies every record (clock drift, µs rounding of the host stamps) the median of
the per-record midpoints is used and a ``dvdt_clock`` health item says so.

Kernel arguments are sticky state of the kernel object: each enqueue takes, per argument
index, the most recent ``clSetKernelArg`` on the same kernel before it (in call order,
within a repetition). Values are decoded little-endian (``arg_value`` is the raw bytes in
memory order); CLBlast ``Xgemm*`` / ``XgemmDirect*`` kernels get ``gemm: {M, N, K}`` from
arguments 0-2 (and ``flops`` = 2·M·N·K).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from opgraph.errors import OpgraphInputError
from opgraph.ingest.canon import make_table
from opgraph.ingest.source import SourceBytes
from opgraph.model.table import NONE_ID, EventTable

#: Enqueue calls that carry device profiling, and the kind of their device row.
DEVICE_CALLS = {
    "clEnqueueNDRangeKernel": "kernel", "clEnqueueTask": "kernel",
    "clEnqueueReadBuffer": "memcpy", "clEnqueueWriteBuffer": "memcpy", "clEnqueueCopyBuffer": "memcpy",
    "clEnqueueReadBufferRect": "memcpy", "clEnqueueWriteBufferRect": "memcpy", "clEnqueueCopyBufferRect": "memcpy",
    "clEnqueueReadImage": "memcpy", "clEnqueueWriteImage": "memcpy", "clEnqueueCopyImage": "memcpy",
    "clEnqueueCopyImageToBuffer": "memcpy", "clEnqueueCopyBufferToImage": "memcpy",
    "clEnqueueFillBuffer": "memset", "clEnqueueFillImage": "memset",
}
_COPY_DIR = {"Read": "DtoH", "Write": "HtoD", "Copy": "DtoD"}
GEMM_RE = re.compile(r"^Xgemm(Direct)?")
_PROF_KEYS = ("queued", "submit", "start", "end")


def _records_of(path: str, doc: Any) -> list[tuple[int, list[dict]]]:
    """(repetition, records) pairs of a bare list or a CK experiment."""
    if isinstance(doc, list):
        return [(0, doc)]
    if isinstance(doc, dict) and isinstance(doc.get("characteristics_list"), list):
        reps = []
        for i, ch in enumerate(doc["characteristics_list"]):
            prof = ((ch or {}).get("run") or {}).get("dvdt_prof") if isinstance(ch, dict) else None
            if prof is None:
                continue
            if not isinstance(prof, list):
                raise OpgraphInputError(path, f"characteristics_list[{i}].run.dvdt_prof is "
                                              f"{type(prof).__name__}, expected a list of call records")
            reps.append((i, prof))
        if not reps:
            raise OpgraphInputError(path, "CK experiment without any characteristics_list[i].run.dvdt_prof")
        return reps
    raise OpgraphInputError(path, "not a dv/dt log: expected a list of call records or a CK experiment")


def _iso_ns(values: list[str], path: str, base: int) -> np.ndarray:
    """ISO-8601 wall-clock strings (no time zone, µs) -> int64 ns (read as UTC)."""
    try:
        us = np.array(values, dtype="datetime64[us]").astype(np.int64)
        # NaT, or beyond int64 ns (years before 1678 or after 2261)
        bad = (us == np.iinfo(np.int64).min) | (np.abs(us) >= 9_223_372_036_854_775)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise OpgraphInputError(path, f"timestamp {values[i]!r:.40} is out of range (it does not fit int64 "
                                          "nanoseconds: years 1678 to 2261)", event_index=base + i)
        return us * 1000
    except (ValueError, TypeError):
        for i, v in enumerate(values):
            try:
                np.datetime64(v, "us")
            except (ValueError, TypeError):
                raise OpgraphInputError(path, f"timestamp {v!r:.40} is not an ISO-8601 date-time",
                                        event_index=base + i) from None
        raise


def decode_arg(hex_value: Any, size: Any) -> dict[str, Any]:
    """An OpenCL kernel argument as logged (raw bytes in memory order, hex) decoded:
    ``hex``, ``size`` and, for 1/2/4/8-byte values, ``int`` (little-endian, unsigned)
    plus ``float`` for 4/8-byte values."""
    out: dict[str, Any] = {"hex": hex_value, "size": size}
    if not isinstance(hex_value, str):
        return out
    h = hex_value[2:] if hex_value.startswith("0x") else hex_value
    try:
        raw = bytes.fromhex(h)
    except ValueError:
        return out
    if len(raw) in (1, 2, 4, 8):
        out["int"] = int.from_bytes(raw, "little", signed=False)
        if len(raw) in (4, 8):
            f = float(np.frombuffer(raw, dtype="<f4" if len(raw) == 4 else "<f8")[0])
            if f == 0.0 or (np.isfinite(f) and 1e-30 < abs(f) < 1e30):  # skip ints read as denormals
                out["float"] = f
    return out


def read_dvdt(src: SourceBytes, doc: Any) -> EventTable:
    """Read a dv/dt log (bare list or CK experiment) into an :class:`EventTable`."""
    path = src.path
    reps = _records_of(path, doc)
    _validate(path, reps)
    kind: list[str] = []
    names: list[Any] = []
    ts: list[int] = []
    dur: list[int] = []
    pid: list[int] = []
    tid: list[Any] = []
    device: list[int] = []
    stream: list[int] = []
    corr: list[int] = []
    args: list[Any] = []
    cats: list[str] = []
    health: list[tuple[str, int, int | None, str]] = []
    queue_code: dict[tuple[int, Any], int] = {}
    device_code: dict[Any, int] = {}
    clock: dict[int, int] = {}
    base = 0
    device_rows: list[tuple[int, dict]] = []   # deferred: (row of the call, device row fields)
    for rep, recs in reps:
        n = len(recs)
        t0 = _iso_ns([r["timestamp"]["start"] for r in recs], path, base)
        t1 = _iso_ns([r["timestamp"]["end"] for r in recs], path, base)
        bad = np.flatnonzero(t1 < t0)
        if len(bad):
            i = int(bad[0])
            raise OpgraphInputError(path, "timestamp.end is before timestamp.start", event_index=base + i)
        # device clock -> host clock offset of this repetition
        prof_idx = [i for i, r in enumerate(recs) if isinstance(r.get("profiling"), dict)]
        if prof_idx:
            q = np.array([recs[i]["profiling"]["queued"] for i in prof_idx], dtype=np.int64)
            lo = t0[prof_idx] - q
            hi = t1[prof_idx] - q
            off = int(lo.max())
            if off > int(hi.min()):
                off = int(np.median((lo + hi) // 2))
                health.append(("dvdt_clock", len(prof_idx), base + prof_idx[0],
                               f"repetition {rep}: no single device-clock offset puts every command's "
                               "'queued' time inside its enqueue call; the median offset was used"))
            clock[rep] = off
        queue_dev: dict[Any, Any] = {r.get("queue"): r.get("device") for r in recs
                                     if r.get("call") == "clCreateCommandQueue" and r.get("errcode", 0) == 0}
        sticky: dict[Any, dict[int, dict]] = {}
        event_of: dict[Any, int] = {}
        for i, r in enumerate(recs):
            row = base + i
            call = r["call"]
            kind.append("runtime")
            cats.append("opencl_api")
            names.append(call)
            ts.append(int(t0[i]))
            dur.append(int(t1[i] - t0[i]))
            pid.append(rep)
            tid.append(0)
            device.append(NONE_ID)
            stream.append(NONE_ID)
            corr.append(row)
            args.append(r)
            if call == "clSetKernelArg" and r.get("errcode", 0) == 0:
                sticky.setdefault(r.get("kernel"), {})[int(r["arg_index"])] = decode_arg(r.get("arg_value"),
                                                                                        r.get("arg_size"))
                continue
            qkey = (rep, r.get("queue"))
            if r.get("queue") is not None and qkey not in queue_code:
                queue_code[qkey] = len(queue_code)
            dev = NONE_ID
            if r.get("queue") is not None:
                dkey = queue_dev.get(r.get("queue"), f"queue {r.get('queue')}")
                if dkey not in device_code:
                    device_code[dkey] = len(device_code)
                dev = device_code[dkey]
            dk = DEVICE_CALLS.get(call)
            prof = r.get("profiling")
            if dk is not None and isinstance(prof, dict):
                off = clock[rep]
                p = {k: int(prof[k]) for k in _PROF_KEYS}
                a: dict[str, Any] = {"call_index": i, "repetition": rep, "call": call, "queue": r.get("queue"),
                                     "profiling": p, "host_ns": int(t1[i] - t0[i]),
                                     "queue_ns": p["submit"] - p["queued"], "submit_ns": p["start"] - p["submit"],
                                     "exec_ns": p["end"] - p["start"], "total_ns": p["end"] - p["queued"],
                                     "clock_offset_ns": off}
                a["overhead_ns"] = a["host_ns"] - a["total_ns"]
                if dk == "kernel":
                    nm = r.get("name") or call
                    a.update({k: r.get(k) for k in ("kernel", "gws", "lws", "gwo", "enqueue_id") if k in r})
                    kargs = {str(k): v for k, v in sorted(sticky.get(r.get("kernel"), {}).items())}
                    a["kernel_args"] = kargs
                    if GEMM_RE.match(str(nm)) and all(str(j) in kargs and "int" in kargs[str(j)] for j in range(3)):
                        m_, n_, k_ = (kargs[str(j)]["int"] for j in range(3))
                        a["gemm"] = {"M": m_, "N": n_, "K": k_}
                        a["flops"] = 2 * m_ * n_ * k_
                else:
                    d = next((v for k, v in _COPY_DIR.items() if call.startswith("clEnqueue" + k)), "")
                    nm = f"Memcpy {d} ({call})" if dk == "memcpy" else f"Memset ({call})"
                    a.update({k: r.get(k) for k in ("buffer", "size", "offset", "blocking") if k in r})
                device_rows.append((row, {"kind": dk, "name": nm, "ts": p["start"] + off,
                                          "dur": p["end"] - p["start"], "pid": rep,
                                          "tid": f"queue {queue_code.get(qkey, -1)}",
                                          "device": dev, "stream": queue_code.get(qkey, -1), "corr": row,
                                          "args": a, "cat": "opencl_device"}))
                if r.get("event") not in (None, "0", 0, "0x0"):
                    event_of[r.get("event")] = len(device_rows) - 1
            # host waits
            sync_rows: list[dict] = []
            if call == "clFinish" or (dk in ("memcpy", "memset") and r.get("blocking") in (1, True, "1", "CL_TRUE")):
                sync_rows.append({"cuda_sync_kind": "Stream Sync", "stream": queue_code.get(qkey, -1), "dev": dev})
            elif call == "clWaitForEvents":
                for e in r.get("event_list") or []:
                    j = event_of.get(e)
                    if j is not None:
                        drow = device_rows[j][1]
                        sync_rows.append({"cuda_sync_kind": "Event Sync", "stream": drow["stream"], "dev": drow["device"],
                                          "wait_on_stream": drow["stream"],
                                          "wait_on_cuda_event_record_corr_id": drow["corr"]})
            for s in sync_rows:
                dev_s = s.pop("dev")
                device_rows.append((row, {"kind": "cuda_sync", "name": s["cuda_sync_kind"], "ts": int(t0[i]),
                                          "dur": int(t1[i] - t0[i]), "pid": rep, "tid": 0, "device": dev_s,
                                          "stream": s["stream"], "corr": row, "args": {**s, "call": call},
                                          "cat": "opencl_sync"}))
        base += n
    for _, d in device_rows:
        kind.append(d["kind"])
        cats.append(d["cat"])
        names.append(d["name"])
        ts.append(d["ts"])
        dur.append(d["dur"])
        pid.append(d["pid"])
        tid.append(d["tid"])
        device.append(d["device"])
        stream.append(d["stream"])
        corr.append(d["corr"])
        args.append(d["args"])
    n = len(kind)
    neg = [i for i in range(n) if dur[i] < 0]
    if neg:
        raise OpgraphInputError(path, "device profiling 'end' is before 'start'", event_index=neg[0])
    table = make_table(n, kind=kind, name=names, ts_ns=ts, dur_ns=dur, pid=pid, tid=tid, args=args, cat=cats,
                       ph="X", device=device, stream=stream, correlation=corr)
    dev_names = {v: k for k, v in device_code.items()}
    table.meta.update({
        "format": "dvdt", "file": path, "sha256": src.sha256,
        "device_properties": [{"id": i, "name": f"OpenCL device {dev_names[i]}"} for i in sorted(dev_names)],
        "distributed_info": {},
        "trace_metadata": {"repetitions": [r for r, _ in reps], "clock_offset_ns": clock,
                           "queues": {f"{k[0]}:{k[1]}": v for k, v in queue_code.items()},
                           "ck": isinstance(doc, dict)},
    })
    for code, cnt, ex, msg in health:
        table.warn(code, cnt, ex, msg)
    return table


#: Records validated against the schema; the rest get the structural checks only.
SCHEMA_SAMPLE = 5000


def _quick_error(r: Any) -> str | None:
    """The structural checks the reader relies on (cheap, for every record)."""
    if not isinstance(r, dict):
        return f"a record is {type(r).__name__}, expected an object"
    if not isinstance(r.get("call"), str):
        return "'call' is missing or not a string"
    ts = r.get("timestamp")
    if not isinstance(ts, dict) or not isinstance(ts.get("start"), str) or not isinstance(ts.get("end"), str):
        return "'timestamp' must be an object with 'start' and 'end' strings"
    if r["call"] in DEVICE_CALLS and r.get("errcode", 0) == 0:
        p = r.get("profiling")
        if not isinstance(p, dict):
            return "'profiling' is a required property"
        if not all(type(p.get(k)) is int for k in _PROF_KEYS):
            return "'profiling' needs integer queued, submit, start and end"
    if r["call"] == "clSetKernelArg" and type(r.get("arg_index")) is not int:
        return "'arg_index' is a required integer"
    return None


def _validate(path: str, reps: list[tuple[int, list[dict]]]) -> None:
    """Records against ``schemas/dvdt.schema.json`` (the first :data:`SCHEMA_SAMPLE`;
    structural checks for all); the first failure is one line."""
    from opgraph.ingest.validate import first_error

    base = 0
    for rep, recs in reps:
        for i, r in enumerate(recs):
            err = _quick_error(r)
            if err is None and base + i < SCHEMA_SAMPLE:
                err = first_error(r, "dvdt.schema.json")
            if err:
                where = f"repetition {rep}, " if len(reps) > 1 or rep else ""
                call = r.get("call") if isinstance(r, dict) else None
                raise OpgraphInputError(path, f"{where}record {i}" + (f" ({call})" if call else "")
                                        + f": {err}", event_index=base + i)
        base += len(recs)


