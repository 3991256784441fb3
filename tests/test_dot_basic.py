"""Graphviz export: DOT always, SVG when the `dot` binary is installed."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pydot
import pytest
from click.testing import CliRunner

from opgraph.cli import main

ROOT = Path(__file__).resolve().parents[1]
ALEXNET = ROOT.parent / "shared" / "traces" / "A_kineto" / "hta_critical_path_alexnet.json.gz"


def test_dot_of_synth_step(tmp_path):
    out = tmp_path / "g.dot"
    r = CliRunner().invoke(main, ["export", str(ROOT / "fixtures" / "synth" / "two_stream_event_wait.json"),
                                  "--dot", str(out), "--window", r"ProfilerStep#1$"])
    assert r.exit_code == 0, r.output
    graphs = pydot.graph_from_dot_file(str(out))
    assert graphs and len(graphs) == 1
    text = out.read_text()
    assert "ProfilerStep#1" in text and "cluster" in text


@pytest.mark.skipif(not ALEXNET.exists(), reason="../shared/traces is absent")
@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed")
def test_svg_of_alexnet_parses(tmp_path):
    out = tmp_path / "g.svg"
    r = CliRunner().invoke(main, ["export", str(ALEXNET), "--svg", str(out), "--window", "all",
                                  "--max-nodes", "150"])
    assert r.exit_code == 0, r.output
    root = ET.parse(out).getroot()
    assert root.tag.endswith("svg")
    nodes = [g for g in root.iter() if (g.get("class") or "").split()[:1] == ["node"]]
    assert 0 < len(nodes) <= 150 + 20  # drawn events plus legend entries
