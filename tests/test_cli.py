"""The ``opgraph build`` / ``opgraph info`` commands end to end."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from opgraph import __version__
from opgraph.schemas_util import validate

ROOT = Path(__file__).resolve().parents[1]
SYNTH = ROOT / "fixtures" / "synth"
KINETO_DIR = ROOT.parent / "shared" / "traces" / "A_kineto"
TRACE = SYNTH / "gpu_bound.json"
ANSWERS = json.loads((SYNTH / "gpu_bound.answers.json").read_text())


def _info(cli, path: Path, *extra: str) -> dict:
    r = cli(["info", str(path), "--json", *extra])
    assert r.exit_code == 0, r.stderr
    assert r.exception is None
    doc = json.loads(r.stdout)
    validate(doc, "info.schema.json")
    return doc


def _build(cli, src: Path, out: Path, *extra: str) -> str:
    r = cli(["build", str(src), "-o", str(out), *extra])
    assert r.exit_code == 0, r.stderr
    assert out.exists() and out.stat().st_size > 0
    return r.stderr


def test_info_on_raw_trace(cli) -> None:
    doc = _info(cli, TRACE)
    assert doc["nodes"] == ANSWERS["num_nodes"]
    assert doc["edges"] == ANSWERS["num_edges"]
    assert doc["nodes_by_kind"] == {k: v for k, v in ANSWERS["nodes_by_kind"].items() if v}
    assert doc["edges_by_kind"] == {k: v for k, v in ANSWERS["edges_by_kind"].items() if v}
    assert doc["events"] == ANSWERS["num_events"]
    assert doc["iterations"]["count"] == len(ANSWERS["steps"])
    assert doc["iterations"]["names"] == [s["name"] for s in ANSWERS["steps"]]
    assert doc["source"] == {**doc["source"], "format": "kineto", "file": str(TRACE)}
    assert doc["opgraph_version"] == __version__


def test_build_gpickle_then_info(cli, tmp_path: Path) -> None:
    out = tmp_path / "g.gpickle"
    msg = _build(cli, TRACE, out)
    m = re.search(r"(\d+) nodes, (\d+) edges", msg)
    assert m and (int(m.group(1)), int(m.group(2))) == (ANSWERS["num_nodes"], ANSWERS["num_edges"])
    assert str(out) in msg
    doc = _info(cli, out)
    # the saved graph tells the same story as the raw trace
    assert doc == _info(cli, TRACE)


def test_build_json_gz_then_info(cli, tmp_path: Path) -> None:
    out = tmp_path / "g.json.gz"
    _build(cli, TRACE, out)
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    assert _info(cli, out) == _info(cli, TRACE)


def test_build_plain_json_then_info(cli, tmp_path: Path) -> None:
    out = tmp_path / "g.json"
    _build(cli, TRACE, out)
    validate(json.loads(out.read_text()), "opgraph-graph.schema.json")
    assert _info(cli, out)["nodes"] == ANSWERS["num_nodes"]


def test_info_text_output(cli) -> None:
    r = cli(["info", str(TRACE)])
    assert r.exit_code == 0, r.stderr
    assert f"nodes {ANSWERS['num_nodes']}" in r.stdout
    assert f"edges {ANSWERS['num_edges']}" in r.stdout
    assert "NVIDIA A100" in r.stdout


def test_format_kineto(cli, tmp_path: Path) -> None:
    assert _info(cli, TRACE, "--format", "kineto")["nodes"] == ANSWERS["num_nodes"]
    out = tmp_path / "g.gpickle"
    _build(cli, TRACE, out, "--format", "kineto")
    assert _info(cli, out)["edges"] == ANSWERS["num_edges"]


def test_format_kineto_on_misnamed_file(cli, tmp_path: Path) -> None:
    """Format comes from content, never the file name."""
    odd = tmp_path / "profile.data"
    odd.write_bytes(TRACE.read_bytes())
    assert _info(cli, odd)["nodes"] == ANSWERS["num_nodes"]
    assert _info(cli, odd, "--format", "kineto")["nodes"] == ANSWERS["num_nodes"]


@pytest.mark.parametrize("cmd", ["info", "build"])
def test_unknown_format_exits_2(cmd: str, cli, one_line_error, tmp_path: Path) -> None:
    out = tmp_path / "g.gpickle"
    args = [cmd, str(TRACE), "--format", "nsight-json-v9"]
    if cmd == "build":
        args += ["-o", str(out)]
    line = one_line_error(cli(args), TRACE, "unknown --format", "nsight-json-v9", "kineto")
    assert line
    assert not out.exists()


def test_unknown_output_type_exits_2(cli, one_line_error, tmp_path: Path) -> None:
    out = tmp_path / "g.txt"
    one_line_error(cli(["build", str(TRACE), "-o", str(out)]), out, "unknown output type")
    assert not out.exists()


def test_build_requires_output(cli) -> None:
    r = cli(["build", str(TRACE)])
    assert r.exit_code == 2 and "--output" in r.stderr


@pytest.mark.parametrize("suffix", [".gpickle", ".json.gz"])
def test_unwritable_output_exits_2(suffix: str, cli, one_line_error, tmp_path: Path) -> None:
    out = tmp_path / "no" / "such" / f"g{suffix}"
    one_line_error(cli(["build", str(TRACE), "-o", str(out)]), out)


def test_version(cli) -> None:
    r = cli(["--version"])
    assert r.exit_code == 0 and __version__ in r.stdout


def test_build_and_info_as_subprocess(cli_subprocess, tmp_path: Path) -> None:
    out = tmp_path / "g.gpickle"
    r = cli_subprocess(["build", str(TRACE), "-o", str(out)])
    assert r.exit_code == 0, r.stderr
    assert r.stdout == ""  # the summary goes to stderr, no progress bar when piped
    assert f"{ANSWERS['num_nodes']} nodes" in r.stderr and "\r" not in r.stderr
    r = cli_subprocess(["info", str(out), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "info.schema.json")
    assert doc["nodes"] == ANSWERS["num_nodes"]


@pytest.mark.real_traces
@pytest.mark.parametrize("name", ["hta_old_format_inference_rank1.json.gz", "hta_call_stack_backward_thread.json"])
def test_real_trace_build_and_info(name: str, cli, tmp_path: Path) -> None:
    src = KINETO_DIR / name
    raw = _info(cli, src)
    for out in (tmp_path / "g.gpickle", tmp_path / "g.json.gz"):
        _build(cli, src, out)
        assert _info(cli, out) == raw
