#!/usr/bin/env python3
"""Scale a Kineto (PyTorch profiler) Chrome-trace JSON by repeating its window N times.

    python benchmarks/scale_trace.py IN OUT --copies N [--gap 1000] [--verify]

IN may be ``.json`` or ``.json.gz``; OUT is gzip-compressed if it ends in ``.gz``,
plain JSON otherwise. Output is compact JSON written one copy at a time, so memory
stays at roughly the size of the *input* trace, whatever N is.

Each copy k (0 <= k < N) of the window gets:

* every ``ts`` shifted by ``k * shift`` where
  ``shift = ceil(window length in µs) + gap`` (gap 1000 µs by default).
  The shift is done on the *decimal text* of the timestamp: ``1712195495519689.047``
  (which float64 cannot hold) becomes exactly ``1712195495519689.047 + shift``.
  ``ts`` and ``dur`` keep the text they had in the input; every other number keeps
  its exact float64/int value.
* link ids offset by ``k * (max + 1)``; fields that refer to each other share one
  offset so every link stays valid:
    - ``External id``, ``external id``, ``correlation`` and flow ``id`` (ac2g flow ids
      are correlation ids, and GPU ``External id`` values are CPU ``External id`` s),
    - ``Python id`` and ``Python parent id``,
    - ``Ev Idx``, ``Sequence number``, ``Record function id`` (one offset each).
* ``ProfilerStep#N`` renamed ``ProfilerStep#(N + k * (maxN - minN + 1))``, so steps
  stay unique and consecutive.

Kept once (in copy 0, at their original positions): the top-level keys, metadata
events (``ph`` 'M'), and the profiler-session events: the ``Trace`` span
(``cat`` 'Trace'), stretched so it covers all copies, and the global instants
``Iteration Start: PyTorch Profiler`` (unchanged) and ``Record Window End`` (moved
to the end of the last copy).
"""

from __future__ import annotations

import argparse
import gc
import gzip
import math
import os
import re
import sys
import time
from decimal import Decimal, localcontext
from typing import Any

import orjson

# Fields whose values are ids that other events point at, by offset group.
ARG_GROUPS = {
    "External id": "link",
    "external id": "link",
    "correlation": "link",
    "Python id": "python",
    "Python parent id": "python",
    "Ev Idx": "ev_idx",
    "Sequence number": "sequence",
    "Record function id": "record_function",
}
FLOW_ID_GROUP = "link"  # the top-level "id" of flow / async events
FLOW_PHASES = frozenset("stfbenSTFp")
SESSION_INSTANTS = frozenset({"Iteration Start: PyTorch Profiler", "Record Window End"})
STEP_RE = re.compile(r"ProfilerStep#(\d+)")
PLAIN_NUM_RE = re.compile(r"(\d+)(\.\d+)?")

_NUM = rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
# "ts"/"dur" followed by ':' can only be an object key in valid JSON, so this never
# touches the inside of a string.
_TS_DUR_RE = re.compile(rb'("(?:ts|dur)"\s*:\s*)(' + _NUM + rb")")


# ----------------------------------------------------------------------------- I/O
def read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw


def choose_marker(raw: bytes) -> str:
    marker, i = "~ognum~", 0
    while marker.encode() in raw:
        i += 1
        marker = f"~ognum{i}~"
    return marker


def load_marked(raw: bytes, marker: str) -> Any:
    """Parse JSON with every "ts"/"dur" number turned into the string marker+text,
    so their exact decimal text survives (orjson would round them to float64)."""
    repl = rb'\1"' + marker.encode() + rb'\2"'
    return orjson.loads(_TS_DUR_RE.sub(repl, raw))


def unmark_tree(obj: Any, marker: str) -> Any:
    """Replace marked strings with orjson.Fragment(original number text), in place."""
    ml = len(marker)
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, str):
                if v.startswith(marker):
                    obj[k] = orjson.Fragment(v[ml:])
            elif isinstance(v, (dict, list)):
                unmark_tree(v, marker)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            if isinstance(v, str):
                if v.startswith(marker):
                    obj[i] = orjson.Fragment(v[ml:])
            elif isinstance(v, (dict, list)):
                unmark_tree(v, marker)
    return obj


def num_text(v: Any, marker: str) -> str | None:
    """Exact text of a ts/dur value as loaded by load_marked."""
    if isinstance(v, str) and v.startswith(marker):
        return v[len(marker):]
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return repr(v)
    return None


def split_doc(doc: Any) -> tuple[dict | None, list]:
    if isinstance(doc, list):
        return None, doc
    if isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        return doc, doc["traceEvents"]
    raise SystemExit("input is neither a list of events nor an object with traceEvents")


# -------------------------------------------------------------------------- ids
def id_kind(v: Any) -> str | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return "int"
    if isinstance(v, str):
        s = v.strip()
        if s.isdigit():
            return "dec"
        if s[:2].lower() == "0x":
            try:
                int(s, 16)
                return "hex"
            except ValueError:
                return None
    return None


def id_value(v: Any, kind: str) -> int:
    return v if kind == "int" else int(v, 16 if kind == "hex" else 10)


def id_render(n: int, kind: str) -> Any:
    if kind == "int":
        return n
    if kind == "hex":
        return hex(n)
    return str(n)


# -------------------------------------------------------------------------- plan
class Plan:
    """Everything needed to emit copy k of the window, computed once from the input."""

    def __init__(self, doc: Any, marker: str, copies: int, gap: int):
        self.top, self.events = split_doc(doc)
        self.copies = copies
        self.marker = marker
        ev = self.events

        self.repeated: list[dict] = []
        ts_text: dict[int, str] = {}  # id(event) -> exact ts text
        dur_text: dict[int, str] = {}
        start: Decimal | None = None
        end: Decimal | None = None
        session: list[dict] = []
        with localcontext() as ctx:
            ctx.prec = 80
            for e in ev:
                if not isinstance(e, dict):
                    continue
                t = num_text(e.get("ts"), marker)
                d = num_text(e.get("dur"), marker)
                if t is not None:
                    ts_text[id(e)] = t
                if d is not None:
                    dur_text[id(e)] = d
                ph = e.get("ph")
                if ph == "M":
                    continue
                if t is not None:
                    t0 = Decimal(t)
                    t1 = t0 + Decimal(d) if d is not None else t0
                    start = t0 if start is None or t0 < start else start
                    end = t1 if end is None or t1 > end else end
                if e.get("cat") == "Trace" or (
                    ph in ("i", "I") and e.get("name") in SESSION_INSTANTS
                ):
                    session.append(e)
                else:
                    self.repeated.append(e)
            if start is None:
                raise SystemExit("no timed events in input")
            self.window = end - start
            self.shift = int(math.ceil(self.window)) + gap
            last = (copies - 1) * self.shift

            # Session events: fixed once, for the final layout.
            for e in session:
                if e.get("cat") == "Trace" and id(e) in dur_text:
                    e["dur"] = orjson.Fragment(str(Decimal(dur_text[id(e)]) + last))
                    del dur_text[id(e)]
                elif e.get("name") == "Record Window End" and id(e) in ts_text:
                    e["ts"] = orjson.Fragment(str(Decimal(ts_text[id(e)]) + last))
                    del ts_text[id(e)]

            # Per-copy patches for repeated events.
            self.ts_fast: list[tuple[dict, int, str]] = []
            self.ts_slow: list[tuple[dict, Decimal]] = []
            group_vals: dict[str, list[int]] = {}
            id_patches: list[tuple[dict, str, int, str, str]] = []
            self.step_patches: list[tuple[dict, int]] = []
            for e in self.repeated:
                t = ts_text.pop(id(e), None)
                if t is not None:
                    m = PLAIN_NUM_RE.fullmatch(t)
                    if m:
                        self.ts_fast.append((e, int(m.group(1)), m.group(2) or ""))
                    else:
                        self.ts_slow.append((e, Decimal(t)))
                args = e.get("args")
                if isinstance(args, dict):
                    for key, grp in ARG_GROUPS.items():
                        if key in args:
                            kind = id_kind(args[key])
                            if kind:
                                base = id_value(args[key], kind)
                                id_patches.append((args, key, base, grp, kind))
                                group_vals.setdefault(grp, []).append(base)
                if "id" in e and e.get("ph") in FLOW_PHASES:
                    kind = id_kind(e["id"])
                    if kind:
                        base = id_value(e["id"], kind)
                        id_patches.append((e, "id", base, FLOW_ID_GROUP, kind))
                        group_vals.setdefault(FLOW_ID_GROUP, []).append(base)
                name = e.get("name")
                if isinstance(name, str) and name.startswith("ProfilerStep#"):
                    m = STEP_RE.fullmatch(name)
                    if m:
                        self.step_patches.append((e, int(m.group(1))))

        # Offsets per group: k * (max + 1), or k * (max - min + 1) if ids go negative.
        self.group_span = {
            g: (max(v) + 1 if min(v) >= 0 else max(v) - min(v) + 1)
            for g, v in group_vals.items()
        }
        steps = [n for _, n in self.step_patches]
        self.step_span = (max(steps) - min(steps) + 1) if steps else 0
        groups = sorted(self.group_span)
        gidx = {g: i for i, g in enumerate(groups)}
        self.groups = groups
        self.spans = [self.group_span[g] for g in groups]
        self.id_int = [(d, k, b, gidx[g]) for d, k, b, g, kind in id_patches if kind == "int"]
        self.id_other = [(d, k, b, gidx[g], kind) for d, k, b, g, kind in id_patches if kind != "int"]
        self.n_id_patches = len(id_patches)

        # Everything not patched per copy: turn marked texts back into raw numbers.
        # (ts of repeated events is overwritten per copy by apply().)
        for e in ev:
            if isinstance(e, (dict, list)):
                unmark_tree(e, marker)
        if self.top is not None:
            for k, v in self.top.items():
                if k == "traceEvents":
                    continue
                if isinstance(v, str) and v.startswith(marker):
                    self.top[k] = orjson.Fragment(v[len(marker):])
                elif isinstance(v, (dict, list)):
                    unmark_tree(v, marker)

        self.n_out = len(ev) + (copies - 1) * len(self.repeated)

    def apply(self, k: int) -> None:
        """Mutate the repeated events in place so they are copy k."""
        sh = k * self.shift
        frag = orjson.Fragment
        for e, ip, frac in self.ts_fast:
            e["ts"] = frag(f"{ip + sh}{frac}")
        if self.ts_slow:
            with localcontext() as ctx:
                ctx.prec = 80
                for e, d in self.ts_slow:
                    e["ts"] = frag(str(d + sh))
        offs = [k * s for s in self.spans]
        for d, key, base, g in self.id_int:
            d[key] = base + offs[g]
        for d, key, base, g, kind in self.id_other:
            d[key] = id_render(base + offs[g], kind)
        ss = k * self.step_span
        for e, n in self.step_patches:
            e["name"] = f"ProfilerStep#{n + ss}"

    def describe(self) -> str:
        lines = [
            f"window {self.window} us, shift per copy {self.shift} us",
            f"events in: {len(self.events)}, repeated per copy: {len(self.repeated)}, "
            f"kept once: {len(self.events) - len(self.repeated)}",
            "id offsets per copy: "
            + ", ".join(f"{g}={s}" for g, s in zip(self.groups, self.spans)),
            f"ProfilerStep offset per copy: {self.step_span}",
        ]
        return "\n".join(lines)


def open_out(path: str, level: int, compress: bool):
    """``path`` for writing: gzip-compressed when ``compress`` (the final name ends in
    ``.gz``; ``path`` itself is a temporary name)."""
    if compress:
        return gzip.open(path, "wb", compresslevel=level)
    return open(path, "wb", buffering=8 << 20)


def write_scaled(plan: Plan, out_path: str, level: int) -> int:
    """Stream the scaled trace to out_path. Returns bytes of JSON written."""
    sentinel = b"@@OPGRAPH_EVENTS@@"
    if plan.top is not None:
        top = dict(plan.top)
        top["traceEvents"] = orjson.Fragment(sentinel)
        skel = orjson.dumps(top)
        if skel.count(sentinel) != 1:
            raise SystemExit("sentinel collision while writing the top level")
        head, tail = skel.split(sentinel)
    else:
        head, tail = b"", b""

    tmp = out_path + ".tmp"
    written = 0
    with open_out(tmp, level, out_path.endswith(".gz")) as f:
        def w(b: bytes) -> None:
            nonlocal written
            f.write(b)
            written += len(b)

        w(head + b"[")
        first = True
        for k in range(plan.copies):
            plan.apply(k)
            chunk = orjson.dumps(plan.events if k == 0 else plan.repeated)[1:-1]
            if chunk:
                if not first:
                    w(b",\n")
                w(chunk)
                first = False
            del chunk
        w(b"]" + tail + b"\n")
    os.replace(tmp, out_path)
    return written


# ------------------------------------------------------------------------ verify
def verify(in_path: str, out_path: str, copies: int, gap: int) -> None:
    """Re-read input and output (keeping exact ts/dur texts) and check that output
    copy k of every repeated event equals the input event with exactly the
    documented changes, and that links (flows, correlation, ids) stay valid."""
    raw_in = read_bytes(in_path)
    marker = choose_marker(raw_in)
    ref_plan = Plan(load_marked(raw_in, marker), marker, copies, gap)  # for spans
    orig_top, orig = split_doc(load_marked(raw_in, marker))
    del raw_in
    raw_out = read_bytes(out_path)
    if marker.encode() in raw_out:
        raise SystemExit("marker present in output")
    out_top, out = split_doc(load_marked(raw_out, marker))
    del raw_out
    ml = len(marker)
    errors: list[str] = []

    def err(msg: str) -> None:
        if len(errors) < 20:
            errors.append(msg)

    if orig_top is not None:
        a = {k: v for k, v in orig_top.items() if k != "traceEvents"}
        b = {k: v for k, v in out_top.items() if k != "traceEvents"}
        if a != b or list(orig_top) != list(out_top):
            err("top-level keys differ")

    rep = [
        e for e in orig
        if not (isinstance(e, dict) and (
            e.get("ph") == "M" or e.get("cat") == "Trace"
            or (e.get("ph") in ("i", "I") and e.get("name") in SESSION_INSTANTS)))
    ]
    expected = len(orig) + (copies - 1) * len(rep)
    if len(out) != expected:
        err(f"event count {len(out)} != expected {expected}")
    span = ref_plan.group_span
    shift = ref_plan.shift
    last = (copies - 1) * shift

    def ts_ok(o_t: str, x_t: str, sh: int) -> bool:
        # Same value shifted exactly, and the same digits after the point.
        if Decimal(x_t) != Decimal(o_t) + sh:
            return False
        return o_t.partition(".")[2] == x_t.partition(".")[2] or "e" in o_t.lower()

    def check(o: dict, x: dict, k: int, where: str) -> None:
        if set(o) != set(x):
            err(f"{where}: keys differ")
            return
        for key, ov in o.items():
            xv = x[key]
            if key == "ts" and isinstance(ov, str) and ov.startswith(marker):
                sh = k * shift
                if o.get("name") == "Record Window End" and o.get("ph") in ("i", "I"):
                    sh = last
                if not (isinstance(xv, str) and ts_ok(ov[ml:], xv[ml:], sh)):
                    err(f"{where}: ts {ov[ml:]} -> {xv}")
            elif key == "dur" and o.get("cat") == "Trace" and isinstance(ov, str):
                if Decimal(xv[ml:]) != Decimal(ov[ml:]) + last:
                    err(f"{where}: Trace dur {ov[ml:]} -> {xv}")
            elif key == "id" and o.get("ph") in FLOW_PHASES and id_kind(ov):
                kind = id_kind(ov)
                if xv != id_render(id_value(ov, kind) + k * span[FLOW_ID_GROUP], kind):
                    err(f"{where}: id {ov} -> {xv}")
            elif key == "name" and isinstance(ov, str) and STEP_RE.fullmatch(ov):
                n = int(STEP_RE.fullmatch(ov).group(1)) + k * ref_plan.step_span
                if xv != f"ProfilerStep#{n}":
                    err(f"{where}: name {ov} -> {xv}")
            elif key == "args" and isinstance(ov, dict):
                if set(ov) != set(xv):
                    err(f"{where}: args keys differ")
                    continue
                for ak, av in ov.items():
                    g = ARG_GROUPS.get(ak)
                    kind = id_kind(av) if g else None
                    want = id_render(id_value(av, kind) + k * span[g], kind) if kind else av
                    if xv[ak] != want:
                        err(f"{where}: args[{ak!r}] {av} -> {xv[ak]}")
            elif ov != xv:
                err(f"{where}: {key} {ov!r} -> {xv!r}")

    for i, o in enumerate(orig):
        check(o, out[i], 0, f"copy 0 event {i}")
    pos = len(orig)
    for k in range(1, copies):
        for j, o in enumerate(rep):
            if pos < len(out):
                check(o, out[pos], k, f"copy {k} event {j}")
            pos += 1

    # Link integrity over the whole output (independent of the checks above).
    def link_stats(evs: list) -> dict[str, int]:
        starts, ends = set(), []
        corr_rt, corr_gpu = set(), []
        ext = set()
        steps = []
        for e in evs:
            ph = e.get("ph")
            if ph == "s":
                starts.add((e.get("cat"), e.get("id")))
            elif ph == "f":
                ends.append((e.get("cat"), e.get("id")))
            a = e.get("args") or {}
            if "correlation" in a:
                if e.get("cat") in ("cuda_runtime", "cuda_driver", "hip_runtime"):
                    corr_rt.add(a["correlation"])
                elif e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
                    corr_gpu.append(a["correlation"])
            if "External id" in a:
                ext.add(a["External id"])
            n = e.get("name")
            if isinstance(n, str) and n.startswith("ProfilerStep#"):
                steps.append(n)
        return {
            "flows matched": sum(1 for f in ends if f in starts),
            "gpu ops with runtime correlation": sum(1 for c in corr_gpu if c in corr_rt),
            "distinct External ids": len(ext),
            "distinct ProfilerSteps": len(set(steps)),
            "ProfilerStep events": len(steps),
        }

    s_in = link_stats(orig)
    s_out = link_stats(out)
    for key, v in s_in.items():
        if s_out[key] != v * copies:
            err(f"link check {key}: {s_out[key]} != {copies} x {v}")
    print("verify: link stats input", s_in, file=sys.stderr)
    print("verify: link stats output", s_out, file=sys.stderr)
    if errors:
        print("VERIFY FAILED:\n  " + "\n  ".join(errors), file=sys.stderr)
        raise SystemExit(1)
    print(f"verify: OK ({len(out)} events, {copies} copies)", file=sys.stderr)


# -------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input", help="Kineto trace (.json or .json.gz)")
    ap.add_argument("output", help="scaled trace (.json, or .json.gz to compress)")
    ap.add_argument("--copies", "-n", type=int, required=True, help="number of copies N >= 1")
    ap.add_argument("--gap", type=int, default=1000, help="µs between copies (default 1000)")
    ap.add_argument("--level", type=int, default=6, help="gzip level for .gz output (default 6)")
    ap.add_argument("--verify", action="store_true",
                    help="re-read the output and check every event and link (slow, ~5x input RAM x N)")
    args = ap.parse_args(argv)
    if args.copies < 1:
        ap.error("--copies must be >= 1")

    t0 = time.perf_counter()
    gc.disable()
    raw = read_bytes(args.input)
    marker = choose_marker(raw)
    doc = load_marked(raw, marker)
    del raw
    plan = Plan(doc, marker, args.copies, args.gap)
    gc.freeze()
    t1 = time.perf_counter()
    nbytes = write_scaled(plan, args.output, args.level)
    t2 = time.perf_counter()
    print(plan.describe(), file=sys.stderr)
    print(
        f"wrote {args.output}: {plan.n_out} events, {nbytes / 1e6:.1f} MB JSON"
        + (f" ({os.path.getsize(args.output) / 1e6:.1f} MB gz)" if args.output.endswith(".gz") else "")
        + f", load {t1 - t0:.2f}s, write {t2 - t1:.2f}s",
        file=sys.stderr,
    )
    print(f"{plan.n_out}\t{nbytes}\t{args.output}")
    if args.verify:
        del plan, doc
        gc.unfreeze()
        gc.enable()
        verify(args.input, args.output, args.copies, args.gap)
    return 0


if __name__ == "__main__":
    sys.exit(main())
