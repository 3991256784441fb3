#!/usr/bin/env python3
"""Whole-process time of opgraph's commands against the decode floor, measured in one run.

    python benchmarks/model_speed.py TRACE [--repeat 3] [--keep DIR]

The *decode floor* is what any tool must pay to read ``TRACE``: a process that reads the
file, gunzips it (when it is ``.gz``) and decodes the JSON with orjson, and nothing else.
Machines differ; the ratio of each command to the floor, measured in the same run on the
same file, does not (much). Issue 32, item 5 sets the targets as such ratios
(docs/performance.md, "The trace model's speed").

Steps, each a child process reaped with ``os.wait4`` (exact wall time and peak RSS),
each run ``--repeat`` times (the median is reported):

* ``floor``: read + gunzip (when gzip-compressed) + ``orjson.loads`` of TRACE, twice:
  leaving with ``os._exit`` (the strict floor: ratios are against it) and leaving normally
  (freeing a million decoded dicts, as every whole process does);
* ``build``: ``opgraph build TRACE -o g.gpickle``;
* from the saved graph: ``idle``, ``queue``, ``overlap``, ``launch-stats``, ``summary``
  (each ``--json``), ``critical-path --json`` (with the path), and ``info --json``.

Prints a markdown table: step, median wall seconds, peak RSS, ratio to the strict floor. The
machine's load average is printed before and after: a loaded machine's ratios are not
comparable to a quiet one's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLOOR = r"""
import gzip, sys, orjson
data = open(sys.argv[1], "rb").read()
if data[:2] == b"\x1f\x8b":
    data = gzip.decompress(data)
doc = orjson.loads(data)
print(len(doc.get("traceEvents", ())) if isinstance(doc, dict) else len(doc))
if len(sys.argv) > 2:   # the strict floor: leave without freeing the decoded document
    sys.stdout.flush()
    import os
    os._exit(0)
"""

ANALYSES = ["idle", "queue", "overlap", "launch-stats", "summary", "critical-path", "info"]


def run(argv: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one child process; its output is discarded."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {os.waitstatus_to_exitcode(status)}\n{err}")
    return wall, ru.ru_maxrss * 1024


def measure(argv: list[str], repeat: int) -> tuple[float, int]:
    got = [run(argv) for _ in range(repeat)]
    return statistics.median(w for w, _ in got), max(r for _, r in got)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", help="folder for the saved graph (default: a temporary one)")
    a = ap.parse_args()
    py = sys.executable
    opg = [py, "-m", "opgraph"]
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="opgraph-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    g = work / "g.gpickle"
    print(f"load average before: {os.getloadavg()[0]:.2f}", file=sys.stderr)
    rows: list[tuple[str, float, int]] = []
    rows.append(("decode floor, strict (gunzip + orjson, exit without freeing)",
                 *measure([py, "-c", FLOOR, a.trace, "strict"], a.repeat)))
    rows.append(("decode floor, whole process (the document freed at exit)",
                 *measure([py, "-c", FLOOR, a.trace], a.repeat)))
    rows.append(("build (raw trace -> .gpickle)", *measure([*opg, "build", a.trace, "-o", str(g)], a.repeat)))
    for cmd in ANALYSES:
        rows.append((f"{cmd} --json (saved graph)", *measure([*opg, cmd, str(g), "--json"], a.repeat)))
    print(f"load average after: {os.getloadavg()[0]:.2f}", file=sys.stderr)
    floor = rows[0][1]   # the strict floor
    print(f"{Path(a.trace).name}, median of {a.repeat} runs per step\n")
    print("| step | wall s | peak RSS MB | ÷ floor |")
    print("|---|---:|---:|---:|")
    for name, wall, rss in rows:
        print(f"| {name} | {wall:.2f} | {rss / 2**20:,.0f} | {wall / floor:.2f} |")


if __name__ == "__main__":
    main()
