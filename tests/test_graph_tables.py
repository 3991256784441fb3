"""``opgraph export --parquet DIR`` / ``opgraph.graph_tables``: the graph as node and edge
tables that hold exactly the graph (counts, kinds, attributes, ids)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import opgraph
from conftest import KINETO_DIR

ROOT = Path(__file__).resolve().parent.parent


def _check(G, nodes: pd.DataFrame, edges: pd.DataFrame) -> None:
    assert len(nodes) == G.number_of_nodes() and len(edges) == G.number_of_edges()
    assert set(nodes["id"]) == set(G.nodes)
    n = nodes.set_index("id")
    for eid, d in list(G.nodes(data=True))[:: max(1, G.number_of_nodes() // 200)]:
        assert n.at[eid, "kind"] == d["kind"] and n.at[eid, "ts_ns"] == d["ts"] and n.at[eid, "dur_ns"] == d["dur"]
        if d.get("args"):
            assert json.loads(n.at[eid, "args"]) == json.loads(json.dumps(d["args"]))
    got = edges.groupby("kind").size().to_dict()
    want: dict[str, int] = {}
    for _, _, d in G.edges(data=True):
        want[d["kind"]] = want.get(d["kind"], 0) + 1
    assert got == want
    assert set(zip(edges["src"].tolist(), edges["dst"].tolist())) == set(G.edges)
    # every kernel is linked to its launch: the join a SQL user would write
    kernels = set(nodes.loc[nodes["kind"] == "kernel", "id"].tolist())
    launched = set(edges.loc[edges["kind"] == "launch", "dst"].tolist())
    assert kernels and kernels <= launched


def test_cli_parquet_synth(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    trace = opgraph.example_trace("two_stream_event_wait", tmp_path)
    out = tmp_path / "tables"
    r = subprocess.run([sys.executable, "-m", "opgraph", "export", str(trace), "--parquet", str(out)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    _check(opgraph.load(trace), pd.read_parquet(out / "nodes.parquet"), pd.read_parquet(out / "edges.parquet"))


def test_csv_tables(tmp_path: Path) -> None:
    G = opgraph.load(opgraph.example_trace("gpu_bound", tmp_path))
    paths = opgraph.export_tables(G, tmp_path / "csv", "csv")
    assert [p.name for p in paths] == ["nodes.csv", "edges.csv"]
    assert len(pd.read_csv(paths[0])) == G.number_of_nodes()
    assert len(pd.read_csv(paths[1])) == G.number_of_edges()
    with pytest.raises(ValueError):
        opgraph.export_tables(G, tmp_path / "x", "xls")


def test_gpickle_round_trip_with_arrow_strings(tmp_path: Path) -> None:
    """With pyarrow installed, pandas keeps strings in Arrow arrays; a saved graph holding
    them still loads through the safe unpickler, with the same strings."""
    pytest.importorskip("pyarrow")
    G = opgraph.load(opgraph.example_trace("gpu_bound", tmp_path))
    ev = G.graph["events"]
    G.graph["events"] = ev.assign(label=pd.array(["x"] * len(ev), dtype=pd.StringDtype("pyarrow")))
    out = opgraph.save(G, tmp_path / "g.gpickle")
    H = opgraph.load(out)
    assert H.graph["events"]["label"].tolist() == ["x"] * len(ev)
    assert H.number_of_nodes() == G.number_of_nodes()


@pytest.mark.real_traces
def test_parquet_real_trace(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    p = KINETO_DIR / "param_dlrm_8gpu_rank0.pt.trace.json.gz"
    if not p.exists():
        pytest.skip("trace absent")
    G = opgraph.load(p)
    opgraph.export_tables(G, tmp_path)
    _check(G, pd.read_parquet(tmp_path / "nodes.parquet"), pd.read_parquet(tmp_path / "edges.parquet"))
