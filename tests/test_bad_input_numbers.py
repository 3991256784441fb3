"""Numbers and files (docs/reliability.md, "Numbers and files"): a number that does not fit
is refused with one line and exit 2, never wrapped; writes are whole or not at all and
never over the input; events the reader cannot place are reported, never dropped silently.

Every input is generated here, in ``tmp_path``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from opgraph.errors import OpgraphInputError

EPOCH_US = 1_700_000_000_000_000  # an epoch-stamped trace, as Kineto writes it (µs)


def _trace(path: Path, events: list[dict]) -> Path:
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def _small(extra: list[dict] = ()) -> list[dict]:
    """A step with one CPU op launching two kernels on one stream (all in µs)."""
    t = EPOCH_US
    ev = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": t, "dur": 400},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t + 10, "dur": 100,
         "args": {"External id": 1}},
    ]
    for j, (ts, corr) in enumerate(((t + 20, 11), (t + 60, 12))):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts,
                   "dur": 10, "args": {"correlation": corr, "External id": 1}})
        ev.append({"ph": "X", "cat": "kernel", "name": f"gemm_{j}", "pid": 0, "tid": 7, "ts": ts + 20 + 100 * j,
                   "dur": 100, "args": {"device": 0, "stream": 7, "correlation": corr, "External id": 1}})
    return ev + list(extra)


def _health(cli, path: Path) -> dict[str, dict]:
    r = cli(["info", str(path), "--json"])
    assert r.exit_code == 0, r.stderr
    return {h["code"]: h for h in json.loads(r.stdout)["health"]}


# --------------------------------------------------------------------------- #3 ts + dur
@pytest.mark.parametrize("cat,ev_extra", [("kernel", {"args": {"device": 0, "stream": 7}}), ("cpu_op", {})])
def test_end_past_int64_ns_is_refused(tmp_path, cli, one_line_error, cat, ev_extra):
    """ts and dur each fit, their sum does not: refused at the event, by every command."""
    bad = {"ph": "X", "cat": cat, "name": "huge", "pid": 0 if cat == "kernel" else 1,
           "tid": 7 if cat == "kernel" else 1, "ts": EPOCH_US + 300, "dur": 9.1e15, **ev_extra}
    p = _trace(tmp_path / "end_overflow.json", _small([bad]))
    idx = len(_small())
    for cmd in (["build", p, "-o", tmp_path / "g.gpickle"], ["info", p], ["summary", p, "--json"]):
        line = one_line_error(cli(cmd), p, "int64", f"event {idx}")
        assert "ends past" in line
    assert not (tmp_path / "g.gpickle").exists()


def test_span_past_int64_ns_is_refused(tmp_path, cli, one_line_error):
    """Events whose span (last end - first start) does not fit int64 ns: refused, naming the
    event farthest from the others."""
    p = _trace(tmp_path / "span.json", _small([{"ph": "X", "cat": "cpu_op", "name": "old", "pid": 1, "tid": 2,
                                                "ts": -9.1e15, "dur": 1}]))
    one_line_error(cli(["info", p]), p, "span", "int64", f"event {len(_small())}")


def test_nsys_csv_range_past_int64_is_refused(tmp_path, cli, one_line_error):
    p = tmp_path / "nvtx_pushpop_trace.csv"
    p.write_text("Start (ns),End (ns),Duration (ns),DurChild (ns),DurNonChild (ns),Name,PID,TID,Lvl,NumChild,"
                 "RangeId,ParentId,RangeStack,NameTree\n"
                 "-9000000000000000000,9000000000000000000,0,0,0,r,1,1,0,0,1,,:1,r\n")
    one_line_error(cli(["info", p]), p, "int64", "event 0")


def test_nsys_wrapped_duration_is_refused(tmp_path, cli, one_line_error):
    """nsys records store start and end; an end - start beyond int64 must not wrap."""
    p = tmp_path / "nsys.json"
    rec = {"NvtxEvent": {"Type": 59, "Timestamp": "-9000000000000000000", "EndTimestamp": "9000000000000000000",
                         "Text": "r", "GlobalTid": "72057594037927937"}}
    ok = {"NvtxEvent": {"Type": 59, "Timestamp": "1000", "EndTimestamp": "2000", "Text": "ok",
                        "GlobalTid": "72057594037927937"}}
    p.write_text(json.dumps(rec) + "\n" + json.dumps(ok) + "\n")
    one_line_error(cli(["info", p]), p, "int64", "event 0")


# --------------------------------------------------------------------------- far-away events
@pytest.mark.parametrize("ts", [0, -1e12, 9.2e15 - 1e9])
def test_events_centuries_away_get_a_health_warning(tmp_path, cli, ts):
    p = _trace(tmp_path / "far.json", _small([{"ph": "X", "cat": "cpu_op", "name": "stray", "pid": 1, "tid": 3,
                                               "ts": ts, "dur": 1}]))
    h = _health(cli, p)
    assert "far_timestamps" in h, h
    assert h["far_timestamps"]["count"] == 1
    assert h["far_timestamps"]["example_eid"] == len(_small())
    assert "years" in h["far_timestamps"]["message"]


def test_normal_trace_has_no_far_warning(tmp_path, cli):
    p = _trace(tmp_path / "ok.json", _small())
    assert "far_timestamps" not in _health(cli, p)


# --------------------------------------------------------------------------- #4 predict
@pytest.fixture
def small_graph(tmp_path, cli) -> Path:
    p = _trace(tmp_path / "small.json", _small())
    g = tmp_path / "small.gpickle"
    r = cli(["build", p, "-o", g])
    assert r.exit_code == 0, r.stderr
    return g


@pytest.mark.parametrize("opt,value", [
    ("--scale-kernels", ".*=1e14"), ("--scale-kernels", ".*=1e300"), ("--scale-cpu", ".*=1e300"),
    ("--launch-overhead", "1e30s"),
])
def test_predict_overflowing_what_if_is_refused(small_graph, cli, one_line_error, opt, value):
    r = cli(["predict", small_graph, opt, value, "--json"])
    line = one_line_error(r, opt, "int64")
    assert "speedup" not in r.stdout and line.startswith(f"opgraph: error: {opt}:")


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-2"])
def test_predict_factor_must_be_finite_positive(small_graph, cli, one_line_error, value):
    one_line_error(cli(["predict", small_graph, "--scale-kernels", f".*={value}"]), "--scale-kernels")


def test_predict_large_but_fitting_factor_is_exact(small_graph, cli):
    """1e10 fits: a 10^10-fold kernel slowdown, predicted as such (no wrap into a speedup)."""
    r = cli(["predict", small_graph, "--scale-kernels", "gemm=1e10", "--json"])
    assert r.exit_code == 0, r.stderr
    s = json.loads(r.stdout)["summary"]
    assert s["predicted_us"] > 1e10 * 100 * 0.99  # two 100 µs kernels, in sequence on one stream
    assert s["speedup"] < 1e-6


# --------------------------------------------------------------------------- #5 / #13 files
def test_gpickle_with_trailing_bytes_is_refused(small_graph, cli, one_line_error):
    data = small_graph.read_bytes()
    bad = small_graph.with_name("tail.gpickle")
    bad.write_bytes(data + b"\0" * 700)
    for cmd in (["info", bad], ["critical-path", bad], ["build", bad, "-o", small_graph.with_name("o.gpickle")]):
        one_line_error(cli(cmd), bad, "bytes after the end of the pickle")


def test_gpickle_two_writers_mixed_is_refused(small_graph, tmp_path, cli, one_line_error):
    """A short pickle over the head of a longer one (what two unsynchronised writers left):
    refused, not loaded as the short graph."""
    big = _trace(tmp_path / "big.json", _small([
        {"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 5, "ts": EPOCH_US + 500 + 2 * i, "dur": 1}
        for i in range(200)]))
    bigg = tmp_path / "big.gpickle"
    assert cli(["build", big, "-o", bigg]).exit_code == 0
    small = small_graph.read_bytes()
    mixed = bytearray(bigg.read_bytes())
    assert len(mixed) > len(small)
    mixed[:len(small)] = small
    m = tmp_path / "mixed.gpickle"
    m.write_bytes(bytes(mixed))
    one_line_error(cli(["info", m]), m, "after the end of the pickle")


@pytest.mark.parametrize("out", ["same", "other_spelling", "hardlink"])
def test_build_output_equal_to_input_is_refused(tmp_path, cli, one_line_error, monkeypatch, out):
    p = _trace(tmp_path / "t.json", _small())
    before = p.read_bytes()
    monkeypatch.chdir(tmp_path)
    if out == "same":
        o = "t.json"
    elif out == "other_spelling":
        (tmp_path / "sub").mkdir()
        o = "sub/../t.json"
    else:
        (tmp_path / "link.json").hardlink_to(p)
        o = "link.json"
    one_line_error(cli(["build", "t.json", "-o", o]), o, "input")
    assert p.read_bytes() == before


@pytest.mark.parametrize("suffix", [".gpickle", ".json.gz", ".json"])
def test_failed_save_keeps_the_previous_output(tmp_path, cli, monkeypatch, suffix):
    """A save that dies half-way (here: the serialiser raises after writing a part) leaves
    the previous output byte for byte, and no temporary file."""
    import opgraph.graph.io as gio

    p = _trace(tmp_path / "t.json", _small())
    out = tmp_path / f"g{suffix}"
    assert cli(["build", p, "-o", out]).exit_code == 0
    before = out.read_bytes()

    class Boom(RuntimeError):
        pass

    def dump_half(self, obj):
        self._file_ref.write(b"\x80\x05partial")
        raise Boom("killed")

    if suffix == ".gpickle":
        orig_init = gio.GraphPickler.__init__

        def init(self, fh, *a, **k):
            orig_init(self, fh, *a, **k)
            self._file_ref = fh
        monkeypatch.setattr(gio.GraphPickler, "__init__", init)
        monkeypatch.setattr(gio.GraphPickler, "dump", dump_half)
    else:
        import opgraph.outfiles as of

        def replace_fails(src, dst):
            raise Boom("killed before the rename")
        monkeypatch.setattr(of.os, "replace", replace_fails)
    g = gio.load_any(p)
    with pytest.raises(Boom):
        gio.save_graph(g, out)
    assert out.read_bytes() == before
    assert sorted(x.name for x in tmp_path.iterdir()) == sorted(["t.json", f"g{suffix}"])
    monkeypatch.undo()
    gio.save_graph(g, out)  # and a normal save still replaces it
    assert gio.load_any(out).number_of_nodes() == g.number_of_nodes()


def test_kernel_model_json_is_written_whole_and_not_over_inputs(tmp_path, monkeypatch):
    import opgraph.outfiles as of
    import opgraph.schemas_util as su
    from opgraph.predict.kernel_models import write_json_file

    target = tmp_path / "lk.json"
    target.write_text("old")
    with pytest.raises(ValueError):  # invalid document: refused before anything is written
        write_json_file({"schema": "x"}, str(target), "kernel-lookup.schema.json")
    assert target.read_text() == "old"
    monkeypatch.setattr(su, "validate", lambda doc, schema: None)
    with pytest.raises(OpgraphInputError, match="is the input file"):
        write_json_file({"a": 1}, str(target), "kernel-lookup.schema.json", inputs=(str(target),))
    assert target.read_text() == "old"

    def replace_fails(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(of.os, "replace", replace_fails)
    with pytest.raises(OpgraphInputError, match="cannot write"):
        write_json_file({"a": 1}, str(target), "kernel-lookup.schema.json")
    assert target.read_text() == "old"
    monkeypatch.undo()
    monkeypatch.setattr(su, "validate", lambda doc, schema: None)
    write_json_file({"a": 1}, str(target), "kernel-lookup.schema.json")
    assert json.loads(target.read_text()) == {"a": 1}
    assert [x.name for x in tmp_path.iterdir()] == ["lk.json"]


# --------------------------------------------------------------------------- #12 B/E events
def _be_events() -> list[dict]:
    t = EPOCH_US
    return [
        {"ph": "B", "cat": "cpu_op", "name": "outer", "pid": 1, "tid": 1, "ts": t},
        {"ph": "B", "cat": "cpu_op", "name": "inner", "pid": 1, "tid": 1, "ts": t + 10},
        # another thread, interleaved in the file: pairs are per (pid, tid)
        {"ph": "B", "cat": "cpu_op", "name": "other", "pid": 1, "tid": "2", "ts": t + 5},
        {"ph": "E", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": t + 30},
        {"ph": "E", "cat": "cpu_op", "pid": 1, "tid": 2, "ts": t + 45},
        {"ph": "E", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": t + 100.5},
    ]


def test_begin_end_events_become_spans(tmp_path, cli):
    from opgraph.graph.io import load_any

    p = _trace(tmp_path / "be.json", _be_events())
    r = cli(["build", p, "-o", tmp_path / "be.gpickle"])
    assert r.exit_code == 0, r.stderr
    assert r.stderr.startswith(f"{tmp_path / 'be.gpickle'}: 3 nodes")
    G = load_any(tmp_path / "be.gpickle")
    by_name = {d["name"]: d for _, d in G.nodes(data=True)}
    assert {k: (v["ts"] - EPOCH_US * 1000, v["dur"]) for k, v in by_name.items()} == {
        "outer": (0, 100_500), "inner": (10_000, 20_000), "other": (5_000, 40_000)}
    nest = [(G.nodes[u]["name"], G.nodes[v]["name"]) for u, v, d in G.edges(data=True) if d["kind"] == "nest"]
    assert nest == [("outer", "inner")]
    assert not {"unmatched_begin_end", "unknown_phase"} & set(_health(cli, p))


def test_begin_end_out_of_file_order(tmp_path, cli):
    """Pairing is by time on each thread, not by file order."""
    from opgraph.graph.io import load_any

    p = _trace(tmp_path / "be_rev.json", list(reversed(_be_events())))
    assert cli(["build", p, "-o", tmp_path / "r.gpickle"]).exit_code == 0
    G = load_any(tmp_path / "r.gpickle")
    assert sorted(d["dur"] for _, d in G.nodes(data=True)) == [20_000, 40_000, 100_500]


def test_unmatched_begin_end_and_unknown_phases_are_reported(tmp_path, cli):
    t = EPOCH_US
    ev = _small([
        {"ph": "B", "cat": "cpu_op", "name": "never_ends", "pid": 1, "tid": 9, "ts": t + 1},
        {"ph": "E", "cat": "cpu_op", "pid": 1, "tid": 8, "ts": t + 2},
        {"ph": "Q", "name": "q", "pid": 1, "tid": 1, "ts": t + 3},
        {"ph": "", "name": "empty", "pid": 1, "tid": 1, "ts": t + 4},
    ])
    p = _trace(tmp_path / "odd.json", ev)
    h = _health(cli, p)
    n = len(_small())
    assert h["unmatched_begin_end"]["count"] == 2
    assert h["unmatched_begin_end"]["example_eid"] == n
    assert h["unknown_phase"]["count"] == 2
    assert h["unknown_phase"]["example_eid"] == n + 2
    assert "'Q' (1)" in h["unknown_phase"]["message"] and "'' (1)" in h["unknown_phase"]["message"]
    r = cli(["info", p])
    assert "unmatched_begin_end" in r.stdout and "unknown_phase" in r.stdout


def test_begin_end_reexport_is_lossless(tmp_path):
    """B/E events keep their phase on re-export: the Chrome writer writes no 'dur' for them."""
    from opgraph.ingest.readers import read_trace

    p = _trace(tmp_path / "be.json", _be_events())
    ev = read_trace(p).events
    assert ev["ph"].astype(str).tolist() == ["B", "B", "B", "E", "E", "E"]
    assert ev["dur_ns"].tolist() == [100_500, 20_000, 40_000, -1, -1, -1]


def test_clean_gpickle_still_loads(small_graph):
    """The trailing-bytes check accepts a file that is exactly one pickle."""
    from opgraph.graph.io import load_gpickle

    assert load_gpickle(small_graph).number_of_nodes() == len(_small())


def test_args_ts_token_is_never_taken_for_the_event_ts(tmp_path) -> None:
    """Audit #21: an ``args.ts`` of ``…010.05`` before a ``ts`` of ``…010.1`` parses to the
    same float64; the exact-ns recovery must not take its digits (50 ns off, silently). The
    times fall back to the float's nearest ns with a ``ts_precision`` warning."""
    from opgraph.ingest.readers import read_trace

    p = tmp_path / "t.json"
    p.write_text('{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1694128201424000.5,'
                 '"dur":5},{"ph":"X","cat":"cpu_op","name":"b","pid":1,"tid":1,"args":{"ts":1694128201424010.05},'
                 '"ts":1694128201424010.1,"dur":5}]}')
    t = read_trace(p)
    b = int(t.events.loc[t.events["name"] == "b", "ts_ns"].iloc[0])
    assert b != 1694128201424010050
    assert abs(b - 1694128201424010100) <= 250  # float64 precision at epoch scale
    assert "ts_precision" in {h.code for h in t.health}


@pytest.mark.parametrize("value", [[1, 2], 1.5, {"a": 1}, "x7", True], ids=["list", "float", "object", "text", "bool"])
def test_link_keys_that_are_not_integers_are_a_warning(tmp_path, cli, value):
    """A linking key that is not an integer is read as absent, with a warning naming the key;
    lists of equal length on every row used to stop the build with an internal error."""
    t = EPOCH_US
    ev = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 10, "dur": 5,
           "args": {"correlation": value}},
          {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": t + 20, "dur": 5,
           "args": {"correlation": value, "device": 0, "stream": 7}},
          {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": t + 30, "dur": 5,
           "args": {"correlation": 9, "device": 0, "stream": 7}}]
    p = _trace(tmp_path / "keys.json", ev)
    r = cli(["build", p, "-o", tmp_path / "k.gpickle"])
    assert r.exit_code == 0, r.output
    h = _health(cli, p)
    w = h["link_key_not_integer"]
    assert w["count"] == 2 and w["example_eid"] == 0 and "correlation (2)" in w["message"]
    from opgraph.graph.io import load_any

    G = load_any(tmp_path / "k.gpickle")
    assert G.nodes[1]["correlation"] == -1 and G.nodes[2]["correlation"] == 9
    # integers (and digit strings) raise no warning
    ev[0]["args"]["correlation"] = ev[1]["args"]["correlation"] = "12"
    assert "link_key_not_integer" not in _health(cli, _trace(tmp_path / "ok.json", ev))
