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
    from opgraph.devices import device_files
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
        text = json.dumps({"devices": [e]}).replace("123.25", token)
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
                 ["report", str(t), "--csv", str(tmp_path / "o")]):
        r = cli(args)
        assert r.exit_code == 0, r.stderr
        assert "Z9000 Future -> unknown (not in the peak table" in r.stderr, (args, r.stderr)
    known = cli(["shapes", str(trace(tmp_path))])
    assert "unknown" not in known.stderr
