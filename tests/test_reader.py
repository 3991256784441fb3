"""The Kineto reader (opgraph.ingest): exact ns times, categories -> kinds, linking keys,
pid/tid forms, bare arrays, flows/instants/metadata, untouched args (docs/model.md).
Every trace here is written by the test into tmp_path.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from opgraph.graph.build import build_graph
from opgraph.ingest.readers import read_trace
from opgraph.ingest.kineto import parse_json, read_kineto
from opgraph.ingest.source import read_source
from opgraph.model.table import COLUMNS

EPOCH_US = 1712195495519689  # an epoch-scale µs timestamp (float64 cannot hold its ns)


def _write(tmp_path: Path, doc: Any, name: str = "t.json", text: str | None = None) -> Path:
    p = tmp_path / name
    data = (text if text is not None else json.dumps(doc)).encode()
    p.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return p


def _x(cat: str, name: str = "op", ts: Any = 10, dur: Any = 5, pid: Any = 1, tid: Any = 1,
       **args: Any) -> dict:
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        e["args"] = args
    return e


def _ev(table, i: int) -> dict:
    return table.events.iloc[i].to_dict()


# ------------------------------------------------------------------------- times
def test_fractional_epoch_ts_exact_from_text(tmp_path: Path) -> None:
    text = ('{"traceEvents": [\n'
            '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, '
            '"ts": 1712195495519689.047, "dur": 63.813, "args": {}},\n'
            '{"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, '
            '"ts": 1712195495519690.999, "dur": 0.001}\n]}')
    t = read_trace(_write(tmp_path, None, text=text))
    ev = t.events
    assert ev["ts_ns"].tolist() == [1712195495519689047, 1712195495519690999]
    assert ev["dur_ns"].tolist() == [63813, 1]
    assert ev["ts_ns"].dtype == np.int64 and ev["dur_ns"].dtype == np.int64
    # float64 alone would be wrong here: the reader really used the text
    assert int(round(1712195495519689.047 * 1000)) != 1712195495519689047
    assert not [h for h in t.health if h.code == "ts_precision"]


def test_four_decimals_round_to_nearest_ns(tmp_path: Path) -> None:
    text = ('[{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, '
            '"ts": 1712195495519689.0476, "dur": 63.8136},\n'
            '{"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, '
            '"ts": 1712195495519689.0474, "dur": 63.8134},\n'
            '{"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, '
            '"ts": 1712195495519689.9996, "dur": 0.0006}]')
    ev = read_trace(_write(tmp_path, None, text=text)).events
    # .0476 -> 48 ns (truncation would give 47); .0474 -> 47; .9996 carries into the µs
    assert ev["ts_ns"].tolist() == [1712195495519689048, 1712195495519689047, 1712195495519690000]
    assert ev["dur_ns"].tolist() == [63814, 63813, 1]


def test_small_fractional_ts_round_to_nearest(tmp_path: Path) -> None:
    doc = [_x("cpu_op", ts=5.0476, dur=1.0006), _x("cpu_op", ts=123.4564, dur=2.5)]
    ev = read_trace(_write(tmp_path, doc)).events
    assert ev["ts_ns"].tolist() == [5048, 123456]
    assert ev["dur_ns"].tolist() == [1001, 2500]


def test_integer_us_times_1000(tmp_path: Path) -> None:
    doc = {"traceEvents": [_x("cpu_op", ts=EPOCH_US, dur=64), _x("cpu_op", ts=EPOCH_US + 100, dur=0)]}
    ev = read_trace(_write(tmp_path, doc)).events
    assert ev["ts_ns"].tolist() == [EPOCH_US * 1000, (EPOCH_US + 100) * 1000]
    assert ev["dur_ns"].tolist() == [64000, 0]


def test_mixed_int_and_fractional_epoch_ts(tmp_path: Path) -> None:
    text = ('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, '
            f'"ts": {EPOCH_US}, "dur": 3}},'
            '{"ph": "i", "s": "t", "name": "mark", "pid": 1, "tid": 1, "ts": 1712195495519689.5},'
            '{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}},'
            '{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, '
            '"ts": 1712195495519700.123, "dur": 1.5}]}')
    ev = read_trace(_write(tmp_path, None, text=text)).events
    assert ev["ts_ns"].tolist()[:2] == [EPOCH_US * 1000, EPOCH_US * 1000 + 500]
    assert ev["ts_ns"].iloc[3] == 1712195495519700123
    assert ev["dur_ns"].iloc[3] == 1500


def test_display_time_unit_ns_is_ignored(tmp_path: Path) -> None:
    doc = {"displayTimeUnit": "ns", "traceEvents": [_x("cpu_op", ts=1000, dur=20)]}
    ev = read_trace(_write(tmp_path, doc)).events
    assert ev["ts_ns"].tolist() == [1_000_000]
    assert ev["dur_ns"].tolist() == [20_000]


def test_gzip_and_plain_read_the_same(tmp_path: Path) -> None:
    doc = {"traceEvents": [_x("cpu_op", ts=1.5, dur=2), _x("kernel", pid=0, tid=7, ts=3, dur=1, correlation=4)]}
    a = read_trace(_write(tmp_path, doc, "a.json")).events
    b = read_trace(_write(tmp_path, doc, "b.json.gz")).events
    assert a.drop(columns=["args"]).equals(b.drop(columns=["args"]))
    assert a["args"].tolist() == b["args"].tolist()


def test_ts_key_inside_args_is_flagged_when_not_exact(tmp_path: Path) -> None:
    """A ``"ts"`` key elsewhere in the file defeats the text alignment. The reader must
    then say so (``ts_precision``) rather than silently return rounded values."""
    text = ('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, '
            '"ts": 1712195495519689.047, "dur": 63.813, "args": {"ts": 5}}]}')
    t = read_trace(_write(tmp_path, None, text=text))
    exact = t.events["ts_ns"].iloc[0] == 1712195495519689047
    assert exact or any(h.code == "ts_precision" for h in t.health)
    assert abs(int(t.events["ts_ns"].iloc[0]) - 1712195495519689047) <= 250


def test_ts_key_inside_args_still_exact(tmp_path: Path) -> None:
    text = ('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, '
            '"ts": 1712195495519689.047, "dur": 63.813, "args": {"ts": 5}},'
            '{"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, '
            '"ts": 1712195495519690.047, "dur": 1}]}')
    ev = read_trace(_write(tmp_path, None, text=text)).events
    assert ev["ts_ns"].tolist() == [1712195495519689047, 1712195495519690047]


# ------------------------------------------------------------------------- kinds
OLD_CATS = {"Operator": "cpu_op", "Runtime": "runtime", "Kernel": "kernel", "Memcpy": "memcpy",
            "Memset": "memset"}
NEW_CATS = {"cpu_op": "cpu_op", "user_annotation": "annotation", "python_function": "python",
            "cuda_runtime": "runtime", "cuda_driver": "runtime", "hip_runtime": "runtime",
            "kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset",
            "gpu_user_annotation": "gpu_annotation", "cuda_sync": "cuda_sync", "Trace": "trace_span"}


@pytest.mark.parametrize("cat,kind", sorted({**OLD_CATS, **NEW_CATS}.items()))
def test_category_to_kind(tmp_path: Path, cat: str, kind: str) -> None:
    ev = read_trace(_write(tmp_path, [_x(cat, name="thing")])).events
    assert ev["kind"].astype(object).tolist() == [kind]
    assert ev["cat"].astype(object).tolist() == [cat]
    assert ev["ph"].astype(object).tolist() == ["X"]


def test_old_format_trace(tmp_path: Path) -> None:
    """A 2021-style trace: capitalised categories, ``external id`` (0 = none),
    ProfilerStep recorded as an Operator, Runtime -> Kernel by correlation."""
    doc = [
        _x("Operator", name="ProfilerStep#3", ts=0, dur=100, **{"external id": 0}),
        _x("Operator", name="aten::mm", ts=10, dur=20, **{"external id": 7}),
        _x("Runtime", name="cudaLaunchKernel", ts=12, dur=5, correlation=42, **{"external id": 7}),
        _x("Kernel", name="sgemm", pid=0, tid="stream 7", ts=40, dur=30, correlation=42,
           **{"external id": 7}),
        _x("Memcpy", name="Memcpy HtoD", pid=0, tid="stream 7", ts=80, dur=3, correlation=43),
        _x("Memset", name="Memset", pid=0, tid="stream 7", ts=90, dur=1, correlation=44),
    ]
    t = read_trace(_write(tmp_path, doc))
    ev = t.events
    assert ev["kind"].astype(object).tolist() == ["annotation", "cpu_op", "runtime", "kernel", "memcpy", "memset"]
    assert ev["external_id"].tolist() == [-1, 7, 7, 7, -1, -1]
    assert ev["correlation"].tolist() == [-1, -1, 42, 42, 43, 44]
    assert ev["stream"].tolist()[3:] == [7, 7, 7]
    assert ev["device"].tolist()[3:] == [0, 0, 0]
    G = build_graph(t)
    assert G.has_edge(2, 3) and G.edges[2, 3]["kind"] == "launch"
    assert G.has_edge(0, 1) and G.edges[0, 1]["kind"] == "nest"


def test_external_id_both_spellings(tmp_path: Path) -> None:
    doc = [_x("cpu_op", **{"External id": 11}), _x("cpu_op", **{"external id": 12}),
           _x("cpu_op", **{"External id": 13, "external id": 99}), _x("cpu_op")]
    ev = read_trace(_write(tmp_path, doc)).events
    assert ev["external_id"].tolist() == [11, 12, 13, -1]


def test_stream_from_string_tid_and_args(tmp_path: Path) -> None:
    doc = [_x("kernel", name="k1", pid=0, tid="stream 7", correlation=1),
           _x("kernel", name="k2", pid=0, tid="stream 7 ", correlation=2),
           _x("kernel", name="k3", pid=0, tid=20, correlation=3),
           _x("kernel", name="k4", pid=0, tid="stream 7", correlation=4, stream=9, device=1),
           _x("gpu_memcpy", name="cp", pid=2, tid="stream 13", correlation=5)]
    ev = read_trace(_write(tmp_path, doc)).events
    assert ev["stream"].tolist() == [7, 7, 20, 9, 13]
    assert ev["device"].tolist() == [0, 0, 0, 1, 2]
    assert ev["tid"].astype(object).tolist() == ["stream 7", "stream 7 ", 20, "stream 7", "stream 13"]


def test_pids_as_written(tmp_path: Path) -> None:
    doc = [_x("cpu_op", pid="Spans", tid="PyTorch Profiler"), _x("cpu_op", pid=1234, tid=5),
           _x("cpu_op", pid="4321", tid="77")]
    ev = read_trace(_write(tmp_path, doc)).events
    pids = ev["pid"].astype(object).tolist()
    tids = ev["tid"].astype(object).tolist()
    assert pids == ["Spans", 1234, 4321] and type(pids[0]) is str and type(pids[2]) is int
    assert tids == ["PyTorch Profiler", 5, 77]


def test_bare_array_equals_object_form(tmp_path: Path) -> None:
    evs = [_x("cpu_op", name="a", ts=0, dur=10), _x("cpu_op", name="b", ts=2, dur=3)]
    a = read_trace(_write(tmp_path, evs, "bare.json")).events
    b = read_trace(_write(tmp_path, {"traceEvents": evs}, "obj.json")).events
    assert a["name"].astype(object).tolist() == ["a", "b"]
    assert a.drop(columns=["args"]).equals(b.drop(columns=["args"]))


def test_flows_instants_and_meta_kept(tmp_path: Path) -> None:
    doc = {"traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}},
        _x("cuda_runtime", name="cudaLaunchKernel", ts=10, dur=5, correlation=9),
        {"ph": "s", "id": 9, "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 1, "ts": 10},
        {"ph": "f", "id": 9, "bp": "e", "cat": "ac2g", "name": "ac2g", "pid": 0, "tid": 7, "ts": 30},
        {"ph": "t", "id": 10, "cat": "fwdbwd", "name": "fwdbwd", "pid": 1, "tid": 1, "ts": 12},
        {"ph": "i", "s": "t", "name": "Iteration Start", "pid": 1, "tid": 1, "ts": 11},
        _x("kernel", name="k", pid=0, tid=7, ts=30, dur=4, correlation=9),
    ]}
    t = read_trace(_write(tmp_path, doc))
    ev = t.events
    assert len(ev) == 7
    assert ev["eid"].tolist() == list(range(7))
    assert ev["kind"].astype(object).tolist() == ["meta", "runtime", "flow_start", "flow_end", "flow_end",
                                                   "instant", "kernel"]
    assert ev["flow_id"].tolist() == [-1, -1, 9, 9, 10, -1, -1]
    assert ev["ts_ns"].tolist()[1:] == [10_000, 10_000, 30_000, 12_000, 11_000, 30_000]
    assert ev["ph"].astype(object).tolist() == ["M", "X", "s", "f", "t", "i", "X"]
    G = build_graph(t)
    # flows and instants are table rows, not nodes
    assert set(G.nodes) == {1, 6}
    assert G.edges[1, 6]["kind"] == "launch"


def test_canonical_columns(tmp_path: Path) -> None:
    doc = {"distributedInfo": {"rank": 3, "world_size": 8},
           "traceEvents": [_x("cpu_op", **{"Record function id": 5, "External id": 2})]}
    t = read_trace(_write(tmp_path, doc))
    ev = t.events
    assert set(COLUMNS) <= set(ev.columns)
    for c in ("eid", "ts_ns", "dur_ns", "device", "stream", "correlation", "external_id", "rf_id",
              "flow_id", "rank"):
        assert ev[c].dtype == np.int64, c
    row = _ev(t, 0)
    assert (row["rank"], row["rf_id"], row["external_id"], row["correlation"]) == (3, 5, 2, -1)
    assert t.meta["format"] == "kineto"
    assert t.meta["distributed_info"] == {"rank": 3, "world_size": 8}


def test_args_untouched(tmp_path: Path) -> None:
    args0 = {"External id": 1, "Input Dims": [[2, 3], []], "Input type": ["float", ""],
             "nested": {"a": [1, 2.5, None, True]}, "unicode": "µs ✓", "big": 2**62}
    evs = [_x("cpu_op", **args0), {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                                   "ts": 1, "dur": 1, "args": {"correlation": 3, "grid": [1, 2, 3]}},
           {"ph": "i", "name": "no-args", "pid": 1, "tid": 1, "ts": 2}]
    path = _write(tmp_path, {"traceEvents": evs})
    ev = read_trace(path).events
    assert ev["args"].tolist() == [e.get("args") for e in json.loads(path.read_text())["traceEvents"]]
    # given a decoded document, the args are the very objects of the document
    src = read_source(path)
    doc = parse_json(src)
    ev2 = read_kineto(str(path), src=src, doc=doc).events
    for a, e in zip(ev2["args"].tolist(), doc["traceEvents"]):
        assert a is e.get("args")
    assert doc["traceEvents"][0]["args"] == args0  # and not modified


def test_unknown_category_is_other_with_warning(tmp_path: Path) -> None:
    t = read_trace(_write(tmp_path, [_x("cpu_op"), _x("brand_new_cat"), _x("brand_new_cat")]))
    assert t.events["kind"].astype(object).tolist() == ["cpu_op", "other", "other"]
    h = [h for h in t.health if h.code == "unknown_category"]
    assert len(h) == 1 and h[0].count == 2 and h[0].example_eid == 1 and "brand_new_cat" in h[0].message


def test_empty_event_list(tmp_path: Path) -> None:
    t = read_trace(_write(tmp_path, {"traceEvents": []}))
    assert len(t) == 0
    G = build_graph(t)
    assert G.number_of_nodes() == 0 and G.number_of_edges() == 0


def test_string_flow_ids_are_not_silently_dropped(tmp_path: Path) -> None:
    doc = [_x("cpu_op", name="fwd", ts=0, dur=5), _x("cpu_op", name="bwd", ts=10, dur=5, tid=2),
           {"ph": "s", "id": "0x1a", "cat": "fwdbwd", "name": "fwdbwd", "pid": 1, "tid": 1, "ts": 0},
           {"ph": "f", "id": "0x1a", "bp": "e", "cat": "fwdbwd", "name": "fwdbwd", "pid": 1, "tid": 2, "ts": 10}]
    t = read_trace(_write(tmp_path, doc))
    G = build_graph(t)
    linked = G.has_edge(0, 1) and G.edges[0, 1]["kind"] == "flow"
    warned = any("flow" in h["code"] for h in G.graph["health"])
    assert linked or warned
