"""Fuzz suite: malformed inputs for every reader and the saved-graph loaders, run through
``opgraph build`` and the analysis commands (docs/reliability.md, "Fuzzing").

The contract checked for every case and command: exit 0 (and, for ``build``, a saved
graph that loads again), or exit 2 with exactly one line on stderr starting
``opgraph: error: `` and naming the input file; never a traceback, never exit 1 or
``internal error``, no code run from a hostile pickle (a gadget would create a marker file
in the working folder), and no partial or temporary output file.

The cases (`tests/fuzz_cases.py`) are fixed; the hypothesis tests are derandomized
(profile ``opgraph-fuzz``), so a run is reproducible and bounded. Each case runs
``build``; a case that builds then runs a rotating choice of the analysis commands, a case
that is refused runs one more command (every command sees many malformed inputs, and the
whole suite stays within a few minutes).

``OPGRAPH_WRITE_FUZZ_TABLE=1 pytest tests/test_fuzz.py`` writes the table of cases and
outcomes to ``docs/fuzz-cases.md``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CliResult, _run_cli
import fuzz_cases as fuzz

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "docs" / "fuzz-cases.md"
TABLE_ENV = "OPGRAPH_WRITE_FUZZ_TABLE"

#: The marker a pickle gadget would create (relative: each test runs in its tmp_path).
MARKER = "opgraph-fuzz-gadget-ran"

#: Size of the huge-name case (50 MB as asked by the fuzzing issue).
HUGE_NAME = 50 << 20

settings.register_profile(
    "opgraph-fuzz", max_examples=30, deadline=None, derandomize=True, database=None, print_blob=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
FUZZ = settings.get_profile("opgraph-fuzz")


# --------------------------------------------------------------------------- commands
def _cmd(name: str, inp: Path, out: Path) -> tuple[list[str], list[Path]]:
    """argv of command ``name`` on ``inp`` and the files it would write (under ``out``)."""
    if name == "build":
        o = out / "x.gpickle"
        return ["build", str(inp), "-o", str(o)], [o]
    if name == "export --perfetto":
        o = out / "perfetto.json"
        return ["export", str(inp), "--perfetto", str(o)], [o]
    if name == "breakdown --device":
        return ["breakdown", "--device", str(inp)], []
    return [name, str(inp)], []


#: Every command the suite runs (besides build).
ANALYSES = ("info", "critical-path", "idle", "breakdown --device", "summary", "report", "export --perfetto",
            "overlap", "categories", "memory", "kernels", "sequences", "advise")

#: (case, kind, command, outcome) of every run, for docs/fuzz-cases.md.
RESULTS: list[tuple[str, str, str, str]] = []


def outcome(r: CliResult, inp: Path) -> str:
    """``exit 0``, or ``exit N: <first 80 characters of the message>`` (the input named by
    its file name, without the ``opgraph: error:`` prefix, so the table is the same on every run)."""
    if r.exit_code == 0:
        return "exit 0"
    line = (r.stderr.splitlines() or [""])[0].removeprefix("opgraph: error: ").replace(str(inp), inp.name)
    return f"exit {r.exit_code}: {line[:80]}"


def check_contract(r: CliResult, inp: Path, outputs: list[Path], what: str) -> None:
    """The contract of docs/reliability.md for one run."""
    where = f"{what}: exit {r.exit_code}, stderr={r.stderr[:600]!r}"
    assert r.exception is None, f"{where}: exception {r.exception!r}"
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, where
    assert "internal error" not in r.stderr, where
    assert r.exit_code in (0, 2), where
    if r.exit_code == 2:
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and r.stderr.endswith("\n"), f"{where}: not one line"
        assert lines[0].startswith("opgraph: error: "), where
        assert str(inp) in lines[0], f"{where}: the input file is not named"
        for o in outputs:
            assert not o.exists(), f"{where}: {o.name} written although the command failed"
    dirs = {inp.parent, *(o.parent for o in outputs)}
    leftovers = [p.name for d in dirs for p in d.iterdir() if ".part" in p.name or p.name.startswith(".tmp")]
    assert not leftovers, f"{where}: temporary files left: {leftovers}"


def run_checked(name: str, inp: Path, out: Path, what: str, record: tuple[str, str] | None = None) -> CliResult:
    argv, outputs = _cmd(name, inp, out)
    r = _run_cli(argv)
    if record is not None:
        RESULTS.append((record[0], record[1], name, outcome(r, inp)))
    check_contract(r, inp, outputs, f"{what} [{name}]")
    if name == "build" and r.exit_code == 0:
        from opgraph.graph.io import load_gpickle
        G = load_gpickle(outputs[0])     # the saved graph is whole and loads
        assert G.graph["events"] is not None
        outputs[0].unlink()
    for o in outputs:
        if o.exists():
            o.unlink()
    return r


# --------------------------------------------------------------------------- cases
ALL = list(fuzz.all_cases(Path(MARKER), huge_name_bytes=HUGE_NAME))
_INDEX = {id(c): i for i, c in enumerate(ALL)}


def commands_for(case: fuzz.Case, built: bool) -> list[str]:
    """The analysis commands a case runs after ``build``: three in rotation when it built,
    one when it was refused (the reason should be the same for every command)."""
    if case.slow:
        return ["info", "critical-path", "export --perfetto"]
    i = _INDEX[id(case)]
    if built:
        return [ANALYSES[(3 * i + k) % len(ANALYSES)] for k in range(3)]
    return [ANALYSES[i % len(ANALYSES)]]


@pytest.fixture(autouse=True, scope="module")
def _write_table():
    yield
    if os.environ.get(TABLE_ENV):
        write_table(TABLE)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if "50 MB" in c.name else c for c in ALL],
                         ids=[f"{c.kind}:{c.name}" for c in ALL])
def test_fuzz_case(case: fuzz.Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    inp = tmp_path / "in" / case.filename
    inp.parent.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    case.write(inp)
    before = inp.read_bytes()
    rec = (case.name, case.kind)
    r = run_checked("build", inp, out, case.name, rec)
    for name in commands_for(case, r.exit_code == 0):
        run_checked(name, inp, out, case.name, rec)
    assert not (tmp_path / MARKER).exists(), "a pickle gadget ran"
    assert inp.read_bytes() == before, "the input was modified"


def test_every_command_and_kind_is_covered() -> None:
    seen = set()
    kinds = set()
    for c in ALL:
        kinds.add(c.kind)
        for built in (True, False):
            seen.update(commands_for(c, built))
    assert seen == set(ANALYSES)
    assert kinds == set(fuzz.KINDS)


def test_decompression_bomb_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPGRAPH_MAX_DECOMPRESSED_BYTES", "1MiB")
    case = fuzz.gzip_bomb()
    inp = tmp_path / case.filename
    case.write(inp)
    assert inp.stat().st_size < 64 << 10
    out = tmp_path / "out"
    out.mkdir()
    for name in ("build", "info", "summary", "export --perfetto"):
        r = run_checked(name, inp, out, case.name, (case.name, case.kind))
        assert r.exit_code == 2 and "decompresses to more than 1 MiB" in r.stderr
    # the same bomb as a node-link graph and as a gzip-compressed nsys export
    for kind, fname in (("node-link", "g.json.gz"), ("nsys-sqlite", "prof.sqlite.gz")):
        p = tmp_path / fname
        p.write_bytes(__import__("gzip").compress(b" " * (4 << 20), mtime=0))
        r = run_checked("info", p, out, f"{kind} bomb", (f"gzip bomb ({fname})", kind))
        assert r.exit_code == 2 and "decompresses to more than" in r.stderr


def test_decompression_cap_env_var_garbage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inp = tmp_path / "t.json.gz"
    inp.write_bytes(__import__("gzip").compress(fuzz.kineto_bytes()))
    out = tmp_path / "out"
    out.mkdir()
    for v in ("-5", "lots", "0", "1e9", "9" * 400):
        monkeypatch.setenv("OPGRAPH_MAX_DECOMPRESSED_BYTES", v)
        r = run_checked("info", inp, out, f"OPGRAPH_MAX_DECOMPRESSED_BYTES={v[:10]}",
                        (f"OPGRAPH_MAX_DECOMPRESSED_BYTES={v[:12]}", "kineto-gz"))
        assert r.exit_code in (0, 2)


# --------------------------------------------------------------------------- hypothesis
def json_values() -> st.SearchStrategy:
    scalars = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
               | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
               | st.sampled_from([2**63, -(2**63) - 1, 2**63 - 1, 9.2e15, -9.2e15, 1e300, 0, -1]))
    return st.recursive(scalars, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids,
                                                                                           max_size=3), max_leaves=6)


KEYS = ("ts", "dur", "pid", "tid", "name", "cat", "ph", "args", "id", "bp", "s")
ARG_KEYS = ("correlation", "External id", "device", "stream", "Input Dims", "Input type", "grid", "block", "bytes",
            "Record function id", "Python id", "Python parent id", "Device Id", "Total Allocated")
_HYP = Counter()


def _hyp_record(test: str, kind: str, r: CliResult) -> None:
    _HYP[(test, kind, "exit 0" if r.exit_code == 0 else f"exit {r.exit_code}")] += 1


def _hyp_run(test: str, kind: str, data: bytes, filename: str, commands: tuple[str, ...]) -> None:
    with tempfile.TemporaryDirectory() as d:
        inp = Path(d) / filename
        inp.write_bytes(data)
        out = Path(d) / "out"
        out.mkdir()
        r = run_checked(commands[0], inp, out, test)
        _hyp_record(test, kind, r)
        if r.exit_code == 0:
            for c in commands[1:]:
                run_checked(c, inp, out, test)


@pytest.mark.timeout(240)
@settings(FUZZ, max_examples=40)
@given(target=st.integers(min_value=0, max_value=10**6), key=st.sampled_from(KEYS + tuple(f"args.{k}" for k in ARG_KEYS)),
       value=json_values(), delete=st.booleans())
def test_hypothesis_kineto_field(target: int, key: str, value: Any, delete: bool) -> None:
    doc = fuzz.kineto_doc()
    ev = doc["traceEvents"][target % len(doc["traceEvents"])]
    if key.startswith("args."):
        if not isinstance(ev.get("args"), dict):
            ev["args"] = {}
        holder, k = ev["args"], key[5:]
    else:
        holder, k = ev, key
    if delete:
        holder.pop(k, None)
    else:
        holder[k] = value
    _hyp_run("hypothesis: one Kineto field set to any JSON value", "kineto", fuzz.kineto_bytes(doc), "t.json",
             ("info", "critical-path", "idle"))


@pytest.mark.timeout(240)
@settings(FUZZ, max_examples=40)
@given(edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255), st.sampled_from("rid")),
                      min_size=1, max_size=6),
       cut=st.none() | st.floats(0.01, 1.0))
def test_hypothesis_kineto_bytes(edits: list, cut: float | None) -> None:
    data = bytearray(fuzz.kineto_bytes())
    for pos, byte, op in edits:
        i = int(pos * len(data))
        if op == "r":
            data[i] = byte
        elif op == "i":
            data.insert(i, byte)
        else:
            del data[i]
    if cut is not None:
        data = data[:max(1, int(len(data) * cut))]
    _hyp_run("hypothesis: Kineto JSON with bytes replaced, inserted, deleted, cut", "kineto", bytes(data), "t.json",
             ("summary", "report"))


_event = st.fixed_dictionaries(
    {"ph": st.sampled_from(["X", "X", "X", "B", "E", "i", "s", "f", "M", "C", ""]),
     "cat": st.sampled_from(["kernel", "cpu_op", "cuda_runtime", "ac2g", "gpu_memcpy", "gpu_memset",
                             "user_annotation", "gpu_user_annotation", "python_function", "fwdbwd", "cuda_driver"]),
     "name": st.sampled_from(["aten::mm", "cudaLaunchKernel", "gemm", "ProfilerStep#1", "ncclAllReduce",
                              "cudaDeviceSynchronize", "cudaStreamSynchronize", "[memory]", ""]),
     "pid": st.sampled_from([0, 1, 100, "1", -1]), "tid": st.sampled_from([0, 1, 7, "stream 7", -3]),
     "ts": st.integers(0, 2000) | st.sampled_from([-(10**12), 9.2e15, 1.7e15]),
     "dur": st.integers(0, 500) | st.sampled_from([-1, 10**9]),
     "args": st.fixed_dictionaries({}, optional={
         "correlation": st.integers(0, 5), "device": st.integers(-1, 2), "stream": st.integers(-1, 9),
         "External id": st.integers(0, 5), "bytes": st.integers(0, 10**6)})},
    optional={"id": st.integers(0, 5), "bp": st.sampled_from(["e", "s", ""])})


@pytest.mark.timeout(240)
@settings(FUZZ, max_examples=40)
@given(events=st.lists(_event, min_size=1, max_size=25))
def test_hypothesis_random_events(events: list[dict]) -> None:
    _hyp_run("hypothesis: random Kineto event lists", "kineto", json.dumps({"traceEvents": events}).encode(),
             "t.json", ("build", "summary", "critical-path", "idle", "breakdown --device", "overlap", "advise"))


@pytest.mark.timeout(240)
@settings(FUZZ, max_examples=30)
@given(node=st.integers(0, 5), key=st.sampled_from(["id", "name", "parent", "tid", "rf_id", "scope", "inputs",
                                                    "outputs", "input_types", "attrs", "ctrl_deps"]),
       value=json_values())
def test_hypothesis_et_field(node: int, key: str, value: Any) -> None:
    doc = fuzz.et_doc()
    doc["nodes"][node][key] = value
    _hyp_run("hypothesis: one ET node field set to any JSON value", "et", json.dumps(doc).encode(), "et.json",
             ("info", "critical-path"))


@pytest.mark.timeout(240)
@settings(FUZZ, max_examples=30)
@given(which=st.integers(0, 10**6), key=st.sampled_from(["name", "ts", "dur", "kind", "pid", "tid", "device",
                                                         "stream", "correlation", "external_id", "args"]),
       value=json_values())
def test_hypothesis_node_link_attr(which: int, key: str, value: Any) -> None:
    doc = fuzz.node_link_doc()
    doc["nodes"][which % len(doc["nodes"])][key] = value
    _hyp_run("hypothesis: one node-link node attribute set to any JSON value", "node-link",
             json.dumps(doc).encode(), "g.json", ("info", "critical-path", "breakdown --device"))


@pytest.mark.timeout(240)
@settings(FUZZ, max_examples=30)
@given(which=st.integers(0, 10**6), key=st.sampled_from(["startNs", "endNs", "correlationId", "deviceId", "streamId",
                                                         "globalTid", "globalPid", "name", "Timestamp",
                                                         "EndTimestamp", "Text", "kernel", "memcpy", "sync"]),
       value=json_values())
def test_hypothesis_nsys_json_field(which: int, key: str, value: Any) -> None:
    lines = fuzz.nsys_json_lines()
    recs = [x[k] for x in lines for k in ("CudaEvent", "TraceProcessEvent", "NvtxEvent") if k in x]
    recs[which % len(recs)][key] = value
    _hyp_run("hypothesis: one nsys JSON record field set to any JSON value", "nsys-json",
             fuzz._lines_bytes(lines), "prof.nsys.json", ("info", "summary"))


@pytest.mark.timeout(240)
@settings(FUZZ, max_examples=25)
@given(table=st.sampled_from([fuzz.K, fuzz.R, fuzz.M, fuzz.N, "StringIds", "ThreadNames"]),
       row=st.integers(1, 4), value=st.none() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False)
       | st.text(max_size=8) | st.binary(max_size=8), col=st.integers(0, 20))
def test_hypothesis_nsys_sqlite_cell(table: str, row: int, value: Any, col: int) -> None:
    import sqlite3
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "prof.sqlite"
        fuzz.write_nsys_sqlite(p)
        con = sqlite3.connect(str(p))
        cols = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
        c = cols[col % len(cols)]
        con.execute(f'UPDATE "{table}" SET "{c}" = ? WHERE rowid = ?', (value, row))
        con.commit()
        con.close()
        _hyp_run("hypothesis: one nsys SQLite cell set to any SQLite value", "nsys-sqlite", p.read_bytes(),
                 "prof.sqlite", ("info", "idle"))


# --------------------------------------------------------------------------- the table
def write_table(path: Path) -> None:
    """docs/fuzz-cases.md: one row per (case, command) run, then the hypothesis tallies."""
    lines = [
        "# Fuzz cases and their outcomes",
        "",
        "Generated by `OPGRAPH_WRITE_FUZZ_TABLE=1 python -m pytest tests/test_fuzz.py` (do not edit by hand);",
        "the cases are in `tests/fuzz_cases.py`. Every run keeps the contract of",
        "[reliability.md](reliability.md): exit 0, or exit 2 with one line naming the file; never a traceback,",
        "exit 1, code run from a pickle or a partial output file. Each case runs `build`, then a rotating",
        "choice of the other commands (three when it builds, one when it is refused).",
        "",
    ]
    by_kind: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for case, kind, cmd, out in RESULTS:
        by_kind[kind].append((case, cmd, out))
    counts = Counter((kind, out.split(":")[0]) for _, kind, _, out in RESULTS)
    lines += ["| input kind | runs | exit 0 | exit 2 |", "|---|---|---|---|"]
    for kind in sorted(by_kind):
        n = len(by_kind[kind])
        lines.append(f"| {kind} | {n} | {counts[(kind, 'exit 0')]} | {counts[(kind, 'exit 2')]} |")
    lines.append("")

    def esc(s: str) -> str:
        return s.replace("|", "\\|").replace("`", "'").replace("\n", " ")
    for kind in sorted(by_kind):
        lines += [f"## {kind}", "", "| case | input kind | command | outcome |", "|---|---|---|---|"]
        for case, cmd, out in by_kind[kind]:
            lines.append(f"| {esc(case)} | {kind} | `{cmd}` | {esc(out)} |")
        lines.append("")
    if _HYP:
        lines += ["## hypothesis", "", "Derandomized property tests (profile `opgraph-fuzz`); outcome of the first "
                  "command of each example.", "", "| test | input kind | outcome | examples |", "|---|---|---|---|"]
        for (test, kind, out), n in sorted(_HYP.items()):
            lines.append(f"| {esc(test)} | {kind} | {out} | {n} |")
        lines.append("")
    path.write_text("\n".join(lines))
