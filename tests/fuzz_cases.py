"""Malformed inputs for the fuzz suite (``tests/test_fuzz.py``): every reader (Kineto,
execution trace, nsys SQLite / JSON lines, CLIntercept) and the saved-graph loaders
(``.gpickle``, node-link JSON), each broken in one way.

A :class:`Case` has a name, the input kind it breaks, a file name and a writer that puts
the malformed file at a given path. The cases are deterministic: the same list, byte for
byte, on every run. The contract every case is held to (docs/reliability.md): exit 0 with
a right answer, or exit 2 with one line ``opgraph: error: <file>: ...``; never a
traceback, never exit 1, no code run from a pickle, no partial output file.

Hostile pickles that would run code point at a marker file: the test asserts it does not
exist afterwards (:func:`pickle_gadget_cases`).
"""

from __future__ import annotations

import copy
import functools
import gzip
import io
import json
import os
import pickle
import sqlite3
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

#: Input kinds, as they appear in the table of docs/fuzz-cases.md.
KINDS = ("kineto", "kineto-gz", "et", "nsys-sqlite", "nsys-json", "clintercept", "gpickle", "node-link")

#: Values that stand for "the wrong type" of a canonical field.
WRONG_TYPES: dict[str, Any] = {"list": [1], "str": "x", "dict": {"a": 1}, "null": None, "bool": True}


@dataclass(frozen=True)
class Case:
    """One malformed input: ``write(path)`` creates it. ``cmds`` (optional) names the
    commands it must be run against in addition to the suite's default choice."""

    name: str
    kind: str
    filename: str
    write: Callable[[Path], None] = field(compare=False, repr=False)
    cmds: tuple[str, ...] = ()
    slow: bool = False


def _bytes_case(name: str, kind: str, filename: str, make: Callable[[], bytes], **kw: Any) -> Case:
    return Case(name, kind, filename, lambda p: p.write_bytes(make()), **kw)


# --------------------------------------------------------------------------- bases
def kineto_doc() -> dict[str, Any]:
    """A small valid Kineto trace: two ProfilerSteps of mm ops launching GEMM kernels, a
    device sync, flows, plus a ``[memory]`` event and a memcpy (so every command has
    something to chew on). A fresh copy each call."""
    return copy.deepcopy(_kineto_doc())


@functools.lru_cache(maxsize=1)
def _kineto_doc() -> dict[str, Any]:
    from opgraph.testing.synth import synthesize

    doc = copy.deepcopy(synthesize("gpu_bound", steps=2).trace)
    assert isinstance(doc, dict)
    ev = doc["traceEvents"]
    t0 = ev[0]["ts"]
    ev.append({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 100, "tid": 100, "ts": t0 + 12,
               "s": "t", "args": {"Device Type": 1, "Device Id": 0, "Addr": 4096, "Bytes": 1 << 20,
                                  "Total Allocated": 1 << 20, "Total Reserved": 2 << 20}})
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 100, "tid": 100,
               "ts": t0 + 3000, "dur": 4, "args": {"External id": 1, "correlation": 5001}})
    ev.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
               "ts": t0 + 3010, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 5001,
                                                   "bytes": 4096, "memory bandwidth (GB/s)": 1.0}})
    return doc


def _first(doc: dict, cat: str) -> int:
    return next(i for i, e in enumerate(doc["traceEvents"]) if e.get("cat") == cat)


def kineto_bytes(doc: dict | list | None = None) -> bytes:
    return json.dumps(kineto_doc() if doc is None else doc).encode()


def et_doc() -> dict[str, Any]:
    """A small valid PyTorch execution trace (schema 1.0.1)."""
    def t(tid: int, sid: int, shape: list) -> tuple[list, list, str]:
        return [tid, sid, 0, 4, 4, "cuda:0"], shape, "Tensor(float)"

    def node(i: int, name: str, parent: int, ins: list = (), outs: list = (), scope: int = 0) -> dict:
        return {"id": i, "name": name, "parent": parent, "rf_id": i, "tid": 1, "scope": scope,
                "inputs": [v for v, _, _ in ins], "input_shapes": [s for _, s, _ in ins],
                "input_types": [ty for _, _, ty in ins], "outputs": [v for v, _, _ in outs],
                "output_shapes": [s for _, s, _ in outs], "output_types": [ty for _, _, ty in outs]}
    X, W, Y, Z = t(10, 11, [8, 4]), t(12, 13, [4, 4]), t(20, 21, [8, 4]), t(22, 23, [8, 4])
    return {"schema": "1.0.1", "pid": 7, "nodes": [
        node(1, "[pytorch|profiler|execution_graph|process]", 0, scope=7),
        node(2, "[pytorch|profiler|execution_graph|thread]", 1, scope=7),
        node(3, "## forward ##", 2, scope=7),
        node(4, "aten::mm", 3, [X, W], [Y]),
        node(5, "aten::relu", 3, [Y], [Z]),
        node(6, "aten::add_", 3, [Z, Y], [Z]),
    ]}


def nsys_model():
    from opgraph.testing import synth_nsys
    return synth_nsys.build_model()


def nsys_json_lines() -> list[dict]:
    return copy.deepcopy(_nsys_json_lines())


@functools.lru_cache(maxsize=1)
def _nsys_json_lines() -> list[dict]:
    from opgraph.testing import synth_nsys
    return [json.loads(x) for x in synth_nsys.to_json_lines(nsys_model()).decode().splitlines()]


@functools.lru_cache(maxsize=1)
def nsys_sqlite_bytes() -> bytes:
    """The bytes of the synthetic nsys SQLite export."""
    import tempfile

    from opgraph.testing import synth_nsys
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.sqlite"
        synth_nsys.to_sqlite(nsys_model(), p)
        con = sqlite3.connect(str(p))
        # the same tables without NOT NULL constraints (so that a case can store NULL anywhere)
        for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            con.executescript(f'CREATE TABLE "fz_{t}" AS SELECT * FROM "{t}"; DROP TABLE "{t}"; '
                              f'ALTER TABLE "fz_{t}" RENAME TO "{t}";')
        con.commit()
        con.execute("VACUUM")
        con.close()
        return p.read_bytes()


def _lines_bytes(lines: list[Any]) -> bytes:
    return ("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n").encode()


def write_nsys_sqlite(path: Path, *sql: str, params: tuple = ()) -> None:
    """The synthetic nsys SQLite export at ``path``, then ``sql`` statements run on it."""
    path.write_bytes(nsys_sqlite_bytes())
    if sql:
        con = sqlite3.connect(str(path))
        for s in sql:
            if "?" in s:
                con.execute(s, params)
            else:
                con.executescript(s)
        con.commit()
        con.close()


def clintercept_events() -> list[dict]:
    """A small CLIntercept Chrome trace (host calls, a queue track, flows, a clFinish)."""
    ev: list[dict] = [
        {"ph": "M", "name": "clintercept_start_time", "pid": 4242, "tid": 4321, "args": {"start_time": 1700000000000000}},
        {"ph": "M", "name": "thread_name", "pid": 4242, "tid": -1, "args": {"name": "Queue 1"}},
    ]
    t = 100
    for i, (api, dev) in enumerate([("clEnqueueWriteBuffer", "clEnqueueWriteBuffer"),
                                    ("clEnqueueNDRangeKernel( sgemm_kernel )", "sgemm_kernel"),
                                    ("clEnqueueNDRangeKernel( relu_kernel )", "relu_kernel"),
                                    ("clEnqueueFillBuffer", "clEnqueueFillBuffer")], start=1):
        ev.append({"ph": "X", "pid": 4242, "tid": 4321, "name": api, "ts": t, "dur": 6, "args": {"id": i}})
        ev.append({"ph": "s", "pid": 4242, "tid": 4321, "name": "Command", "cat": "Commands", "ts": t, "id": i})
        ev.append({"ph": "f", "pid": 4242, "tid": -1, "name": "Command", "cat": "Commands", "ts": t + 40, "id": i})
        ev.append({"ph": "X", "pid": 4242, "tid": -1, "name": dev, "ts": t + 40, "dur": 30, "args": {"id": i}})
        t += 100
    ev.append({"ph": "X", "pid": 4242, "tid": 4321, "name": "clFinish", "ts": t, "dur": 50})
    return ev


def clintercept_bytes(events: list[dict] | None = None, close: bool = False) -> bytes:
    """CLIntercept's way of writing: one event per line, trailing comma, no closing ``]``."""
    body = "[\n" + "".join(json.dumps(e) + ",\n" for e in (clintercept_events() if events is None else events))
    return (body.rstrip(",\n") + "\n]\n" if close else body).encode()


def built_graph():
    """The networkx view of the graph of :func:`kineto_doc`, built (a fresh copy each call)."""
    import tempfile

    from opgraph.graph.io import load_any
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "base.json"
        p.write_bytes(kineto_bytes())
        return load_any(p).to_networkx()


def node_link_doc() -> dict[str, Any]:
    """The node-link document of :func:`built_graph` (a fresh copy each call)."""
    return json.loads(_node_link_text())


@functools.lru_cache(maxsize=1)
def _node_link_text() -> str:
    from opgraph.graph.io import json_default, to_node_link
    return json.dumps(to_node_link(built_graph()), default=json_default)


# --------------------------------------------------------------------------- generic
def truncations(kind: str, filename: str, make: Callable[[], bytes], fracs=(0.0, 0.1, 0.5, 0.9, 0.999)) -> list[Case]:
    """``make()`` cut at several points (``0.0`` keeps one byte)."""
    out = []
    for f in fracs:
        def w(p: Path, f: float = f) -> None:
            data = make()
            p.write_bytes(data[:max(1, int(len(data) * f))])
        out.append(Case(f"truncated at {f:.1%}", kind, filename, w))
    return out


def gzip_cases(kind: str, filename: str, make: Callable[[], bytes]) -> list[Case]:
    """Broken gzip around a valid ``make()``: corrupt CRC and length, truncated member,
    trailing junk, a header only, a second member that is not gzip, flipped bits in the
    deflate stream (and the valid variants: zero padding, two members)."""
    def gz() -> bytes:
        return gzip.compress(make(), mtime=0)

    def crc(p: Path) -> None:
        d = bytearray(gz())
        d[-8] ^= 0xFF
        p.write_bytes(bytes(d))

    def isize(p: Path) -> None:
        d = bytearray(gz())
        d[-4:] = struct.pack("<I", 7)
        p.write_bytes(bytes(d))

    def flip(p: Path) -> None:
        d = bytearray(gz())
        d[len(d) // 2] ^= 0x55
        p.write_bytes(bytes(d))

    return [
        Case("gzip: corrupt CRC", kind, filename, crc),
        Case("gzip: wrong ISIZE", kind, filename, isize),
        Case("gzip: flipped byte in the deflate stream", kind, filename, flip),
        _bytes_case("gzip: truncated member", kind, filename, lambda: gz()[: len(gz()) // 2]),
        _bytes_case("gzip: header only", kind, filename, lambda: gz()[:10]),
        _bytes_case("gzip: trailing junk", kind, filename, lambda: gz() + b"junk after the member"),
        _bytes_case("gzip: trailing zero padding (valid)", kind, filename, lambda: gz() + b"\0" * 512),
        _bytes_case("gzip: two members (valid)", kind, filename,
                    lambda: gzip.compress(make()[:7], mtime=0) + gzip.compress(make()[7:], mtime=0)),
        _bytes_case("gzip: second member truncated", kind, filename, lambda: gz() + gz()[:20]),
        _bytes_case("gzip: gzip of gzip", kind, filename, lambda: gzip.compress(gz(), mtime=0)),
    ]


def gzip_bomb(kind: str = "kineto-gz", size: int = 4 << 20) -> Case:
    """A small gzip that expands past a cap the test sets small (``size`` bytes of
    whitespace inside a valid trace)."""
    def make() -> bytes:
        body = kineto_bytes()
        pad = b" " * size
        return gzip.compress(body[:1] + pad + body[1:], compresslevel=9, mtime=0)
    return _bytes_case("gzip bomb past OPGRAPH_MAX_DECOMPRESSED_BYTES", kind, "bomb.json.gz", make)


NOT_JSON: dict[str, bytes] = {
    "binary noise": bytes((i * 131 + 7) % 256 for i in range(2048)),
    "a lone '{'": b"{",
    "a lone '['": b"[",
    "null": b"null",
    "true": b"true",
    "a JSON string": b'"traceEvents"',
    "a list of numbers": b"[1, 2, 3]",
    "a list of lists": b"[[1], [2]]",
    "an object with traceEvents null": b'{"traceEvents": null}',
    "traceEvents a string": b'{"traceEvents": "x"}',
    "UTF-8 BOM before a trace": b"\xef\xbb\xbf",  # + a trace, see not_json_cases
    "UTF-16 trace": b"",                          # filled in not_json_cases
    "NUL bytes": b"\0" * 64,
    "HTML page": b"<!doctype html><html><body>404</body></html>",
    "CSV header only": b"Start (ns),End (ns),Name\n",
    "two JSON documents": b'{"traceEvents": []}{"traceEvents": []}',
    "a pickle header in a .json": b"\x80\x05\x95\x00\x00\x00",
    "SQLite magic, then junk": b"SQLite format 3\0" + bytes(range(256)) * 4,
}


def not_json_cases() -> list[Case]:
    out = []
    for name, data in NOT_JSON.items():
        if name.startswith("UTF-8 BOM"):
            out.append(_bytes_case(name, "kineto", "bom.json", lambda d=data: d + kineto_bytes()))
        elif name.startswith("UTF-16"):
            out.append(_bytes_case(name, "kineto", "utf16.json", lambda: kineto_bytes().decode().encode("utf-16")))
        else:
            out.append(_bytes_case(name, "kineto", "odd.json", lambda d=data: d))
    return out


# --------------------------------------------------------------------------- Kineto
def _kineto_case(name: str, mutate: Callable[[dict], Any], filename: str = "t.json", **kw: Any) -> Case:
    def make() -> bytes:
        doc = kineto_doc()
        got = mutate(doc)
        return got if isinstance(got, bytes) else kineto_bytes(doc)
    return _bytes_case(name, "kineto", filename, make, **kw)


#: (label, cat) of the events whose fields are mutated.
TARGETS = (("kernel", "kernel"), ("cpu_op", "cpu_op"), ("runtime", "cuda_runtime"), ("flow", "ac2g"))
FIELDS = ("ts", "dur", "pid", "tid", "name", "cat", "ph", "args", "id")


def kineto_field_cases() -> list[Case]:
    """Every canonical field of a kernel, an op, a runtime call and a flow event with
    every wrong type, and missing."""
    out: list[Case] = []
    for label, cat in TARGETS:
        for f in FIELDS:
            if f == "id" and label != "flow":
                continue
            if f == "dur" and label == "flow":
                continue
            for tname, val in WRONG_TYPES.items():
                def m(doc: dict, cat=cat, f=f, val=val) -> None:
                    doc["traceEvents"][_first(doc, cat)][f] = copy.deepcopy(val)
                out.append(_kineto_case(f"{label}.{f} is {tname}", m))

            def rm(doc: dict, cat=cat, f=f) -> None:
                doc["traceEvents"][_first(doc, cat)].pop(f, None)
            out.append(_kineto_case(f"{label}.{f} missing", rm))
    for key in ("correlation", "External id", "device", "stream"):
        for tname, val in {"str digits": "7", "float": 1.5, "negative": -1, "2**70": 2**70, "list": [1],
                           "null": None, "bool": True}.items():
            def m(doc: dict, key=key, val=val) -> None:
                doc["traceEvents"][_first(doc, "kernel")]["args"][key] = val
            out.append(_kineto_case(f"kernel.args[{key!r}] is {tname}", m))
    return out


def _literal(doc: dict, cat: str, f: str, text: str) -> bytes:
    """The trace with ``doc``'s first ``cat`` event's field ``f`` written as raw ``text``."""
    marker = "__FUZZ_LITERAL__"
    doc["traceEvents"][_first(doc, cat)][f] = marker
    return kineto_bytes(doc).replace(f'"{marker}"'.encode(), text.encode())


def kineto_number_cases() -> list[Case]:
    """NaN/Infinity literals, negative times, times near and past 2**63 (µs and ns)."""
    out = []
    literals = {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity", "1e400": "1e400",
                "-0.0": "-0.0", "2**63": str(2**63), "2**64": str(2**64), "-2**63-1": str(-2**63 - 1),
                "1e308": "1e308", "huge int (400 digits)": "9" * 400}
    for f in ("ts", "dur"):
        for lname, text in literals.items():
            out.append(_kineto_case(f"kernel.{f} = {lname}", lambda d, f=f, t=text: _literal(d, "kernel", f, t)))
    values = {"-1": -1, "-1e15 µs": -1e15, "2**63 ns as µs (9.22e15)": 2**63 // 1000,
              "2**63 µs": 2**63 - 1, "2**62 ns in µs": 2**62 // 1000, "1e-9": 1e-9,
              "9.2e18 (ns-scale int)": 9_200_000_000_000_000_000}
    for f in ("ts", "dur"):
        for vname, v in values.items():
            def m(doc: dict, f=f, v=v) -> None:
                doc["traceEvents"][_first(doc, "kernel")][f] = v
            out.append(_kineto_case(f"kernel.{f} = {vname}", m))

    def all_negative(doc: dict) -> None:
        for e in doc["traceEvents"]:
            if "ts" in e:
                e["ts"] = -e["ts"]
    out.append(_kineto_case("every ts negated", all_negative))

    def all_zero_dur(doc: dict) -> None:
        for e in doc["traceEvents"]:
            if "dur" in e:
                e["dur"] = 0
    out.append(_kineto_case("every dur 0", all_zero_dur))

    def step_at_end_of_time(doc: dict) -> None:
        e = doc["traceEvents"][0]
        e["ts"], e["dur"] = 9_223_372_036_854, 775   # ends exactly at 2**63 - 193 ns
    out.append(_kineto_case("ProfilerStep ending at the int64 ns limit", step_at_end_of_time))
    return out


def kineto_link_cases() -> list[Case]:
    """Dangling and duplicate correlation / flow ids, flow cycles."""
    out: list[Case] = []

    def dangling_corr(doc: dict) -> None:
        doc["traceEvents"][_first(doc, "kernel")]["args"]["correlation"] = 987654
    out.append(_kineto_case("kernel correlation with no runtime call", dangling_corr))

    def share_corr(cat: str) -> Callable[[dict], None]:
        def mutate(doc: dict) -> None:
            evs = [e for e in doc["traceEvents"] if e.get("cat") == cat]
            for e in evs:
                e["args"]["correlation"] = evs[0]["args"]["correlation"]
        return mutate
    out.append(_kineto_case("every runtime call shares one correlation id", share_corr("cuda_runtime")))
    out.append(_kineto_case("every kernel shares one correlation id", share_corr("kernel")))

    def corr_zero(doc: dict) -> None:
        for e in doc["traceEvents"]:
            if isinstance(e.get("args"), dict) and "correlation" in e["args"]:
                e["args"]["correlation"] = 0
    out.append(_kineto_case("every correlation id 0", corr_zero))

    def flow_no_finish(doc: dict) -> None:
        doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("ph") != "f"]
    out.append(_kineto_case("flow starts without finishes", flow_no_finish))

    def flow_no_start(doc: dict) -> None:
        ev = doc["traceEvents"]
        starts = [e for e in ev if e.get("ph") == "s"]
        doc["traceEvents"] = [e for e in ev if e.get("ph") != "s"]
        for s in starts:
            doc["traceEvents"].append({**s, "ph": "f", "bp": "e", "pid": 0, "tid": 7})
    out.append(_kineto_case("flow finishes without starts", flow_no_start))

    def flow_dup(doc: dict) -> None:
        ev = doc["traceEvents"]
        ev.extend(copy.deepcopy([e for e in ev if e.get("ph") in ("s", "f")]))
    out.append(_kineto_case("every flow event twice (duplicate flow ids)", flow_dup))

    def flow_same_id(doc: dict) -> None:
        for e in doc["traceEvents"]:
            if e.get("ph") in ("s", "f"):
                e["id"] = 1
    out.append(_kineto_case("every flow event has id 1", flow_same_id))

    def flow_cycle(doc: dict) -> None:
        ev = doc["traceEvents"]
        ops = [e for e in ev if e.get("cat") == "cpu_op"][:2]
        a, b = ops
        for fid, (x, y) in ((77001, (a, b)), (77002, (b, a))):
            ev.append({"ph": "s", "id": fid, "pid": x["pid"], "tid": x["tid"], "ts": x["ts"], "cat": "fwdbwd",
                       "name": "fwdbwd"})
            ev.append({"ph": "f", "id": fid, "pid": y["pid"], "tid": y["tid"], "ts": y["ts"], "cat": "fwdbwd",
                       "name": "fwdbwd", "bp": "e"})
    out.append(_kineto_case("fwdbwd flows A->B and B->A (a cycle)", flow_cycle))

    def flow_self(doc: dict) -> None:
        ev = doc["traceEvents"]
        a = next(e for e in ev if e.get("cat") == "cpu_op")
        for ph in ("s", "f"):
            ev.append({"ph": ph, "id": 77003, "pid": a["pid"], "tid": a["tid"], "ts": a["ts"], "cat": "fwdbwd",
                       "name": "fwdbwd", "bp": "e"})
    out.append(_kineto_case("fwdbwd flow from an op to itself", flow_self))

    def flow_backwards_in_time(doc: dict) -> None:
        ev = doc["traceEvents"]
        ops = [e for e in ev if e.get("cat") == "cpu_op"]
        a, b = ops[0], ops[-1]
        ev.append({"ph": "s", "id": 77004, "pid": b["pid"], "tid": b["tid"], "ts": b["ts"], "cat": "fwdbwd",
                   "name": "fwdbwd"})
        ev.append({"ph": "f", "id": 77004, "pid": a["pid"], "tid": a["tid"], "ts": a["ts"], "cat": "fwdbwd",
                   "name": "fwdbwd", "bp": "e"})
    out.append(_kineto_case("fwdbwd flow backwards in time", flow_backwards_in_time))

    def ac2g_to_cpu(doc: dict) -> None:
        for e in doc["traceEvents"]:
            if e.get("ph") == "f" and e.get("cat") == "ac2g":
                e["pid"], e["tid"] = 100, 100
    out.append(_kineto_case("ac2g flows that end on the CPU thread", ac2g_to_cpu))

    def ext_id_cycle(doc: dict) -> None:
        for e in doc["traceEvents"]:
            if isinstance(e.get("args"), dict):
                e["args"]["External id"] = 1
    out.append(_kineto_case("every event shares External id 1", ext_id_cycle))

    def kernel_before_launch(doc: dict) -> None:
        k = doc["traceEvents"][_first(doc, "kernel")]
        k["ts"] -= 10**6
    out.append(_kineto_case("kernel starts 1 s before its launch", kernel_before_launch))

    def overlapping_kernels(doc: dict) -> None:
        ks = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
        for e in ks:
            e["ts"] = ks[0]["ts"]
    out.append(_kineto_case("every kernel at the same ts on one stream", overlapping_kernels))

    def crossing_ops(doc: dict) -> None:
        ops = [e for e in doc["traceEvents"] if e.get("cat") == "cpu_op"]
        ops[0]["dur"] = ops[1]["ts"] - ops[0]["ts"] + ops[1]["dur"] // 2   # ends inside the next op
    out.append(_kineto_case("ops that partly overlap on one thread", crossing_ops))

    def unmatched_be(doc: dict) -> None:
        e = doc["traceEvents"][_first(doc, "cpu_op")]
        e["ph"] = "B"
        doc["traceEvents"].append({**e, "ph": "E", "ts": e["ts"] - 5})
    out.append(_kineto_case("an E before its B", unmatched_be))

    def empty_events(doc: dict) -> None:
        doc["traceEvents"] = []
    out.append(_kineto_case("traceEvents empty", empty_events))

    def only_meta(doc: dict) -> None:
        doc["traceEvents"] = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "x"}}]
    out.append(_kineto_case("only a metadata event", only_meta))

    def device_props_bad(doc: dict) -> None:
        doc["deviceProperties"] = [{"id": "zero", "name": 5, "numSms": "many", "computeMajor": None}, 7]
    out.append(_kineto_case("deviceProperties with wrong types", device_props_bad))

    def dist_info_bad(doc: dict) -> None:
        doc["distributedInfo"] = {"rank": "one", "world_size": -3}
    out.append(_kineto_case("distributedInfo with wrong types", dist_info_bad))
    return out


def nested(depth: int, leaf: Any = 1) -> str:
    """JSON text of ``depth`` nested objects."""
    return '{"a":' * depth + json.dumps(leaf) + "}" * depth


def kineto_shape_cases(huge_name_bytes: int = 50 << 20) -> list[Case]:
    """Deep nesting, non-UTF-8 bytes, huge strings."""
    out: list[Case] = []
    for depth in (100, 300, 5000, 100_000):
        def m(doc: dict, depth=depth) -> bytes:
            return _literal(doc, "kernel", "args", nested(depth))
        out.append(_kineto_case(f"kernel.args nested {depth} levels", m))

    def deep_list(doc: dict) -> bytes:
        return _literal(doc, "cpu_op", "args", '{"Input Dims": ' + "[" * 3000 + "]" * 3000 + "}")
    out.append(_kineto_case("cpu_op 'Input Dims' nested 3000 lists", deep_list))

    def deep_meta(doc: dict) -> bytes:
        doc["traceName"] = "__FUZZ_META__"
        return kineto_bytes(doc).replace(b'"__FUZZ_META__"', nested(400).encode())
    out.append(_kineto_case("top-level metadata nested 400 levels", deep_meta))

    for label, raw in (("0xff byte", b"\xff"), ("lone continuation byte", b"\x80"),
                       ("overlong encoding", b"\xc0\xaf"), ("surrogate as UTF-8", b"\xed\xa0\x80"),
                       ("latin-1 text", "café".encode("latin-1"))):
        def m(doc: dict, raw=raw) -> bytes:
            return _literal(doc, "kernel", "name", '"__BAD__"').replace(b"__BAD__", b"gemm" + raw + b"kernel")
        out.append(_kineto_case(f"kernel name with {label} (not UTF-8)", m))

    def escaped_surrogate(doc: dict) -> bytes:
        return _literal(doc, "kernel", "name", '"gemm\\ud800kernel"')
    out.append(_kineto_case("kernel name with an escaped lone surrogate", escaped_surrogate))

    def control(doc: dict) -> None:
        doc["traceEvents"][_first(doc, "kernel")]["name"] = "gemm\x00\x1b[31m\u202e\r\nkernel"
    out.append(_kineto_case("kernel name with NUL, ESC, bidi, CR/LF", control))

    def empty_names(doc: dict) -> None:
        for e in doc["traceEvents"]:
            if "name" in e:
                e["name"] = ""
    out.append(_kineto_case("every name empty", empty_names))

    def huge_name(doc: dict) -> bytes:
        return _literal(doc, "kernel", "name", '"' + "k" * huge_name_bytes + '"')
    out.append(_kineto_case(f"kernel name of {huge_name_bytes >> 20} MB", huge_name, slow=True))

    def many_args(doc: dict) -> None:
        doc["traceEvents"][_first(doc, "cpu_op")]["args"] = {f"k{i}": i for i in range(100_000)}
    out.append(_kineto_case("cpu_op with 100,000 args", many_args))

    def long_list_arg(doc: dict) -> None:
        doc["traceEvents"][_first(doc, "cpu_op")]["args"]["Input Dims"] = [[1] * 10] * 100_000
    out.append(_kineto_case("cpu_op 'Input Dims' of 100,000 shapes", long_list_arg))

    def input_dims_wrong(doc: dict) -> None:
        for e in doc["traceEvents"]:
            if e.get("cat") == "cpu_op":
                e["args"]["Input Dims"] = [["a", None], 5, {"x": 1}]
                e["args"]["Input type"] = [1, [2], None]
    out.append(_kineto_case("'Input Dims'/'Input type' of wrong types", input_dims_wrong))

    def grid_wrong(doc: dict) -> None:
        for e in doc["traceEvents"]:
            if e.get("cat") == "kernel":
                e["args"].update({"grid": "big", "block": [0, -1], "registers per thread": "x",
                                  "shared memory": [1], "blocks per SM": None, "est. achieved occupancy %": "y"})
    out.append(_kineto_case("kernel launch-shape args of wrong types", grid_wrong))

    def memory_wrong(doc: dict) -> None:
        for e in doc["traceEvents"]:
            if e.get("name") == "[memory]":
                e["args"].update({"Bytes": "many", "Total Allocated": None, "Device Id": [0], "Addr": 2**70})
    out.append(_kineto_case("[memory] args of wrong types", memory_wrong))

    def dup_keys(doc: dict) -> bytes:
        return kineto_bytes(doc).replace(b'"ph": "X"', b'"ph": "X", "ph": "i"', 1)
    out.append(_kineto_case("an event with a duplicate key", dup_keys))
    return out


def kineto_bare_list_cases() -> list[Case]:
    """The bare-list (2021) form: an event list without the ``traceEvents`` wrapper."""
    def bare() -> bytes:
        return kineto_bytes(kineto_doc()["traceEvents"])

    def bare_mixed() -> bytes:
        ev = kineto_doc()["traceEvents"]
        ev.insert(3, [1, 2])
        return kineto_bytes(ev)
    return [_bytes_case("bare event list (valid)", "kineto", "bare.json", bare),
            _bytes_case("bare event list with a list item", "kineto", "bare.json", bare_mixed)]


# --------------------------------------------------------------------------- ET
def _et_case(name: str, mutate: Callable[[dict], Any]) -> Case:
    def make() -> bytes:
        doc = et_doc()
        got = mutate(doc)
        return got if isinstance(got, bytes) else json.dumps(doc).encode()
    return _bytes_case(name, "et", "et.json", make)


def et_cases() -> list[Case]:
    out: list[Case] = []
    for f in ("id", "name", "parent", "tid", "rf_id", "scope", "inputs", "input_shapes", "input_types",
              "outputs", "output_types"):
        for tname, val in {**WRONG_TYPES, "2**70": 2**70, "-2**63": -2**63}.items():
            if f in ("inputs", "outputs", "input_shapes", "input_types", "output_types") and tname in ("2**70", "-2**63"):
                continue
            def m(doc: dict, f=f, val=val) -> None:
                doc["nodes"][3][f] = copy.deepcopy(val)
            out.append(_et_case(f"node.{f} is {tname}", m))

    def rm(doc: dict) -> None:
        del doc["nodes"][3]["id"]
    out.append(_et_case("node.id missing", rm))

    def dup_ids(doc: dict) -> None:
        for n in doc["nodes"]:
            n["id"] = 5
    out.append(_et_case("every node id 5", dup_ids))

    def parent_cycle(doc: dict) -> None:
        doc["nodes"][3]["parent"] = 5
        doc["nodes"][4]["parent"] = 4
    out.append(_et_case("parent cycle (4 -> 5 -> 4)", parent_cycle))

    def parent_self(doc: dict) -> None:
        doc["nodes"][3]["parent"] = 4
    out.append(_et_case("node is its own parent", parent_self))

    def child_before_parent(doc: dict) -> None:
        doc["nodes"][2]["parent"] = 6
    out.append(_et_case("parent id larger than its child's", child_before_parent))

    def ids_extreme(doc: dict) -> None:
        for i, n in enumerate(doc["nodes"]):
            n["id"] = 2**63 - 1 - i
            n["parent"] = 2**63 - i
    out.append(_et_case("ids near 2**63", ids_extreme))

    def ids_negative(doc: dict) -> None:
        for n in doc["nodes"]:
            n["id"] = -n["id"]
    out.append(_et_case("negative ids", ids_negative))

    def tensor_values_bad(doc: dict) -> None:
        doc["nodes"][3]["inputs"] = [[2**70, "s", None], {"x": 1}, "t"]
    out.append(_et_case("tensor values of wrong types", tensor_values_bad))

    def chakra_bad(doc: dict) -> None:
        n = doc["nodes"][3]
        n["inputs"] = {"values": 5, "shapes": "x", "types": {"a": 1}}
        n["attrs"] = [1, None, {"name": "rf_id", "value": "x"}, {"value": 3}]
    out.append(_et_case("chakra inputs/attrs of wrong types", chakra_bad))

    def schema_bad(doc: dict) -> None:
        doc["schema"] = [1]
        doc["pid"] = "x"
    out.append(_et_case("schema and pid of wrong types", schema_bad))

    def nodes_dict(doc: dict) -> None:
        doc["nodes"] = {"0": doc["nodes"][0]}
    out.append(_et_case("'nodes' is an object", nodes_dict))

    def node_int(doc: dict) -> None:
        doc["nodes"].append(5)
    out.append(_et_case("a node that is a number", node_int))

    def deep_chain(doc: dict) -> None:
        base = doc["nodes"][:3]
        chain = [{"id": 10 + i, "name": "aten::add", "parent": 9 + i if i else 3, "tid": 1, "scope": 0,
                  "inputs": [], "input_shapes": [], "input_types": [], "outputs": [], "output_shapes": [],
                  "output_types": [], "rf_id": 10 + i} for i in range(20_000)]
        doc["nodes"] = base + chain
    out.append(_et_case("a 20,000-deep parent chain", deep_chain))

    def nested_inputs(doc: dict) -> bytes:
        doc["nodes"][3]["inputs"] = "__DEEP__"
        return json.dumps(doc).encode().replace(b'"__DEEP__"', ("[" * 500 + "]" * 500).encode())
    out.append(_et_case("inputs nested 500 lists", nested_inputs))

    def tid_huge(doc: dict) -> None:
        for n in doc["nodes"]:
            n["tid"] = 2**64 + n["id"]
    out.append(_et_case("tids past int64", tid_huge))

    def empty(doc: dict) -> None:
        doc["nodes"] = []
    out.append(_et_case("no nodes", empty))
    return out


# --------------------------------------------------------------------------- nsys SQLite
K = "CUPTI_ACTIVITY_KIND_KERNEL"
R = "CUPTI_ACTIVITY_KIND_RUNTIME"
N = "NVTX_EVENTS"
M = "CUPTI_ACTIVITY_KIND_MEMCPY"


def _sqlite_case(name: str, *sql: str, params: tuple = ()) -> Case:
    return Case(name, "nsys-sqlite", "prof.sqlite", lambda p: write_nsys_sqlite(p, *sql, params=params))


def nsys_sqlite_cases() -> list[Case]:
    out: list[Case] = []
    for table, cols in ((K, ("start", "end", "deviceId", "streamId", "correlationId", "demangledName", "shortName",
                             "globalPid", "gridX")),
                        (R, ("start", "end", "globalTid", "correlationId", "nameId", "eventClass")),
                        (M, ("bytes", "copyKind", "srcKind")),
                        (N, ("start", "end", "eventType", "text", "globalTid"))):
        for c in cols:
            for tname, lit in (("text", "'abc'"), ("real", "1.5"), ("blob", "x'00ff'"), ("null", "NULL"),
                               ("2**63-1", str(2**63 - 1)), ("-2**63", str(-2**63))):
                out.append(_sqlite_case(f"{table}.{c} is {tname}",
                                        f'UPDATE "{table}" SET "{c}" = {lit} WHERE rowid = 1'))
            out.append(_sqlite_case(f"{table}.{c} column dropped", f'ALTER TABLE "{table}" DROP COLUMN "{c}"'))
    out.append(_sqlite_case("StringIds value not UTF-8",
                            "UPDATE StringIds SET value = CAST(x'67656d6dff80fe' AS TEXT) WHERE id = 1"))
    out.append(_sqlite_case("StringIds value a blob", "UPDATE StringIds SET value = x'00ff00ff'"))
    out.append(_sqlite_case("StringIds empty", "DELETE FROM StringIds"))
    out.append(_sqlite_case("StringIds id text", "UPDATE StringIds SET id = 'k' || id"))
    out.append(_sqlite_case("NVTX text not UTF-8", f"UPDATE {N} SET text = CAST(x'c0afff' AS TEXT)"))
    out.append(_sqlite_case("kernel nameId pointing nowhere", f"UPDATE {K} SET demangledName = 999999, shortName = -5"))
    out.append(_sqlite_case("kernel end before start", f"UPDATE {K} SET end = start - 1000"))
    out.append(_sqlite_case("kernel duration wraps int64",
                            f"UPDATE {K} SET start = -9223372036854775808, end = 9223372036854775807 WHERE rowid = 1"))
    out.append(_sqlite_case("every kernel on one correlation id", f"UPDATE {K} SET correlationId = 1"))
    out.append(_sqlite_case("runtime correlation ids dangling", f"UPDATE {R} SET correlationId = correlationId + 10000"))
    out.append(_sqlite_case("duplicate runtime rows", f"INSERT INTO {R} SELECT * FROM {R}"))
    out.append(_sqlite_case("NVTX end before start", f"UPDATE {N} SET end = start - 5"))
    out.append(_sqlite_case("NVTX unknown eventType", f"UPDATE {N} SET eventType = 12345"))
    out.append(_sqlite_case("ThreadNames globalTid text", "UPDATE ThreadNames SET globalTid = 'main'"))
    out.append(_sqlite_case("PROCESSES pid text and name blob", "UPDATE PROCESSES SET pid = 'x', name = x'ff'"))
    out.append(_sqlite_case("TARGET_INFO_GPU of wrong types",
                            "UPDATE TARGET_INFO_GPU SET id = 'zero', smCount = 'many', computeMajor = x'08', "
                            "totalMemory = -1"))
    out.append(_sqlite_case("TARGET_INFO_CUDA_GPU of wrong types",
                            "CREATE TABLE TARGET_INFO_CUDA_GPU (deviceId TEXT, name BLOB, numMultiprocessors TEXT, "
                            "computeCapabilityMajor REAL); INSERT INTO TARGET_INFO_CUDA_GPU VALUES "
                            "('x', x'ff', 'many', 8.5)"))
    out.append(_sqlite_case("ENUM table of wrong types",
                            "CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id TEXT, label BLOB); "
                            "INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES ('1', x'ff'), (2, NULL)"))
    out.append(_sqlite_case("export metadata of wrong types",
                            "CREATE TABLE EXPORT_META_DATA (name BLOB, value BLOB); "
                            "INSERT INTO EXPORT_META_DATA VALUES (x'ff', x'00'), (NULL, NULL)"))
    out.append(_sqlite_case("session start table of wrong types",
                            "CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs TEXT, x BLOB); "
                            "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES ('soon', x'ff')"))
    out.append(_sqlite_case("kernel table replaced by a view",
                            f"CREATE TABLE k2 AS SELECT * FROM {K}; DROP TABLE {K}; CREATE VIEW {K} AS SELECT * FROM k2"))
    out.append(_sqlite_case("only an empty kernel table",
                            "; ".join(f'DROP TABLE "{t}"' for t in (R, M, "CUPTI_ACTIVITY_KIND_MEMSET",
                                                                   "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", N,
                                                                   "CUPTI_ACTIVITY_KIND_CUDA_EVENT"))
                            + f"; DELETE FROM {K}"))
    out.append(_sqlite_case("no activity tables",
                            "; ".join(f'DROP TABLE "{t}"' for t in (R, K, M, "CUPTI_ACTIVITY_KIND_MEMSET",
                                                                   "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", N))))
    out.append(_sqlite_case("kernel name a 1 MB string",
                            "UPDATE StringIds SET value = ? WHERE id = 1", params=("k" * (1 << 20),)))
    out.append(_sqlite_case("sync of unknown syncType and eventId",
                            "UPDATE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION SET syncType = 99, eventId = -7"))

    def corrupt_page(p: Path, at: float) -> None:
        write_nsys_sqlite(p)
        d = bytearray(p.read_bytes())
        i = int(len(d) * at)
        d[i:i + 64] = bytes((j * 37) % 256 for j in range(64))
        p.write_bytes(bytes(d))
    for at in (0.02, 0.3, 0.7):
        out.append(Case(f"64 bytes overwritten at {at:.0%} of the file", "nsys-sqlite", "prof.sqlite",
                        lambda p, at=at: corrupt_page(p, at)))

    def header_pages(p: Path) -> None:
        write_nsys_sqlite(p)
        d = bytearray(p.read_bytes())
        d[28:32] = struct.pack(">I", 10**6)   # in-header page count, still "valid"
        p.write_bytes(bytes(d))
    out.append(Case("header claims a million pages", "nsys-sqlite", "prof.sqlite", header_pages))

    def page_size_bad(p: Path) -> None:
        write_nsys_sqlite(p)
        d = bytearray(p.read_bytes())
        d[16:18] = b"\x00\x03"
        p.write_bytes(bytes(d))
    out.append(Case("header page size 3", "nsys-sqlite", "prof.sqlite", page_size_bad))

    sqlite_bytes = nsys_sqlite_bytes
    out += truncations("nsys-sqlite", "prof.sqlite", sqlite_bytes, fracs=(0.001, 0.2, 0.6, 0.99))
    out.append(_bytes_case("gzip-compressed export, truncated member", "nsys-sqlite", "prof.sqlite.gz",
                           lambda: gzip.compress(sqlite_bytes(), mtime=0)[:-200]))
    out.append(_bytes_case("gzip-compressed export (valid)", "nsys-sqlite", "prof.sqlite.gz",
                           lambda: gzip.compress(sqlite_bytes(), mtime=0)))
    return out


# --------------------------------------------------------------------------- nsys JSON
def _nsys_json_case(name: str, mutate: Callable[[list], Any]) -> Case:
    def make() -> bytes:
        lines = nsys_json_lines()
        got = mutate(lines)
        return got if isinstance(got, bytes) else _lines_bytes(lines)
    return _bytes_case(name, "nsys-json", "prof.nsys.json", make)


def _first_rec(lines: list, key: str, sub: str | None = None) -> dict:
    for x in lines:
        if key in x and (sub is None or sub in x[key]):
            return x[key]
    raise LookupError(key)


def nsys_json_cases() -> list[Case]:
    out: list[Case] = []
    for key, sub, fields in (("CudaEvent", "kernel", ("startNs", "endNs", "correlationId", "deviceId", "streamId",
                                                      "globalPid", "kernel")),
                             ("TraceProcessEvent", None, ("startNs", "endNs", "correlationId", "name", "globalTid",
                                                          "eventClass")),
                             ("NvtxEvent", None, ("Timestamp", "EndTimestamp", "Text", "GlobalTid", "Type"))):
        for f in fields:
            for tname, val in {**WRONG_TYPES, "not digits": "12ab", "2**70 string": str(2**70),
                               "-2**63 string": str(-2**63), "float": 1.5}.items():
                def m(lines: list, key=key, sub=sub, f=f, val=val) -> None:
                    _first_rec(lines, key, sub)[f] = copy.deepcopy(val)
                out.append(_nsys_json_case(f"{key}.{f} is {tname}", m))

            def rm(lines: list, key=key, sub=sub, f=f) -> None:
                _first_rec(lines, key, sub).pop(f, None)
            out.append(_nsys_json_case(f"{key}.{f} missing", rm))

    def kernel_names(lines: list) -> None:
        _first_rec(lines, "CudaEvent", "kernel")["kernel"].update({"demangledName": "99999", "shortName": [1],
                                                                  "gridX": "x", "registersPerThread": None})
    out.append(_nsys_json_case("kernel names/launch shape of wrong types", kernel_names))

    def memcpy_bad(lines: list) -> None:
        _first_rec(lines, "CudaEvent", "memcpy")["memcpy"].update({"sizebytes": "lots", "copyKind": [1]})
    out.append(_nsys_json_case("memcpy fields of wrong types", memcpy_bad))

    def string_bad(lines: list) -> None:
        for x in lines:
            if x.get("type") == "String":
                x["id"], x["value"] = [1], 5
                break
    out.append(_nsys_json_case("a String record of wrong types", string_bad))

    def strings_gone(lines: list) -> None:
        lines[:] = [x for x in lines if x.get("type") != "String"]
    out.append(_nsys_json_case("no String records", strings_gone))

    def thread_bad(lines: list) -> None:
        for x in lines:
            if x.get("type") == "ThreadName":
                x["globalTid"], x["nameId"] = None, {"a": 1}
    out.append(_nsys_json_case("ThreadName records of wrong types", thread_bad))

    def bad_line(lines: list) -> bytes:
        text = [json.dumps(x) for x in lines]
        text.insert(len(text) // 2, '{"CudaEvent": {"startNs": "1", ')
        return ("\n".join(text) + "\n").encode()
    out.append(_nsys_json_case("a line of broken JSON in the middle", bad_line))

    def blank_and_junk(lines: list) -> bytes:
        text = [json.dumps(x) for x in lines]
        text.insert(3, "")
        text.insert(5, "42")
        text.insert(7, "[1, 2]")
        return ("\n".join(text) + "\n").encode()
    out.append(_nsys_json_case("blank, number and list lines", blank_and_junk))

    def non_utf8(lines: list) -> bytes:
        return _lines_bytes(lines).replace(b'"value": "main"', b'"value": "ma\xffin"', 1)
    out.append(_nsys_json_case("a string value that is not UTF-8", non_utf8))

    def end_before_start(lines: list) -> None:
        r = _first_rec(lines, "CudaEvent", "kernel")
        r["endNs"] = str(int(r["startNs"]) - 1000)
    out.append(_nsys_json_case("kernel ends before it starts", end_before_start))

    def wrap(lines: list) -> None:
        r = _first_rec(lines, "CudaEvent", "kernel")
        r["startNs"], r["endNs"] = str(-2**63), str(2**63 - 1)
    out.append(_nsys_json_case("kernel duration wraps int64", wrap))

    def same_corr(lines: list) -> None:
        for x in lines:
            for k in ("CudaEvent", "TraceProcessEvent"):
                if k in x:
                    x[k]["correlationId"] = 5
    out.append(_nsys_json_case("every record on correlation id 5", same_corr))

    def deep(lines: list) -> bytes:
        r = _first_rec(lines, "CudaEvent", "kernel")
        r["kernel"]["extra"] = "__DEEP__"
        return _lines_bytes(lines).replace(b'"__DEEP__"', nested(600).encode())
    out.append(_nsys_json_case("kernel record nested 600 levels", deep))

    def data_form(lines: list) -> bytes:
        strings = [x["value"] for x in lines if x.get("type") == "String"]
        rest = [x for x in lines if x.get("type") != "String"]
        return _lines_bytes(rest + [{"data": strings[:2] + [None, 5, ["x"]]}])
    out.append(_nsys_json_case("a 'data' string array with wrong types", data_form))

    def only_comm(lines: list) -> None:
        lines[:] = lines[:1]
    out.append(_nsys_json_case("only the CommEvent line", only_comm))
    out += truncations("nsys-json", "prof.nsys.json", lambda: _lines_bytes(nsys_json_lines()),
                       fracs=(0.05, 0.5, 0.95))
    return out


# --------------------------------------------------------------------------- CLIntercept
def _cl_case(name: str, mutate: Callable[[list], Any], close: bool = False) -> Case:
    def make() -> bytes:
        ev = clintercept_events()
        got = mutate(ev)
        return got if isinstance(got, bytes) else clintercept_bytes(ev, close)
    return _bytes_case(name, "clintercept", "clintercept_trace.json", make)


def clintercept_cases() -> list[Case]:
    out: list[Case] = []
    dev = 5   # the first device command (tid -1)
    host = 2  # the first host call
    for label, i in (("device", dev), ("host", host)):
        for f in ("tid", "name", "ts", "dur", "args", "pid"):
            for tname, val in {**WRONG_TYPES, "float": 1.25, "negative": -7, "2**70": 2**70}.items():
                def m(ev: list, i=i, f=f, val=val) -> None:
                    ev[i][f] = copy.deepcopy(val)
                out.append(_cl_case(f"{label}.{f} is {tname}", m))
    for tname, val in {"str": "7", "negative": -3, "2**70": 2**70, "float": 2.5, "list": [1]}.items():
        def m(ev: list, val=val) -> None:
            ev[dev]["args"]["id"] = val
            ev[host]["args"]["id"] = val
        out.append(_cl_case(f"args.id is {tname}", m))

    def stages(ev: list) -> None:
        for e in list(ev):
            if e.get("ph") == "X" and e["tid"] == -1:
                e["tid"] = 0.1
                for st in ("Queued", "Submitted"):
                    ev.append({**e, "name": f"{e['name']} ({st})", "dur": 1})
                e["name"] = f"{e['name']} (Execution)"
    out.append(_cl_case("in-stages tracks (float tids)", stages))

    def stage_weird(ev: list) -> None:
        ev[dev]["name"] = " (Queued)"
        ev[dev]["tid"] = float("1e300")
    out.append(_cl_case("stage with empty name and a huge float tid", stage_weird))

    def finish_only(ev: list) -> None:
        ev[:] = [e for e in ev if e.get("tid") != -1] + [{"ph": "X", "pid": 1, "tid": 1, "name": "clFinish",
                                                          "ts": 1, "dur": 1}]
    out.append(_cl_case("clFinish with no queue", finish_only))

    def finish_weird(ev: list) -> None:
        ev.append({"ph": "X", "pid": 4242, "tid": 4321, "name": "clWaitForEvents", "ts": 900, "dur": 1,
                   "args": {"id": 2**63 - 1}})
    out.append(_cl_case("clWaitForEvents with id 2**63-1", finish_weird))

    def start_time_bad(ev: list) -> None:
        ev[0]["args"] = {"start_time": [1]}
    out.append(_cl_case("clintercept_start_time of a wrong type", start_time_bad))

    def no_commas(ev: list) -> bytes:
        return clintercept_bytes(ev).replace(b"},\n", b"}\n")
    out.append(_cl_case("no commas between events", no_commas))

    out.append(_cl_case("closed array (valid)", lambda ev: None, close=True))

    def two_brackets(ev: list) -> bytes:
        return b"[" + clintercept_bytes(ev)
    out.append(_cl_case("opened twice", two_brackets))
    out += truncations("clintercept", "clintercept_trace.json", clintercept_bytes, fracs=(0.1, 0.5, 0.97))
    return out


# --------------------------------------------------------------------------- pickles
def _proto0_call(module: str, name: str, *args: str) -> bytes:
    """A protocol-0 pickle calling ``module.name(*args)`` with GLOBAL + REDUCE."""
    body = b"c" + module.encode() + b"\n" + name.encode() + b"\n("
    for a in args:
        body += b"V" + a.encode("raw_unicode_escape") + b"\n"
    return body + b"tR."


class _Reduce:
    """Pickles as ``func(*args)`` (protocol 4: STACK_GLOBAL + REDUCE)."""

    def __init__(self, func: Any, args: tuple):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


class Gadget:
    """A class whose ``__setstate__`` would create the marker file (it must never run)."""

    def __init__(self, marker: str):
        self.marker = marker

    def __setstate__(self, state: dict) -> None:
        Path(state["marker"]).write_text("ran")


def pickle_gadget_cases(marker: Path) -> list[Case]:
    """Pickles that would create ``marker`` if loaded with a plain ``pickle.load``."""
    import builtins
    import subprocess

    m = str(marker)
    sh = f"touch {m}"
    py = f"open({m!r}, 'w').write('ran')"
    cases: dict[str, Callable[[], bytes]] = {
        "os.system via GLOBAL (protocol 0)": lambda: _proto0_call("os", "system", sh),
        "posix.system via GLOBAL (protocol 0)": lambda: _proto0_call("posix", "system", sh),
        "os.system via STACK_GLOBAL (protocol 4)": lambda: pickle.dumps(_Reduce(os.system, (sh,)), protocol=4),
        "builtins.eval": lambda: pickle.dumps(_Reduce(builtins.eval, (py,)), protocol=4),
        "builtins.exec": lambda: pickle.dumps(_Reduce(builtins.exec, (py,)), protocol=2),
        "subprocess.call": lambda: pickle.dumps(_Reduce(subprocess.call, (["touch", m],)), protocol=4),
        "subprocess.Popen": lambda: pickle.dumps(_Reduce(subprocess.Popen, (["touch", m],)), protocol=5),
        "builtins.__import__('os')": lambda: _proto0_call("builtins", "__import__", "os"),
        "builtins.getattr chain": lambda: (b"cbuiltins\ngetattr\n(cbuiltins\n__import__\n(Vos\ntRVsystem\ntR(V"
                                           + sh.encode() + b"\ntR."),
        "builtins.open for writing": lambda: pickle.dumps(_Reduce(builtins.open, (m, "w")), protocol=4),
        "io.open for writing": lambda: _proto0_call("io", "open", m, "w"),
        "__setstate__ gadget (BUILD)": lambda: pickle.dumps(Gadget(m), protocol=4),
        "__setstate__ gadget (protocol 0 INST)": lambda: (b"(itests.fuzz_cases\nGadget\n(dVmarker\nV" + m.encode()
                                                          + b"\nsb."),
        "OBJ opcode of a non-allow-listed class": lambda: (b"\x80\x02(ctests.fuzz_cases\nGadget\no}Vmarker\nV"
                                                            + m.encode() + b"\nsb."),
        "copyreg extension code (EXT1)": lambda: b"\x80\x02\x82\x01.",
        "persistent id (BINPERSID)": lambda: b"\x80\x02X\x01\x00\x00\x00aQ.",
        "networkx.Graph (not allow-listed)": lambda: pickle.dumps(__import__("networkx").Graph(), protocol=4),
        "collections.OrderedDict (not allow-listed)": lambda: pickle.dumps(__import__("collections").OrderedDict(),
                                                                           protocol=4),
        "numpy.load (allow-listed module, other name)": lambda: _proto0_call("numpy", "load", m),
        "pandas.read_pickle": lambda: _proto0_call("pandas", "read_pickle", m),
        "DiGraph BUILD with a __dict__ of wrong types": lambda: (
            b"\x80\x02cnetworkx.classes.digraph\nDiGraph\n)\x81}(X\x05\x00\x00\x00graphK\x05X\x05\x00\x00\x00_nodeK"
            b"\x06ub."),
        "DiGraph whose _node is a list": lambda: (
            b"\x80\x02cnetworkx.classes.digraph\nDiGraph\n)\x81}(X\x05\x00\x00\x00graph}X\x05\x00\x00\x00_node"
            b"]X\x05\x00\x00\x00_succ}X\x05\x00\x00\x00_pred}X\x04\x00\x00\x00_adj}ub."),
        "_rebuild_digraph of a payload of wrong types": lambda: (
            b"\x80\x02copgraph.graph.io\n_rebuild_digraph\n}(X\x05\x00\x00\x00magicX\x12\x00\x00\x00"
            b"opgraph-columns-v1X\x05\x00\x00\x00graphK\x01u\x85R."),
    }
    return [_bytes_case(name, "gpickle", "g.gpickle", make) for name, make in cases.items()]


def _memo_bomb(depth: int) -> bytes:
    """A pickle of lists that reference the previous list twice, ``depth`` times: a few
    bytes per level, 2**depth items once walked."""
    out = bytearray(b"\x80\x02]q\x00")             # EMPTY_LIST, BINPUT 0
    for i in range(1, depth + 1):
        out += b"h" + bytes([(i - 1) % 256]) if i - 1 < 256 else b"j" + struct.pack("<I", i - 1)
        out += b"h" + bytes([(i - 1) % 256]) if i - 1 < 256 else b"j" + struct.pack("<I", i - 1)
        out += b"\x86"                                # TUPLE2
        out += b"q" + bytes([i % 256]) if i < 256 else b"r" + struct.pack("<I", i)
    return bytes(out) + b"."


def pickle_shape_cases() -> list[Case]:
    """Allow-listed pickles that are bombs, huge arrays, or graphs of the wrong shape."""
    import numpy as np

    from opgraph.graph.io import save_gpickle

    out: list[Case] = []

    def graph_pickle(mutate: Callable[[Any], None]) -> Callable[[Path], None]:
        def w(p: Path) -> None:
            G = built_graph()
            mutate(G)
            save_gpickle(G, p)
        return w

    out.append(_bytes_case("memo bomb: 64 levels of (x, x) tuples", "gpickle", "g.gpickle", lambda: _memo_bomb(64)))
    out.append(_bytes_case("memo bomb: 1000 levels (deep)", "gpickle", "g.gpickle", lambda: _memo_bomb(1000)))
    out.append(_bytes_case("memo get of an index never put", "gpickle", "g.gpickle", lambda: b"\x80\x02h\x07."))
    out.append(_bytes_case("200,000 nested EMPTY_LIST + APPEND", "gpickle", "g.gpickle",
                           lambda: b"\x80\x02" + b"]" * 200_000 + b"a" * 199_999 + b"."))
    out.append(_bytes_case("numpy.ndarray of 2**40 bytes", "gpickle", "g.gpickle",
                           lambda: pickle.dumps(_Reduce(np.ndarray, ((2**40,), np.dtype("u1"))), protocol=4)))
    out.append(_bytes_case("numpy.ndarray with a negative shape", "gpickle", "g.gpickle",
                           lambda: pickle.dumps(_Reduce(np.ndarray, ((-5,), np.dtype("u1"))), protocol=4)))
    out.append(_bytes_case("numpy.ndarray with a string shape", "gpickle", "g.gpickle",
                           lambda: pickle.dumps(_Reduce(np.ndarray, ("big", np.dtype("u1"))), protocol=4)))
    out.append(_bytes_case("numpy.dtype of a 2**40-byte void", "gpickle", "g.gpickle",
                           lambda: _proto0_call("numpy", "dtype", "V1099511627776")))
    out.append(_bytes_case("numpy.ndarray of a 1e12-element object array", "gpickle", "g.gpickle",
                           lambda: pickle.dumps(_Reduce(np.ndarray, ((10**12,), np.dtype("O"))), protocol=4)))
    out.append(_bytes_case("a pickled list (not a graph)", "gpickle", "g.gpickle", lambda: pickle.dumps([1, 2])))
    out.append(_bytes_case("protocol header then junk", "gpickle", "g.gpickle",
                           lambda: b"\x80\x05" + bytes(range(256))))
    out.append(_bytes_case("unknown protocol 99", "gpickle", "g.gpickle", lambda: b"\x80\x63N."))
    out.append(_bytes_case("STOP with an empty stack", "gpickle", "g.gpickle", lambda: b"\x80\x02."))
    out.append(_bytes_case("a JSON trace named .gpickle", "gpickle", "g.gpickle", lambda: kineto_bytes()))

    def events_cols(drop: str) -> Callable[[Any], None]:
        def m(G: Any) -> None:
            G.graph["events"] = G.graph["events"].drop(columns=[drop])
        return m
    for col in ("ts_ns", "args", "kind", "name", "correlation", "device"):
        out.append(Case(f"saved graph: event table without '{col}'", "gpickle", "g.gpickle",
                        graph_pickle(events_cols(col))))

    def events_empty(G: Any) -> None:
        G.graph["events"] = G.graph["events"].iloc[0:0]
    out.append(Case("saved graph: empty event table, nodes kept", "gpickle", "g.gpickle", graph_pickle(events_empty)))

    def node_attr(attr: str, val: Any) -> Callable[[Any], None]:
        def m(G: Any) -> None:
            for n, d in G._node.items():
                if d["kind"] == "kernel":
                    d[attr] = copy.deepcopy(val)
                    break
        return m
    for attr, vals in (("name", (5, None, [1])), ("device", ("x", None, 2**70)), ("stream", ("x", 1.5)),
                       ("pid", ([1], {"a": 1})), ("correlation", ("x", None)), ("args", ([1], "x", None)),
                       ("kind", ("unknown",)), ("ts", (1.5, 2**63)), ("dur", (-5, "x"))):
        for v in vals:
            out.append(Case(f"saved graph: kernel node {attr} = {v!r}", "gpickle", "g.gpickle",
                            graph_pickle(node_attr(attr, v))))

    def edge_to_missing(G: Any) -> None:
        u = next(iter(G._node))
        G.add_edge(u, 10**9, kind="launch")
    out.append(Case("saved graph: edge to a node with no attributes", "gpickle", "g.gpickle",
                    graph_pickle(edge_to_missing)))

    def edge_kind_bad(G: Any) -> None:
        u, v = next(iter(G.edges()))
        G.edges[u, v]["kind"] = ["launch"]
    out.append(Case("saved graph: an edge kind that is a list", "gpickle", "g.gpickle", graph_pickle(edge_kind_bad)))

    def self_loop(G: Any) -> None:
        u = next(iter(G._node))
        G.add_edge(u, u, kind="seq")
    out.append(Case("saved graph: a self-loop", "gpickle", "g.gpickle", graph_pickle(self_loop)))

    def meta_bad(G: Any) -> None:
        G.graph["source"] = {"format": 5, "file": None}
        G.graph["trace_metadata"] = "x"
        G.graph["device_properties"] = {"a": 1}
    out.append(Case("saved graph: graph metadata of wrong types", "gpickle", "g.gpickle", graph_pickle(meta_bad)))

    def schema_ver(G: Any) -> None:
        G.graph["schema_version"] = 10**6
    out.append(Case("saved graph: schema_version from the future", "gpickle", "g.gpickle", graph_pickle(schema_ver)))

    def nodes_gone(G: Any) -> None:
        G.remove_nodes_from(list(G.nodes))
    out.append(Case("saved graph: no nodes, events kept", "gpickle", "g.gpickle", graph_pickle(nodes_gone)))

    def gpk() -> bytes:
        b = io.BytesIO()
        from opgraph.graph.io import GraphPickler
        GraphPickler(b, protocol=5).dump(built_graph())
        return b.getvalue()
    out += truncations("gpickle", "g.gpickle", gpk, fracs=(0.01, 0.3, 0.7, 0.999))

    def flipped(p: Path) -> None:
        d = bytearray(gpk())
        for i in range(100, len(d), max(1, len(d) // 7)):
            d[i] ^= 0xA5
        p.write_bytes(bytes(d))
    out.append(Case("saved graph with 7 flipped bytes", "gpickle", "g.gpickle", flipped))
    return out


# --------------------------------------------------------------------------- node-link
def _nl_case(name: str, mutate: Callable[[dict], Any], filename: str = "g.json") -> Case:
    def make() -> bytes:
        doc = node_link_doc()
        got = mutate(doc)
        data = got if isinstance(got, bytes) else json.dumps(doc).encode()
        return gzip.compress(data, mtime=0) if filename.endswith(".gz") else data
    return _bytes_case(name, "node-link", filename, make)


def node_link_cases() -> list[Case]:
    out: list[Case] = []

    def kernel_node(doc: dict) -> dict:
        return next(n for n in doc["nodes"] if n.get("kind") == "kernel")

    for attr in ("name", "ts", "dur", "kind", "pid", "tid", "device", "stream", "correlation", "external_id", "args",
                 "id"):
        for tname, val in {**WRONG_TYPES, "float": 1.5, "2**70": 2**70}.items():
            def m(doc: dict, attr=attr, val=val) -> None:
                kernel_node(doc)[attr] = copy.deepcopy(val)
            out.append(_nl_case(f"kernel node {attr} is {tname}", m))

    def cycle(doc: dict) -> None:
        e = next(e for e in doc["edges"] if e["kind"] == "launch")
        doc["edges"].append({"source": e["target"], "target": e["source"], "kind": "launch"})
    out.append(_nl_case("a launch edge back (a cycle)", cycle))

    def self_loop(doc: dict) -> None:
        n = doc["nodes"][0]["id"]
        doc["edges"].append({"source": n, "target": n, "kind": "seq"})
    out.append(_nl_case("a self-loop", self_loop))

    def dangling(doc: dict) -> None:
        doc["edges"].append({"source": doc["nodes"][0]["id"], "target": 10**9, "kind": "seq"})
    out.append(_nl_case("an edge to a node that is not listed", dangling))

    def edge_kind(doc: dict) -> None:
        doc["edges"][0]["kind"] = "teleport"
    out.append(_nl_case("an edge of an unknown kind", edge_kind))

    def edge_no_kind(doc: dict) -> None:
        doc["edges"][0].pop("kind")
    out.append(_nl_case("an edge without a kind", edge_no_kind))

    def edge_src_type(doc: dict) -> None:
        doc["edges"][0]["source"] = [1]
    out.append(_nl_case("an edge whose source is a list", edge_src_type))

    def dup_nodes(doc: dict) -> None:
        doc["nodes"].append(copy.deepcopy(doc["nodes"][0]))
    out.append(_nl_case("a node listed twice", dup_nodes))

    def graph_wrong(doc: dict) -> None:
        doc["graph"]["source"] = ["x"]
    out.append(_nl_case("graph.source is a list", graph_wrong))

    def schema_str(doc: dict) -> None:
        doc["graph"]["schema_version"] = "1"
    out.append(_nl_case("graph.schema_version is a string", schema_str))

    def span_bad(doc: dict) -> None:
        doc["graph"]["span_ns"] = 5
    out.append(_nl_case("graph.span_ns is a number", span_bad))

    def job_bad(doc: dict) -> None:
        doc["graph"]["job"] = {"ranks": [{"rank": "zero"}], "collectives": {"columns": {"x": 5}}}
    out.append(_nl_case("graph.job of wrong shape", job_bad))

    def events_len(doc: dict) -> None:
        doc["events"]["ts_ns"] = doc["events"]["ts_ns"][:-3]
    out.append(_nl_case("events columns of different lengths", events_len))

    def events_str(doc: dict) -> None:
        doc["events"]["ts_ns"] = [str(x) + "x" for x in doc["events"]["ts_ns"]]
    out.append(_nl_case("events ts_ns strings", events_str))

    def events_huge(doc: dict) -> None:
        doc["events"]["correlation"] = [2**70] * len(doc["events"]["correlation"])
    out.append(_nl_case("events correlation past int64", events_huge))

    def events_col_missing(doc: dict) -> None:
        del doc["events"]["args"]
    out.append(_nl_case("events without 'args'", events_col_missing))

    def events_kind_bad(doc: dict) -> None:
        doc["events"]["kind"] = ["alien"] * len(doc["events"]["kind"])
    out.append(_nl_case("events kind unknown", events_kind_bad))

    def events_list(doc: dict) -> None:
        doc["events"] = [1, 2]
    out.append(_nl_case("events is a list", events_list))

    def directed_false(doc: dict) -> None:
        doc["directed"], doc["multigraph"] = False, True
    out.append(_nl_case("directed false, multigraph true", directed_false))

    def nodes_dict(doc: dict) -> None:
        doc["nodes"] = {"a": 1}
    out.append(_nl_case("nodes is an object", nodes_dict))

    def huge_nodes(doc: dict) -> bytes:
        extra = ",".join(['{"id":%d}' % (10**6 + i) for i in range(200_000)])
        return json.dumps(doc).encode().replace(b'"nodes": [', b'"nodes": [' + extra.encode() + b",", 1)
    out.append(_nl_case("200,000 extra nodes without attributes", huge_nodes))

    def huge_edges(doc: dict) -> None:
        a, b = doc["nodes"][0]["id"], doc["nodes"][1]["id"]
        doc["edges"].extend({"source": a, "target": b, "kind": "seq"} for _ in range(200_000))
    out.append(_nl_case("200,000 copies of one edge", huge_edges))

    def huge_array(doc: dict) -> None:
        kernel_node(doc)["args"] = {"x": list(range(1_000_000))}
    out.append(_nl_case("node args with a 1,000,000-item list", huge_array))

    def deep_args(doc: dict) -> bytes:
        kernel_node(doc)["args"] = "__DEEP__"
        return json.dumps(doc).encode().replace(b'"__DEEP__"', nested(300).encode())
    out.append(_nl_case("node args nested 300 levels", deep_args))

    def deep_graph(doc: dict) -> bytes:
        doc["graph"]["trace_metadata"] = "__DEEP__"
        return json.dumps(doc).encode().replace(b'"__DEEP__"', nested(200).encode())
    out.append(_nl_case("graph metadata nested 200 levels", deep_graph))

    def nan_ts(doc: dict) -> bytes:
        kernel_node(doc)["ts"] = "__NAN__"
        return json.dumps(doc).encode().replace(b'"__NAN__"', b"NaN")
    out.append(_nl_case("kernel ts NaN literal", nan_ts))
    out.append(_nl_case("valid, gzip (valid)", lambda d: None, filename="g.json.gz"))
    out += truncations("node-link", "g.json", lambda: json.dumps(node_link_doc()).encode(), fracs=(0.2, 0.8))
    out += gzip_cases("node-link", "g.json.gz", lambda: json.dumps(node_link_doc()).encode())[:4]
    return out


# --------------------------------------------------------------------------- all
def all_cases(marker: Path, huge_name_bytes: int = 50 << 20) -> Iterator[Case]:
    """Every case of the suite, in a fixed order. Names are unique per kind."""
    yield from not_json_cases()
    yield from truncations("kineto", "t.json", kineto_bytes)
    yield from gzip_cases("kineto-gz", "t.json.gz", kineto_bytes)
    yield from kineto_field_cases()
    yield from kineto_number_cases()
    yield from kineto_link_cases()
    yield from kineto_shape_cases(huge_name_bytes)
    yield from kineto_bare_list_cases()
    yield from et_cases()
    yield from truncations("et", "et.json", lambda: json.dumps(et_doc()).encode(), fracs=(0.3, 0.9))
    yield from nsys_sqlite_cases()
    yield from nsys_json_cases()
    yield from clintercept_cases()
    yield from pickle_gadget_cases(marker)
    yield from pickle_shape_cases()
    yield from node_link_cases()
