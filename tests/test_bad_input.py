"""Bad input never produces a traceback: exit code 2 and exactly one line on stderr that
names the file and the problem (and ``event <index>`` for a bad event).

Each case runs ``opgraph build`` and ``opgraph info`` in-process (click's CliRunner);
a few also run as a real ``python -m opgraph.cli`` subprocess.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Callable

import pytest


def _event(**kw) -> dict:
    e = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100, "dur": 5}
    e.update(kw)
    return e


def _trace(*events: dict) -> bytes:
    return json.dumps({"traceEvents": list(events)}).encode()


def _no_dur() -> dict:
    e = _event()
    del e["dur"]
    return e


#: name -> (file name, content, words the message must contain, bad event index or None)
CASES: dict[str, tuple[str, Callable[[], bytes], tuple[str, ...], int | None]] = {
    "empty_file": ("empty.json", lambda: b"", ("empty",), None),
    "whitespace_only": ("blank.json", lambda: b"  \n\t\n", ("empty",), None),
    "truncated_json": ("trunc.json", lambda: _trace(_event(), _event(ts=200))[:-25], ("truncated",), None),
    "truncated_gzip_json": ("trunc.json.gz", lambda: gzip.compress(_trace(_event(), _event())[:40]),
                            ("truncated",), None),
    "not_json_text": ("notes.json", lambda: b"this is a plain text file, not a trace\n", ("not json",), None),
    "invalid_json_inside": ("bad.json", lambda: b'{"traceEvents": [{"ph": "X", "ts": 1,, "dur": 2}]}',
                            ("invalid json",), None),
    "corrupt_gzip": ("corrupt.json.gz",
                     lambda: b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + bytes(range(7, 250, 3)) * 3,
                     ("gzip",), None),
    "truncated_gzip_stream": ("cut.json.gz", lambda: gzip.compress(_trace(_event()) * 3)[:30],
                              ("gzip",), None),
    "missing_traceEvents": ("meta_only.json", lambda: json.dumps({"schemaVersion": 1, "deviceProperties": []}).encode(),
                            ("traceevents",), None),
    "traceEvents_not_a_list": ("te.json", lambda: json.dumps({"traceEvents": {"a": 1}}).encode(),
                               ("traceevents", "list"), None),
    "ts_wrong_type": ("ts_str.json", lambda: _trace(_event(), _event(), _event(ts="1712195495519689")),
                      ("'ts'", "wrong type"), 2),
    "ts_missing": ("ts_none.json", lambda: _trace(_event(), {k: v for k, v in _event().items() if k != "ts"}),
                   ("'ts'", "missing"), 1),
    "dur_wrong_type": ("dur_str.json", lambda: _trace(_event(), _event(dur="5")), ("'dur'", "wrong type"), 1),
    "dur_negative": ("dur_neg.json", lambda: _trace(_event(), _event(), _event(), _event(dur=-2.5)),
                     ("negative",), 3),
    "x_without_dur": ("nodur.json", lambda: _trace(_event(), _event(), _no_dur()), ("'dur'", "missing"), 2),
    "event_not_object": ("evnum.json", lambda: _trace(_event(), 5), ("event is int",), 1),  # type: ignore[arg-type]
    "ph_missing": ("noph.json", lambda: _trace(_event(), {k: v for k, v in _event().items() if k != "ph"}),
                   ("'ph'", "missing"), 1),
    "args_not_object": ("args.json", lambda: _trace(_event(args=[1, 2])), ("'args'", "wrong type"), 0),
    "unknown_json_object": ("foo.json", lambda: json.dumps({"foo": 1}).encode(), ("unknown format",), None),
    "json_scalar": ("scalar.json", lambda: b"42", ("unknown format",), None),
    "binary_file": ("blob.bin", lambda: bytes((i * 37 + 11) % 256 for i in range(4096)), ("not json",), None),
    "sqlite_file": ("prof.sqlite", lambda: b"SQLite format 3\x00" + b"\x00" * 200, ("sqlite",), None),
}


def _make(tmp_path: Path, case: str) -> tuple[Path, tuple[str, ...], int | None]:
    fname, content, words, idx = CASES[case]
    p = tmp_path / fname
    p.write_bytes(content())
    return p, words, idx


@pytest.mark.parametrize("case", sorted(CASES))
def test_build_bad_input(case: str, tmp_path: Path, cli, one_line_error) -> None:
    p, words, idx = _make(tmp_path, case)
    out = tmp_path / "g.gpickle"
    r = cli(["build", str(p), "-o", str(out)])
    line = one_line_error(r, p, *words)
    if idx is not None:
        assert f"event {idx}:" in line
    else:
        assert "event " not in line.replace(str(p), "")
    assert not out.exists()


@pytest.mark.parametrize("case", sorted(CASES))
def test_info_bad_input(case: str, tmp_path: Path, cli, one_line_error) -> None:
    p, words, idx = _make(tmp_path, case)
    r = cli(["info", str(p), "--json"])
    line = one_line_error(r, p, *words)
    if idx is not None:
        assert f"event {idx}:" in line


def test_nonexistent_file(tmp_path: Path, cli, one_line_error) -> None:
    p = tmp_path / "nope" / "trace.json"
    for args in (["info", str(p)], ["build", str(p), "-o", str(tmp_path / "g.gpickle")]):
        one_line_error(cli(args), p, "no such file")


def test_directory_instead_of_file_exit_2(tmp_path: Path, cli) -> None:
    d = tmp_path / "adir.json"
    d.mkdir()
    r = cli(["info", str(d)])
    assert r.exit_code == 2 and "Traceback" not in r.stderr and "directory" in r.stderr


def test_directory_instead_of_file_one_line(tmp_path: Path, cli, one_line_error) -> None:
    d = tmp_path / "adir.json"
    d.mkdir()
    one_line_error(cli(["info", str(d)]), d, "directory")


@pytest.mark.parametrize("case", ["empty_file", "ts_wrong_type", "corrupt_gzip", "dur_negative",
                                  "unknown_json_object"])
def test_subprocess_no_traceback(case: str, tmp_path: Path, cli_subprocess, one_line_error) -> None:
    p, words, idx = _make(tmp_path, case)
    cmd = ["info", str(p)] if case != "dur_negative" else ["build", str(p), "-o", str(tmp_path / "g.json.gz")]
    r = cli_subprocess(cmd)
    line = one_line_error(r, p, *words)
    if idx is not None:
        assert f"event {idx}:" in line


def test_subprocess_nonexistent(tmp_path: Path, cli_subprocess, one_line_error) -> None:
    p = tmp_path / "missing.json.gz"
    one_line_error(cli_subprocess(["info", str(p), "--json"]), p, "no such file")


def test_message_names_relative_path_as_given(tmp_path: Path, cli_subprocess, one_line_error) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "t.json").write_bytes(_trace(_event(), _event(ts=None)))
    r = cli_subprocess(["info", os.path.join("sub", "t.json")], cwd=tmp_path)
    line = one_line_error(r, os.path.join("sub", "t.json"), "'ts'")
    assert "event 1:" in line


# -------------------------------------------------- bad values the reader accepts today
@pytest.mark.parametrize("field,value", [("pid", [1]), ("tid", {"a": 1})])
def test_unhashable_pid_tid(field: str, value, tmp_path: Path, cli, one_line_error) -> None:
    p = tmp_path / "pid.json"
    p.write_bytes(_trace(_event(), _event(**{field: value})))
    line = one_line_error(cli(["info", str(p)]), p, f"'{field}'")
    assert "event 1:" in line


@pytest.mark.parametrize("field,value", [("ts", 10**17), ("ts", 1e30), ("dur", 1e30)])
def test_out_of_range_times(field: str, value, tmp_path: Path, cli, one_line_error) -> None:
    p = tmp_path / "huge.json"
    p.write_bytes(_trace(_event(), _event(**{field: value})))
    line = one_line_error(cli(["info", str(p), "--json"]), p, f"'{field}'")
    assert "event 1:" in line


@pytest.mark.parametrize("frac", [0.001, 0.05, 0.33, 0.5, 0.9, 0.999])
def test_truncated_trace_anywhere(frac: float, tmp_path: Path, cli, one_line_error) -> None:
    data = (Path(__file__).resolve().parents[1] / "fixtures" / "synth" / "gpu_bound.json").read_bytes()
    cut = int(len(data) * frac)
    p = tmp_path / "cut.json"
    p.write_bytes(data[:cut])
    line = one_line_error(cli(["info", str(p)]), p, "truncated")
    assert f"byte {cut}" in line
