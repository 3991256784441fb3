"""Limits and unbounded work (bad-input audit of 2026-11-25, sections 7, 8, 9, 11, 16, 19;
docs/reliability.md, "Limits and unbounded work"). Every input is generated in the test.

- breakdown is O(n log n) on an n-deep chain of identical events and on n one-event threads;
- a repeated correlation id links each device activity to one launch (no launch x activity
  product), with the ``correlation_collision`` health warning;
- gzip input is decompressed incrementally under a cap (``OPGRAPH_MAX_DECOMPRESSED_BYTES``);
  rank ranges wider than 1,000,000 ranks are refused;
- DOT labels are cut and cleaned, so Graphviz accepts them; an empty picture selection is
  one line;
- the HTML report's JSON data block escapes ``<``, ``>`` and ``&``;
- the schemas' enums list every value the code can emit.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import tracemalloc
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, _run_cli, assert_one_line_error
from opgraph.analysis.device_breakdown import device_breakdown, device_breakdown_doc
from opgraph.analysis.host_breakdown import host_breakdown, host_breakdown_doc
from opgraph.model.tree import tree_depths
from opgraph.errors import OpgraphInputError
from opgraph.graph import build_graph
from opgraph.ingest.readers import read_trace

BASE = 1_700_000_000_000_000  # µs, an epoch-stamped trace


def _write(path: Path, events: list[dict], gz: bool = False) -> Path:
    data = json.dumps({"traceEvents": events}).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def _op(name: str, ts: int, dur: int, tid: int = 1, cat: str = "cpu_op", **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _kernel(name: str, ts: int, dur: int, corr: int, stream: int = 7) -> dict:
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
            "args": {"correlation": corr, "device": 0, "stream": stream}}


def _compact(entries: list[dict]) -> list:
    return [[e["name"], e["time_us"], e["count"], _compact(e.get("children", []))] for e in entries]


# ----------------------------------------------------------------------- #7 breakdown
def _small_trace() -> list[dict]:
    """One step; a 6-deep chain of identical ops, distinct nested ops launching kernels on
    two streams, and five one-event threads."""
    ev = [_op("ProfilerStep#1", BASE, 2000, cat="user_annotation")]
    for i in range(6):
        ev.append(_op("aten::same", BASE + 10 + i, 300 - 2 * i))
    for j in range(4):
        t = BASE + 400 + 300 * j
        ev.append(_op(f"aten::op{j % 2}", t, 200, **{"Input Dims": [[j, 2]]}))
        ev.append(_op("aten::inner", t + 20, 100))
        ev.append(_op("cudaLaunchKernel", t + 30, 20, cat="cuda_runtime", correlation=10 + j))
        ev.append(_kernel(f"void k{j % 3}<float>(int)", t + 60, 150 + 10 * j, 10 + j, stream=7 + j % 2))
    for k in range(5):
        ev.append(_op("aten::side", BASE + 50 * k, 40 + k, tid=100 + k))
    return ev


def _unacc(us: float) -> list:
    return ["Unaccounted", us, 0, []]


def test_tree_depths_match_a_walk_to_the_root() -> None:
    rng = np.random.default_rng(7)
    for _ in range(50):
        n = int(rng.integers(1, 80))
        perm = rng.permutation(n)
        par = np.full(n, -1, dtype=np.int64)
        for k in range(1, n):
            if rng.random() < 0.9:
                par[perm[k]] = perm[rng.integers(0, k)]
        want = []
        for i in range(n):
            d, x = 0, i
            while par[x] >= 0:
                x, d = par[x], d + 1
            want.append(d)
        assert tree_depths(par).tolist() == want
    chain = np.arange(-1, 100_000 - 1, dtype=np.int64)  # one 100,000-deep chain: log passes
    assert tree_depths(chain)[-1] == 100_000 - 1


def test_breakdown_small_case_same_numbers_as_before(tmp_path: Path) -> None:
    """Values produced by the quadratic implementation (main at bfcf03b) on this trace."""
    G = build_graph(read_trace(_write(tmp_path / "s.json", _small_trace())))
    host = host_breakdown_doc(host_breakdown(G), depth=10, top=5)
    by_tid = {t["tid"]: t for t in host["threads"]}
    assert [t["tid"] for t in host["threads"]] == [1, 104, 103, 102, 101, 100]
    assert [(t["busy_us"], t["events"]) for t in host["threads"]] == [(2000.0, 19)] + [(44.0 - k, 1) for k in range(5)]
    op = lambda name: [name, 400.0, 2, [["aten::inner", 200.0, 2, [["cudaLaunchKernel", 40.0, 2, [_unacc(40.0)]],  # noqa: E731
                                                                   _unacc(160.0)]], _unacc(200.0)]]
    chain = [["aten::same", 290.0, 1, [_unacc(290.0)]]]
    for us in (292.0, 294.0, 296.0, 298.0, 300.0):
        chain = [["aten::same", us, 1, chain + [_unacc(2.0)]]]
    assert _compact(by_tid[1]["entries"]) == [["ProfilerStep#*", 2000.0, 1,
                                               [op("aten::op0"), op("aten::op1"), *chain, _unacc(900.0)]]]
    assert _compact(by_tid[102]["entries"]) == [["aten::side", 42.0, 1, [_unacc(42.0)]], _unacc(1958.0)]
    dev = device_breakdown_doc(device_breakdown(G), depth=10)
    got = {s["stream"]: (s["device_us"], _compact(s["entries"])) for s in dev["streams"]}
    assert got == {
        7: (320.0, [["ProfilerStep#*", 320.0, 2, [["aten::op0", 320.0, 2, [["aten::inner", 320.0, 2, [
            ["k2", 170.0, 1, []], ["k0", 150.0, 1, []]]]]]]]]),
        8: (340.0, [["ProfilerStep#*", 340.0, 2, [["aten::op1", 340.0, 2, [["aten::inner", 340.0, 2, [
            ["k0", 180.0, 1, []], ["k1", 160.0, 1, []]]]]]]]]),
    }
    assert [(o["op"], o["count"], o["kernels"], o["device_us"], o["host_us"]) for o in dev["ops"]] == [
        ("aten::op1", 2, 2, 340.0, 400.0), ("aten::op0", 2, 2, 320.0, 400.0),
        ("aten::same", 1, 0, 0.0, 300.0), ("aten::side", 5, 0, 0.0, 210.0)]


def test_breakdown_of_20000_identical_events(tmp_path: Path) -> None:
    """20,000 identical events nest into a 20,000-deep chain (was O(n^2): 77 s at 10^5)."""
    n = 20_000
    p = _write(tmp_path / "i.json.gz", [_op("a", BASE, 5)] * n, gz=True)
    G = build_graph(read_trace(p))
    hb = host_breakdown(G)
    assert len(hb.paths) == n and hb.paths["depth"].max() == n - 1
    doc = host_breakdown_doc(hb, depth=3)
    (t,) = doc["threads"]
    assert t["events"] == n and t["busy_us"] == 5.0
    top = t["entries"][0]
    assert (top["name"], top["time_us"], top["count"]) == ("a", 5.0, 1)
    r = _run_cli(["breakdown", p, "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["threads"][0]["events"] == n


def test_breakdown_of_20000_one_event_threads(tmp_path: Path) -> None:
    """20,000 threads with one event each (the per-thread loop scanned every host event)."""
    n = 20_000
    p = _write(tmp_path / "t.json.gz", [_op("a", BASE + i, 5, tid=i) for i in range(n)], gz=True)
    hb = host_breakdown(build_graph(read_trace(p)))
    assert len(hb.threads) == n
    assert (hb.threads["busy_ns"] == 5000).all() and (hb.threads["events"] == 1).all()
    assert sorted(hb.threads["tid"].tolist()) == list(range(n))
    doc = host_breakdown_doc(hb, depth=2)
    assert len(doc["threads"]) == n
    assert all(th["entries"][0]["name"] == "a" and th["entries"][0]["time_us"] == 5.0 for th in doc["threads"])


def test_device_breakdown_under_a_20000_deep_chain(tmp_path: Path) -> None:
    """A kernel launched under 20,000 nested identical ops: its time rolls up to every
    ancestor (was one pandas groupby per level: 75 s)."""
    n = 20_000
    ev = [_op("a", BASE, 50)] * n + [_op("cudaLaunchKernel", BASE + 10, 5, cat="cuda_runtime", correlation=1),
                                     _kernel("k", BASE + 20, 5, 1)]
    db = device_breakdown(build_graph(read_trace(_write(tmp_path / "ck.json.gz", ev, gz=True))))
    ops = db.items[db.items["kind"] == "op"]
    assert len(ops) == n and (ops["time_ns"] == 5000).all() and (ops["activities"] == 1).all()
    doc = device_breakdown_doc(db, depth=3)
    (st,) = doc["streams"]
    assert st["device_us"] == 5.0 and st["entries"][0]["name"] == "a" and st["entries"][0]["time_us"] == 5.0
    assert [(o["op"], o["kernels"], o["device_us"]) for o in doc["ops"]] == [("a", 1, 5.0)]


# ----------------------------------------------------------------------- #8 correlation ids
def test_repeated_correlation_id_links_each_kernel_once(tmp_path: Path) -> None:
    """20,000 launches and 20,000 kernels on one correlation id: each kernel gets exactly one
    launch edge, from the latest launch at or before it (was a 20,000 x 20,000 merge)."""
    n = 20_000
    ev = []
    for i in range(n):
        ev.append(_op("cudaLaunchKernel", BASE + 10 * i, 2, cat="cuda_runtime", correlation=7))
        ev.append(_kernel("k", BASE + 10 * i + 3, 4, 7))
    p = _write(tmp_path / "c.json.gz", ev, gz=True)
    tracemalloc.start()
    try:
        G = build_graph(read_trace(p))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 30, f"peak {peak / 2**20:.0f} MiB"
    launch = [(u, v) for u, v, k in G.edges(data="kind") if k == "launch"]
    assert len(launch) == n
    ts = {u: d["ts"] for u, d in G.nodes(data=True)}
    kernels = [u for u, d in G.nodes(data=True) if d.get("kind") == "kernel"]
    into = {}
    for u, v in launch:
        assert v not in into
        into[v] = u
    assert set(into) == set(kernels)
    for v, u in into.items():  # the launch 3 µs before its kernel (the latest at or before it)
        assert ts[v] - ts[u] == 3000
    health = {h["code"]: h for h in G.graph["health"]}
    assert health["correlation_collision"]["count"] == n - 1
    r = _run_cli(["info", p])
    assert r.exit_code == 0, r.stderr
    assert "correlation_collision" in r.stdout and "19,999" in r.stdout


def test_correlation_clock_skew_falls_back_to_the_first_later_launch(tmp_path: Path) -> None:
    """A kernel that starts before every launch carrying its id still gets one launch."""
    ev = [_op("cudaLaunchKernel", BASE + 100, 2, cat="cuda_runtime", correlation=5),
          _op("cudaLaunchKernel", BASE + 200, 2, cat="cuda_runtime", correlation=5),
          _kernel("early", BASE + 50, 4, 5), _kernel("late", BASE + 250, 4, 5)]
    G = build_graph(read_trace(_write(tmp_path / "skew.json", ev)))
    name = {u: d.get("name") for u, d in G.nodes(data=True)}
    ts = {u: d["ts"] for u, d in G.nodes(data=True)}
    got = {name[v]: (ts[u] - BASE * 1000) // 1000 for u, v, k in G.edges(data="kind") if k == "launch"}
    assert got == {"early": 100, "late": 200}


# ----------------------------------------------------------------------- #16 size caps
def test_gzip_over_the_decompressed_cap_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from opgraph.ingest.source import decompress_gzip

    p = tmp_path / "bomb.json.gz"
    p.write_bytes(gzip.compress(b'{"traceEvents":[' + b" " * (20 << 20) + b"]}"))  # 20 MiB of spaces
    monkeypatch.setenv("OPGRAPH_MAX_DECOMPRESSED_BYTES", "1MiB")
    r = _run_cli(["info", p])
    assert_one_line_error(r, p, "decompresses to more than 1 MiB", "OPGRAPH_MAX_DECOMPRESSED_BYTES")
    monkeypatch.setenv("OPGRAPH_MAX_DECOMPRESSED_BYTES", "lots")
    assert_one_line_error(_run_cli(["info", p]), p, "OPGRAPH_MAX_DECOMPRESSED_BYTES", "positive number")
    monkeypatch.delenv("OPGRAPH_MAX_DECOMPRESSED_BYTES")
    # the cap is checked while decompressing: a 100 MB expansion stops at the cap
    big = gzip.compress(b"\0" * (100 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(OpgraphInputError, match="more than 4 MiB"):
            decompress_gzip(big, "x.gz", limit=4 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 80 << 20
    # under the cap: multi-member gzip, zero padding and exact-size output still read
    assert decompress_gzip(gzip.compress(b"ab") + b"\0\0" + gzip.compress(b"c"), "x.gz", limit=3) == b"abc"
    with pytest.raises(OpgraphInputError, match="corrupt gzip"):
        decompress_gzip(gzip.compress(b"abc") + b"junk", "x.gz")
    with pytest.raises(OpgraphInputError, match="corrupt gzip"):
        decompress_gzip(gzip.compress(b"abc" * 1000)[:20], "x.gz")


def test_gzip_under_the_cap_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = _write(tmp_path / "ok.json.gz", _small_trace(), gz=True)
    monkeypatch.setenv("OPGRAPH_MAX_DECOMPRESSED_BYTES", str(len(gzip.decompress(p.read_bytes()))))
    r = _run_cli(["info", p])
    assert r.exit_code == 0, r.stderr


def test_rank_ranges_wider_than_a_million_are_refused(tmp_path: Path) -> None:
    from opgraph.commands.critical_path import parse_ranks
    from opgraph.multirank.job import MAX_RANK_RANGE, RankRangeTooWide, parse_rank_set

    assert parse_rank_set(f"0-{MAX_RANK_RANGE - 1}") == set(range(MAX_RANK_RANGE))
    with pytest.raises(RankRangeTooWide):
        parse_rank_set(f"0-{MAX_RANK_RANGE}")
    with pytest.raises(RankRangeTooWide):
        parse_rank_set("0-3000000000")
    with pytest.raises(ValueError, match="--ranks"):
        parse_ranks("0-3000000000")
    fix = ROOT / "fixtures" / "multirank" / "seq"
    r = _run_cli(["build", fix / "rank0.json", fix / "rank1.json", "--keep", "0-2000000000",
                  "-o", tmp_path / "j.gpickle"])
    assert_one_line_error(r, "--keep", "0-2000000000", "1,000,000")
    job = tmp_path / "job.gpickle"
    r = _run_cli(["build", fix, "-o", job, "--workers", "1", "--keep", "0,2"])
    assert r.exit_code == 0, r.stderr
    r = _run_cli(["critical-path", job, "--ranks", "0-3000000000"])
    assert_one_line_error(r, job, "--ranks", "0-3000000000", "1,000,000")


# ----------------------------------------------------------------------- #19 DOT
def test_dot_with_control_characters_and_a_1mb_name_renders(tmp_path: Path) -> None:
    evil = 'aten::evil\x00\x1b[31m\x07"quote"\\back<b>&amp;</b>\u202e\x85\r\n end\\'
    huge = "void k<" + "x" * 1_000_000 + ">(int)"
    ev = [_op("ProfilerStep#1", BASE, 1000, cat="user_annotation")]
    for i, name in enumerate((evil, huge)):
        t = BASE + 10 + 100 * i
        ev += [_op(name, t, 50), _op("cudaLaunchKernel", t + 5, 10, cat="cuda_runtime", correlation=100 + i),
               _kernel(name, t + 20, 30, 100 + i)]
    p = _write(tmp_path / "names.json", ev)
    out = tmp_path / "g.dot"
    r = _run_cli(["export", p, "--dot", out])
    assert r.exit_code == 0, r.stderr
    text = out.read_text(encoding="utf-8")
    assert len(text) < 50_000  # names are cut to 200 characters (+ "…")
    assert "\x00" not in text and "\x1b" not in text and "\x07" not in text
    assert "void k<" + "x" * 193 + "…" in text and "x" * 194 not in text  # tooltip: 200 characters + "…"
    dot = shutil.which("dot") or "/usr/bin/dot"
    if not Path(dot).exists():
        pytest.skip("Graphviz dot is not installed")
    pr = subprocess.run([dot, "-Tsvg", str(out)], capture_output=True, timeout=120)
    assert pr.returncode == 0, pr.stderr.decode(errors="replace")
    svg = pr.stdout.decode("utf-8")
    assert "evil\\x00\\x1b[31m\\x07&quot;quote&quot;\\back" in svg  # visible escapes, text kept
    pn = subprocess.run(["neato", "-n2", "-Tsvg", str(out)], capture_output=True, timeout=120)
    assert pn.returncode == 0, pn.stderr.decode(errors="replace")


def test_empty_picture_selection_is_one_line(tmp_path: Path) -> None:
    """Only python frames outside any op: --collapse op draws nothing."""
    p = _write(tmp_path / "py.json", [_op("a.py(1): f", BASE, 1000, cat="python_function"),
                                      _op("a.py(2): g", BASE + 100, 500, cat="python_function")])
    for fmt, extra in (("--svg", ["--critical-only"]), ("--dot", ["--critical-only"]), ("--dot", [])):
        r = _run_cli(["export", p, fmt, tmp_path / f"x.{fmt[2:]}", *extra, "--collapse", "op"])
        line = assert_one_line_error(r, p, "selection is empty", "--collapse op")
        assert "syntax error" not in line
        assert not (tmp_path / f"x.{fmt[2:]}").exists()
    r = _run_cli(["export", p, "--dot", tmp_path / "ok.dot"])
    assert r.exit_code == 0 and (tmp_path / "ok.dot").exists()


# ----------------------------------------------------------------------- #11 HTML
class _Scripts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[tuple[dict, str]] = []
        self._cur: dict | None = None
        self._text = ""

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self._cur, self._text = dict(attrs), ""

    def handle_data(self, data):
        if self._cur is not None:
            self._text += data

    def handle_endtag(self, tag):
        if tag == "script" and self._cur is not None:
            self.scripts.append((self._cur, self._text))
            self._cur = None


def _strings(x) -> set[str]:
    if isinstance(x, str):
        return {x}
    if isinstance(x, dict):
        return set().union(*(_strings(v) | _strings(k) for k, v in x.items())) if x else set()
    if isinstance(x, list):
        return set().union(*(_strings(v) for v in x)) if x else set()
    return set()


def test_html_data_block_survives_script_and_comment_names(tmp_path: Path) -> None:
    from opgraph.export.html.report import script_json

    names = ["aten::<!--<script>", "aten::</script><b>x</b>", "aten::a&b>c"]
    ev = [_op("ProfilerStep#1", BASE, 1000, cat="user_annotation")]
    for i, nm in enumerate(names):
        t = BASE + 10 + 300 * i
        ev += [_op(nm, t, 250), _op("cudaLaunchKernel", t + 5, 10, cat="cuda_runtime", correlation=50 + i),
               _kernel(f"void {nm}_k<float>()", t + 20, 200, 50 + i)]
    p = _write(tmp_path / "h.json", ev)
    out = tmp_path / "r.html"
    r = _run_cli(["report", p, "--html", out])
    assert r.exit_code == 0, r.stderr
    text = out.read_text(encoding="utf-8")
    parser = _Scripts()
    parser.feed(text)
    kinds = [(a.get("type"), a.get("id")) for a, _ in parser.scripts]
    assert kinds == [("application/json", "opgraph-data"), (None, None)], kinds  # nothing swallowed
    data_text = parser.scripts[0][1]
    assert "<" not in data_text and ">" not in data_text and "&" not in data_text
    data = json.loads(data_text)
    got = _strings(data)
    for nm in names:
        assert nm in got, nm
    assert "var D = JSON.parse" in parser.scripts[1][1]
    doc = {"a": "<!--<script></script>&", "<k>": [1, "x>y"]}
    assert json.loads(script_json(doc)) == doc


# ----------------------------------------------------------------------- #9 schema enums
def _enums(schema: dict, key: str) -> list[list]:
    out: list[list] = []

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k == key and isinstance(v, dict) and "enum" in v:
                    out.append(v["enum"])
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(schema)
    return out


def _schema(name: str) -> dict:
    return json.loads((ROOT / "schemas" / name).read_text())


def test_schema_enums_list_every_value_the_code_emits() -> None:
    from opgraph.analysis.critical_path.boundary_edges import CATEGORIES
    from opgraph.analysis.steps import STEP_SOURCES
    from opgraph.graph.windows import STEP_MARKERS, WINDOW_SOURCES
    from opgraph.graph.build import EDGE_KINDS
    from opgraph.model.table import NODE_KINDS

    assert {m[2] for m in STEP_MARKERS} <= set(WINDOW_SOURCES)
    assert "nvtx_iteration" in STEP_SOURCES and "none" in STEP_SOURCES and "all" not in STEP_SOURCES
    found = 0
    for path in sorted((ROOT / "schemas").glob("*.schema.json")):
        for enum in _enums(json.loads(path.read_text()), "step_source"):
            found += 1
            assert set(STEP_SOURCES) <= set(enum), (path.name, sorted(set(STEP_SOURCES) - set(enum)))
    assert found >= 4  # summary, iterations, breakdown, overheads
    for enum in _enums(_schema("critical-path.schema.json"), "category"):
        assert set(CATEGORIES) <= set(enum)
    for enum in _enums(_schema("perfetto-trace.schema.json"), "opgraph.bound_by"):
        assert set(CATEGORIES) <= set(enum)
    g = _schema("opgraph-graph.schema.json")
    kinds = _enums(g, "kind")
    assert any(set(NODE_KINDS) <= set(e) for e in kinds)
    assert any(set(EDGE_KINDS) <= set(e) for e in kinds)


def test_summary_json_validates_with_nvtx_iteration_steps(tmp_path: Path) -> None:
    """Steps from NVTX ``Iteration N`` ranges (step_source nvtx_iteration)."""
    ev = []
    for i in range(3):
        t = BASE + 1000 * i
        ev += [_op(f"Iteration {i}", t, 900, cat="user_annotation"), _op("aten::mm", t + 10, 300),
               _op("cudaLaunchKernel", t + 20, 10, cat="cuda_runtime", correlation=1 + i),
               _kernel("gemm", t + 40, 400, 1 + i)]
    p = _write(tmp_path / "nvtx.json", ev)
    r = _run_cli(["summary", p, "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["window"]["step_source"] == "nvtx_iteration"
    assert re.search(r"steps", json.dumps(doc))


def test_plain_input_over_the_cap_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain (not gzip) trace larger than the cap is refused before it is read (#16)."""
    p = tmp_path / "big.json"
    p.write_bytes(b'{"traceEvents":[' + b" " * (2 << 20) + b"]}")
    monkeypatch.setenv("OPGRAPH_MAX_DECOMPRESSED_BYTES", "1MiB")
    assert_one_line_error(_run_cli(["info", p]), p, "over the 1 MiB input cap", "OPGRAPH_MAX_DECOMPRESSED_BYTES")
    from opgraph.export.perfetto.check import check_chrome_trace

    assert check_chrome_trace(p) == [f"cannot read the trace: {p}: is 2 MiB, over the 1 MiB input cap (set "
                                     "OPGRAPH_MAX_DECOMPRESSED_BYTES to raise it)"]


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_as_input_is_refused(tmp_path: Path) -> None:
    """A FIFO as input would block forever: one line, exit 2, nothing read (#17)."""
    import os

    f = tmp_path / "trace.json"
    os.mkfifo(f)
    g = tmp_path / "graph.gpickle"
    os.mkfifo(g)
    for cmd in (["info", f], ["build", f, "-o", tmp_path / "g.gpickle"], ["critical-path", f]):
        assert_one_line_error(_run_cli(cmd), f, "not a regular file")
    assert_one_line_error(_run_cli(["idle", g]), g, "not a regular file")
    from opgraph.export.perfetto.check import check_chrome_trace

    assert "not a regular file" in check_chrome_trace(f)[0]


def test_deep_extra_key_is_cut_so_the_saved_graph_loads(tmp_path: Path) -> None:
    """A Kineto event with a non-standard top-level key nested 40 levels deep: the reader
    cuts it like args (it used to cut only args, so build saved a graph the loader refused)."""
    deep: dict = {}
    x = deep
    for _ in range(40):
        x["a"] = {}
        x = x["a"]
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1,
                                              "ts": 1, "dur": 5, "weird": deep}]}))
    g = tmp_path / "g.gpickle"
    assert _run_cli(["build", p, "-o", g]).exit_code == 0
    r = _run_cli(["info", g])
    assert r.exit_code == 0 and "args_too_deep" in r.stdout
