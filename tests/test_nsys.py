"""Nsight Systems readers: SQLite export (real files + a synthetic one), the legacy JSON
export (synthetic: no public sample exists), the ``nsys stats`` NVTX CSV, and the
``opgraph nvtx`` command."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from opgraph.errors import OpgraphInputError
from opgraph.graph.build import build_graph
from opgraph.ingest.readers import read_trace
from opgraph.testing import synth_nsys

ROOT = Path(__file__).resolve().parents[1]
TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
NSYS_DIR = TRACES / "C_nsys"
FIX = ROOT / "fixtures" / "nsys"
SQLITE_FILES = sorted(NSYS_DIR.glob("*.sqlite")) if NSYS_DIR.is_dir() else []
needs_traces = pytest.mark.skipif(not NSYS_DIR.is_dir(), reason=f"real traces not available: {NSYS_DIR}")


def _edge_kinds(G: nx.DiGraph) -> Counter:
    return Counter(d["kind"] for _, _, d in G.edges(data=True))


@pytest.fixture(scope="module")
def answers() -> dict:
    return json.loads((FIX / "synth.answers.json").read_text())


@pytest.fixture(scope="module", params=["synth.nsys.json", "synth.nsys.sqlite"])
def synth_graph(request) -> nx.DiGraph:
    return build_graph(read_trace(FIX / request.param))


def test_fixtures_are_current(tmp_path: Path) -> None:
    """The committed fixtures are what the synthesizer writes today."""
    paths = synth_nsys.write_fixtures(tmp_path)
    assert paths["json"].read_bytes() == (FIX / "synth.nsys.json").read_bytes()
    assert json.loads(paths["answers"].read_text()) == json.loads((FIX / "synth.answers.json").read_text())


def test_synth_counts(synth_graph: nx.DiGraph, answers: dict) -> None:
    ev = synth_graph.graph["events"]
    kinds = ev["kind"].value_counts()
    assert kinds["runtime"] == answers["runtime"]
    assert kinds["kernel"] == answers["kernels"]
    assert kinds["memcpy"] == answers["memcpy"]
    assert kinds["memset"] == answers["memset"]
    assert kinds["annotation"] == answers["annotations"]
    assert kinds["instant"] == answers["instants"]
    assert kinds["cuda_sync"] == answers["cuda_sync"]
    ek = _edge_kinds(synth_graph)
    assert ek["launch"] == answers["launch_edges"]
    assert ek["event_wait"] == answers["event_wait_edges"]
    # 2 stream syncs + 1 event sync + a device sync over the 2 streams
    assert ek["sync"] == 5
    assert not [h for h in synth_graph.graph["health"] if h["code"] != "nsys_tables_absent"]
    assert nx.is_directed_acyclic_graph(synth_graph.to_networkx())


def test_synth_int64_strings_and_thread_decode(synth_graph: nx.DiGraph) -> None:
    """globalTid > 2**53 written as strings decodes exactly to pid/tid."""
    host = {(d["pid"], d["tid"]) for _, d in synth_graph.nodes(data=True) if d["kind"] in ("runtime", "annotation")}
    assert host == {(synth_nsys.PID, synth_nsys.MAIN_TID), (synth_nsys.PID, synth_nsys.WORKER_TID)}
    names = {d["name"] for _, d in synth_graph.nodes(data=True) if d["kind"] == "runtime"}
    assert "cudaLaunchKernel" in names and "cublasSgemm_v2" in names  # _v7000 stripped, real _v2 kept
    ev = synth_graph.graph["events"]
    tn = ev[(ev["kind"] == "meta") & (ev["name"] == "thread_name")]
    assert sorted(a["name"] for a in tn["args"]) == ["main", "worker"]


def test_json_and_sqlite_agree() -> None:
    a = read_trace(FIX / "synth.nsys.json").events
    b = read_trace(FIX / "synth.nsys.sqlite").events
    for c in ("kind", "name", "ts_ns", "dur_ns", "device", "stream", "correlation"):
        assert a[c].astype(object).tolist() == b[c].astype(object).tolist(), c


def test_every_kernel_links_to_its_call(synth_graph: nx.DiGraph) -> None:
    for n, d in synth_graph.nodes(data=True):
        if d["kind"] in ("kernel", "memcpy", "memset"):
            preds = [p for p in synth_graph.predecessors(n) if synth_graph.edges[p, n]["kind"] == "launch"]
            assert len(preds) == 1
            call = synth_graph.nodes[preds[0]]
            assert call["ts"] + call["dur"] <= d["ts"]


def test_nvtx_summary_matches_answers(synth_graph: nx.DiGraph, answers: dict) -> None:
    from opgraph.analysis.nvtx import nvtx_summary

    doc = nvtx_summary(synth_graph)
    got = {r["name"]: r for r in doc["ranges"]}
    for name, exp in answers["nvtx"].items():
        r = got[name]
        assert r["count"] == exp["count"]
        assert r["cpu_total_us"] == pytest.approx(exp["cpu_ns"] / 1e3)
        assert r["gpu_proj_total_us"] == pytest.approx(exp["gpu_proj_ns"] / 1e3)
        assert r["activities"] == exp["activities"]
    assert [it["step"] for it in doc["iterations"]] == [1, 2]


def test_nvtx_cli_json(cli, tmp_path: Path) -> None:
    from opgraph.schemas_util import validate

    r = cli(["nvtx", str(FIX / "synth.nsys.json"), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "nvtx.schema.json")
    assert doc["ranges"][0]["name"] == "forward"
    r = cli(["nvtx", str(FIX / "synth.nsys.sqlite"), "--step-regex", r"^Iteration \d+$"])
    assert r.exit_code == 0 and "Iteration 2" in r.stdout


def test_iterations_from_nvtx_step_regex(synth_graph: nx.DiGraph) -> None:
    from opgraph.analysis.steps import find_iterations

    steps = find_iterations(synth_graph, step_regex=r"^Iteration \d+$")
    assert len(steps.table) == 2


# --------------------------------------------------------------------------- real SQLite
@needs_traces
@pytest.mark.real_traces
@pytest.mark.parametrize("path", SQLITE_FILES, ids=[p.name for p in SQLITE_FILES])
def test_real_sqlite(path: Path) -> None:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    n_kernel = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    con.close()
    table = read_trace(path)
    assert table.meta["format"] == "nsys-sqlite"
    G = build_graph(table)
    kern = [n for n, d in G.nodes(data=True) if d["kind"] == "kernel"]
    assert len(kern) == n_kernel
    linked = sum(1 for k in kern if any(G.edges[p, k]["kind"] == "launch" for p in G.predecessors(k)))
    assert linked == n_kernel
    assert nx.is_directed_acyclic_graph(G.to_networkx())
    assert G.graph["device_properties"], "device properties read from TARGET_INFO_*"
    ev = table.events
    # correlation ids are process-scoped: no id is carried by two runtime calls
    rt = ev[ev["kind"] == "runtime"]
    assert not rt.loc[rt["correlation"] >= 0, "correlation"].duplicated().any()


@needs_traces
@pytest.mark.real_traces
def test_real_sqlite_syncs_resolved() -> None:
    """Event syncs find their cudaEventRecord through CUDA_EVENT; no unresolved syncs."""
    G = build_graph(read_trace(NSYS_DIR / "extrap_concurrent_s1.sqlite"))
    assert not [h for h in G.graph["health"] if h["code"] == "sync_unresolved"]
    ev = G.graph["events"]
    kinds = Counter(ev.loc[ev["kind"] == "cuda_sync", "name"].astype(str))
    assert kinds == {"Stream Sync": 10, "Event Sync": 5, "Context Sync": 1}
    assert _edge_kinds(G)["sync"] >= 16


@needs_traces
@pytest.mark.real_traces
def test_real_backtrace_duplicates_dropped() -> None:
    t = read_trace(NSYS_DIR / "extrap_ex_gpu_s10_callchains.sqlite")
    assert t.meta["trace_metadata"]["nsys_counts"]["runtime_backtrace_rows_dropped"] == 18
    assert (t.events["kind"] == "runtime").sum() == 18


@needs_traces
@pytest.mark.real_traces
def test_real_nvtx_gpu_projection() -> None:
    from opgraph.analysis.nvtx import nvtx_summary

    G = build_graph(read_trace(NSYS_DIR / "nsightful_power_iteration.sqlite"))
    doc = nvtx_summary(G, r"^Step \d+ to \d+$")
    assert len(doc["iterations"]) > 10
    loop = next(r for r in doc["ranges"] if r["name"] == "Loop")
    assert loop["kernels"] > 3000 and loop["gpu_proj_total_us"] > 0


# --------------------------------------------------------------------------- CSV
@needs_traces
@pytest.mark.real_traces
def test_nvtx_pushpop_csv() -> None:
    t = read_trace(NSYS_DIR / "pipit_nbody_nvtx_pushpop_trace.csv")
    assert t.meta["format"] == "nsys-csv"
    assert (t.events["kind"] == "annotation").sum() == 131
    G = build_graph(t)
    assert _edge_kinds(G)["nest"] == 130   # one root ('main'), every other range nested


def test_other_stats_csv_rejected(tmp_path: Path, cli, one_line_error) -> None:
    p = tmp_path / "kern.csv"
    p.write_text("Time (%),Total Time (ns),Instances,Avg (ns),Name\n50.0,100,2,50,k\n")
    one_line_error(cli(["info", str(p)]), p, "not a trace opgraph reads")


# --------------------------------------------------------------------------- bad input
def test_truncated_sqlite(tmp_path: Path, cli, one_line_error) -> None:
    p = tmp_path / "cut.sqlite"
    p.write_bytes((FIX / "synth.nsys.sqlite").read_bytes()[:20000])
    one_line_error(cli(["build", str(p), "-o", str(tmp_path / "g.gpickle")]), p, "truncated sqlite")


def test_corrupt_sqlite(tmp_path: Path, cli, one_line_error) -> None:
    data = bytearray((FIX / "synth.nsys.sqlite").read_bytes())
    data[4096:8192] = b"\xff" * 4096     # a b-tree page overwritten
    p = tmp_path / "bad.sqlite"
    p.write_bytes(bytes(data))
    one_line_error(cli(["info", str(p)]), p, "sqlite")


def test_not_an_nsys_sqlite(tmp_path: Path, cli, one_line_error) -> None:
    p = tmp_path / "other.sqlite"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE foo (a)")
    con.commit()
    con.close()
    one_line_error(cli(["info", str(p)]), p, "not an nsys export")


def test_json_lines_broken_line(tmp_path: Path, cli, one_line_error) -> None:
    lines = (FIX / "synth.nsys.json").read_text().splitlines()
    lines[5] = lines[5][:40]
    p = tmp_path / "broken.json"
    p.write_text("\n".join(lines) + "\n")
    line = one_line_error(cli(["build", str(p), "-o", str(tmp_path / "g.gpickle")]), p, "line 6", "invalid json")
    assert "event 5:" in line


def test_json_lines_bad_field(tmp_path: Path, cli, one_line_error) -> None:
    lines = (FIX / "synth.nsys.json").read_text().splitlines()
    rec = json.loads(lines[3])
    rec["TraceProcessEvent"]["startNs"] = "12x"
    lines[3] = json.dumps(rec)
    p = tmp_path / "badfield.json"
    p.write_text("\n".join(lines) + "\n")
    one_line_error(cli(["info", str(p)]), p, "line 4", "startNs")


def test_compressed_sqlite(tmp_path: Path) -> None:
    import gzip

    p = tmp_path / "s.sqlite.gz"
    p.write_bytes(gzip.compress((FIX / "synth.nsys.sqlite").read_bytes()))
    t = read_trace(p)
    assert (t.events["kind"] == "kernel").sum() == 7


def test_format_override_mismatch(tmp_path: Path) -> None:
    with pytest.raises(OpgraphInputError, match="not an SQLite"):
        read_trace(FIX / "synth.nsys.json", format="nsys-sqlite")
    t = read_trace(FIX / "synth.nsys.json", format="nsys-json")
    assert t.meta["format"] == "nsys-json"
    assert np.all(t.events["dur_ns"].to_numpy() >= 0)


def test_graph_trace_and_absent_tables(tmp_path: Path) -> None:
    """Graph-level CUDA-graph traces become device activities linked to cudaGraphLaunch;
    a table dropped from the export is reported, not fatal."""
    p = tmp_path / "g.sqlite"
    p.write_bytes((FIX / "synth.nsys.sqlite").read_bytes())
    con = sqlite3.connect(p)
    sid = con.execute("SELECT max(id) FROM StringIds").fetchone()[0] + 1
    con.execute("INSERT INTO StringIds VALUES (?, 'cudaGraphLaunch_v10000')", (sid,))
    t0 = 6_000_000_000
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,0,?,999,?,0,NULL)",
                (t0, t0 + 5_000, synth_nsys.GTID_MAIN, sid))
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER, end INTEGER, deviceId INTEGER, "
                "contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, graphId INTEGER, "
                "graphExecId INTEGER)")
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (?,?,0,1,7,999,?,3,4)",
                (t0 + 8_000, t0 + 90_000, synth_nsys.GLOBAL_PID))
    con.execute("DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET")
    con.commit()
    con.close()
    t = read_trace(p)
    assert any(h.code == "nsys_tables_absent" and "MEMSET" in h.message for h in t.health)
    G = build_graph(t)
    g = [n for n, d in G.nodes(data=True) if d["name"] == "CUDA Graph 3"]
    assert len(g) == 1
    preds = [G.nodes[u]["name"] for u in G.predecessors(g[0]) if G.edges[u, g[0]]["kind"] == "launch"]
    assert preds == ["cudaGraphLaunch"]


def _rebuild_kernel_table(p, first: str | None = None, last: str | None = None) -> None:
    """Rebuild the kernel table of the SQLite export ``p`` with an extra column declared
    ``first`` (before the others) or ``last`` (after them), keeping every row."""
    import sqlite3

    con = sqlite3.connect(p)
    t = "CUPTI_ACTIVITY_KIND_KERNEL"
    decl = ", ".join(f'"{r[1]}"' for r in con.execute(f'PRAGMA table_info("{t}")'))
    cols = ", ".join(x for x in (first, decl, last) if x)
    con.execute(f"CREATE TABLE K2 ({cols})")
    con.execute(f'INSERT INTO K2 ({decl}) SELECT {decl} FROM "{t}"')
    con.execute(f'DROP TABLE "{t}"')
    con.execute(f'ALTER TABLE K2 RENAME TO "{t}"')
    con.commit()
    con.close()


def test_sqlite_generated_column_does_not_shift_values(tmp_path) -> None:
    """Audit #21: a table with a leading generated column (left out by PRAGMA table_info,
    returned by SELECT *) must read exactly as the same table without it."""
    from opgraph.ingest.readers import read_trace
    from opgraph.testing.synth_nsys import write_fixtures

    p = write_fixtures(tmp_path)["sqlite"]
    want = read_trace(p).events
    _rebuild_kernel_table(p, first="gen INTEGER GENERATED ALWAYS AS (5000109000) VIRTUAL")
    got = read_trace(p).events
    k = want["kind"] == "kernel"
    assert k.any()
    for c in ("ts_ns", "dur_ns", "device", "stream", "correlation", "name"):
        assert got.loc[got["kind"] == "kernel", c].tolist() == want.loc[k, c].tolist(), c


def test_sqlite_virtual_zeroblob_column_is_not_read(tmp_path) -> None:
    """Audit #16: a small export whose kernel table has a VIRTUAL generated column
    ``zeroblob(900000000)`` asked for 3.5 GB; generated columns are never read."""
    import tracemalloc

    from opgraph.ingest.readers import read_trace
    from opgraph.testing.synth_nsys import write_fixtures

    p = write_fixtures(tmp_path)["sqlite"]
    _rebuild_kernel_table(p, last="big BLOB GENERATED ALWAYS AS (zeroblob(900000000)) VIRTUAL")
    assert p.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        ev = read_trace(p).events
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (ev["kind"] == "kernel").any()
    assert peak < 200 << 20, peak


def test_nsys_json_args_do_not_depend_on_the_hash_seed() -> None:
    """The legacy nsys JSON reader keeps each activity's fields in first-seen order: the
    same args (and so the same re-exported trace) under any PYTHONHASHSEED."""
    import subprocess
    import sys

    code = ("from opgraph.ingest import read_trace; "
            "print(repr(read_trace('fixtures/nsys/synth.nsys.json').events['args'].tolist()))")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                           env={**__import__("os").environ, "PYTHONHASHSEED": str(seed)}, check=True).stdout
            for seed in (0, 1, 2, 3)}
    assert len(outs) == 1
