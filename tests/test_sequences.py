"""``opgraph sequences`` / ``opgraph.kernel_sequences``: exact on a hand-written trace,
invariants on real traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import opgraph
from opgraph.analysis.sequences import kernel_label, kernel_sequences
from opgraph.schemas_util import validation_error


T0 = 1_700_000_000_000_000
DUR = {"A": 10, "B": 20, "C": 30, "X": 5, "Y": 5, "Z": 5, "K": 1}


def _trace(tmp_path: Path) -> Path:
    """Stream 7: X, then four times A B C, each launched inside a ``block`` op except the
    last (inside ``other``), with Y / Z between some of them. Stream 8: K five times in a
    row (``K K`` occurs twice without overlap)."""
    seq7 = [("X", "prep"), ("A", "block"), ("B", "block"), ("C", "block"), ("Y", "prep"), ("A", "block"),
            ("B", "block"), ("C", "block"), ("Z", "prep"), ("A", "block"), ("B", "block"), ("C", "block"),
            ("A", "other"), ("B", "other"), ("C", "other")]
    ev = []
    t = T0
    corr = 0
    op_start = None
    prev_op = None
    # group consecutive kernels of the same op name into one op call, except that "block"
    # calls split at each A (one call per A B C)
    calls: list[tuple[str, list[str]]] = []
    for name, op in seq7:
        if calls and calls[-1][0] == op and not (op == "block" and name == "A"):
            calls[-1][1].append(name)
        else:
            calls.append((op, [name]))
    gpu = T0 + 1000
    for op, ks in calls:
        op_start = t
        for name in ks:
            corr += 1
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": t + 1, "dur": 2, "args": {"correlation": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": gpu, "dur": DUR[name],
                       "args": {"device": 0, "stream": 7, "correlation": corr}})
            gpu += DUR[name] + 1
            t += 4
        ev.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": op_start, "dur": t - op_start})
        t += 1
        prev_op = op
    for i in range(5):
        corr += 1
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 1,
                   "dur": 2, "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": "K", "pid": 0, "tid": 8, "ts": gpu + 10 * i, "dur": 1,
                   "args": {"device": 0, "stream": 8, "correlation": corr}})
        t += 4
    assert prev_op is not None
    p = tmp_path / "seq.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    return p


def test_exact(tmp_path: Path) -> None:
    G = opgraph.load(_trace(tmp_path))
    r = kernel_sequences(G, min_length=2, max_length=4)
    rows = r.to_dict()["patterns"]
    assert rows[0]["kernels"] == ["A", "B", "C"] and rows[0]["occurrences"] == 4
    assert rows[0]["total_us"] == 4 * 60 and rows[0]["mean_us"] == 60 and rows[0]["op"] == "block"
    # A B and B C only ever ran inside A B C: dropped; K K twice without overlap
    kk = [x for x in rows if x["kernels"] == ["K", "K"]]
    assert len(kk) == 1 and kk[0]["occurrences"] == 2 and kk[0]["total_us"] == 4
    assert not any(x["kernels"] in (["A", "B"], ["B", "C"]) for x in rows)
    total = sum(DUR[n] for n in "XABCYABCZABCABC") + 5
    assert r.kernel_time_us == total and rows[0]["pct_kernel_time"] == pytest.approx(100 * 240 / total)
    # per op: the "other" call is not a block; each block call is its own sequence
    rb = kernel_sequences(G, op="^block$", min_length=2, max_length=4).to_dict()["patterns"]
    assert rb[0]["kernels"] == ["A", "B", "C"] and rb[0]["occurrences"] == 3
    assert all(x["op"] == "block" for x in rb)
    # HTA's definition: each call's whole sequence is one pattern
    w = kernel_sequences(G, op="^(block|other)$", min_length=3, whole_calls=True).to_dict()
    assert w["whole_calls"] and [(x["op"], x["kernels"], x["occurrences"], x["total_us"]) for x in w["patterns"]] == [
        ("block", ["A", "B", "C"], 3, 180), ("other", ["A", "B", "C"], 1, 60)]
    with pytest.raises(ValueError, match="needs op"):
        kernel_sequences(G, whole_calls=True)


def test_cli(cli, tmp_path: Path, one_line_error) -> None:
    p = _trace(tmp_path)
    r = cli(["sequences", str(p), "--json", "--min-length", "2", "--max-length", "4"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert validation_error(doc, "sequences.schema.json") is None
    r = cli(["sequences", str(p), "--min-length", "2"])
    assert r.exit_code == 0 and "A" in r.stdout
    one_line_error(cli(["sequences", str(p), "--op", "("]), p, "--op")
    one_line_error(cli(["sequences", str(p), "--whole-calls"]), p, "--whole-calls needs --op")
    r = cli(["sequences", str(p), "--op", "block", "--whole-calls", "--json"])
    assert r.exit_code == 0 and validation_error(json.loads(r.stdout), "sequences.schema.json") is None
    one_line_error(cli(["sequences", str(p), "--min-length", "5", "--max-length", "3"]), p, "--max-length")
    r = cli(["sequences", str(p), "--op", "nothing-matches"])
    assert r.exit_code == 0 and "no kernel sequence repeats" in r.stdout


def test_real(kineto_graph) -> None:
    """Every real Kineto trace: each row's occurrences and time equal a naive recount from
    the raw node list; rows sorted by time; the schema holds."""
    G = kineto_graph
    r = kernel_sequences(G)
    doc = json.loads(json.dumps(r.to_dict()))
    assert validation_error(doc, "sequences.schema.json") is None
    kernels = sorted(((d["ts"], d["device"], d["stream"], d["name"], d["dur"], u) for u, d in G.nodes(data=True)
                      if d["kind"] == "kernel"))
    streams: dict = {}
    where = {}
    for ts, dev, st, name, dur, u in kernels:
        seq = streams.setdefault((dev, st), [])
        where[u] = ((dev, st), len(seq))
        seq.append((name, dur))
    for row in doc["patterns"]:
        # the pattern's full names: the kernels from its first occurrence (labels may cut names)
        L, n, t = row["length"], 0, 0
        key, i0 = where[row["first_eid"]]
        want = [x[0] for x in streams[key][i0:i0 + L]]
        assert [kernel_label(x) for x in want] == row["kernels"]
        for seq in streams.values():
            i = 0
            while i + L <= len(seq):
                if [x[0] for x in seq[i:i + L]] == want:
                    n += 1
                    t += sum(x[1] for x in seq[i:i + L])
                    i += L
                else:
                    i += 1
        assert (n, t / 1e3) == (row["occurrences"], pytest.approx(row["total_us"])), row["kernels"]
    assert [x["total_us"] for x in doc["patterns"]] == sorted((x["total_us"] for x in doc["patterns"]), reverse=True)
