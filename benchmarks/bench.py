#!/usr/bin/env python3
"""Time a command over trace files: median wall time and peak RSS of N runs.

    python benchmarks/bench.py [--cmd TEMPLATE] [--repeat 3] INPUT [INPUT ...]

The command is a template run once per input and run (no shell unless --shell).
Placeholders:
    {input}   the input file
    {stem}    its name without .json / .json.gz / .pt.trace
    {outdir}  --outdir (default /tmp/opgraph-bench, created)
    {graph}   {outdir}/{stem}.gpickle  (also available as {out})
The default is ``opgraph build {input} -o {graph}``; a later
``--cmd "opgraph critical-path {graph}"`` with the same --outdir then reads the graphs
the build runs saved.

Each run is a child process reaped with os.wait4(), so its wall time and peak RSS
(ru_maxrss: the largest resident set of the child or of any descendant it waited for)
are exact per run, with no bookkeeping of RUSAGE_CHILDREN deltas.

Prints one markdown table row per input, as soon as it is measured:
    | input | events | JSON MB | wall s (median) | peak RSS MiB | CPU s | runs (s) |
events = number of '"ph"' keys in the file (one per Chrome-trace event), JSON MB =
uncompressed JSON size in 10^6 bytes, peak RSS = the largest over the runs, CPU s =
median user+sys.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import threading
import time

DEFAULT_CMD = "opgraph build {input} -o {graph}"


def stem_of(path: str) -> str:
    name = os.path.basename(path)
    for suffix in (".gz", ".json", ".pt.trace"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name


def count_events(path: str) -> tuple[int, int]:
    """(number of '"ph"' keys, uncompressed bytes), streaming, gz-aware."""
    needle = b'"ph"'
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    n = size = 0
    carry = b""
    with opener(path, "rb") as f:
        while True:
            block = f.read(16 << 20)
            if not block:
                break
            size += len(block)
            buf = carry + block
            n += buf.count(needle)
            # keep the last len(needle)-1 bytes; a match can't lie wholly inside them
            carry = buf[-(len(needle) - 1):]
    return n, size


def run_once(argv: list[str], log_path: str, timeout: float | None) -> dict:
    with open(log_path, "ab") as log:
        log.write(f"\n$ {shlex.join(argv)}\n".encode())
        log.flush()
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        timer = threading.Timer(timeout, p.kill) if timeout else None
        if timer:
            timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            if timer:
                timer.cancel()
        wall = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status)
    p.returncode = rc  # reaped by wait4; keep Popen from waiting again
    return {
        "rc": rc,
        "wall_s": wall,
        "maxrss_kib": ru.ru_maxrss,  # KiB on Linux
        "cpu_s": ru.ru_utime + ru.ru_stime,
    }


def tail(path: str, n: int = 15) -> str:
    try:
        with open(path, "rb") as f:
            return b"".join(f.readlines()[-n:]).decode(errors="replace")
    except OSError:
        return ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    ap.add_argument("inputs", nargs="+", help="trace files")
    ap.add_argument("--cmd", default=DEFAULT_CMD, help=f"command template (default: {DEFAULT_CMD!r})")
    ap.add_argument("--repeat", "-n", type=int, default=3, help="timed runs per input (default 3)")
    ap.add_argument("--warmup", type=int, default=0, help="untimed runs first (default 0)")
    ap.add_argument("--outdir", default="/tmp/opgraph-bench", help="for {outdir}/{graph} and logs")
    ap.add_argument("--shell", action="store_true", help="run the filled-in template with /bin/sh -c")
    ap.add_argument("--timeout", type=float, default=None, help="kill a run after this many seconds")
    ap.add_argument("--no-count", action="store_true", help="skip counting events / JSON size")
    ap.add_argument("--json", metavar="FILE", help="also append one JSON line per input to FILE")
    ap.add_argument("--no-header", action="store_true", help="print rows only")
    args = ap.parse_args(argv)

    os.makedirs(args.outdir, exist_ok=True)
    if not args.no_header:
        print(f"<!-- cmd: {args.cmd} | runs: {args.repeat} (+{args.warmup} warm-up) | "
              f"{platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()} -->")
        print("| input | events | JSON MB | wall s (median) | peak RSS MiB | CPU s | runs (s) |")
        print("|---|---:|---:|---:|---:|---:|---|")
        sys.stdout.flush()

    failed = 0
    for path in args.inputs:
        stem = stem_of(path)
        graph = os.path.join(args.outdir, stem + ".gpickle")
        fields = {"input": path, "stem": stem, "outdir": args.outdir, "graph": graph, "out": graph}
        cmd = args.cmd.format(**fields)
        argv_ = ["/bin/sh", "-c", cmd] if args.shell else shlex.split(cmd)
        log_path = os.path.join(args.outdir, stem + ".bench.log")
        if os.path.exists(log_path):
            os.remove(log_path)

        events = size = None
        if not args.no_count:
            events, size = count_events(path)

        runs, err = [], None
        for i in range(args.warmup + args.repeat):
            r = run_once(argv_, log_path, args.timeout)
            if r["rc"] != 0:
                err = f"rc={r['rc']}"
                break
            if i >= args.warmup:
                runs.append(r)

        ev_s = f"{events:,}" if events is not None else "-"
        mb_s = f"{size / 1e6:.1f}" if size is not None else "-"
        if err:
            failed += 1
            print(f"| {stem} | {ev_s} | {mb_s} | FAILED ({err}) | | | |", flush=True)
            print(f"--- {cmd}\n{tail(log_path)}", file=sys.stderr)
            result = {"input": path, "cmd": cmd, "events": events, "json_bytes": size, "error": err}
        else:
            walls = [r["wall_s"] for r in runs]
            wall = statistics.median(walls)
            rss = max(r["maxrss_kib"] for r in runs) / 1024
            cpu = statistics.median(r["cpu_s"] for r in runs)
            print(f"| {stem} | {ev_s} | {mb_s} | {wall:.2f} | {rss:,.0f} | {cpu:.2f} | "
                  f"{', '.join(f'{w:.2f}' for w in walls)} |", flush=True)
            result = {"input": path, "cmd": cmd, "events": events, "json_bytes": size,
                      "wall_s_median": wall, "peak_rss_mib": rss, "cpu_s_median": cpu, "runs": runs}
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(result) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
