"""Every command that prints tables writes them as files too: ``--csv [DIR]``,
``--parquet DIR`` and ``--xlsx FILE`` (one sheet per table), with the same numbers as
``--json``, and text a spreadsheet would evaluate made literal."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import opgraph
from opgraph.catalog.entries import ANALYSES as CATALOG
from opgraph.cli import main

COMMANDS = {  # command -> the tables it writes
    "breakdown": ["host"], "iterations": ["iterations"], "overheads": ["overheads", "overhead_samples"],
    "summary": ["summary", "summary_devices", "summary_streams"], "critical-path": ["path", "breakdown"],
    "idle": ["devices", "streams", "blame_top", "blame_leaf", "gaps"], "report": ["report_kernel"],
    "predict": ["steps", "steps_breakdown"],
    "info": ["nodes_by_kind", "edges_by_kind", "events_by_kind", "devices", "streams", "threads"],
}


def _run(args: list[str]):
    r = CliRunner().invoke(main, args, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r


#: Every command the catalog makes from its entry writes its result's tables.
CATALOG_MADE = {a.command: a.name for a in CATALOG if not a.command_impl}


@pytest.mark.parametrize("cmd", sorted(set(COMMANDS) | set(CATALOG_MADE)))
def test_table_files(cmd: str, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    pytest.importorskip("openpyxl")
    trace = opgraph.example_trace("two_stream_event_wait", tmp_path)
    want = COMMANDS[cmd] if cmd in COMMANDS else list(getattr(opgraph, CATALOG_MADE[cmd])(trace).tables())
    csv_d, pq_d, xl = tmp_path / "csv", tmp_path / "pq", tmp_path / "t.xlsx"
    _run([cmd, str(trace), "--csv", str(csv_d), "--parquet", str(pq_d), "--xlsx", str(xl)])
    sheets = pd.read_excel(xl, sheet_name=None)
    assert list(sheets) == want
    for name in want:
        c = pd.read_csv(csv_d / f"two_stream_event_wait.{name}.csv")
        p = pd.read_parquet(pq_d / f"two_stream_event_wait.{name}.parquet")
        assert len(c) == len(p) == len(sheets[name])
        num = [col for col in c.columns if pd.api.types.is_numeric_dtype(c[col]) and col in p
               and pd.api.types.is_numeric_dtype(p[col])]
        assert num or not len(c)
        for col in num:
            assert p[col].astype(float).fillna(-1).tolist() == pytest.approx(c[col].astype(float).fillna(-1).tolist())


def test_critical_path_files_equal_json(tmp_path: Path) -> None:
    trace = opgraph.example_trace("gpu_bound", tmp_path)
    doc = json.loads(_run(["critical-path", str(trace), "--json"]).output)
    _run(["critical-path", str(trace), "--csv", str(tmp_path)])
    bd = pd.read_csv(tmp_path / "gpu_bound.breakdown.csv")
    for row, w in zip(bd.to_dict("records"), doc["windows"]):
        assert row["window"] == w["name"]
        for c, v in w["breakdown_us"].items():
            assert row[c] == pytest.approx(v)
    path = pd.read_csv(tmp_path / "gpu_bound.path.csv")
    assert len(path) == sum(len(w["path"]) for w in doc["windows"])


def test_formula_text_is_literal(tmp_path: Path) -> None:
    """A kernel named like a formula is written as text (CSV injection)."""
    pytest.importorskip("openpyxl")
    from opgraph.testing.synth import trace_to_json

    sc = opgraph.example_trace("gpu_bound", tmp_path)
    doc = json.loads(sc.read_text())
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            e["name"] = "=HYPERLINK(\"http://x\")"
    bad = tmp_path / "formula.json"
    bad.write_text(trace_to_json(doc))
    _run(["report", str(bad), "--csv", str(tmp_path / "c"), "--xlsx", str(tmp_path / "r.xlsx")])
    c = pd.read_csv(tmp_path / "c" / "formula.report_kernel.csv")
    assert c["name"].iloc[0].startswith("'=")
    import openpyxl
    ws = openpyxl.load_workbook(tmp_path / "r.xlsx")["report_kernel"]
    names = [cell.value for cell in ws["A"]][1:]
    assert names and all(isinstance(v, str) and v.startswith("'=") for v in names)
    assert all(cell.data_type == "s" for cell in ws["A"])


def test_report_csv_to_stdout(tmp_path: Path) -> None:
    trace = opgraph.example_trace("gpu_bound", tmp_path)
    out = _run(["report", str(trace), "--csv", "-"]).output
    assert out.splitlines()[0].startswith("name,")


def test_devices_and_enqueue_stats_tables(tmp_path: Path) -> None:
    pytest.importorskip("openpyxl")
    root = Path(__file__).resolve().parent.parent
    _run(["devices", "--csv", str(tmp_path)])
    d = pd.read_csv(tmp_path / "devices.devices.csv")
    assert len(d) > 10 and "peak_tflops_bf16" in d.columns and "dram_gbps" in d.columns
    _run(["enqueue-stats", str(root / "fixtures" / "dvdt" / "synth.dvdt.json"), "--xlsx", str(tmp_path / "e.xlsx")])
    sheets = pd.read_excel(tmp_path / "e.xlsx", sheet_name=None)
    assert list(sheets) == ["enqueue_kernels", "enqueues"] and len(sheets["enqueues"]) > 0
