"""Bad input on the newer surfaces (issue "Bad input, round 2"): table outputs, device
files, job folders, schedulers and the Python API. Each test is a defect that reproduced
on the code before the fix (docs/reliability.md, "Outputs, device files, jobs and the
API"); every input is generated in the test."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT, assert_one_line_error

SYNTH = ROOT / "fixtures" / "synth" / "gpu_bound.json"
JOB = ROOT / "fixtures" / "multirank" / "seq"


@pytest.fixture(autouse=True)
def _no_device_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPGRAPH_DEVICES", raising=False)


def trace(tmp_path: Path, name: str = "t.json") -> Path:
    p = tmp_path / name
    shutil.copy(SYNTH, p)
    return p


def h100_entry() -> dict:
    doc = json.loads((ROOT / "opgraph" / "devices" / "devices.json").read_text())
    return next(e for e in doc["devices"] if e["name"] == "H100 SXM")


def device_file(tmp_path: Path, entries: list | None = None, name: str = "dev.json") -> Path:
    doc = json.loads((ROOT / "opgraph" / "devices" / "devices.json").read_text())
    doc["devices"] = entries if entries is not None else [h100_entry()]
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def renamed_trace(tmp_path: Path, kernel: str, op: str | None = None) -> Path:
    """gpu_bound.json with every kernel (and, with ``op``, every cpu_op) renamed."""
    doc = json.loads(SYNTH.read_text())
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            e["name"] = kernel
        elif op is not None and e.get("cat") == "cpu_op":
            e["name"] = op
    p = tmp_path / "t.json"
    p.write_text(json.dumps(doc))
    return p


# ------------------------------------------------------------- 1. no output over an input
def test_table_outputs_never_replace_the_device_file(cli, tmp_path: Path) -> None:
    t = trace(tmp_path)
    dev = device_file(tmp_path)
    before = dev.read_bytes()
    for args in (["report", t, "--device-file", dev, "--xlsx", dev],
                 ["shapes", t, "--device-file", dev, "--xlsx", dev],
                 ["augment", t, "--device-file", dev, "-o", dev],
                 ["predict", t, "--device-file", dev, "--perfetto", dev]):
        r = cli([str(a) for a in args])
        assert_one_line_error(r, dev, "device file")
        assert dev.read_bytes() == before
    # --csv DIR whose generated name is the device file: refused, nothing written
    named = device_file(tmp_path, name="t.report_kernel.csv")
    r = cli(["report", str(t), "--device-file", str(named), "--csv", str(tmp_path)])
    assert_one_line_error(r, named, "device file")
    assert json.loads(named.read_text())["devices"][0]["name"] == "H100 SXM"
    # refused before any work: the trace is not even read
    missing = tmp_path / "m.json"                   # does not exist
    named2 = device_file(tmp_path, name="m.report_kernel.csv")
    for out in (["--csv", str(tmp_path)], ["--xlsx", str(named2)]):
        r = cli(["report", str(missing), "--device-file", str(named2), *out])
        assert_one_line_error(r, named2, "device file")


def test_table_outputs_never_replace_the_env_device_file(cli, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    t = trace(tmp_path)
    dev = device_file(tmp_path)
    before = dev.read_bytes()
    monkeypatch.setenv("OPGRAPH_DEVICES", str(dev))
    link = tmp_path / "link.xlsx"
    link.symlink_to(dev)
    for out in (dev, link):
        assert_one_line_error(cli(["kernels", str(t), "--xlsx", str(out)]), out, "device file")
    assert dev.read_bytes() == before


def test_nothing_written_when_one_table_output_is_refused(cli, tmp_path: Path) -> None:
    t = trace(tmp_path)
    out = tmp_path / "out"
    r = cli(["kernels", str(t), "--csv", str(out), "--xlsx", str(t)])
    assert_one_line_error(r, t, "input file")
    assert not out.exists() or not list(out.iterdir())


def test_api_writers_never_replace_the_trace(tmp_path: Path) -> None:
    import opgraph
    from opgraph.errors import OpgraphInputError

    t = trace(tmp_path)
    before = t.read_bytes()
    g = opgraph.load(t)
    link = tmp_path / "t.dot"    # another name of the trace: refused after resolving the link
    link.symlink_to(t)
    for call in (lambda: opgraph.export_perfetto(g, t), lambda: opgraph.report_html(g, t),
                 lambda: opgraph.save(g, t), lambda: opgraph.build(t, t),
                 lambda: opgraph.export_perfetto(t, t), lambda: opgraph.export_graphviz(g, link)):
        with pytest.raises(OpgraphInputError, match="input file"):
            call()
        assert t.read_bytes() == before


def test_api_writers_never_replace_the_device_file(tmp_path: Path) -> None:
    import opgraph
    from opgraph.devices.peaks import device_files
    from opgraph.errors import OpgraphInputError

    t = trace(tmp_path)
    dev = device_file(tmp_path)
    before = dev.read_bytes()
    g = opgraph.load(t)
    with device_files(dev):
        with pytest.raises(OpgraphInputError, match="device file"):
            opgraph.report_html(g, dev)
    assert dev.read_bytes() == before


# ------------------------------------------------------------- 2. one stdout document, safe cells
@pytest.mark.parametrize("command", ["sequences", "breakdown", "iterations", "kernels"])
def test_csv_to_stdout_and_json_are_refused(cli, tmp_path: Path, command: str) -> None:
    r = cli([command, str(trace(tmp_path)), "--csv", "-", "--json"])
    assert_one_line_error(r, "--csv -", "--json", "standard output")


def test_csv_quotes_carriage_returns(cli, tmp_path: Path) -> None:
    t = renamed_trace(tmp_path, "\r=1+1\rgemm", op="x\r@SUM(A1)")
    out = tmp_path / "out"
    for args in (["kernels", str(t), "--csv", str(out)], ["report", str(t), "--by", "op", "--csv", str(out)]):
        r = cli(args)
        assert r.exit_code == 0, r.stderr
    kern = out / "t.kernels.csv"
    rows = list(csv.reader(io.StringIO(kern.read_bytes().decode(), newline="")))
    assert len(rows) == 2, rows                      # the header and the one kernel: no split row
    assert rows[1][0] == "'\r=1+1\rgemm"             # the formula guard on the whole cell
    assert len(pd.read_csv(kern)) == 1
    op = pd.read_csv(out / "t.report_op.csv")
    assert op.iloc[0, 0] == "x\r@SUM(A1)" and len(op) == 1
    # the same on standard output
    r = cli(["report", str(t), "--by", "op", "--csv", "-"])
    assert r.exit_code == 0 and len(pd.read_csv(io.StringIO(r.stdout))) == 1


def test_xlsx_takes_control_characters(cli, tmp_path: Path) -> None:
    pytest.importorskip("openpyxl")
    t = renamed_trace(tmp_path, "bad\x01\x00\x1b[31mname\tok", op="op\x07")
    for command in ("kernels", "report", "categories", "launch-stats", "critical-path"):
        out = tmp_path / f"{command}.xlsx"
        r = cli([command, str(t), "--xlsx", str(out)])
        assert r.exit_code == 0, r.stderr
        assert out.exists()
    got = pd.read_excel(tmp_path / "kernels.xlsx", sheet_name="kernels")
    assert got.iloc[0, 0] == "bad\\x01\\x00\\x1b[31mname\tok"


# ------------------------------------------------------------- 3. device files
def _raw_device_file(tmp_path: Path, text: str, name: str = "dev.json") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("case", ["nan", "infinity", "1e400", "1e308", "zero", "negative", "dram 1e308",
                                  "memory 1e308"])
def test_device_file_peaks_must_be_finite_positive_and_bounded(cli, tmp_path: Path, case: str) -> None:
    e = h100_entry()
    text = None
    if case in ("nan", "infinity", "1e400"):
        token = {"nan": "NaN", "infinity": "Infinity", "1e400": "1e400"}[case]
        e["peak_tflops"]["bf16"] = 123.25
        doc = json.loads((ROOT / "opgraph" / "devices" / "devices.json").read_text())
        text = json.dumps(dict(doc, devices=[e])).replace("123.25", token)
    elif case == "1e308":
        e["peak_tflops"]["bf16"] = 1e308
    elif case == "zero":
        e["peak_tflops"]["bf16"] = 0
    elif case == "negative":
        e["peak_tflops_sparse"]["fp8"] = -5
    elif case == "dram 1e308":
        e["dram_gbps"] = 1e308
    else:
        e["memory_gb"] = 1e308
    dev = _raw_device_file(tmp_path, text) if text else device_file(tmp_path, [e])
    for command in ("report", "shapes", "devices"):
        args = [command, "--device-file", str(dev)] + ([str(trace(tmp_path))] if command != "devices" else [])
        assert_one_line_error(cli(args), dev, "device file")


def test_device_file_special_files_and_nesting(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = trace(tmp_path)
    deep = _raw_device_file(tmp_path, "[" * 100_000, "deep.json")
    cases = [deep, Path("/dev/zero")]
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo.json"
        os.mkfifo(fifo)
        cases.append(fifo)
    for dev in cases:
        if not dev.exists():
            continue
        assert_one_line_error(cli(["report", str(t), "--device-file", str(dev)]), dev, "device file")
        monkeypatch.setenv("OPGRAPH_DEVICES", str(dev))
        assert_one_line_error(cli(["shapes", str(t)]), dev, "device file")
        monkeypatch.delenv("OPGRAPH_DEVICES")


def test_device_file_aliases_must_be_unique(cli, tmp_path: Path) -> None:
    a = h100_entry()
    b = dict(a, name="H100 Clone")
    dev = device_file(tmp_path, [a, b])
    line = assert_one_line_error(cli(["report", str(trace(tmp_path)), "--device-file", str(dev)]), dev, "alias")
    assert "H100 Clone" in line and "H100 SXM" in line
    # across two files in force
    one, two = device_file(tmp_path, [a], "one.json"), device_file(tmp_path, [b], "two.json")
    r = cli(["report", str(trace(tmp_path)), "--device-file", str(one), "--device-file", str(two), "--json"])
    assert_one_line_error(r, two, "alias")


def test_unknown_device_is_a_warning_on_every_percent_of_peak_command(cli, tmp_path: Path) -> None:
    doc = json.loads(SYNTH.read_text())
    doc["deviceProperties"] = [{"id": 0, "name": "NVIDIA Z9000 Future", "totalGlobalMem": 1 << 36,
                                "computeMajor": 12, "computeMinor": 0, "numSms": 300, "warpSize": 32}]
    t = tmp_path / "z.json"
    t.write_text(json.dumps(doc))
    for args in (["shapes", str(t)], ["shapes", str(t), "--json"], ["report", str(t), "--json"],
                 ["report", str(t), "--csv", str(tmp_path / "o")], ["augment", str(t), "-o", str(tmp_path / "a.json")]):
        r = cli(args)
        assert r.exit_code == 0, r.stderr
        assert "Z9000 Future -> unknown (not in the peak table" in r.stderr, (args, r.stderr)
    known = cli(["shapes", str(trace(tmp_path))])
    assert "unknown" not in known.stderr


# ------------------------------------------------------------- 5. options and API arguments
def test_cli_out_of_range_options_are_refused(cli, tmp_path: Path) -> None:
    t = trace(tmp_path)
    for args in (["idle", t, "--kernel-wait-us", "-5"], ["idle", t, "--top", "-1"],
                 ["critical-path", t, "--top", "0"], ["report", t, "--top", "-3"]):
        r = cli([str(a) for a in args])
        assert r.exit_code == 2 and r.stdout == "" and "Traceback" not in r.stderr, (args, r.stderr)
        assert args[2] in r.stderr


API_CASES = [
    ("what_if remove str", lambda o, g, j: o.what_if(g, remove="sgemm"), TypeError, "remove"),
    ("what_if scale str", lambda o, g, j: o.what_if(g, scale_kernels="gemm=0.5"), TypeError, "scale_kernels"),
    ("load None", lambda o, g, j: o.load(None), TypeError, "path"),
    ("load int", lambda o, g, j: o.load(42), TypeError, "path"),
    ("load bytes", lambda o, g, j: o.load(b"/x/t.json"), TypeError, "path"),
    ("load graph", lambda o, g, j: o.load(g), TypeError, "path"),
    ("load empty list", lambda o, g, j: o.load([]), ValueError, "path"),
    ("build capture ints", lambda o, g, j: o.build(SYNTH, capture=[1, 2]), TypeError, "capture"),
    ("summary batch 0", lambda o, g, j: o.summary(g, batch_size=0), ValueError, "batch_size"),
    ("summary batch -3", lambda o, g, j: o.summary(g, batch_size=-3), ValueError, "batch_size"),
    ("summary batch nan", lambda o, g, j: o.summary(g, batch_size=float("nan")), TypeError, "batch_size"),
    ("summary batch str", lambda o, g, j: o.summary(g, batch_size="8"), TypeError, "batch_size"),
    ("idle wait -5", lambda o, g, j: o.idle(g, kernel_wait_us=-5), ValueError, "kernel_wait_us"),
    ("idle wait str", lambda o, g, j: o.idle(g, kernel_wait_us="x"), TypeError, "kernel_wait_us"),
    ("launch cutoff -1", lambda o, g, j: o.launch_stats(g, call_cutoff_us=-1), ValueError, "call_cutoff_us"),
    ("sequences top -1", lambda o, g, j: o.kernel_sequences(g, top=-1), ValueError, "top"),
    ("memory window bad regex", lambda o, g, j: o.memory_timeline(g, window="("), ValueError, "window"),
    ("memory window int", lambda o, g, j: o.memory_timeline(g, window=3), TypeError, "window"),
    ("critical window int", lambda o, g, j: o.critical_path(g, window=3), TypeError, "window"),
    ("critical ranks str", lambda o, g, j: o.critical_path(g, ranks="x"), TypeError, "ranks"),
    ("critical ranks single", lambda o, g, j: o.critical_path(g, ranks=[0]), ValueError, "ranks"),
    ("critical workers 0", lambda o, g, j: o.critical_path(j, workers=0), ValueError, "workers"),
    ("critical workers str", lambda o, g, j: o.critical_path(j, workers="2"), TypeError, "workers"),
    ("critical empty DiGraph", lambda o, g, j: o.critical_path(__import__("networkx").DiGraph()), ValueError, "G"),
    ("critical plain DiGraph", lambda o, g, j: o.critical_path(
        __import__("networkx").path_graph(5, create_using=__import__("networkx").DiGraph)), ValueError, "G"),
    ("save int", lambda o, g, j: o.save(42, "y.gpickle"), TypeError, "G"),
    ("save path int", lambda o, g, j: o.save(g, 1), TypeError, "path"),
    ("perfetto txt", lambda o, g, j: o.export_perfetto(g, "x.txt"), ValueError, "path"),
    ("graphviz folder", lambda o, g, j: o.export_graphviz(g, "."), ValueError, "path"),
    ("diff None", lambda o, g, j: o.diff(g, None), TypeError, "b"),
    ("advise None", lambda o, g, j: o.advise(None), TypeError, "G"),
    ("memory_bandwidth bytes", lambda o, g, j: o.memory_bandwidth(b"x"), TypeError, "G"),
    ("report by", lambda o, g, j: o.report(g, by="kernels"), ValueError, "by"),
]


@pytest.fixture(scope="module")
def api_graph():
    import opgraph

    return opgraph.load(SYNTH)


@pytest.mark.parametrize("case", API_CASES, ids=[c[0] for c in API_CASES])
def test_api_arguments_are_checked(case, api_graph, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import opgraph

    monkeypatch.chdir(tmp_path)
    _, call, exc, name = case
    with pytest.raises(exc) as info:
        call(opgraph, api_graph, str(JOB))
    msg = str(info.value)
    assert msg.startswith(f"{name}") and "\n" not in msg, msg
    assert not list(tmp_path.iterdir()), "nothing is written"


def test_api_right_arguments_still_work(api_graph) -> None:
    import opgraph

    assert opgraph.what_if(api_graph, remove=["sgemm"]).to_frame()["predicted_us"].iloc[0] > 0
    tup = opgraph.what_if(api_graph, remove=("sgemm",)).to_frame()
    assert tup["predicted_us"].tolist() == opgraph.what_if(api_graph, remove=["sgemm"]).to_frame()["predicted_us"].tolist()
    assert opgraph.summary(api_graph, batch_size=8).to_dict()["qps"] > 0
    assert opgraph.idle(api_graph, kernel_wait_us=0).to_frame() is not None


@pytest.mark.timeout(300)
def test_workers_never_rerun_the_users_script(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = tmp_path / "job.py"
    script.write_text("import opgraph\nprint('BODY', flush=True)\n"
                      f"g = opgraph.load({str(JOB)!r})\nprint('NODES', g.number_of_nodes(), flush=True)\n")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.count("BODY") == 1, p.stdout
    assert "NODES" in p.stdout


# ------------------------------------------------------------- 6. scheduler addresses
def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("address", ["foo", "tcp://[::1", "inproc://x", "http://127.0.0.1:9", "tls://127.0.0.1:1",
                                     "ucx://127.0.0.1:1", "tcp://127.0.0.1:99999", "127.0.0.1"])
def test_malformed_scheduler_address_is_one_line(cli, address: str) -> None:
    import time

    t0 = time.monotonic()
    r = cli(["idle", str(JOB), "--scheduler", address])
    assert_one_line_error(r, address, "scheduler")
    assert time.monotonic() - t0 < 5


def test_closed_port_is_one_line(cli) -> None:
    addr = f"tcp://127.0.0.1:{_free_port()}"
    assert_one_line_error(cli(["idle", str(JOB), "--scheduler", addr]), addr, "cannot connect")


def _server(reply: bytes | None):
    """A loopback TCP server that accepts and then sends ``reply`` (None: stays silent)."""
    import socket
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    conns = []

    def serve() -> None:
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            conns.append(c)
            if reply is not None:
                c.sendall(reply)
    threading.Thread(target=serve, daemon=True).start()
    return srv, conns, f"tcp://127.0.0.1:{srv.getsockname()[1]}"


@pytest.mark.parametrize("reply", [None, b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", b""])
def test_silent_or_foreign_server_is_one_line_within_the_timeout(cli, monkeypatch: pytest.MonkeyPatch,
                                                                 reply: bytes | None, tmp_path: Path) -> None:
    import time

    from opgraph.multirank import executor

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(executor, "PROBE_TIMEOUT_S", 1.0)
    srv, conns, addr = _server(reply)
    try:
        for command in (["idle", str(JOB)], ["critical-path", str(JOB)], ["build", str(JOB), "-o", "x.gpickle"]):
            t0 = time.monotonic()
            r = cli([*command, "--scheduler", addr])
            assert_one_line_error(r, addr, "scheduler")
            assert time.monotonic() - t0 < 10
    finally:
        srv.close()
        for c in conns:
            c.close()


def test_api_scheduler_address_is_checked() -> None:
    import opgraph
    from opgraph.errors import OpgraphInputError

    with pytest.raises(OpgraphInputError, match="scheduler"):
        opgraph.critical_path(str(JOB), scheduler="http://127.0.0.1:9")


# ------------------------------------------------------------- 4. jobs
def job_copy(tmp_path: Path, name: str = "job") -> Path:
    d = tmp_path / name
    shutil.copytree(JOB, d)
    return d


def set_rank(path: Path, rank: int) -> None:
    doc = json.loads(path.read_text())
    doc["distributedInfo"]["rank"] = rank
    path.write_text(json.dumps(doc))


PER_RANK = ["idle", "kernels", "queue", "categories", "launch-stats", "memory-bw", "overlap"]


@pytest.mark.timeout(600)
def test_per_rank_commands_refuse_duplicate_ranks(cli, tmp_path: Path) -> None:
    claimed = job_copy(tmp_path, "claimed")
    set_rank(claimed / "rank1.json", 0)
    copied = job_copy(tmp_path, "copied")
    shutil.copy(copied / "rank0.json", copied / "rank0_copy.json")
    for command in PER_RANK:
        r = cli([command, str(claimed), "--json"])
        assert_one_line_error(r, claimed / "rank0.json", "duplicate rank 0")
    r = cli(["idle", str(copied), "--json"])      # rank0_copy.json names rank 0 as well
    assert_one_line_error(r, copied / "rank0.json", "duplicate rank 0")
    # a copy named as a rank the job lacks (ranks from file names): reported, not silent
    named = job_copy(tmp_path, "named")
    for p in named.iterdir():
        doc = json.loads(p.read_text())
        doc.pop("distributedInfo")
        p.write_text(json.dumps(doc))
    shutil.copy(named / "rank0.json", named / "rank7.json")
    r = cli(["idle", str(named), "--json"])
    assert r.exit_code == 0 and "rank7.json has the same content as rank0.json" in r.stderr, r.stderr


@pytest.mark.timeout(600)
@pytest.mark.parametrize("rank", [2**31 - 1, 2**62, 1_000_000])
def test_rank_ids_are_bounded(cli, tmp_path: Path, rank: int) -> None:
    d = job_copy(tmp_path)
    set_rank(d / "rank3.json", rank)
    for command in (["critical-path", str(d)], ["idle", str(d), "--json"], ["build", str(d), "-o",
                                                                                  str(tmp_path / "j.gpickle")]):
        assert_one_line_error(cli(command), d / "rank3.json", "rank id", "out of range")
    assert not (tmp_path / "j.gpickle").exists()


def test_saved_job_graph_with_a_huge_rank_id_is_refused(cli, tmp_path: Path) -> None:
    import opgraph
    from opgraph.graph.io import save_gpickle

    g = opgraph.load(JOB)
    g.graph["job"]["ranks"][3]["rank"] = 2**31
    p = tmp_path / "j.gpickle"
    save_gpickle(g, p)
    r = cli(["export", str(p), "--perfetto", str(tmp_path / "p.json")])
    assert_one_line_error(r, p, "rank id")


def _nested_capture(tmp_path: Path, n: int, ends: int = 1) -> Path:
    ev = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamBeginCapture", "pid": 1, "tid": 1, "ts": 10 * i,
           "dur": 1, "args": {"correlation": 100000 + i}} for i in range(n)]
    t0 = 10 * n
    ev += [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t0 + 10 * i,
            "dur": 2, "args": {"correlation": 200000 + i, "kernel": f"k{i}"}} for i in range(n)]
    t1 = t0 + 10 * n
    ev += [{"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamEndCapture", "pid": 1, "tid": 1, "ts": t1 + 10 * i,
            "dur": 1, "args": {"correlation": 300000 + i}} for i in range(ends)]
    p = tmp_path / "cap.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    return p


@pytest.mark.timeout(120)
def test_nested_capture_is_bounded(cli, tmp_path: Path) -> None:
    import time

    replay = ROOT / "fixtures" / "synth" / "cuda_graph.json"
    cap = _nested_capture(tmp_path, 4000)             # the audit's 2 MB file: out of memory
    t0 = time.monotonic()
    r = cli(["build", str(replay), "--capture", str(cap), "-o", str(tmp_path / "g.gpickle")])
    assert_one_line_error(r, cap, "nested more than 32 deep")
    assert time.monotonic() - t0 < 60
    # a few nested begins with one end: one capture (the innermost), not one per begin
    from opgraph.graph.graph_replay import captured_graphs
    from opgraph.ingest.readers import read_trace

    graphs = captured_graphs(read_trace(_nested_capture(tmp_path, 5)))
    assert len(graphs) == 1 and len(graphs[0].names) == 5
    graphs = captured_graphs(read_trace(_nested_capture(tmp_path, 5, ends=5)))
    assert len(graphs) == 5


# ------------------------------------------------------------- 7. exact values out
BIG = 123456789012345678901234567890
EXACT_ARGS = {"x": BIG, "y": -98765432109876543210987, "u64": 2**64 - 1, "i64": -(2**63), "tiny": 5e-324,
              "huge": 1e308, "digits": "1234567890123456789012345", "nested": [{"z": BIG}]}


def _exact_trace(tmp_path: Path) -> Path:
    doc = json.loads(SYNTH.read_text())
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            e.setdefault("args", {}).update(EXACT_ARGS)
            break
    p = tmp_path / "big.json"
    p.write_text(json.dumps(doc))
    return p


def _exact_args_in(path: Path) -> dict:
    """The args holding ``x`` in a written trace or node-link graph, decoded exactly."""
    import gzip

    raw = path.read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    found = []

    def walk(v):
        if isinstance(v, dict):
            if "x" in v and "nested" in v:
                found.append(v)
            for w in v.values():
                walk(w)
        elif isinstance(v, list):
            for w in v:
                walk(w)
    walk(doc)
    assert found, path.name
    return found[0]


def test_big_integers_are_written_exactly(cli, tmp_path: Path) -> None:
    t = _exact_trace(tmp_path)
    outs = {"perfetto": (["export", str(t), "--perfetto", str(tmp_path / "p.json")], tmp_path / "p.json"),
            "augment": (["augment", str(t), "-o", str(tmp_path / "a.json")], tmp_path / "a.json"),
            "node-link": (["build", str(t), "-o", str(tmp_path / "g.json.gz")], tmp_path / "g.json.gz"),
            "gpickle": (["build", str(t), "-o", str(tmp_path / "g.gpickle")], None)}
    for name, (args, out) in outs.items():
        r = cli(args)
        assert r.exit_code == 0, (name, r.stderr)
        if out is not None:
            got = _exact_args_in(out)
            for k, v in EXACT_ARGS.items():
                assert got[k] == v and type(got[k]) is type(v), (name, k, got[k])
    # saved graphs written again keep them: from the pickle and from the node-link file
    for src, out in ((tmp_path / "g.gpickle", tmp_path / "p2.json"), (tmp_path / "g.json.gz", tmp_path / "p3.json")):
        r = cli(["export", str(src), "--perfetto", str(out)])
        assert r.exit_code == 0, r.stderr
        assert _exact_args_in(out)["x"] == BIG
    r = cli(["build", str(tmp_path / "g.json.gz"), "-o", str(tmp_path / "g2.json")])
    assert r.exit_code == 0 and _exact_args_in(tmp_path / "g2.json")["y"] == EXACT_ARGS["y"]


def test_big_integers_are_floats_to_the_analyses(cli, tmp_path: Path) -> None:
    import opgraph

    g = opgraph.load(_exact_trace(tmp_path))
    args = next(d["args"] for _, d in g.nodes(data=True) if isinstance(d.get("args"), dict) and "x" in d["args"])
    assert isinstance(args["x"], float) and args["x"] == float(BIG) and args["u64"] == 2**64 - 1
    for command in ("kernels", "report", "info", "summary"):
        r = cli([command, str(tmp_path / "big.json"), "--json"])
        assert r.exit_code == 0, (command, r.stderr)


def test_overflowing_what_if_factor_is_one_line(cli_subprocess, tmp_path: Path) -> None:
    t = trace(tmp_path)
    for opt in ("--scale-kernels", "--scale-cpu"):
        r = cli_subprocess(["predict", str(t), opt, ".*=1e308"])
        assert r.exit_code == 2 and len(r.stderr.splitlines()) == 1, r.stderr   # no numpy RuntimeWarning lines
        assert opt in r.stderr
