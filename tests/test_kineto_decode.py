"""The typed one-pass Kineto decoder (opgraph/ingest/kineto_decode.py) gives exactly the
event table of the general path (orjson dicts), on every real trace and synthesized
scenario, its args kept as raw JSON text and decoded on demand (a subset of rows, the
linking keys, the whole column) to the general path's values; what it does not take falls
back to the general path with the same answers and the same one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pandas as pd
import pytest
from conftest import KINETO_FILES, SYNTH_TRACES, TRACES, kineto_params, same_values

from opgraph.errors import OpgraphInputError
from opgraph.ingest.readers import parse_trace_doc, read_trace, read_trace_doc
from opgraph.model.event_args import LINK_KEYS, DictArgs, RawArgs
from opgraph.ingest.kineto import parse_json
from opgraph.ingest.kineto_decode import FieldColumns, decode_kineto
from opgraph.ingest.source import read_source


def _assert_tables_equal(fast, slow) -> None:
    a, b = fast.events, slow.events
    assert list(a.columns) == list(b.columns)
    for c in a.columns:
        x, y = a[c], b[c]
        assert x.dtype == y.dtype, c
        if isinstance(x.dtype, pd.CategoricalDtype):
            assert list(x.cat.categories) == list(y.cat.categories), c
            assert all(type(u) is type(v) for u, v in zip(x.cat.categories, y.cat.categories)), c
            assert np.array_equal(x.cat.codes.to_numpy(), y.cat.codes.to_numpy()), c
        elif x.dtype == object:
            xs, ys = x.tolist(), y.tolist()
            bad = [i for i, (u, v) in enumerate(zip(xs, ys)) if not same_values(u, v)]
            assert not bad, (c, bad[:3], xs[bad[0]], ys[bad[0]])
        else:
            assert np.array_equal(x.to_numpy(), y.to_numpy()), c
    assert [h.__dict__ if hasattr(h, "__dict__") else h for h in fast.health] == \
        [h.__dict__ if hasattr(h, "__dict__") else h for h in slow.health]
    assert orjson.dumps(fast.meta, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY, default=str) == \
        orjson.dumps(slow.meta, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY, default=str)


def _both(path: Path):
    src = read_source(path)
    fast_doc = parse_trace_doc(src)
    slow_doc = parse_json(src)
    fast = read_trace_doc(src, fast_doc)
    slow = read_trace_doc(src, slow_doc)
    if fast.args_pending:   # raw args read on demand: some rows, the linking keys, as the general path's
        _assert_raw_args_read_as_dicts(fast.event_args(), slow.event_args())
    return fast_doc, fast, slow


def _assert_raw_args_read_as_dicts(raw: RawArgs, dicts: DictArgs) -> None:
    """Rows and linking keys read from the raw text equal those read from the decoded args
    (values and types), for every event and for a scattered subset."""
    n = len(dicts)
    assert len(raw) == n
    every = np.arange(n)
    some = every[::7][::-1].copy()   # out of order, every seventh
    for idx in (every, some):
        want, got = dicts.rows(idx), raw.rows(idx)
        assert len(got) == len(want) and all(same_values(u, v) for u, v in zip(got, want))
        for key in LINK_KEYS:
            want, got = dicts.key_values(key, idx), raw.key_values(key, idx)
            assert all(same_values(u, v) for u, v in zip(got, want)), key


@pytest.mark.real_traces
@pytest.mark.parametrize("path", kineto_params())
def test_typed_decoder_equals_general_path_on_real_traces(path: Path) -> None:
    src = read_source(path)
    slow_doc = parse_json(src)
    if not (isinstance(slow_doc, dict) and isinstance(slow_doc.get("traceEvents"), list)):
        assert decode_kineto(src.data) is None
        pytest.skip("not a Kineto object document (read the general way)")
    fast_doc, fast, slow = _both(path)
    assert isinstance(fast_doc["traceEvents"], FieldColumns), "the typed pass should take every real Kineto trace"
    assert {k: v for k, v in fast_doc.items() if k != "traceEvents"} == \
        {k: v for k, v in slow_doc.items() if k != "traceEvents"}
    assert fast.args_pending and "args" not in fast.frame.columns, "real traces keep their args raw"
    _assert_tables_equal(fast, slow)   # .events decodes the whole raw column: the general path's values
    assert not fast.args_pending


@pytest.mark.parametrize("path", SYNTH_TRACES, ids=[p.name for p in SYNTH_TRACES])
def test_typed_decoder_equals_general_path_on_synthesized_traces(path: Path) -> None:
    fast_doc, fast, slow = _both(path)
    if isinstance(orjson.loads(path.read_bytes()), dict):
        assert isinstance(fast_doc["traceEvents"], FieldColumns)
    _assert_tables_equal(fast, slow)


def write_payload(tmp_path: Path, doc: object, name: str = "t.json") -> Path:
    p = tmp_path / name
    p.write_bytes(orjson.dumps(doc) if not isinstance(doc, bytes) else doc)
    return p


_EVENTS = [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 1700000000000000.125, "dur": 10.5,
     "args": {"External id": 7, "nested": {"a": [1, 2.5, None, True]}}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": "1", "tid": "2",
     "ts": 1700000000000001.25, "dur": 2, "args": {"correlation": 3, "External id": 7}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": "stream 7", "ts": 1700000000000004.0,
     "dur": 3.0, "args": {"correlation": 3, "device": 0, "stream": 7}},
    {"ph": "i", "s": "t", "name": "mark", "pid": 1, "tid": 2, "ts": 1700000000000005},
    {"ph": "i", "s": None, "name": "mark2", "pid": 1, "tid": 2, "ts": 1700000000000006},
    {"ph": "s", "id": "0x1a", "cat": "ac2g", "name": "flow", "pid": 1, "tid": 2, "ts": 1700000000000001.25},
    {"ph": "f", "id": 26, "bp": "e", "cat": "ac2g", "name": "flow", "pid": 0, "tid": "stream 7",
     "ts": 1700000000000004.0},
    {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}},
    {"ph": "X", "name": 5, "pid": 1, "tid": 2, "ts": 1700000000000007, "dur": 1, "bp": "e", "id": 3, "args": None},
]


def test_odd_but_valid_events_agree(tmp_path: Path) -> None:
    """Digit-string pids, string flow ids, explicit nulls, instant scopes, a numeric name, bp
    on a non-flow: both paths keep them the same way."""
    p = write_payload(tmp_path, {"traceEvents": _EVENTS, "deviceProperties": [{"id": 0}], "x": {"y": 1}})
    fast_doc, fast, slow = _both(p)
    assert isinstance(fast_doc["traceEvents"], FieldColumns)
    _assert_tables_equal(fast, slow)
    extra = fast.events["extra"].tolist()
    assert extra[3] == {"s": "t"} and extra[4] == {"s": None}


def test_large_integers_get_the_general_paths_values(tmp_path: Path) -> None:
    """Integers beyond int64: in args they decode as the general path decodes them (an
    unsigned 64-bit int stays exact, a larger one is a float); in a canonical field the
    typed pass steps aside."""
    ev = (b'{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 1, '
          b'"args": {"stream": 1180591620717411303424, "Comms Id": 18446744073709551615, "correlation": 1}}')
    p = write_payload(tmp_path, b'{"traceEvents": [' + ev + b"]}")
    fast_doc, fast, slow = _both(p)
    assert isinstance(fast_doc["traceEvents"], FieldColumns)
    _assert_tables_equal(fast, slow)
    args = fast.events["args"].iloc[0]
    assert isinstance(args["stream"], float) and args["Comms Id"] == 2**64 - 1
    assert args["stream"] == 1180591620717411303424.0 and args["stream"].text == "1180591620717411303424"
    big_pid = ev.replace(b'"pid": 0', b'"pid": 1180591620717411303424')
    assert decode_kineto(b'{"traceEvents": [' + big_pid + b"]}") is None


def test_unknown_keys_take_the_general_path(tmp_path: Path) -> None:
    ev = [dict(_EVENTS[0], tts=5, cname="good")] + _EVENTS[1:]
    p = write_payload(tmp_path, {"traceEvents": ev})
    assert decode_kineto(p.read_bytes()) is None
    table = read_trace(p)
    assert table.events["extra"].iloc[0] == {"tts": 5, "cname": "good"}


@pytest.mark.parametrize("doc", [
    b'[{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]',   # a bare array
    b'{"traceEvents": {"a": 1}}',                                               # not an array
    b'{"schemaVersion": 1}',                                                    # no traceEvents
    b'{"traceEvents": [1, 2]}',                                                 # events that are not objects
    b'{"traceEvents": [{"ph": "X"}], "x": NaN}',                                # not JSON
])
def test_what_the_typed_pass_does_not_take(doc: bytes) -> None:
    assert decode_kineto(doc) is None


@pytest.mark.parametrize("body, needle", [
    (b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1},', "JSON"),
    (b'{"traceEvents": [1, 2]}', "expected an object"),
    (b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": "1", "dur": 1}]}', "'ts'"),
    (b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": -1}]}', "negative duration"),
    (b'{"traceEvents": [{"ph": "X", "name": "a", "pid": [1], "tid": 1, "ts": 1, "dur": 1}]}', "'pid'"),
    (b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": 3}]}', "'args'"),
])
def test_bad_events_keep_their_one_line_errors(tmp_path: Path, body: bytes, needle: str) -> None:
    p = write_payload(tmp_path, body)
    with pytest.raises(OpgraphInputError) as e:
        read_trace(p)
    msg = str(e.value)
    assert needle in msg and str(p) in msg and "\n" not in msg


@pytest.mark.parametrize("depth", [40, 300, 1019, 1020, 1021, 1022, 2000])
def test_deep_args_are_bounded_the_same_way(tmp_path: Path, depth: int) -> None:
    """Args nested past the saved-graph bound are cut the same way by both paths; past what
    the JSON decoders take, the typed pass steps aside and the general path's error stands."""
    deep = b'{"a":' * depth + b"1" + b"}" * depth
    body = (b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"d": '
            + deep + b"}}]}")
    p = write_payload(tmp_path, body)
    try:
        slow_doc = parse_json(read_source(p))
    except OpgraphInputError:
        assert decode_kineto(body) is None
        with pytest.raises(OpgraphInputError):
            read_trace(p)
        return
    assert slow_doc is not None
    fast_doc, fast, slow = _both(p)
    if depth < 1000:   # (near the decoders' own limits the typed pass may step aside)
        assert isinstance(fast_doc["traceEvents"], FieldColumns)
    _assert_tables_equal(fast, slow)


def test_real_trace_folder_is_where_the_params_say() -> None:
    assert not KINETO_FILES or all(p.is_relative_to(TRACES) for p in KINETO_FILES)


def test_without_msgspec_files_go_the_general_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An environment installed before msgspec became a dependency still reads every
    trace (the general way, the same table), never an import error."""
    import sys

    from opgraph.ingest import kineto_decode

    p = write_payload(tmp_path, {"traceEvents": _EVENTS})
    want = read_trace(p)
    kineto_decode._decoders.cache_clear()
    monkeypatch.setitem(sys.modules, "msgspec", None)   # import msgspec -> ImportError
    try:
        assert decode_kineto(p.read_bytes()) is None
        got = read_trace(p)
    finally:
        kineto_decode._decoders.cache_clear()
    _assert_tables_equal(got, want)


def _one_event(args: bytes) -> bytes:
    return (b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1, '
            b'"args": {"External id": 1}}, {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 3, '
            b'"dur": 1, "args": ' + args + b"}]}")


@pytest.mark.parametrize("args", [
    '{"x": "0x7f1e4000", "y": 1e-400, "z": "\u00b5s \u2192 \U0001F600", "w": 1.5e300}',   # look odd, orjson takes them
    '{"correlation": 1.5, "External id": true, "device": "0", "stream": null, "stream_id": 3}',   # keys not int64
    '{"correlation": 18446744073709551615, "stream": 1180591620717411303424}',   # beyond int64
    '{"Sequence number": [1, 2], "Fwd thread id": {"a": 1}, "correlation": 1e5}',   # containers, floats as keys
    '{"External id": 5, "external id": 6, "stream": 2, "stream_id": 3, "correlation": 1, "correlation": 2}',
    '{"external id": 6, "stream_id": 3, "Ex\\u0074ernal id": 9}',   # other spellings, an escaped key
    'null', '{}',
])
def test_raw_args_read_as_the_general_path(tmp_path: Path, args: str) -> None:
    """Args that look odd to the checks but that orjson takes stay raw, and read (rows,
    linking keys, the whole column) exactly as the general path decodes them; linking keys
    the typed key decode does not take are read from the decoded args."""
    p = write_payload(tmp_path, _one_event(args.encode()))
    fast_doc, fast, slow = _both(p)
    assert isinstance(fast_doc["traceEvents"].args, RawArgs)
    _assert_tables_equal(fast, slow)


@pytest.mark.parametrize("args, needle", [
    (b'{"x": 1e400}', "infinity"), (b'{"x": 1E+400}', "infinity"), (b'{"x": ' + b"9" * 400 + b"}", "infinity"),
    (b'{"x": ' + b"9" * 250 + b"e99}", "infinity"), (b'{"x": "\xff"}', "UTF-8"), (b'{"x": "\xed\xa0\x80"}', "UTF-8"),
])
def test_args_orjson_refuses_take_the_general_path(tmp_path: Path, args: bytes, needle: str) -> None:
    """Text msgspec's shape check takes but orjson does not (numbers beyond a double, bad
    UTF-8): the typed pass steps aside and the general path's one-line error stands, at read
    time (never later, when the args are decoded)."""
    body = _one_event(args)
    assert decode_kineto(body) is None
    p = write_payload(tmp_path, body)
    with pytest.raises(OpgraphInputError) as e:
        read_trace(p)
    with pytest.raises(OpgraphInputError) as g:
        parse_json(read_source(p))
    assert str(e.value) == str(g.value) and needle in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("args", [b"3", b"[1]", b'"s"', b"true"])
def test_args_that_are_not_objects_are_decoded_at_once(tmp_path: Path, args: bytes) -> None:
    """An args that is not an object (or null) is decoded by the typed pass as before, and
    the builder words the error."""
    doc = decode_kineto(_one_event(args))
    assert doc is not None and isinstance(doc["traceEvents"].args, list)
    p = write_payload(tmp_path, _one_event(args))
    with pytest.raises(OpgraphInputError, match="event 1: 'args' has the wrong type"):
        read_trace(p)


def test_args_nested_past_the_bound_are_decoded_at_once(tmp_path: Path) -> None:
    """A file nesting deeper than a saved graph holds gets its args decoded (and cut) at
    read time, as before; shallower files keep them raw."""
    deep = b'{"a":' * 40 + b"1" + b"}" * 40
    assert isinstance(decode_kineto(_one_event(b'{"d": ' + deep + b"}"))["traceEvents"].args, list)
    assert isinstance(decode_kineto(_one_event(b'{"d": [[[1]]]}'))["traceEvents"].args, RawArgs)


def test_reading_the_table_decodes_once_and_leaves_the_frame(tmp_path: Path) -> None:
    """``EventTable.events`` puts the decoded column in place of the raw text; the frame
    read before (shared by a graph being built) is left without it."""
    p = write_payload(tmp_path, {"traceEvents": _EVENTS})
    t = read_trace(p)
    assert t.args_pending and t.raw_args is not None
    frame = t.frame
    ev = t.events
    assert not t.args_pending and t.raw_args is None and t.events is ev and t.frame is ev
    assert "args" not in frame.columns and list(ev.columns).index("args") == t.args_at
    assert ev["args"].iloc[0] == _EVENTS[0]["args"]


@pytest.mark.parametrize("chunk", [1, 2, 4, 1000])
def test_raw_args_decode_the_same_in_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """The whole column and the linking keys are decoded chunk by chunk; any chunk size
    gives the values of one call over all events."""
    from opgraph.model import event_args

    p = write_payload(tmp_path, {"traceEvents": _EVENTS})
    want = orjson.loads(p.read_bytes())["traceEvents"]
    monkeypatch.setattr(event_args, "CHUNK_EVENTS", chunk)
    fast_doc, fast, slow = _both(p)
    raw = fast_doc["traceEvents"].args
    assert isinstance(raw, RawArgs)
    assert all(same_values(u, e.get("args")) for u, e in zip(raw.decode(), want))
    _assert_tables_equal(fast, slow)
