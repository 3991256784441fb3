"""Saved graphs keep the event table's args packed (opgraph/model/packed_args.py): loaded
as columns, the analyses that never read args run without unpacking them; reading the
table unpacks them exactly; every other reader sees the table as it was; bad packed args
are refused in one line when they are read."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from click.testing import CliRunner
from conftest import KINETO_FILES, requires_traces, write_payload

import opgraph
from opgraph.catalog.entries import ANALYSES as CATALOG
from opgraph.cli import main
from opgraph.errors import OpgraphInputError
from opgraph.graph.io import load_any, load_gpickle, save_gpickle
from opgraph.model.trace_graph import TraceGraph
from opgraph.model.packed_args import ARGS_KEY, LazyGraphAttrs, pack_args
from opgraph.model.payload import graph_to_payload

#: API analyses that work on the columns without reading args (the catalog's ``reads_args=False``).
ARGS_FREE = tuple(a.name for a in CATALOG if a.name and not a.reads_args)


def _saved(tmp_path: Path, trace: Path | None = None) -> tuple[Path, nx.DiGraph]:
    """A graph saved from its networkx view (the pickled args form), and that view."""
    src = trace if trace is not None else opgraph.example_trace("gpu_bound", tmp_path)
    G = load_any(src).to_networkx()
    out = tmp_path / "g.gpickle"
    save_gpickle(G, out)
    return out, G


def _same_table(a, b) -> None:
    assert list(a.columns) == list(b.columns)
    assert a["args"].tolist() == b["args"].tolist()
    assert a["eid"].tolist() == b["eid"].tolist()


def test_analyses_run_without_unpacking_and_reading_unpacks_exactly(tmp_path: Path) -> None:
    path, G = _saved(tmp_path)
    with open(path, "rb") as fh:
        raw = pickle.load(fh)      # a plain unpickler: the DiGraph, args in place
    assert isinstance(raw, nx.DiGraph)
    _same_table(raw.graph["events"], G.graph["events"])
    assert [raw.nodes[n]["args"] for n in raw] == [G.nodes[n]["args"] for n in G]

    tg = load_gpickle(path)
    assert isinstance(tg.graph, LazyGraphAttrs) and tg.graph.args_pending
    for name in ARGS_FREE:
        getattr(opgraph, name)(tg)
        assert tg.graph.args_pending, f"{name} unpacked the args"
    assert "events" in tg.graph and tg.graph.args_pending   # a key test does not unpack
    _same_table(tg.graph["events"], G.graph["events"])
    assert not tg.graph.args_pending
    nxg = tg.to_networkx()
    assert [nxg.nodes[n]["args"] for n in nxg] == [G.nodes[n]["args"] for n in G]


@pytest.mark.parametrize("how", ["dict", "spread", "items", "get", "copy", "pickle", "to_networkx"])
def test_every_way_of_reading_the_attributes_unpacks(tmp_path: Path, how: str) -> None:
    path, G = _saved(tmp_path)
    tg = load_gpickle(path)
    g = tg.graph
    if how == "dict":
        ev = dict(g)["events"]
    elif how == "spread":
        ev = {**g}["events"]
    elif how == "items":
        ev = dict(list(g.items()))["events"]
    elif how == "get":
        ev = g.get("events")
    elif how == "copy":
        ev = g.copy()["events"]
    elif how == "pickle":
        ev = pickle.loads(pickle.dumps(g))["events"]
    else:
        ev = tg.to_networkx().graph["events"]
    assert "args" in ev.columns
    _same_table(ev, G.graph["events"])


def test_saving_a_lazily_loaded_graph_keeps_args_packed(tmp_path: Path) -> None:
    path, G = _saved(tmp_path)
    tg = load_gpickle(path)
    again = tmp_path / "again.gpickle"
    save_gpickle(tg, again)
    assert tg.graph.args_pending
    _same_table(load_gpickle(again).graph["events"], G.graph["events"])
    _same_table(load_gpickle(again).graph["events"], G.graph["events"])
    # and once unpacked, a save packs the table afresh
    tg.graph["events"]
    third = tmp_path / "third.gpickle"
    save_gpickle(tg, third)
    _same_table(load_gpickle(third).graph["events"], G.graph["events"])


def test_pack_args_of_a_payload_round_trips(tmp_path: Path) -> None:
    _, G = _saved(tmp_path)
    p = graph_to_payload(G)
    packed = pack_args(p)
    assert ARGS_KEY in packed and "args" not in packed["graph"]["events"].columns
    assert "args" in p["graph"]["events"].columns, "packing must not change the payload it was given"
    assert pack_args(packed) is packed or pack_args(packed)[ARGS_KEY] == packed[ARGS_KEY]
    tg = TraceGraph(packed)
    _same_table(tg.graph["events"], G.graph["events"])


def _deep(depth: int) -> dict:
    d: dict = {}
    for _ in range(depth):
        d = {"a": d}
    return d


def _bomb() -> np.ndarray:
    x: list = []
    for _ in range(30):   # 2**30 items written out, under the depth bound
        x = [x, x]
    return np.array([{"b": x}], dtype=object)


BAD = {
    "not bytes": (lambda pos, blob, n: (pos, "text"), "not (position, bytes)", "load"),
    "position past the table": (lambda pos, blob, n: (999, blob), "not (position, bytes)", "load"),
    "garbage bytes": (lambda pos, blob, n: (pos, b"\x80\x05garbage"), "packed event args", "read"),
    "wrong length": (lambda pos, blob, n: (pos, pickle.dumps(np.array([{}] * (n + 1), dtype=object))),
                     "one value per event", "read"),
    "a list, not an array": (lambda pos, blob, n: (pos, pickle.dumps([{}] * n)), "one value per event", "read"),
    "nested too deep": (lambda pos, blob, n: (pos, pickle.dumps(np.array([_deep(400)] + [{}] * (n - 1),
                                                                            dtype=object))), "deep", "read"),
    "reference bomb": (lambda pos, blob, n: (pos, pickle.dumps(np.concatenate(
        [_bomb(), np.array([{}] * (n - 1), dtype=object)]))), "serialisation bomb", "read"),
    "unsafe global": (lambda pos, blob, n: (pos, pickle.dumps(np.array([print] * n, dtype=object))), "allow-list",
                      "read"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_packed_args_are_one_line(tmp_path: Path, case: str) -> None:
    path, G = _saved(tmp_path)
    edit, words, when = BAD[case]
    p = pack_args(graph_to_payload(G))
    pos, blob = p[ARGS_KEY]
    p[ARGS_KEY] = edit(pos, blob, len(G.graph["events"]))
    bad = write_payload(tmp_path / "bad.gpickle", p)
    if when == "load":
        with pytest.raises(OpgraphInputError, match=re.escape(words)):
            load_gpickle(bad)
    else:
        tg = load_gpickle(bad)
        opgraph.idle(tg)    # what does not read args is unaffected
        with pytest.raises(OpgraphInputError, match=re.escape(words)):
            tg.graph["events"]
    # the CLI: a command that reads args says so in one line, exit 2
    res = CliRunner().invoke(main, ["kernels", str(bad)], catch_exceptions=False)
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert res.exit_code == 2 and len(lines) == 1, res.output
    assert str(bad) in lines[0] and "internal error" not in lines[0] and "Traceback" not in res.output


@requires_traces
@pytest.mark.parametrize("name", ["hta_ns_resolution_rank0.pt.trace.json.gz", "hta_mtia_inference_rank0.json.gz",
                                  "hta_large_integer_rank70.pt.trace.json.gz"])
def test_real_traces_round_trip_through_packed_args(tmp_path: Path, name: str) -> None:
    trace = next((p for p in KINETO_FILES if p.name == name), None)
    if trace is None:
        pytest.skip(f"{name} not in ../shared/traces")
    path, G = _saved(tmp_path, trace)
    tg = load_gpickle(path)
    got = tg.graph["events"]
    _same_table(got, G.graph["events"])
    assert got.equals(G.graph["events"])
