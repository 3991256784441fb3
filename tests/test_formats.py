"""Format detection by content, ``--format``, ``info`` on every format, the input schemas,
and one-line errors (exit 2) for bad input of each format."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from opgraph.ingest.readers import FORMATS, detect_format, parse_trace_doc, read_trace
from opgraph.ingest.source import SQLITE_MAGIC, read_source

ROOT = Path(__file__).resolve().parents[1]
TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
needs_traces = pytest.mark.skipif(not TRACES.is_dir(), reason=f"real traces not available: {TRACES}")

FIXTURES = {
    "fixtures/nsys/synth.nsys.json": "nsys-json",
    "fixtures/nsys/synth.nsys.sqlite": "nsys-sqlite",
    "fixtures/dvdt/synth.dvdt.json": "dvdt",
    "fixtures/dvdt/synth_ck.dvdt.json": "dvdt",
    "fixtures/dvdt/clintercept_trace.json": "clintercept",
    "fixtures/dvdt/clintercept_stages_trace.json": "clintercept",
}


def _detect(path: Path) -> str:
    src = read_source(path)
    doc = None if src.data.startswith(SQLITE_MAGIC) else parse_trace_doc(src)
    return detect_format(src.data, doc)


def _real_files() -> list[tuple[Path, str]]:
    if not TRACES.is_dir():
        return []
    out = []
    for sub, fmt in (("B_et", "pytorch-et"), ("E_dlrm_study", "pytorch-et"), ("C_nsys", None)):
        for p in sorted((TRACES / sub).iterdir()):
            out.append((p, fmt or ("nsys-csv" if p.suffix == ".csv" else "nsys-sqlite")))
    # the small Kineto traces (bare arrays, 2021 categories, ...) must stay "kineto"
    for p in sorted((TRACES / "A_kineto").iterdir()):
        if p.stat().st_size < 60_000:
            out.append((p, "kineto"))
    return out


REAL = _real_files()


@pytest.mark.parametrize("rel,fmt", sorted(FIXTURES.items()))
def test_detect_fixtures(rel: str, fmt: str) -> None:
    assert _detect(ROOT / rel) == fmt
    assert read_trace(ROOT / rel).meta["format"] == fmt


@needs_traces
@pytest.mark.real_traces
@pytest.mark.parametrize("path,fmt", REAL, ids=[p.name for p, _ in REAL])
def test_detect_real(path: Path, fmt: str) -> None:
    assert _detect(path) == fmt


@pytest.mark.parametrize("rel", sorted(FIXTURES))
def test_info_every_format(rel: str, cli) -> None:
    from opgraph.schemas_util import validate

    r = cli(["info", str(ROOT / rel), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "info.schema.json")
    assert doc["source"]["format"] == FIXTURES[rel]
    assert doc["nodes_by_kind"].get("kernel", 0) > 0


@needs_traces
@pytest.mark.real_traces
@pytest.mark.parametrize("name", ["pipit_nbody_nvtx_pushpop_trace.csv", "pipit_saxpy_mpi_cuda_perlmutter.sqlite"])
def test_info_real_nsys(name: str, cli) -> None:
    r = cli(["info", str(TRACES / "C_nsys" / name)])
    assert r.exit_code == 0, r.stderr


@needs_traces
@pytest.mark.real_traces
def test_info_real_et(cli) -> None:
    r = cli(["info", str(TRACES / "B_et" / "param_pt2_compile_et_1.1.1.json"), "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["source"]["format"] == "pytorch-et"


@pytest.mark.parametrize("rel", ["fixtures/nsys/synth.nsys.sqlite", "fixtures/nsys/synth.nsys.json",
                                 "fixtures/dvdt/synth_ck.dvdt.json", "fixtures/dvdt/clintercept_trace.json"])
def test_critical_path_and_idle_every_gpu_format(rel: str, cli) -> None:
    from opgraph.schemas_util import validate

    for cmd, schema in (("critical-path", "critical-path.schema.json"), ("idle", "idle.schema.json")):
        r = cli([cmd, str(ROOT / rel), "--json"])
        assert r.exit_code == 0, r.stderr
        validate(json.loads(r.stdout), schema)


def test_format_override(tmp_path: Path) -> None:
    # a CLIntercept trace forced through the Kineto reader: no categories -> no nodes
    t = read_trace(ROOT / "fixtures/dvdt/clintercept_trace.json", format="kineto")
    assert t.meta["format"] == "kineto"
    assert not t.events["kind"].isin(["kernel", "runtime"]).any()
    with pytest.raises(Exception, match="unknown --format"):
        read_trace(ROOT / "fixtures/dvdt/synth.dvdt.json", format="nope")
    assert set(FORMATS) >= {"kineto", "nsys-sqlite", "nsys-json", "nsys-csv", "dvdt", "clintercept", "pytorch-et"}


def test_cli_format_option(cli, tmp_path: Path) -> None:
    r = cli(["build", str(ROOT / "fixtures/nsys/synth.nsys.json"), "--format", "nsys-json",
             "-o", str(tmp_path / "g.gpickle")])
    assert r.exit_code == 0, r.stderr


@pytest.mark.parametrize("name", ["et.schema.json", "nsys-json.schema.json", "dvdt.schema.json",
                                  "nvtx.schema.json", "enqueue-stats.schema.json"])
def test_schemas_are_valid(name: str) -> None:
    import jsonschema

    from opgraph.schemas_util import load_schema
    jsonschema.Draft202012Validator.check_schema(load_schema(name))


def test_input_schemas_accept_fixtures() -> None:
    from opgraph.ingest.validate import first_error

    for line in (ROOT / "fixtures/nsys/synth.nsys.json").read_text().splitlines():
        assert first_error(json.loads(line), "nsys-json.schema.json") is None
    for rec in json.loads((ROOT / "fixtures/dvdt/synth.dvdt.json").read_text()):
        assert first_error(rec, "dvdt.schema.json") is None


# --------------------------------------------------------------------------- bad input, per format
def _nsys_lines() -> list[str]:
    return (ROOT / "fixtures/nsys/synth.nsys.json").read_text().splitlines()


def _dvdt() -> list[dict]:
    return json.loads((ROOT / "fixtures/dvdt/synth.dvdt.json").read_text())


def _bad_cases() -> dict[str, tuple[str, bytes, tuple[str, ...]]]:
    lines = _nsys_lines()
    broken = lines[:]
    broken[7] = broken[7][:-9]
    nvtx_no_ts = [json.loads(x) for x in lines]
    for r in nvtx_no_ts:
        if "NvtxEvent" in r:
            del r["NvtxEvent"]["Timestamp"]
            break
    d1 = _dvdt()
    next(r for r in d1 if r["call"] == "clEnqueueReadBuffer").pop("profiling")
    d2 = _dvdt()
    next(r for r in d2 if r["call"] == "clSetKernelArg").pop("arg_index")
    sqlite = (ROOT / "fixtures/nsys/synth.nsys.sqlite").read_bytes()
    cl = (ROOT / "fixtures/dvdt/clintercept_trace.json").read_bytes()
    return {
        "nsys_sqlite_truncated": ("t.sqlite", sqlite[: len(sqlite) // 2], ("truncated",)),
        "nsys_sqlite_gz_truncated": ("t.sqlite.gz", gzip.compress(sqlite[:30000]), ("truncated",)),
        "nsys_json_broken_line": ("b.json", ("\n".join(broken) + "\n").encode(), ("line 8",)),
        "nsys_json_missing_field": ("m.json", ("\n".join(json.dumps(r) for r in nvtx_no_ts) + "\n").encode(),
                                    ("timestamp",)),
        "dvdt_missing_profiling": ("p.json", json.dumps(d1).encode(), ("profiling",)),
        "dvdt_setarg_without_index": ("a.json", json.dumps(d2).encode(), ("arg_index",)),
        "dvdt_ck_bad_list": ("ck.json", json.dumps({"characteristics_list": [{"run": {"dvdt_prof": 5}}]}).encode(),
                             ("dvdt_prof",)),
        "clintercept_bad_event": ("c.json", cl.replace(b'"dur":6.000', b'"dur":"x"', 1), ("'dur'",)),
        "et_node_without_name": ("e.json", json.dumps({"schema": "1.0.1", "pid": 1, "nodes": [
            {"id": 1, "parent": 0}]}).encode(), ("name",)),
        "nsys_csv_bad_number": ("n.csv", b"Start (ns),End (ns),Duration (ns),Name,PID,TID\n1,x,1,a,2,3\n",
                                ("end (ns)",)),
    }


BAD = _bad_cases()


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_one_line(case: str, tmp_path: Path, cli, one_line_error) -> None:
    fname, data, words = BAD[case]
    p = tmp_path / fname
    p.write_bytes(data)
    for args in (["build", str(p), "-o", str(tmp_path / "g.gpickle")], ["info", str(p)]):
        one_line_error(cli(args), p, *words)
    assert not (tmp_path / "g.gpickle").exists()


@pytest.mark.parametrize("rel", sorted(FIXTURES))
def test_node_link_roundtrip(rel: str, cli, tmp_path: Path) -> None:
    """Every format saves as node-link JSON that validates and loads back."""
    out = tmp_path / "g.json.gz"
    r = cli(["build", str(ROOT / rel), "-o", str(out)])
    assert r.exit_code == 0, r.stderr
    r = cli(["info", str(out), "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["source"]["format"] == FIXTURES[rel]


@pytest.mark.parametrize("doc, expected", [
    ([], "kineto"), ([None], "unknown"), ([{"ph": "X", "name": "a", "id": 1, "inputs": []}], "kineto"),
    ([{"call": "x", "timestamp": 1, "name": "a", "id": 1, "inputs": []}], "dvdt"),
    ({"nodes": [], "schema": 1, "directed": True, "edges": []}, "opgraph-graph"),
    ({"traceEvents": [], "directed": True, "nodes": [], "edges": []}, "kineto"),
    ({"characteristics_list": [], "nodes": [], "pid": 1}, "pytorch-et"),
    ({"data": []}, "nsys-json"), ({"type": "String"}, "nsys-json"), ([1, 2], "unknown"), ({"a": 1}, "unknown"),
])
def test_reader_registry_order(doc, expected) -> None:
    """The readers' sniffs are tried in the registry's order: documents that two of them
    could claim go to the same format as before the registry (one content test each)."""
    from opgraph.ingest.readers import READERS

    assert detect_format(b"{}", doc) == expected
    assert FORMATS == tuple(r.name for r in READERS)
