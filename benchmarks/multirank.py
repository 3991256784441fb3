#!/usr/bin/env python3
"""Multi-rank ingest benchmark (issue 9): wall time with 1 and 2 pool workers, peak RSS per
worker, and the memory of a many-rank job (and, in ``memory`` mode, the job-wide commands
``critical-path --no-path`` and ``stragglers`` on the saved job, each in a fresh process).

    # 16 ranks x the 1M-event scaled trace, 1 then 2 workers (the lead runs this one)
    python benchmarks/multirank.py scale --source /work/bench-data/ns_x15.json --ranks 16 --workers 1,2

    # memory: 64 ranks x ~100k events, every rank kept in full, then the saved job loaded
    python benchmarks/multirank.py memory --source /work/bench-data/ns_x2.json --ranks 64

    # stragglers straight from 64 rank traces of 1M events each (no job graph is built)
    python benchmarks/multirank.py stragglers --source /work/bench-data/ns_x15.json --ranks 64 --workers 2

    # the cross-rank critical path and stragglers straight from 64 rank traces of 1M events
    # each, rank r's timeline stretched by 1 + 2e-4 * (r - 31.5) so the ranks differ
    python benchmarks/multirank.py crossrank --source /work/bench-data/ns_x15.json --ranks 64 --workers 2

    # quick check of the script itself
    python benchmarks/multirank.py scale --source /work/bench-data/ns_x2.json --ranks 4 --workers 1,2

Rank files are copies of ``--source`` written to a temporary directory (``--dir``), each
with its own ``distributedInfo`` (``rank`` r, ``world_size`` N); the events are the same,
so every collective matches. Each measurement runs in a fresh Python process so its peak
RSS (``ru_maxrss``) is its own. Prints one JSON document (``--json FILE`` saves it).

Numbers reported: ``wall_s`` (build_job: read + build every rank in the pool, match,
align, merge; seconds), ``speedup`` (1-worker wall / n-worker wall), ``worker_peak_rss_mb``
(largest ``ru_maxrss`` any pool process reached), ``single_rank_peak_rss_mb`` (one process
reading and building one rank's graph payload: the single-rank figure), ``client_peak_rss_mb``
(the process that merges), and for ``memory``: ``load_peak_rss_mb`` (a fresh process
loading the saved job ``.gpickle`` as a networkx graph) and the commands' ``peak_rss_mb``;
for ``stragglers``: ``driver_peak_rss_mb`` (the process that matches the collectives) and
``worker_peak_rss_mb`` (the largest worker, from the ranks' summaries); for ``crossrank``:
the same two for what ``critical-path DIR`` runs (per pass: tasks and the largest worker),
and ``opgraph stragglers DIR --json`` run as a command (wall time and the command
process's peak RSS). ``--stretch S`` writes rank ``r``
of ``n`` with every timestamp and duration stretched by ``1 + S * (r - (n - 1) / 2)`` about
the trace start, so the ranks arrive at their collectives at different times, different
ranks last in different parts of the trace (``crossrank`` default 2e-4).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write_ranks(source: Path, n: int, directory: Path) -> list[Path]:
    """``n`` copies of ``source`` (plain JSON) as ``rank{r}.json`` in ``directory``, each
    with ``distributedInfo = {"backend": "nccl", "rank": r, "world_size": n}``."""
    data = source.read_bytes()
    if source.suffix == ".gz":
        import gzip
        data = gzip.decompress(data)
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    # the source's own distributedInfo (possibly nested) is renamed, a new one put first
    data = data.replace(b'"distributedInfo"', b'"distributedInfo_source"', 1)
    i = data.index(b"{")
    for r in range(n):
        di = json.dumps({"distributedInfo": {"backend": "nccl", "rank": r, "world_size": n}})[1:-1].encode()
        doc = data[:i + 1] + di + b", " + data[i + 1:]
        p = directory / f"rank{r}.json"
        p.write_bytes(doc)
        out.append(p)
    return out


def _stretch_one(args: tuple[str, str, float]) -> None:
    """Rewrite the rank file ``dst`` from ``src`` with times stretched by ``f`` (µs, about
    the earliest ``ts``)."""
    import orjson

    src, dst, f = args
    doc = orjson.loads(Path(src).read_bytes())
    evs = doc["traceEvents"]
    t0 = min(e["ts"] for e in evs if isinstance(e.get("ts"), (int, float)))
    for e in evs:
        t = e.get("ts")
        if isinstance(t, (int, float)):
            e["ts"] = round(t0 + (t - t0) * f, 3)
        d = e.get("dur")
        if isinstance(d, (int, float)):
            e["dur"] = round(d * f, 3)
    Path(dst).write_bytes(orjson.dumps(doc))


def stretch_ranks(files: list[Path], stretch: float, workers: int) -> None:
    """Stretch rank ``r``'s timeline (of ``n``) by ``1 + stretch * (r - (n - 1) / 2)`` in
    place: after the clocks are aligned on the collectives' median, the compressed ranks
    arrive last early in the trace and the stretched ones late in it."""
    from concurrent.futures import ProcessPoolExecutor

    n = len(files)
    jobs = [(str(p), str(p), 1.0 + stretch * (r - (n - 1) / 2)) for r, p in enumerate(files)]
    with ProcessPoolExecutor(max_workers=workers) as ex:
        list(ex.map(_stretch_one, jobs))


def crossrank_from_ranks(directory: Path, workers: int) -> dict:
    """What ``opgraph critical-path DIR`` runs
    (:func:`opgraph.analysis.crossrank_workers.crossrank_from_traces`), in a fresh process:
    wall time, this process's peak RSS, and per pass the tasks and the largest worker."""
    code = f"""
{_RSS}
import json, time
from opgraph.analysis.crossrank_workers import crossrank_from_traces
t = time.perf_counter()
res = crossrank_from_traces([{str(directory)!r}], workers={workers})
w = time.perf_counter() - t
doc = res.to_dict(with_path=False)
mb = lambda b: round(b / 2**20, 1)
print(json.dumps({{"workers": {workers}, "wall_s": round(w, 2), "steps": len(res.steps),
                   "segments": sum(len(s.path) for s in res.steps),
                   "ranks_on_path": sorted({{r for s in res.steps for r in s.ranks_on_path}}),
                   "length_equals_span": all(abs(x["length_us"] - x["span_us"]) < 1e-6 for x in doc["windows"]),
                   "passes": {{k: {{**{{a: b for a, b in v.items() if a != "worker_peak_rss_bytes"}},
                                  "worker_peak_rss_mb": mb(v["worker_peak_rss_bytes"])}}
                              for k, v in res.stats.items()}},
                   "driver_peak_rss_mb": round(rss(), 1)}}))
"""
    return _child(code)


def _child(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON line last."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=str(ROOT))
    if p.returncode != 0:
        raise SystemExit(f"benchmark child failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


_RSS = "import resource; rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024"


def single_rank(path: Path) -> dict:
    code = f"""
{_RSS}
import json, time
from opgraph.multirank.worker import rank_result
t = time.perf_counter(); r = rank_result({str(path)!r}, True); w = time.perf_counter() - t
print(json.dumps({{"wall_s": round(w, 2), "events": r.n_events, "peak_rss_mb": round(rss(), 1)}}))
"""
    return _child(code)


def job_build(files: list[Path], workers: int, keep: str, save: Path | None = None) -> dict:
    code = f"""
{_RSS}
import json, time
from opgraph.multirank.job import build_job
files = {[str(f) for f in files]!r}
t = time.perf_counter()
jb = build_job(files, keep={keep!r}, workers={workers})
w = time.perf_counter() - t
job = jb.job
save = {str(save) if save else None!r}
t2 = time.perf_counter()
if save:
    from opgraph.graph.io import GraphPayload, save_gpickle
    save_gpickle(GraphPayload(jb.payload), save)
print(json.dumps({{
    "workers": {workers}, "wall_s": round(w, 2), "save_s": round(time.perf_counter() - t2, 2) if save else None,
    "ranks": len(job["ranks"]), "kept": sum(r["full"] for r in job["ranks"]),
    "events": sum(r["summary"]["events"] for r in job["ranks"]),
    "nodes": int(len(jb.payload["nodes"])), "edges": int(len(jb.payload["src"])),
    "collectives_matched": int(job["collectives"]["coll_id"].max() + 1) if len(job["collectives"]) else 0,
    "unmatched": job["unmatched"],
    "worker_peak_rss_mb": round(max(r["summary"]["peak_rss_bytes"] for r in job["ranks"]) / 2**20, 1),
    "client_peak_rss_mb": round(rss(), 1)}}))
"""
    return _child(code)


def load_job(path: Path) -> dict:
    code = f"""
{_RSS}
import json, time
from opgraph.graph.io import load_gpickle
t = time.perf_counter(); G = load_gpickle({str(path)!r}); w = time.perf_counter() - t
print(json.dumps({{"load_s": round(w, 2), "nodes": G.number_of_nodes(), "edges": G.number_of_edges(),
                   "load_peak_rss_mb": round(rss(), 1)}}))
"""
    return _child(code)


def stragglers_from_ranks(directory: Path, workers: int) -> dict:
    """What ``opgraph stragglers DIR`` runs (:func:`opgraph.pipelines.job_stragglers`), in a
    fresh process: wall time, this process's peak RSS and the largest worker's (each rank's
    summary records its worker's peak)."""
    code = f"""
{_RSS}
import json, time
from opgraph.analysis.stragglers import stragglers
from opgraph.model.trace_graph import TraceGraph
from opgraph.multirank.job import build_job
t = time.perf_counter()
jb = build_job([{str(directory)!r}], keep="none", workers={workers})
rep = stragglers(TraceGraph(jb.payload))
w = time.perf_counter() - t
ranks = jb.payload["graph"]["job"]["ranks"]
print(json.dumps({{"workers": {workers}, "wall_s": round(w, 2), "ranks": len(ranks),
                   "events": sum(r["summary"]["events"] for r in ranks),
                   "collective_rows": int(len(jb.payload["graph"]["job"]["collectives"])),
                   "worker_peak_rss_mb": round(max(r["summary"]["peak_rss_bytes"] for r in ranks) / 2**20, 1),
                   "driver_peak_rss_mb": round(rss(), 1), "doc_keys": sorted(rep.to_dict())}}))
"""
    return _child(code)


def run_command(args: list[str]) -> dict:
    """``opgraph ARGS`` in a fresh interpreter, output discarded: wall time and peak RSS."""
    code = f"""
{_RSS}
import contextlib, io, json, time
from opgraph.cli import main
t = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main({args!r}, standalone_mode=False)
    except SystemExit as e:
        assert not e.code, e.code
w = time.perf_counter() - t
print(json.dumps({{"command": " ".join({args!r}[:1] + {args!r}[2:]), "wall_s": round(w, 2),
                   "peak_rss_mb": round(rss(), 1)}}))
"""
    return _child(code)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("scale", "memory", "stragglers", "crossrank"))
    ap.add_argument("--stretch", type=float, default=None,
                    help="stretch rank r of n by 1 + S * (r - (n - 1) / 2) (default: 2e-4 in crossrank mode, else 0)")
    ap.add_argument("--source", type=Path, default=Path("/work/bench-data/ns_x15.json"))
    ap.add_argument("--ranks", type=int, default=16)
    ap.add_argument("--workers", default="1,2", help="scale: comma-separated pool sizes")
    ap.add_argument("--keep", default=None,
                    help="ranks kept in full (default: scale '0', memory 'all')")
    ap.add_argument("--dir", type=Path, default=None, help="where to write the rank files (default: a temp dir)")
    ap.add_argument("--json", type=Path, default=None, help="also save the result here")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="opgraph-multirank-", dir=a.dir))
    try:
        t = time.perf_counter()
        files = write_ranks(a.source, a.ranks, tmp / "ranks")
        stretch = a.stretch if a.stretch is not None else (2e-4 if a.mode == "crossrank" else 0.0)
        if stretch:
            stretch_ranks(files, stretch, int(a.workers.split(",")[-1]))
        doc: dict = {"mode": a.mode, "source": str(a.source), "ranks": a.ranks, "cores": os.cpu_count(),
                     "stretch": stretch, "write_s": round(time.perf_counter() - t, 1)}
        doc["single_rank"] = single_rank(files[0])
        if a.mode == "crossrank":
            w = int(a.workers.split(",")[-1])
            d = str(tmp / "ranks")
            doc["crossrank"] = crossrank_from_ranks(tmp / "ranks", w)
            doc["commands"] = [run_command(["stragglers", d, "--json", "--workers", str(w)])]
        elif a.mode == "stragglers":
            # the job's rank traces straight to stragglers: no job graph, no rank kept in full
            doc["stragglers"] = stragglers_from_ranks(tmp / "ranks", int(a.workers.split(",")[-1]))
        elif a.mode == "scale":
            keep = a.keep or "0"
            runs = [job_build(files, int(w), keep) for w in a.workers.split(",")]
            base = runs[0]["wall_s"]
            for r in runs:
                r["speedup"] = round(base / r["wall_s"], 2) if r["wall_s"] else None
            doc["keep"] = keep
            doc["runs"] = runs
        else:
            keep = a.keep or "all"
            out = tmp / "job.gpickle"
            doc["keep"] = keep
            doc["build"] = job_build(files, int(a.workers.split(",")[-1]), keep, save=out)
            doc["gpickle_mb"] = round(out.stat().st_size / 2**20, 1)
            doc["load"] = load_job(out)
            # the job-wide analyses, which read the saved job as columns (docs/model.md)
            doc["commands"] = [run_command(["critical-path", str(out), "--json", "--no-path"]),
                               run_command(["stragglers", str(out), "--json"])]
        text = json.dumps(doc, indent=2)
        print(text)
        if a.json:
            a.json.write_text(text + "\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
