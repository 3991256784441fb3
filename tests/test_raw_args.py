"""Args kept as raw JSON text from decode to the saved graph (opgraph/model/event_args.py,
opgraph/model/packed_args.py): a build from a Kineto trace never decodes the whole args
column, the saved graph holds the text with its offsets, reading the event table decodes
it to exactly the general path's values, exports are unchanged, graphs saved with the
pickled form still load, and bad raw args are refused in one line."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import numpy as np
import orjson
import pytest
from click.testing import CliRunner
from conftest import KINETO_FILES, SYNTH_TRACES, requires_traces, same_values, write_payload

import opgraph
from opgraph.catalog.entries import ANALYSES as CATALOG
from opgraph.model.trace_graph import TraceGraph
from opgraph.cli import main
from opgraph.errors import OpgraphInputError
from opgraph.graph.io import load_any, load_gpickle, save_gpickle
from opgraph.model.packed_args import ARGS_KEY, JSON_ARGS_KEY, LazyGraphAttrs, pack_args, unpack_payload
from opgraph.model.payload import graph_to_payload
from opgraph.model.event_args import RawArgs
from opgraph.ingest.kineto import parse_json
from opgraph.ingest.source import read_source
from opgraph.pipelines import build_file

#: API analyses that work on the columns without reading args (the catalog's ``reads_args=False``).
ARGS_FREE = tuple(a.name for a in CATALOG if a.name and not a.reads_args)


def _general_args(trace: Path) -> list:
    """The args column the general path (orjson over the whole file) decodes."""
    doc = parse_json(read_source(trace))
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return [e.get("args") for e in events]


@pytest.fixture
def never_whole(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts decodes of a whole raw args column (``RawArgs.decode``)."""
    calls: list[int] = []
    real = RawArgs.decode

    def counted(self: RawArgs) -> list:
        calls.append(len(self))
        return real(self)
    monkeypatch.setattr(RawArgs, "decode", counted)
    return calls


def _built(tmp_path: Path, trace: Path, name: str = "g.gpickle") -> Path:
    out = tmp_path / name
    build_file(str(trace), str(out))
    return out


@pytest.mark.parametrize("scenario", ["gpu_bound", "two_stream_event_wait", "sync_every_op", "cuda_graph"])
def test_a_build_never_decodes_the_whole_args_column(tmp_path: Path, never_whole: list[int], scenario: str) -> None:
    """``opgraph build`` reads the rows it links by (linking keys, syncs, captures) and saves
    the text as it came; nor do the analyses that never read args decode it, from the raw
    trace or from the saved graph. Reading the table decodes it once."""
    trace = opgraph.example_trace(scenario, tmp_path)
    path = _built(tmp_path, trace)
    assert never_whole == []
    tg = load_gpickle(path)
    assert JSON_ARGS_KEY in tg.payload and ARGS_KEY not in tg.payload
    assert isinstance(tg.graph, LazyGraphAttrs) and tg.graph.args_pending
    built = load_any(trace)
    for g in (tg, built):
        for name in ARGS_FREE:
            getattr(opgraph, name)(g)
            assert g.graph.args_pending, f"{name} decoded the args"
    assert never_whole == []
    got = tg.graph["events"]["args"].tolist()
    assert never_whole == [len(got)] and not tg.graph.args_pending
    want = _general_args(trace)
    assert len(got) == len(want) and all(same_values(u, v) for u, v in zip(got, want))


def test_raw_args_round_trip_through_save_and_load(tmp_path: Path) -> None:
    """Built, saved, loaded and saved again without reading: the same text and offsets;
    every reader (columns, networkx, a plain unpickler) sees the general path's args."""
    trace = opgraph.example_trace("gpu_bound", tmp_path)
    path = _built(tmp_path, trace)
    tg = load_gpickle(path)
    again = tmp_path / "again.gpickle"
    save_gpickle(tg, again)
    assert tg.graph.args_pending
    pos, buf, offsets = tg.payload[JSON_ARGS_KEY]
    tg2 = load_gpickle(again)
    pos2, buf2, offsets2 = tg2.payload[JSON_ARGS_KEY]
    assert (pos2, buf2) == (pos, buf) and np.array_equal(offsets2, offsets)
    want = _general_args(trace)
    with open(again, "rb") as fh:
        plain = pickle.load(fh)   # a plain unpickler: the DiGraph, args in place
    for ev in (tg2.graph["events"], load_gpickle(again).graph["events"], plain.graph["events"]):
        assert list(ev.columns).index("args") == pos
        assert all(same_values(u, v) for u, v in zip(ev["args"].tolist(), want))
    G = load_gpickle(again)
    assert all(G.nodes[n]["args"] is G.graph["events"]["args"].iloc[n] for n in G)
    # once read, a save writes the pickled form, as for any table that was read
    third = tmp_path / "third.gpickle"
    save_gpickle(tg2, third)
    tg3 = load_gpickle(third)
    assert ARGS_KEY in tg3.payload and JSON_ARGS_KEY not in tg3.payload
    assert tg3.graph["events"].equals(tg2.graph["events"])


def test_graphs_saved_with_pickled_args_still_load(tmp_path: Path) -> None:
    """A graph saved with the pickled form (every graph saved before the raw form, and any
    networkx graph saved now) loads and answers as the raw form does."""
    trace = opgraph.example_trace("two_stream_event_wait", tmp_path)
    raw = load_gpickle(_built(tmp_path, trace))
    old = tmp_path / "old.gpickle"
    save_gpickle(load_any(trace).to_networkx(), old)
    tg = load_gpickle(old)
    assert ARGS_KEY in tg.payload and JSON_ARGS_KEY not in tg.payload and tg.graph.args_pending
    assert orjson.dumps(opgraph.critical_path(tg).to_dict(), default=str) == \
        orjson.dumps(opgraph.critical_path(raw).to_dict(), default=str)
    assert tg.graph["events"].equals(raw.graph["events"])


def test_export_and_augment_are_unchanged(tmp_path: Path) -> None:
    """Perfetto exports from the raw trace, from the saved raw graph and from a graph saved
    the networkx way (pickled args) are byte-identical, and so are augmented traces."""
    trace = opgraph.example_trace("gpu_bound", tmp_path)
    raw_g = _built(tmp_path, trace)
    nx_g = tmp_path / "nx.gpickle"
    save_gpickle(load_any(trace).to_networkx(), nx_g)
    outs = _written(tmp_path, ["export", "{src}", "--perfetto", "{out}"], (trace, raw_g, nx_g))
    assert outs[0] == outs[1] == outs[2]
    aug = _written(tmp_path, ["augment", "{src}", "-o", "{out}"], (trace, raw_g))
    assert aug[0] == aug[1]


def _written(tmp_path: Path, args: list[str], sources: tuple[Path, ...]) -> list[bytes]:
    """The bytes ``opgraph <args>`` writes for each of ``sources`` (``{src}``/``{out}`` filled)."""
    outs = []
    for i, src in enumerate(sources):
        out = tmp_path / f"{args[0]}{i}.json"
        res = CliRunner().invoke(main, [a.format(src=src, out=out) for a in args], catch_exceptions=False)
        assert res.exit_code == 0, res.output
        outs.append(out.read_bytes())
    return outs


def test_a_job_of_raw_ranks_merges_whole_tables(tmp_path: Path) -> None:
    """Each rank's args are decoded in its worker, so the job's event table is whole."""
    from opgraph.testing.synth_multirank import synthesize_job, write_job

    files = write_job(synthesize_job(world_size=2, steps=2, slow_rank=1), tmp_path / "job")
    job = tmp_path / "job.gpickle"
    res = CliRunner().invoke(main, ["build", *map(str, files), "-o", str(job), "--workers", "1"],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    tg = load_gpickle(job)
    ev = tg.graph["events"]
    want = [a for f in files for a in _general_args(f)]
    assert sorted(map(repr, ev["args"].tolist())) == sorted(map(repr, want))


def test_unpack_payload_of_a_built_payload(tmp_path: Path) -> None:
    """A payload built in this process with raw args puts its column back on request (the
    multi-rank worker's way) and drops the packed text."""
    from opgraph.graph.build import build_payload
    from opgraph.ingest.readers import read_trace

    trace = opgraph.example_trace("gpu_bound", tmp_path)
    p = build_payload(read_trace(trace))
    assert JSON_ARGS_KEY in p and p["graph"].args_pending
    pos = p[JSON_ARGS_KEY][0]
    out = unpack_payload(p)
    assert JSON_ARGS_KEY not in out and "args" in out["graph"]["events"].columns
    assert pack_args(out)[ARGS_KEY][0] == pos


def _deep(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


def _texts(buf: bytes, offsets: np.ndarray) -> list[bytes]:
    return [buf[s:e - 1] for s, e in zip(offsets[:-1].tolist(), offsets[1:].tolist())]


def _first_replaced(buf: bytes, offsets: np.ndarray, first: bytes) -> tuple[bytes, np.ndarray]:
    """The column's text and offsets with the first event's text replaced by ``first``."""
    texts = [first] + _texts(buf, offsets)[1:]
    return b",".join(texts) + b",", RawArgs.of_texts(texts).offsets


BAD = {
    "not bytes": (lambda pos, buf, off: (pos, buf.decode(), off), "not (position, JSON text, offsets", "load"),
    "offsets not int64": (lambda pos, buf, off: (pos, buf, off.astype(np.int32)), "not (position, JSON text",
                          "load"),
    "too few offsets": (lambda pos, buf, off: (pos, buf, off[:-1]), "not (position, JSON text", "load"),
    "position past the table": (lambda pos, buf, off: (999, buf, off), "not (position, JSON text", "load"),
    "offsets off the text": (lambda pos, buf, off: (pos, buf, off + 1), "offsets do not fit", "read"),
    "not JSON": (lambda pos, buf, off: (pos, b"{x," + buf[3:], off), "not JSON", "read"),
    "text past the offsets": (lambda pos, buf, off: (pos, buf + b"{},", off), "offsets do not fit", "read"),
    "two values in one slot": (lambda pos, buf, off: (pos, *_first_replaced(buf, off, b"{},{}")),
                               "not one value per event", "read"),
    "nested too deep": (lambda pos, buf, off: (pos, *_first_replaced(buf, off, _deep(400))), "deep", "read"),
    # closing brackets inside a string used to hide the depth from the bracket count
    "nested too deep after brackets in a string": (
        lambda pos, buf, off: (pos, *_first_replaced(buf, off, b'{"s":"' + b"]" * 405 + b'","d":' + _deep(300) + b"}")),
        "deep", "read"),
    "offsets that wrap around int64": (lambda pos, buf, off: (pos, *_wrapping(len(off) - 1)), "offsets do not fit",
                                       "read"),
    "text closing the events array early": (lambda pos, buf, off: (pos, *_first_replaced(buf, off, b"null]],[[0")),
                                            "not JSON", "read"),
    "args that are not an object": (lambda pos, buf, off: (pos, *_first_replaced(buf, off, b"17")),
                                    "not an object or null", "read"),
}


def _wrapping(n: int) -> tuple[bytes, np.ndarray]:
    """``n`` empty objects with offsets whose differences pass a ``>= 2`` test only by
    wrapping around int64."""
    o = [0, 2**62, 2**63 - 2, -(2**63) + 10, -(2**62)]
    step = (3 * n + 2**62) // (n + 1 - len(o))
    while len(o) < n:
        o.append(o[-1] + step)
    o.append(3 * n)
    return b"{}," * n, np.array(o, dtype=np.int64)


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_raw_args_are_one_line(tmp_path: Path, case: str) -> None:
    trace = opgraph.example_trace("gpu_bound", tmp_path)
    tg = load_gpickle(_built(tmp_path, trace))
    edit, words, when = BAD[case]
    p = dict(tg.payload)
    p["graph"] = tg.graph.raw()
    p[JSON_ARGS_KEY] = edit(*p[JSON_ARGS_KEY])
    bad = write_payload(tmp_path / "bad.gpickle", p)
    if when == "load":
        with pytest.raises(OpgraphInputError, match=re.escape(words)):
            load_gpickle(bad)
    else:
        g = load_gpickle(bad)
        opgraph.idle(g)    # what does not read args is unaffected
        with pytest.raises(OpgraphInputError, match=re.escape(words)):
            g.graph["events"]
    res = CliRunner().invoke(main, ["kernels", str(bad)], catch_exceptions=False)
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert res.exit_code == 2 and len(lines) == 1, res.output
    assert str(bad) in lines[0] and "internal error" not in lines[0] and "Traceback" not in res.output


def test_both_forms_at_once_are_refused(tmp_path: Path) -> None:
    trace = opgraph.example_trace("gpu_bound", tmp_path)
    tg = load_gpickle(_built(tmp_path, trace))
    p = dict(tg.payload)
    p["graph"] = tg.graph.raw()
    p[ARGS_KEY] = (p[JSON_ARGS_KEY][0], pickle.dumps(np.array([{}] * len(p["graph"]["events"]), dtype=object)))
    bad = write_payload(tmp_path / "bad.gpickle", p)
    with pytest.raises(OpgraphInputError, match="packed twice"):
        load_gpickle(bad)


@pytest.mark.parametrize("body, needle", [
    (b'"args": {"x": 1e400}', "infinity"),
    (b'"args": {"x": "\xff"}', "UTF-8"),
    (b'"args": 3', "'args' has the wrong type"),
    (b'"args": {"d": ' + _deep(1100) + b"}", "depth"),
])
def test_bad_args_fail_the_build_in_one_line(tmp_path: Path, body: bytes, needle: str) -> None:
    """Bad args are reported when the trace is built, never later when they are decoded."""
    p = tmp_path / "t.json"
    p.write_bytes(b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, '
                  b'"dur": 1, ' + body + b"}]}")
    res = CliRunner().invoke(main, ["build", str(p), "-o", str(tmp_path / "g.gpickle")], catch_exceptions=False)
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and str(p) in lines[0] and needle in lines[0], res.output


@requires_traces
@pytest.mark.real_traces
@pytest.mark.parametrize("name", ["hta_ns_resolution_rank0.pt.trace.json.gz", "hta_mtia_inference_rank0.json.gz",
                                  "hta_large_integer_rank70.pt.trace.json.gz", "tracelens_h100_bert_small.json.gz"])
def test_real_traces_keep_raw_args_and_read_them_back(tmp_path: Path, never_whole: list[int], name: str) -> None:
    trace = next((p for p in KINETO_FILES if p.name == name), None)
    if trace is None:
        pytest.skip(f"{name} not in ../shared/traces")
    path = _built(tmp_path, trace)
    assert never_whole == []
    tg = load_gpickle(path)
    assert JSON_ARGS_KEY in tg.payload
    got = tg.graph["events"]["args"].tolist()
    want = _general_args(trace)
    assert len(got) == len(want) and all(same_values(u, v) for u, v in zip(got, want))
    G = load_any(trace)   # built again: the same table
    assert G.graph["events"].equals(tg.graph["events"])
    assert isinstance(load_gpickle(path), TraceGraph)


@pytest.mark.parametrize("path", SYNTH_TRACES, ids=[p.name for p in SYNTH_TRACES])
def test_synthesized_fixtures_export_the_same_from_raw_and_pickled_graphs(tmp_path: Path, path: Path) -> None:
    raw_g = _built(tmp_path, path)
    nx_g = tmp_path / "nx.gpickle"
    save_gpickle(load_any(path).to_networkx(), nx_g)
    outs = _written(tmp_path, ["export", "{src}", "--perfetto", "{out}"], (raw_g, nx_g))
    assert outs[0] == outs[1]


def test_pickled_payload_of_networkx_graph_is_unchanged(tmp_path: Path) -> None:
    """Saving a networkx graph still writes the pickled form (its args may be any value)."""
    G = load_any(opgraph.example_trace("gpu_bound", tmp_path)).to_networkx()
    p = pack_args(graph_to_payload(G))
    assert ARGS_KEY in p and JSON_ARGS_KEY not in p


def test_raw_depth_counts_brackets_outside_strings_only() -> None:
    """The bracket count that lets a load skip the bounds walk and a build keep args raw
    equals a parser's depth on random JSON full of brackets, quotes and backslashes inside
    strings (it used to count those too, and brackets closed in a string hid the depth)."""
    import json
    import random

    import opgraph.model.json_depth as dl

    def depth(o: object) -> int:
        if isinstance(o, dict):
            return 1 + max((depth(v) for v in o.values()), default=0)
        if isinstance(o, list):
            return 1 + max((depth(v) for v in o), default=0)
        return 0

    alpha = ["[", "]", "{", "}", '"', "\\", "a", ",", ":", '\\"', "\\\\"]
    rng = random.Random(7)

    def rnd(d: int = 0) -> object:
        t = rng.random()
        if d > 6 or t < 0.3:
            return "".join(rng.choice(alpha) for _ in range(rng.randint(0, 6)))
        if t < 0.65:
            return [rnd(d + 1) for _ in range(rng.randint(0, 3))]
        return {"".join(rng.choice(alpha) for _ in range(3)): rnd(d + 1) for _ in range(rng.randint(0, 3))}

    for chunk in (dl._DEPTH_CHUNK, 1, 3):
        old, dl._DEPTH_CHUNK = dl._DEPTH_CHUNK, chunk   # chunk edges anywhere
        try:
            for i in range(1500):
                o = rnd()
                text = json.dumps(o, separators=(",", ":") if i % 2 else None).encode()
                assert dl.raw_max_depth(text) == depth(o), text
        finally:
            dl._DEPTH_CHUNK = old
    assert dl.raw_max_depth(b"") == 0 and dl.raw_max_depth(b'"[[["') == 0
    assert dl.raw_max_depth(b'{"s":"' + b"]" * 405 + b'","d":' + _deep(30) + b"}") == 31


def test_saving_a_table_without_args_drops_the_packed_column(tmp_path: Path) -> None:
    """A graph whose event table was replaced by one without ``args`` saves without the
    stale packed column (it used to save its lazy attributes as a ``dict`` global the
    loader refuses); the load then names what is missing, in one line."""
    from opgraph.model.packed_args import PACKED_KEYS, pack_args

    trace = opgraph.example_trace("gpu_bound", tmp_path)
    tg = load_gpickle(_built(tmp_path, trace))
    tg.graph["events"] = tg.graph["events"].drop(columns=["args"])
    p = pack_args(tg.payload)
    assert type(p["graph"]) is dict and not any(k in p for k in PACKED_KEYS)


def test_the_packed_text_is_let_go_once_decoded(tmp_path: Path) -> None:
    """Once ``graph["events"]`` has been read, the payload no longer holds the packed text
    beside the decoded column (built in process, and loaded); saving then packs the table."""
    from opgraph.model.packed_args import PACKED_KEYS
    from opgraph.graph.io import load_any

    trace = opgraph.example_trace("gpu_bound", tmp_path)
    for tg in (load_any(trace), load_gpickle(_built(tmp_path, trace))):
        assert JSON_ARGS_KEY in tg.payload
        tg.graph["events"]
        assert not any(k in tg.payload for k in PACKED_KEYS)
        out = tmp_path / "again.gpickle"
        save_gpickle(tg, out)
        back = load_gpickle(out)
        assert back.graph["events"]["args"].tolist() == tg.graph["events"]["args"].tolist()
