"""``--json`` on the commands that write files (build, export, augment, kernel-models):
one schema'd document on stdout naming every file written with its real size; the
one-line summaries stay on stderr. With the table commands' ``--json``, every command that
takes an input now has one."""

from __future__ import annotations

import json
from pathlib import Path

import click

import opgraph
from opgraph.schemas_util import validation_error

from conftest import ROOT, _run_cli


def _doc(args: list) -> dict:
    r = _run_cli([str(a) for a in args])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert validation_error(doc, "outputs.schema.json") is None
    for o in doc["outputs"]:
        p = Path(o["path"])
        assert p.exists() and o["bytes"] == (p.stat().st_size if p.is_file() else
                                             sum(q.stat().st_size for q in p.rglob("*") if q.is_file()))
        assert o["message"] is None or o["message"] in r.stderr
    return doc


def test_build_export_augment_kernel_models(tmp_path: Path) -> None:
    trace = opgraph.example_trace("gpu_bound", tmp_path)
    g = tmp_path / "g.gpickle"
    d = _doc(["build", trace, "-o", g, "--json"])
    G = opgraph.load(g)
    assert d["command"] == "build" and d["summary"]["nodes"] == G.number_of_nodes()
    assert d["summary"]["edges"] == G.number_of_edges()
    d = _doc(["export", g, "--perfetto", tmp_path / "p.json", "--parquet", tmp_path / "pq", "--json"])
    assert sorted(o["format"] for o in d["outputs"]) == ["parquet", "perfetto"]
    d = _doc(["augment", trace, "-o", tmp_path / "a.json", "--json"])
    assert d["summary"]["kernels"] > 0
    d = _doc(["kernel-models", trace, "--lookup", tmp_path / "lk.json", "--json"])
    assert d["outputs"][0]["format"] == "kernel lookup"
    job = _doc(["build", ROOT / "fixtures" / "multirank" / "seq", "-o", tmp_path / "job.gpickle", "--workers", "1",
                "--json"])
    assert job["summary"]["ranks"] == 4


def test_every_input_command_has_json() -> None:
    from opgraph.cli import commands

    for cmd in commands():
        name = cmd.name
        if any(isinstance(p, click.Argument) for p in cmd.params):
            assert any(p.name == "as_json" for p in cmd.params), name


def test_output_self_check_only_when_asked(monkeypatch, capsys) -> None:
    """Our own JSON is validated against its schema when $OPGRAPH_CHECK_OUTPUT is set (the
    tests), and not at run time otherwise (no schema pass on the hot path)."""
    import pytest as _pytest

    from opgraph.emit import emit_json

    bad = {"not": "an idle document"}
    monkeypatch.setenv("OPGRAPH_CHECK_OUTPUT", "1")
    with _pytest.raises(ValueError, match="idle.schema.json"):
        emit_json(bad, "idle.schema.json")
    monkeypatch.delenv("OPGRAPH_CHECK_OUTPUT")
    emit_json(bad, "idle.schema.json")
    assert '"not": "an idle document"' in capsys.readouterr().out
