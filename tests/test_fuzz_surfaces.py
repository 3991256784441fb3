"""Fuzz suite for the newer surfaces (docs/reliability.md, "Fuzzing the newer surfaces"):
table outputs, device files, job folders, ``--workers``/``--scheduler``, capture files and
the Python API, with generated cases.

The contract (the same as tests/test_fuzz.py): a command exits 0, or 2 with exactly one
line on stderr starting ``opgraph: error: ``; never a traceback, exit 1 or ``internal
error``; no input modified; no partial or temporary output file; no hang (each case is
bounded). An API call returns, or raises ``TypeError``, ``ValueError`` or
:class:`~opgraph.errors.OpgraphInputError` with a one-line message. The hypothesis tests
use the derandomized ``opgraph-fuzz`` profile, so runs are reproducible.
"""

from __future__ import annotations

import json
import math
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, CliResult, _run_cli, same_values
from opgraph.catalog.entries import ANALYSES as CATALOG

SYNTH = ROOT / "fixtures" / "synth" / "gpu_bound.json"
CUDA_GRAPH = ROOT / "fixtures" / "synth" / "cuda_graph.json"
JOB = ROOT / "fixtures" / "multirank" / "seq"
DEVICES = json.loads((ROOT / "opgraph" / "devices" / "devices.json").read_text())
H100 = next(e for e in DEVICES["devices"] if e["name"] == "H100 SXM")

FUZZ = settings(max_examples=30, deadline=None, derandomize=True, database=None, print_blob=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])


@pytest.fixture(autouse=True)
def _no_device_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPGRAPH_DEVICES", raising=False)


def check(r: CliResult, what: str, inputs: dict[Path, bytes], folder: Path) -> None:
    """The contract for one CLI run; ``inputs``: every input file and its bytes before."""
    where = f"{what}: exit {r.exit_code}, stderr={r.stderr[:500]!r}"
    assert r.exception is None, f"{where}: {r.exception!r}"
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, where
    assert r.exit_code in (0, 2), where
    if r.exit_code == 2:
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("opgraph: error: "), where
    for p, before in inputs.items():
        assert p.read_bytes() == before, f"{what}: input {p.name} modified"
    left = [p.name for p in folder.rglob("*") if ".part" in p.name]
    assert not left, f"{what}: temporary files left: {left}"


def json_values() -> st.SearchStrategy:
    scalars = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
               | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
               | st.sampled_from([0, -1, 1e308, 1e-308, 2**63, 1e5, 100000.5]))
    return st.recursive(scalars, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids,
                                                                                           max_size=3), max_leaves=5)


# --------------------------------------------------------------------------- device files
DEVICE_KEYS = ("name", "vendor", "aliases", "peak_tflops", "peak_tflops_sparse", "peak_tflops_vector", "dram_gbps",
               "memory_gb", "memory_variants_gb", "num_sms", "arch", "source", "family")
DEVICE_COMMANDS = (["report"], ["shapes"], ["devices"], ["report", "--json"])


@settings(FUZZ, max_examples=40)
@given(key=st.sampled_from(DEVICE_KEYS + tuple(f"peak_tflops.{k}" for k in ("bf16", "fp8", "fp4", "xx"))),
       value=json_values() | st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400"]), which=st.integers(0, 3),
       clone=st.booleans())
def test_fuzz_device_file_fields(key: str, value: Any, which: int, clone: bool) -> None:
    e = json.loads(json.dumps(H100))
    token = value if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity", "1e400") else None
    holder, k = (e["peak_tflops"], key.split(".", 1)[1]) if "." in key else (e, key)
    holder[k] = 424242.25 if token else value
    entries = [e, dict(json.loads(json.dumps(H100)), name="H100 Clone")] if clone else [e]
    text = json.dumps(dict(DEVICES, devices=entries))
    if token:
        text = text.replace("424242.25", token)
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        t = folder / "t.json"
        shutil.copy(SYNTH, t)
        dev = folder / "dev.json"
        dev.write_text(text)
        args = DEVICE_COMMANDS[which]
        r = _run_cli([*args, *([str(t)] if args[0] != "devices" else []), "--device-file", str(dev)])
        check(r, f"device file {key}={value!r:.40}", {t: t.read_bytes(), dev: dev.read_bytes()}, folder)
        if r.exit_code == 2:
            assert str(dev) in r.stderr and "device file" in r.stderr, r.stderr
        else:  # accepted: every figure is a finite positive number within the bounds
            from opgraph.devices.peaks import load_device_file
            for dv in load_device_file(dev):
                for table in (dv.peak_tflops, dv.peak_tflops_sparse):
                    assert all(v is None or (math.isfinite(v) and 0 < v <= 1e5) for v in table.values())
                assert 0 < dv.dram_gbps <= 1e5


@settings(FUZZ, max_examples=20)
@given(edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=5))
def test_fuzz_device_file_bytes(edits: list) -> None:
    data = bytearray(json.dumps(dict(DEVICES, devices=[H100])).encode())
    for pos, byte in edits:
        data[int(pos * len(data))] = byte
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        t = folder / "t.json"
        shutil.copy(SYNTH, t)
        dev = folder / "dev.json"
        dev.write_bytes(bytes(data))
        r = _run_cli(["shapes", str(t), "--device-file", str(dev)])
        check(r, "device file bytes", {t: t.read_bytes(), dev: bytes(data)}, folder)


# --------------------------------------------------------------------------- table outputs
TABLE_COMMANDS = ("kernels", "report", "categories", "breakdown", "summary", "sequences", "launch-stats", "shapes",
                  "iterations", "idle")
NAME_CHARS = st.characters(codec="utf-8") | st.sampled_from(["\r", "\n", "\x00", "\x1b", "=", "+", "-", "@", "\t",
                                                             '"', ",", "'"])


@settings(FUZZ, max_examples=40)
@given(command=st.sampled_from(TABLE_COMMANDS), name=st.text(NAME_CHARS, min_size=1, max_size=12),
       target=st.sampled_from(["csv", "xlsx", "csv-json", "xlsx-trace", "xlsx-device", "csv-device", "parquet"]))
def test_fuzz_table_outputs(command: str, name: str, target: str) -> None:
    pytest.importorskip("openpyxl")
    doc = json.loads(SYNTH.read_text())
    for e in doc["traceEvents"]:
        if e.get("cat") in ("kernel", "cpu_op"):
            e["name"] = name + e["name"][:3]
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        t = folder / "t.json"
        t.write_text(json.dumps(doc))
        dev = folder / "dev.json"
        dev.write_text(json.dumps(dict(DEVICES, devices=[H100])))
        out = folder / "out"
        extra = ["--device-file", str(dev)] if command in ("report", "shapes") else []
        inputs = {t: t.read_bytes(), **({dev: dev.read_bytes()} if extra else {})}
        argv = {"csv": ["--csv", str(out)], "xlsx": ["--xlsx", str(out / "o.xlsx")], "csv-json": ["--csv", "-", "--json"],
                "xlsx-trace": ["--xlsx", str(t)], "xlsx-device": ["--xlsx", str(dev)],
                "csv-device": ["--csv", str(folder)], "parquet": ["--parquet", str(out)]}[target]
        if target == "parquet":
            pytest.importorskip("pyarrow")
        r = _run_cli([command, str(t), *extra, *argv])
        check(r, f"{command} {target} {name!r}", inputs, folder)
        if target in ("csv-json", "xlsx-trace"):
            assert r.exit_code == 2
        if target == "xlsx-device" and command in ("report", "shapes"):
            assert r.exit_code == 2 and "device file" in r.stderr
        if target == "csv" and r.exit_code == 0:
            import csv
            import io
            for f in out.glob("*.csv"):  # no row split by a line break: every record has the header's width
                rows = list(csv.reader(io.StringIO(f.read_bytes().decode(), newline="")))
                assert all(len(row) == len(rows[0]) for row in rows), f"{f.name}: a row split in two"
                assert all(not c.startswith(("=", "+", "@")) for row in rows[1:] for c in row
                           if not c.lstrip("+-").replace(".", "", 1).replace("e", "", 1).isdigit()), f.name


# --------------------------------------------------------------------------- job folders
CLAIMS = st.sampled_from(["own", "own", "other", "none", 2**31, 2**62, 10**6, -1, "x", 3.5])


@pytest.mark.timeout(900)
@settings(FUZZ, max_examples=12)
@given(claims=st.lists(CLAIMS, min_size=4, max_size=4), copy=st.booleans(), drop=st.integers(-1, 3),
       command=st.sampled_from([["idle", "--json"], ["critical-path"], ["kernels", "--json"], ["stragglers"]]))
def test_fuzz_job_folders(claims: list, copy: bool, drop: int, command: list[str]) -> None:
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        job = folder / "job"
        shutil.copytree(JOB, job)
        for i, c in enumerate(claims):
            p = job / f"rank{i}.json"
            doc = json.loads(p.read_text())
            if c == "none":
                doc.pop("distributedInfo", None)
            elif c != "own":
                doc["distributedInfo"]["rank"] = (i + 1) % 4 if c == "other" else c
            p.write_text(json.dumps(doc))
        if copy:
            shutil.copy(job / "rank0.json", job / "extra.json")
        if drop >= 0:
            (job / f"rank{drop}.json").unlink()
        inputs = {p: p.read_bytes() for p in job.iterdir()}
        r = _run_cli([command[0], str(job), *command[1:], "--workers", "2"])
        what = f"job {claims} copy={copy} drop={drop} {command}"
        check(r, what, inputs, folder)
        # the oracle: the rank each file stands for (distributedInfo.rank when it is an int >= 0,
        # else the file name's); a rank claimed twice or past 999,999 must be refused
        def rank_of(i: int, named: bool) -> int | None:
            c = claims[i]
            if c == "own":
                return i
            if c == "other":
                return (i + 1) % 4
            if isinstance(c, int) and not isinstance(c, bool) and c >= 0:
                return c
            return i if named else None
        ranks = [rank_of(i, True) for i in range(4) if i != drop]
        if copy:
            ranks.append(rank_of(0, False))
        known = [x for x in ranks if x is not None]
        if len(set(known)) < len(known) or any(x > 999_999 for x in known):
            assert r.exit_code == 2, f"{what}: ranks {ranks} accepted"


# --------------------------------------------------------------------------- --workers / --scheduler
def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.timeout(300)
@settings(FUZZ, max_examples=30)
@given(workers=st.none() | st.sampled_from(["0", "-1", "x", "1e3", "99999999999999999999", "1"]),
       scheduler=st.none() | st.sampled_from(["foo", "tcp://", "tcp://[::1", "inproc://x", "tls://127.0.0.1:1",
                                               "ucx://127.0.0.1:1", "http://127.0.0.1:9", "tcp://127.0.0.1:0",
                                               "tcp://127.0.0.1:65536", "CLOSED", "[::1]:CLOSED"])
       | st.text(st.characters(blacklist_characters=":"), max_size=10),
       command=st.sampled_from(["idle", "critical-path", "summary", "build"]))
def test_fuzz_workers_and_scheduler(workers: str | None, scheduler: str | None, command: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        argv = [command, str(JOB)] + (["-o", str(folder / "j.gpickle")] if command == "build" else [])
        if workers is not None:
            argv += ["--workers", workers]
        if scheduler is not None:
            scheduler = scheduler.replace("CLOSED", str(_closed_port()))
            argv += ["--scheduler", scheduler]
        r = _run_cli(argv)
        assert r.exception is None and "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
        assert r.exit_code in (0, 2), r.stderr
        if scheduler:  # no scheduler answers in these cases
            assert r.exit_code == 2
        if r.exit_code == 2 and workers != "1" or scheduler:
            assert not (folder / "j.gpickle").exists()


# --------------------------------------------------------------------------- capture files
_CAP_CALLS = st.sampled_from(["cudaStreamBeginCapture", "cudaStreamEndCapture", "cudaLaunchKernel",
                              "cudaLaunchKernel", "cudaMemcpyAsync", "cudaStreamBeginCapture_v2"])


@pytest.mark.timeout(300)
@settings(FUZZ, max_examples=30)
@given(calls=st.lists(st.tuples(_CAP_CALLS, st.integers(1, 2)), min_size=1, max_size=80),
       deep=st.sampled_from([0, 0, 0, 40, 5000]))
def test_fuzz_capture_files(calls: list, deep: int) -> None:
    ev = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamBeginCapture", "pid": 1, "tid": 1, "ts": i,
           "dur": 0, "args": {"correlation": 10**6 + i}} for i in range(deep)]
    for i, (name, tid) in enumerate(calls):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": tid, "ts": deep + 10 * i,
                   "dur": 3, "args": {"correlation": 1 + i, "kernel": f"k{i % 7}"}})
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        cap = folder / "cap.json"
        cap.write_text(json.dumps({"traceEvents": ev}))
        inputs = {cap: cap.read_bytes(), }
        r = _run_cli(["build", str(CUDA_GRAPH), "--capture", str(cap), "-o", str(folder / "g.gpickle")])
        check(r, f"capture {len(calls)} calls, {deep} nested", inputs, folder)
        if deep > 32:
            assert r.exit_code == 2 and "nested" in r.stderr
        begins = sum(1 for n, _ in calls if "Begin" in n) + deep
        ends = sum(1 for n, _ in calls if "End" in n)
        if r.exit_code == 0:
            from opgraph.graph.graph_replay import captured_graphs
            from opgraph.ingest.readers import read_trace
            assert len(captured_graphs(read_trace(cap))) <= min(begins, ends)


# --------------------------------------------------------------------------- raw args
_ARG_SCALARS = (st.integers(min_value=-(10**40), max_value=10**40) | st.sampled_from([2**63, 2**64 - 1, 2**64,
                -(2**63) - 1, 10**19, 5e-324, 1e308, -0.0]) | st.floats(allow_nan=False, allow_infinity=False)
                | st.text(st.sampled_from("0123456789-.e\"x"), max_size=30) | st.booleans() | st.none())
_ARG_VALUES = st.recursive(_ARG_SCALARS, lambda kids: st.lists(kids, max_size=3)
                           | st.dictionaries(st.text("abcxyz", min_size=1, max_size=3), kids, max_size=3), max_leaves=8)


@settings(FUZZ, max_examples=25)
@given(args=st.dictionaries(st.text("pqrs", min_size=1, max_size=2), _ARG_VALUES, min_size=1, max_size=4),
       writer=st.sampled_from(["perfetto", "augment", "node-link"]))
def test_fuzz_raw_args_are_written_exactly(args: dict, writer: str) -> None:
    doc = json.loads(SYNTH.read_text())
    kernel = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")
    kernel["args"] = {**kernel.get("args", {}), "fuzz": args}
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        t = folder / "t.json"
        t.write_text(json.dumps(doc))
        out = folder / ("g.json" if writer == "node-link" else "o.json")
        argv = {"perfetto": ["export", str(t), "--perfetto", str(out)], "augment": ["augment", str(t), "-o", str(out)],
                "node-link": ["build", str(t), "-o", str(out)]}[writer]
        r = _run_cli(argv)
        check(r, f"raw args {writer}", {t: t.read_bytes()}, folder)
        assert r.exit_code == 0, r.stderr
        written = []

        def walk(v: Any) -> None:
            if isinstance(v, dict):
                if "fuzz" in v:
                    written.append(v["fuzz"])
                for w in v.values():
                    walk(w)
            elif isinstance(v, list):
                for w in v:
                    walk(w)
        walk(json.loads(out.read_bytes()))
        assert written and same_values(written[0], args), f"{writer}: {written[:1]} != {args}"


# --------------------------------------------------------------------------- the Python API
API_VALUES = st.sampled_from([None, -1, 0, 1, 2.5, float("nan"), float("inf"), 1e308, True, "x", "(", "all", b"x",
                              [], ["x"], [1, 2], {}, "sgemm", "gemm=0.5", ("a",), 10**30])
API_CALLS: dict[str, tuple[str, ...]] = {
    "summary": ("batch_size", "step_regex"), "idle": ("kernel_wait_us",),
    "launch_stats": ("call_cutoff_us", "latency_cutoff_us"), "queue_length": ("limit",),
    "kernel_sequences": ("op", "min_length", "max_length", "top"), "memory_timeline": ("window",),
    "comm_overlap": ("window",), "critical_path": ("window", "ranks", "workers", "scheduler"),
    "breakdown": ("device", "depth", "top", "step_regex", "whole_trace"), "iterations": ("step_regex",),
    "overheads": ("by_shapes",), "roofline": ("device", "dtype"), "report": ("by", "device", "dtype"),
    "shapes": ("device", "dtype"), "what_if": ("scale_kernels", "scale_cpu", "launch_overhead", "remove", "window"),
    "diff": ("b", "name_level", "include_same"), "export_perfetto": ("path", "window"),
    "export_graphviz": ("path", "window", "critical_only"), "report_html": ("path", "batch_size", "device"),
    "save": ("path",), "export_tables": ("directory", "fmt"), "load": ("path",), "info": ("G",), "advise": ("G",),
    "kernel_stats": ("G",), "gpu_categories": ("G",), "memory_bandwidth": ("G",), "collectives": ("G",),
}
#: Every catalog analysis not listed above, with the options the catalog gives its API function.
API_CALLS |= {a.name: tuple(o.name for o in a.options_for("analysis")) or ("G",)
              for a in CATALOG if a.name and a.name not in API_CALLS}
_POSITIONAL_OUT = {"export_perfetto": "p.json", "export_graphviz": "g.dot", "report_html": "r.html", "save": "g.gpickle",
                   "export_tables": "tables"}


#: Arguments that take a list of strings, a positive count or size, a non-negative time,
#: a regular expression.
_LISTS = {"scale_kernels", "scale_cpu", "remove"}
_COUNTS = {"batch_size", "limit", "min_length", "max_length", "top", "depth", "workers"}
_TIMES = {"kernel_wait_us", "call_cutoff_us", "latency_cutoff_us"}
_REGEXES = {"window", "step_regex", "op"}
for _o in (o for a in CATALOG for o in a.options_for("analysis")):  # the catalog's options, by kind
    {"int": _COUNTS, "float": _TIMES, "regex": _REGEXES}.get(_o.kind, set()).add(_o.name)


def _must_fail(fn: str, arg: str, v: Any) -> bool:
    """The oracle: values the function must refuse (a string for a list, a count below 1, a
    negative or non-finite time, a regex that does not compile or is not a string)."""
    num = isinstance(v, (int, float)) and not isinstance(v, bool)
    if arg in _LISTS:
        return isinstance(v, (str, bytes)) or (v is not None and not isinstance(v, (list, tuple)))
    if arg in _COUNTS and v is not None:
        return not num or isinstance(v, float) or v < 1
    if arg in _TIMES:
        return not num or not math.isfinite(v) or v < 0 or v > 1e9
    if arg in _REGEXES and v is not None:
        return not isinstance(v, str) or v == "("
    return False


@pytest.fixture(scope="module")
def graph():
    import opgraph

    return opgraph.load(SYNTH)


@settings(FUZZ, max_examples=200)
@given(fn=st.sampled_from(sorted(API_CALLS)), data=st.data())
def test_fuzz_api_arguments(graph, fn: str, data: st.DataObject) -> None:
    import opgraph
    from opgraph.errors import OpgraphInputError

    import os

    arg = data.draw(st.sampled_from(API_CALLS[fn]))
    value = data.draw(API_VALUES)
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as d:
        os.chdir(d)  # relative output names land in the scratch folder
        kwargs: dict[str, Any] = {}
        args: list[Any] = []
        if fn == "load":
            args = [value]
        elif arg == "G":
            args = [value]
        else:
            args = [graph]
            if fn == "diff":
                args.append(value if arg == "b" else graph)
            if fn in _POSITIONAL_OUT:
                args.append(value if arg in ("path", "directory") else str(Path(d) / _POSITIONAL_OUT[fn]))
            if arg not in ("b", "path", "directory"):
                kwargs[arg] = value
        if fn == "critical_path" and arg in ("workers", "scheduler") and value not in (None,):
            args = [graph]  # a loaded graph: no pool is started, the argument is refused or ignored
        must_fail = _must_fail(fn, arg, value)
        try:
            getattr(opgraph, fn)(*args, **kwargs)
            assert not must_fail, f"{fn}({arg}={value!r}) accepted"
        except (TypeError, ValueError, OpgraphInputError) as e:
            msg = str(e)
            assert msg and "\n" not in msg, f"{fn}({arg}={value!r}): {msg!r}"
            assert not isinstance(e, (KeyError, IndexError)), f"{fn}({arg}={value!r}): {e!r}"
        finally:
            os.chdir(here)
        assert SYNTH.read_bytes()  # the fixture is never written over
