"""Synthetic dv/dt OpenCL profiler logs (``libprof.so`` cjson output) with known answers.

No public dv/dt log exists; this writes the record shapes of dividiti/dvdt-prof (see
docs/formats.md): a bare list of call records and the same calls wrapped in a CK
experiment (``characteristics_list[i].run.dvdt_prof``, two repetitions).

The scenario: one command queue on one device; buffers; kernels ``im2col_float``,
``XgemmDirectTN`` (CLBlast: args 0..2 = M, N, K) and ``copy_float``. A non-blocking write,
``im2col``, then the GEMM enqueued twice: all args set before the first enqueue, then only
arg 0 (M) re-set before the second, so the second must read M from the new value and N, K
from the sticky values of the first (the seed's "every SetKernelArg in the trace" rule would
get this wrong). Then ``copy_float``, ``clFinish`` and a blocking read.

Host timestamps are ISO-8601 wall-clock strings with µs resolution; device ``profiling``
times are ns on a device clock offset from the host clock by ``DEVICE_CLOCK_OFFSET``.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

EPOCH = _dt.datetime(2017, 3, 8, 11, 44, 8)
#: device clock = host clock (ns since EPOCH) + this
DEVICE_CLOCK_OFFSET = 987_654_321_000
QUEUE = "0x1cd240"
DEVICE = "0x7f98695ee0"
K_IM2COL, K_GEMM, K_COPY = "0x7f8700", "0x7f8a10", "0x7f8c20"
GEMM_SIZES = ((224, 64, 147), (56, 64, 147))   # (M, N, K) of the two GEMM enqueues


def _iso(ns: int) -> str:
    return (EPOCH + _dt.timedelta(microseconds=ns // 1000)).isoformat(timespec="microseconds")


def _le(value: int, size: int = 4) -> str:
    """Raw bytes of ``value`` as hex in memory order (little-endian), as dv/dt logs them."""
    return value.to_bytes(size, "little", signed=value < 0).hex()


def build_records(start_us: int = 1_000) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(records, answers) of one repetition."""
    recs: list[dict[str, Any]] = []
    t = start_us * 1000                     # host clock, ns since EPOCH (µs multiples)
    dev_free = 0                            # device clock (host ns) when the queue is idle
    enq: list[dict[str, Any]] = []

    def rec(call: str, dur_us: int, **kw: Any) -> dict[str, Any]:
        nonlocal t
        r = {"call": call, "errcode": 0, "timestamp": {"start": _iso(t), "end": _iso(t + dur_us * 1000)}, **kw}
        r["_t0"], r["_t1"] = t, t + dur_us * 1000
        recs.append(r)
        t += dur_us * 1000 + 5_000
        return r

    def enqueue(call: str, exec_us: int, **kw: Any) -> dict[str, Any]:
        nonlocal dev_free
        t0 = t
        queued = t0 + 3_000
        submit = queued + 4_000
        start = max(submit + 6_000, dev_free)
        end = start + exec_us * 1000
        dev_free = end
        host_end = ((end + 2_000) // 1000 + 1) * 1000  # the profiler waits for the command
        r = rec(call, (host_end - t0) // 1000, **kw,
                profiling={k: v + DEVICE_CLOCK_OFFSET for k, v in
                           (("queued", queued), ("submit", submit), ("start", start), ("end", end))})
        enq.append({"index": len(recs) - 1, "call": call, "name": kw.get("name"), "queued": queued,
                    "submit": submit, "start": start, "end": end, "t0": r["_t0"], "t1": r["_t1"]})
        return r

    rec("clCreateCommandQueue", 120, context="0x55a2b19800", device=DEVICE, properties=2, queue=QUEUE,
        errcode_ret="0x7fe741981c")
    for b in ("0xb1", "0xb2", "0xb3"):
        rec("clCreateBuffer", 15, context="0x55a2b19800", flags=1, size=1 << 20, host_ptr="0", buffer=b)
    for name, k in (("im2col_float", K_IM2COL), ("XgemmDirectTN", K_GEMM), ("copy_float", K_COPY)):
        rec("clCreateKernel", 30, program="0x9000", name=name, kernel=k)
    enqueue("clEnqueueWriteBuffer", 150, queue=QUEUE, buffer="0xb1", blocking=0, offset=0, size=1 << 20,
            ptr="0x7f0000", event_wait_list=[], event="0")
    rec("clSetKernelArg", 2, kernel=K_IM2COL, arg_index=0, arg_size=8, arg_value=_le(0xb1, 8))
    rec("clSetKernelArg", 2, kernel=K_IM2COL, arg_index=1, arg_size=4, arg_value=_le(224))
    enqueue("clEnqueueNDRangeKernel", 400, queue=QUEUE, kernel=K_IM2COL, name="im2col_float",
            gwo=[0, 0, 0], gws=[16384, 1, 1], lws=[128, 1, 1], event_wait_list=[], event="0", enqueue_id=1)
    (m, n, k) = GEMM_SIZES[0]
    for i, v in enumerate((m, n, k)):
        rec("clSetKernelArg", 2, kernel=K_GEMM, arg_index=i, arg_size=4, arg_value=_le(v))
    rec("clSetKernelArg", 2, kernel=K_GEMM, arg_index=3, arg_size=4, arg_value=_le(1065353216))  # alpha 1.0f
    rec("clSetKernelArg", 2, kernel=K_GEMM, arg_index=4, arg_size=8, arg_value=_le(0xb2, 8))
    enqueue("clEnqueueNDRangeKernel", 2_500, queue=QUEUE, kernel=K_GEMM, name="XgemmDirectTN",
            gwo=[0, 0, 0], gws=[224, 64, 1], lws=[8, 8, 1], event_wait_list=[], event="0xe1", enqueue_id=2)
    rec("clSetKernelArg", 2, kernel=K_GEMM, arg_index=0, arg_size=4, arg_value=_le(GEMM_SIZES[1][0]))
    enqueue("clEnqueueNDRangeKernel", 700, queue=QUEUE, kernel=K_GEMM, name="XgemmDirectTN",
            gwo=[0, 0, 0], gws=[56, 64, 1], lws=[8, 8, 1], event_wait_list=[], event="0xe2", enqueue_id=3)
    rec("clSetKernelArg", 2, kernel=K_COPY, arg_index=0, arg_size=8, arg_value=_le(0xb2, 8))
    enqueue("clEnqueueNDRangeKernel", 90, queue=QUEUE, kernel=K_COPY, name="copy_float",
            gwo=[0, 0, 0], gws=[4096, 1, 1], lws=[0, 0, 0], event_wait_list=["0xe2"], event="0", enqueue_id=4)
    rec("clFinish", 20, queue=QUEUE)
    enqueue("clEnqueueReadBuffer", 160, queue=QUEUE, buffer="0xb3", blocking=1, offset=0, size=1 << 20,
            ptr="0x7f8000", event_wait_list=[], event="0")
    for r in recs:
        r.pop("_t0")
        r.pop("_t1")
    kernels = [e for e in enq if e["call"] == "clEnqueueNDRangeKernel"]
    answers = {
        "records": len(recs), "kernels": len(kernels), "memcpy": len(enq) - len(kernels),
        "gemm_mnk": [list(s) for s in GEMM_SIZES],
        "enqueues": [{"name": e["name"] or e["call"], "queue_ns": e["submit"] - e["queued"],
                      "submit_ns": e["start"] - e["submit"], "exec_ns": e["end"] - e["start"],
                      "host_ns": e["t1"] - e["t0"],
                      "overhead_ns": (e["t1"] - e["t0"]) - (e["end"] - e["queued"])} for e in enq],
        "exec_by_kernel_ns": {},
        "syncs": 2,   # clFinish + the blocking read
    }
    for e in kernels:
        answers["exec_by_kernel_ns"][e["name"]] = answers["exec_by_kernel_ns"].get(e["name"], 0) + e["end"] - e["start"]
    return recs, answers


def ck_wrapper(reps: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """A CK experiment holding ``reps`` (one dv/dt list per repetition)."""
    return {"characteristics_list": [{"run": {"dvdt_prof": r, "time_fw_ms": 12.5, "per_layer_info": []},
                                      "state": "ok"} for r in reps],
            "choices": {"data_uoa": "synthetic"}}


def write_fixtures(out_dir: str | Path) -> dict[str, Path]:
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    recs, answers = build_records()
    rep2, _ = build_records(start_us=2_000_000)
    paths = {"list": d / "synth.dvdt.json", "ck": d / "synth_ck.dvdt.json", "answers": d / "synth.answers.json"}
    paths["list"].write_text(json.dumps(recs, indent=1) + "\n")
    paths["ck"].write_text(json.dumps(ck_wrapper([recs, rep2]), indent=1) + "\n")
    paths["answers"].write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")
    return paths


if __name__ == "__main__":  # pragma: no cover
    import sys

    for k, p in write_fixtures(sys.argv[1] if len(sys.argv) > 1 else "fixtures/dvdt").items():
        print(k, p)


# --------------------------------------------------------------------------- CLIntercept
def clintercept_text(stages: bool = False) -> tuple[bytes, dict[str, Any]]:
    """A CLIntercept ``clintercept_trace.json`` as the tool writes it: ``[`` then one
    event per line, each followed by ``,``, and no closing ``]``. Host calls on thread
    4321 with ``args.id`` on enqueues; device commands on queue track ``tid -1`` (with
    ``stages``: three ``count.queue`` stage slices per command instead). Returns (bytes,
    answers)."""
    pid, tid = 4242, 4321
    ev: list[str] = ['{"ph":"M", "name":"clintercept_start_time", "pid":%d, "tid":%d, "args":{"start_time":1700000000000000}},' % (pid, tid),
                     '{"ph":"M", "name":"process_name", "pid":%d, "tid":%d, "args":{"name":"bench"}},' % (pid, tid),
                     '{"ph":"M", "name":"thread_name", "pid":%d, "tid":-1, "args":{"name":"Queue 1"}},' % pid]
    t = 100_000                     # ns since start
    dev_free = 0
    cmds = [("clEnqueueWriteBuffer", "memcpy", 40_000), ("clEnqueueNDRangeKernel", "kernel", 250_000),
            ("clEnqueueNDRangeKernel", "kernel", 120_000), ("clEnqueueFillBuffer", "memset", 8_000),
            ("clEnqueueReadBuffer", "memcpy", 35_000)]
    knames = {1: "sgemm_kernel", 2: "relu_kernel"}
    answers = {"runtime": 0, "kernel": 0, "memcpy": 0, "memset": 0, "launch_edges": 0}
    for i, (call, kind, dur) in enumerate(cmds):
        cid = i + 1
        name = f"{call}( {knames[i]} )" if call == "clEnqueueNDRangeKernel" else call
        host_dur = 6_000
        ev.append('{"ph":"X","pid":%d,"tid":%d,"name":"%s","ts":%.3f,"dur":%.3f,"args":{"id":%d}},'
                  % (pid, tid, name, t / 1000.0, host_dur / 1000.0, cid))
        ev.append('{"ph":"s","pid":%d,"tid":%d,"name":"Command","cat":"Commands","ts":%.3f,"id":%d},'
                  % (pid, tid, t / 1000.0, cid))
        queued = t + 1_000
        submit = queued + 2_000
        start = max(submit + 3_000, dev_free)
        end = start + dur
        dev_free = end
        dname = knames[i] if call == "clEnqueueNDRangeKernel" else call
        ev.append('{"ph":"f","pid":%d,"tid":-1,"name":"Command","cat":"Commands","ts":%.3f,"id":%d},'
                  % (pid, start / 1000.0, cid))
        if stages:
            for (s0, s1, lbl) in ((queued, submit, "Queued"), (submit, start, "Submitted"), (start, end, "Execution")):
                ev.append('{"ph":"X","pid":%d,"tid":1.1,"name":"%s (%s)","ts":%.3f,"dur":%.3f,"cname":"x","args":{"id":%d}},'
                          % (pid, dname, lbl, s0 / 1000.0, (s1 - s0) / 1000.0, cid))
        else:
            ev.append('{"ph":"X","pid":%d,"tid":-1,"name":"%s","ts":%.3f,"dur":%.3f,"args":{"id":%d}},'
                      % (pid, dname, start / 1000.0, dur / 1000.0, cid))
        answers["runtime"] += 1
        answers[kind] += 1
        answers["launch_edges"] += 1
        t += host_dur + 4_000
    ev.append('{"ph":"X","pid":%d,"tid":%d,"name":"clFinish","ts":%.3f,"dur":%.3f},'
              % (pid, tid, t / 1000.0, (dev_free - t + 2_000) / 1000.0))
    answers["runtime"] += 1
    return ("[\n" + "\n".join(ev) + "\n").encode(), answers
