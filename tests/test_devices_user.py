"""User device files (``--device-file``, ``OPGRAPH_DEVICES``): a new device picked up from
the trace's deviceProperties with an exact % of peak, overriding a built-in entry, the
environment variable, and one-line errors (exit 2) for bad files."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

from conftest import prose
from click.testing import CliRunner

from opgraph.cli import main
from opgraph.devices.peaks import ENV_VAR, DATA_PATH, all_devices, device_files, lookup
from opgraph.errors import OpgraphInputError
from opgraph.schemas_util import validate

BF = "c10::BFloat16"
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_kernel"
ZETA_PROPS = {"id": 0, "name": "Zeta Z9 Accelerator", "totalGlobalMem": 64 * 2**30, "computeMajor": 10,
              "computeMinor": 0, "warpSize": 32, "numSms": 100}
H100_PROPS = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85018279936, "computeMajor": 9,
              "computeMinor": 0, "warpSize": 32, "numSms": 132}


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)


def _gemm_trace(tmp_path: Path, props: dict) -> Path:
    """aten::mm of two bf16 1000x1000 matrices (2e9 FLOPs, 6e6 bytes) whose GEMM kernel runs
    20 µs: 100 TFLOP/s and 300 GB/s achieved."""
    ev = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 50,
         "args": {"External id": 1, "Input Dims": [[1000, 1000], [1000, 1000]], "Input type": [BF, BF]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20, "dur": 5,
         "args": {"correlation": 7, "External id": 1}},
        {"ph": "X", "cat": "kernel", "name": GEMM, "pid": 0, "tid": "stream 7", "ts": 100, "dur": 20,
         "args": {"device": 0, "stream": 7, "correlation": 7, "External id": 1}},
    ]
    p = tmp_path / "gemm.json"
    p.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [props], "traceEvents": ev}))
    return p


def _entry(**over) -> dict:
    peaks = {"fp64": None, "fp32": 100.0, "tf32": 200.0, "bf16": 400.0, "fp16": 400.0, "fp8": 800.0, "int8": None}
    e = {"name": "Zeta Z9", "vendor": "NVIDIA", "family": "zeta", "aliases": ["zeta z9"], "arch": None,
         "num_sms": 100, "logical_devices_per_package": 1, "memory_gb": 64, "dram_gbps": 1200,
         "peak_tflops": peaks, "peak_tflops_sparse": {k: None for k in peaks},
         "source": "Zeta Z9 product brief (internal, 2026)"}
    e.update(over)
    return e


def _file(tmp_path: Path, entries: list, name: str = "mydevices.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps({"schema_version": 1, "units": {"peak_tflops": "TFLOP/s"}, "devices": entries}))
    return p


def _run(args: list, env: dict | None = None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def _report(args: list, env: dict | None = None) -> dict:
    r = _run(["report", *args, "--json"], env)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    validate(doc, "report.schema.json")
    return doc


def test_new_device_matched_from_device_properties(tmp_path: Path) -> None:
    trace = _gemm_trace(tmp_path, ZETA_PROPS)
    assert _report([trace])["devices"][0]["table_name"] is None  # unknown without the file
    dev = _file(tmp_path, [_entry()])
    doc = _report([trace, "--device-file", dev])
    d = doc["devices"][0]
    assert d["table_name"] == "Zeta Z9" and d["dram_gbps"] == 1200 and not d["overridden"]
    (row,) = doc["rows"]
    assert row["tflops"] == pytest.approx(100.0) and row["gbps"] == pytest.approx(300.0)
    assert row["pct_peak_flops"] == pytest.approx(25.0)    # 100 of 400 TFLOP/s bf16
    assert row["pct_peak_bw"] == pytest.approx(25.0)       # 300 of 1200 GB/s
    r = _run(["report", trace, "--device-file", dev])
    out = prose(r.stdout)
    assert r.exit_code == 0 and "Zeta Z9" in out and f"user device file {dev}" in out
    # the option's files are in force for that command only
    assert lookup("Zeta Z9 Accelerator") is None


def test_override_builtin(tmp_path: Path) -> None:
    trace = _gemm_trace(tmp_path, H100_PROPS)
    base = _report([trace])["rows"][0]["pct_peak_flops"]
    h100 = next(e for e in json.loads(DATA_PATH.read_text())["devices"] if e["name"] == "H100 SXM")
    mine = copy.deepcopy(h100)
    mine["peak_tflops"]["bf16"] = 500.0
    mine["source"] = "measured on our cluster, 2026"
    dev = _file(tmp_path, [mine])
    doc = _report([trace, "--device-file", dev])
    assert doc["devices"][0]["table_name"] == "H100 SXM"
    assert doc["rows"][0]["pct_peak_flops"] == pytest.approx(20.0)  # 100 of 500
    assert base == pytest.approx(100 * 100 / h100["peak_tflops"]["bf16"])
    with device_files(dev) as table:
        assert len(table) == len(all_devices()) and [d.name for d in table].count("H100 SXM") == 1
        assert lookup("NVIDIA H100 80GB HBM3").origin == str(dev)
    # `opgraph devices` cites the file for that entry only
    r = _run(["devices", "--device-file", dev])
    text = prose(r.stdout)   # a long temporary path wraps onto its own line
    assert r.exit_code == 0 and f"user device file {dev}" in text and "1 entry from user device files" in text
    r = _run(["devices", "--json", "--device-file", dev])
    out = json.loads(r.stdout)
    validate(out, "devices.schema.json")
    users = [e for e in out["devices"] if "user_file" in e]
    assert [(e["name"], e["user_file"], e["peak_tflops"]["bf16"]) for e in users] == [("H100 SXM", str(dev), 500.0)]
    r = _run(["devices", "--json", "--name", "NVIDIA H100 80GB HBM3", "--device-file", dev])
    assert json.loads(r.stdout)["devices"][0]["user_file"] == str(dev)


def test_environment_variable(tmp_path: Path) -> None:
    trace = _gemm_trace(tmp_path, ZETA_PROPS)
    a = _file(tmp_path, [_entry(peak_tflops=dict(_entry()["peak_tflops"], bf16=1000.0))], "a.json")
    b = _file(tmp_path, [_entry()], "b.json")
    # several files: a later one wins for the same name
    doc = _report([trace], env={ENV_VAR: os.pathsep.join([str(a), str(b)])})
    assert doc["rows"][0]["pct_peak_flops"] == pytest.approx(25.0)
    doc = _report([trace], env={ENV_VAR: str(a)})
    assert doc["rows"][0]["pct_peak_flops"] == pytest.approx(10.0)
    # the option replaces the variable
    doc = _report([trace, "--device-file", b], env={ENV_VAR: str(a)})
    assert doc["rows"][0]["pct_peak_flops"] == pytest.approx(25.0)
    r = _run(["devices", "--json"], env={ENV_VAR: str(a)})
    assert any(e.get("user_file") == str(a) for e in json.loads(r.stdout)["devices"])


def test_python_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dev = _file(tmp_path, [_entry()])
    assert lookup("Zeta Z9") is None
    with device_files(dev):
        z = lookup("Zeta Z9 Accelerator")
        assert z is not None and z.name == "Zeta Z9" and z.peak("bf16") == 400.0 and z.origin == str(dev)
    monkeypatch.setenv(ENV_VAR, str(dev))
    assert lookup("Zeta Z9").name == "Zeta Z9"
    with device_files():  # explicit: no user file, the variable is not read
        assert lookup("Zeta Z9") is None


def _bad_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    out = {}
    p = tmp_path / "notjson.json"
    p.write_text("{not json")
    out["not json"] = (p, "not JSON")
    out["wrong type"] = (_file(tmp_path, [_entry(dram_gbps="fast")], "type.json"),
                         "devices[0] 'Zeta Z9': dram_gbps: 'fast' is not of type 'number'")
    neg = _entry()
    neg["peak_tflops"] = dict(neg["peak_tflops"], bf16=-5)
    out["negative peak"] = (_file(tmp_path, [_entry(name="ok"), neg], "neg.json"),
                            "devices[1] 'Zeta Z9': peak_tflops.bf16: -5 is not a positive number")
    unk = _entry()
    unk["peak_tflops"] = dict(unk["peak_tflops"], bf32=5)
    out["unknown dtype"] = (_file(tmp_path, [unk], "dtype.json"),
                            "devices[0] 'Zeta Z9': peak_tflops: unknown dtype key 'bf32'")
    out["missing field"] = (_file(tmp_path, [{k: v for k, v in _entry().items() if k != "source"}], "miss.json"),
                            "devices[0] 'Zeta Z9': 'source' is a required property")
    out["duplicate"] = (_file(tmp_path, [_entry(), _entry()], "dup.json"), "devices[1] 'Zeta Z9': name listed twice")
    out["missing file"] = (tmp_path / "nope.json", "cannot read")
    return out


@pytest.mark.parametrize("case", ["not json", "wrong type", "negative peak", "unknown dtype", "missing field",
                                  "duplicate", "missing file"])
def test_bad_files_one_line_exit_2(tmp_path: Path, case: str) -> None:
    path, expect = _bad_files(tmp_path)[case]
    trace = _gemm_trace(tmp_path, ZETA_PROPS)
    for args, env in ((["report", trace, "--device-file", path], None), (["devices"], {ENV_VAR: str(path)}),
                      (["augment", trace, "-o", tmp_path / "aug.json", "--device-file", path], None)):
        r = _run(args, env)
        assert r.exit_code == 2, (case, r.output)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and r.stdout == "", (case, r.output)
        assert lines[0].startswith(f"opgraph: error: {path}: device file: ") and expect in lines[0], lines[0]
    assert not (tmp_path / "aug.json").exists()
    with pytest.raises(OpgraphInputError, match="device file"):
        with device_files(path):
            pass


def test_option_on_every_peak_command() -> None:
    for cmd in ("augment", "report", "devices", "predict", "kernel-models", "diff"):
        r = _run([cmd, "--help"])
        assert "--device-file" in r.stdout, cmd


def test_html_report_and_no_leak(tmp_path: Path) -> None:
    """`report --html` (a wrapper of the report command) sees the files too; after a
    command, also one whose later option fails, the files are no longer in force."""
    trace = _gemm_trace(tmp_path, ZETA_PROPS)
    dev = _file(tmp_path, [_entry()])
    out = tmp_path / "r.html"
    r = _run(["report", trace, "--device-file", dev, "--html", out])
    assert r.exit_code == 0, r.output
    assert "Zeta Z9" in out.read_text()
    r = _run(["report", trace, "--device-file", dev, "--by", "nonsense"])
    assert r.exit_code == 2
    assert lookup("Zeta Z9 Accelerator") is None


def test_report_names_an_unknown_device_and_the_way_out(tmp_path) -> None:
    """A device the peak table does not know is reported as unknown, with how to add it."""
    import json as _json

    import opgraph
    from conftest import _run_cli

    p = opgraph.example_trace("gemm_shapes", tmp_path)
    d = _json.loads(p.read_text())
    d["deviceProperties"][0]["name"] = "NVIDIA Foo 9000"
    q = tmp_path / "foo.json"
    q.write_text(_json.dumps(d))
    r = _run_cli(["report", str(q)])
    assert r.exit_code == 0
    assert "NVIDIA Foo 9000 -> unknown (not in the peak table" in r.stdout and "--device-file" in r.stdout
