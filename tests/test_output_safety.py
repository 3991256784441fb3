"""What users see: no traceback, no silently wrong text, no unreadable table.

Regression tests for the issue "Nothing a user does gets a traceback, a silent wrong answer
or an unreadable table" (docs/reliability.md, "Output"):

1. names are printed literally: rich markup in a name (``[/bold]``, ``[param|x]``) is
   neither interpreted nor swallowed;
2. control characters in names (ESC/OSC sequences, BEL, newlines) never reach the
   terminal: they are shown as visible escapes (``\\x1b``) on one line;
3. piped output (stdout not a terminal) shows full names, never cut with ``…``;
4. no ``None`` in table cells, and empty GPU tables say why;
5. every output file: missing parent folders created, FIFOs and the input refused (one
   line, exit 2), written whole;
6. the scripts install into a project-local ``.venv`` (PEP 668 images).

The traces are small Kineto JSON files written by hand into ``tmp_path``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from opgraph.catalog.entries import ANALYSES as CATALOG

ROOT = Path(__file__).resolve().parents[1]

MARKUP_OP = "[/bold]"
BRACKET_OP = "[param|x]"
BRACKET_KERNEL = "k[param|y]"
LONG_OP = "aten::" + "very_long_operator_name_" * 6 + "END"
LONG_KERNEL = "vectorized_elementwise_kernel_" + "with_a_really_long_name_" * 5 + "END"
EVIL_OP = "aten::evil\x1b]0;pwned\x07\x1b[31mred\nnext"
EVIL_KERNEL = "k\x1b[2Jclear\r"


def kineto(op: str = "aten::mm", kernel: str | None = "my_kernel", annotation: str = "fwd",
           thread_name: str = "main", steps: int = 2) -> dict[str, Any]:
    """A small Kineto trace: ``steps`` ProfilerStep ranges, each holding an annotation
    ``annotation`` with two CPU ops ``op``, each launching one kernel ``kernel`` (none when
    ``kernel`` is None)."""
    ev: list[dict[str, Any]] = []
    for s in range(steps):
        base = 1_000_000 + s * 1000
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s + 1}", "pid": 1, "tid": 1,
                   "ts": base, "dur": 900, "args": {"External id": 100 + s}})
        ev.append({"ph": "X", "cat": "user_annotation", "name": annotation, "pid": 1, "tid": 1,
                   "ts": base + 5, "dur": 800, "args": {"External id": 200 + s}})
        for i in range(2):
            t = base + 10 + i * 300
            c = 1000 + s * 10 + i
            ev.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": t, "dur": 100,
                       "args": {"External id": c, "Input Dims": [[4, 4], [4, 4]]}})
            if kernel is not None:
                ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                           "ts": t + 20, "dur": 30, "args": {"correlation": c, "External id": c}})
                ev.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": t + 60,
                           "dur": 150 + 50 * i, "args": {"correlation": c, "device": 0, "stream": 7,
                                                         "External id": c}})
    ev.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": thread_name}})
    return {"traceEvents": ev}


def write(tmp_path: Path, name: str, **kw: Any) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(kineto(**kw)))
    return p


#: Every command that prints tables of names, with the extra arguments it needs.
TABLE_COMMANDS: list[tuple[str, ...]] = [
    ("info",), ("critical-path",), ("idle",), ("breakdown",), ("breakdown", "--device"), ("report",),
    ("report", "--by", "op"), ("overheads",), ("summary",), ("iterations",), ("nvtx",), ("predict",),
] + [(a.command,) for a in CATALOG if not a.command_impl]  # and every command the catalog makes


def _run_all(cli, trace: Path, other: Path) -> dict[str, str]:
    """stdout of every table command (and of ``diff other trace``); each must exit 0."""
    out = {}
    for args in TABLE_COMMANDS:
        r = cli([args[0], str(trace), *args[1:]])
        assert r.exit_code == 0, (args, r.stderr)
        assert "internal error" not in r.stderr and r.exception is None, (args, r.stderr)
        out[" ".join(args)] = r.stdout
    r = cli(["diff", str(other), str(trace)])
    assert r.exit_code == 0, ("diff", r.stderr)
    out["diff"] = r.stdout
    return out


# --------------------------------------------------------------------------- 1. markup
def test_markup_in_names_is_printed_literally(cli, tmp_path: Path) -> None:
    trace = write(tmp_path, "markup.json", op=MARKUP_OP, kernel=MARKUP_OP, annotation=MARKUP_OP,
                  thread_name=MARKUP_OP)
    other = write(tmp_path, "plain.json")
    outs = _run_all(cli, trace, other)
    for cmd in ("critical-path", "idle", "breakdown", "breakdown --device", "report", "overheads", "diff", "nvtx",
                "info"):
        assert MARKUP_OP in outs[cmd], cmd


def test_square_brackets_in_names_keep_their_text(cli, tmp_path: Path) -> None:
    trace = write(tmp_path, "brackets.json", op=BRACKET_OP, kernel=BRACKET_KERNEL, annotation="[bold]ann")
    other = write(tmp_path, "plain.json")
    outs = _run_all(cli, trace, other)
    for cmd in ("critical-path", "idle", "breakdown", "breakdown --device", "overheads", "report --by op", "diff"):
        assert BRACKET_OP in outs[cmd], cmd
    for cmd in ("report", "diff"):
        assert BRACKET_KERNEL in outs[cmd], cmd
    assert "[bold]ann" in outs["nvtx"]


def test_markup_in_file_name(cli, tmp_path: Path) -> None:
    d = tmp_path / "[bold]x"
    d.mkdir()
    trace = write(d, "[red]t.json")
    for args in (("info",), ("report",), ("diff", str(trace))):
        r = cli([args[0], str(trace), *args[1:]])
        assert r.exit_code == 0, (args, r.stderr)
        assert "[red]t.json" in r.stdout, args


# --------------------------------------------------------------------------- 2. control characters
def test_control_characters_never_reach_the_terminal(cli, tmp_path: Path) -> None:
    trace = write(tmp_path, "evil.json", op=EVIL_OP, kernel=EVIL_KERNEL, annotation="ann\x1b[1m",
                  thread_name="th\x07")
    other = write(tmp_path, "plain.json")
    outs = _run_all(cli, trace, other)
    for cmd, text in outs.items():
        bad = [c for c in text if (ord(c) < 32 and c != "\n") or 0x7f <= ord(c) < 0xa0]
        assert not bad, (cmd, bad[:5])
    # shown as visible escapes, on the name's one line
    for cmd in ("critical-path", "idle", "breakdown", "overheads"):
        assert "aten::evil\\x1b]0;pwned\\x07\\x1b[31mred\\nnext" in outs[cmd], cmd
    assert "k\\x1b[2Jclear" in outs["report"]


def test_clean_helper() -> None:
    from opgraph.export.text.console import cell, clean

    assert clean("a\x1b[31mb\tc\nd\x7f\u202ee") == "a\\x1b[31mb\\tc\\nd\\x7f\\u202ee"
    assert clean("plain [x] µs") == "plain [x] µs"
    assert cell(None) == "-" and cell(float("nan")) == "-" and cell(3) == "3"


def test_error_lines_are_clean(cli, tmp_path: Path) -> None:
    trace = write(tmp_path, "t.json", annotation="ann\x1b[31m")
    r = cli(["critical-path", str(trace), "--window", "nomatch\x1b"])
    assert r.exit_code == 2
    assert "\x1b" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- 3. piped output
def test_piped_tables_show_full_names(cli, tmp_path: Path) -> None:
    trace = write(tmp_path, "long.json", op=LONG_OP, kernel=LONG_KERNEL, annotation="ann_" + "x" * 120)
    other = write(tmp_path, "plain.json")
    outs = _run_all(cli, trace, other)
    for cmd in ("critical-path", "idle", "breakdown", "breakdown --device", "overheads", "report --by op", "diff"):
        assert LONG_OP in outs[cmd], cmd
    for cmd in ("report", "diff"):
        assert LONG_KERNEL in outs[cmd], cmd
    assert "ann_" + "x" * 120 in outs["nvtx"]
    for cmd, text in outs.items():  # every occurrence of a long name is whole
        for name in (LONG_OP, LONG_KERNEL):
            assert text.count(name[:30]) == text.count(name), (cmd, name)


def test_piped_subprocess_critical_path(cli_subprocess, tmp_path: Path) -> None:
    """``opgraph critical-path trace | cat``: a real pipe, not click's runner."""
    trace = write(tmp_path, "long.json", op=LONG_OP, kernel=LONG_KERNEL)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")}
    p = subprocess.run([sys.executable, "-m", "opgraph.cli", "critical-path", str(trace)], capture_output=True,
                       text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert LONG_OP in p.stdout and "…" not in p.stdout
    assert max(len(ln) for ln in p.stdout.splitlines()) > len(LONG_OP)


# --------------------------------------------------------------------------- 4. None, empty tables
def test_no_none_in_tables(cli, tmp_path: Path) -> None:
    trace = write(tmp_path, "t.json")
    cpu = write(tmp_path, "cpu.json", kernel=None)
    for t in (trace, cpu):
        outs = _run_all(cli, t, trace)
        for cmd, text in outs.items():
            assert not re.search(r"\bNone\b", text), (t.name, cmd, text)


def test_empty_gpu_tables_say_why(cli, tmp_path: Path) -> None:
    cpu = write(tmp_path, "cpu.json", kernel=None)
    for args in (("summary",), ("idle",), ("breakdown", "--device"), ("report",)):
        r = cli([args[0], str(cpu), *args[1:]])
        assert r.exit_code == 0, (args, r.stderr)
        assert "no GPU activity" in r.stdout or "no kernels" in r.stdout, (args, r.stdout)
        # no table drawn without a row
        assert not re.search(r"┡[━╇]+┩\n└", r.stdout), (args, r.stdout)


# --------------------------------------------------------------------------- 5. output files
def _ok(r) -> None:
    assert r.exit_code == 0, r.stderr
    assert "internal error" not in r.stderr


def _one_line_error(r, *words: str) -> None:
    assert r.exit_code == 2, (r.exit_code, r.stderr)
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


def test_outputs_create_missing_folders(cli, tmp_path: Path) -> None:
    trace = write(tmp_path, "t.json")
    new = tmp_path / "new" / "deeper"
    _ok(cli(["overheads", str(trace), "-o", str(new / "o.json")]))
    json.loads((new / "o.json").read_text())
    _ok(cli(["augment", str(trace), "-o", str(new / "a.json")]))
    _ok(cli(["export", str(trace), "--perfetto", str(new / "p.json.gz"), "--dot", str(new / "g.dot")]))
    assert (new / "p.json.gz").stat().st_size > 0 and "digraph" in (new / "g.dot").read_text()
    _ok(cli(["kernel-models", str(trace), "--lookup", str(new / "lk.json"), "--calibration",
             str(new / "cal.json"), "--device", "H100 SXM"]))
    json.loads((new / "lk.json").read_text())
    _ok(cli(["predict", str(trace), "--perfetto", str(new / "pred.json")]))
    assert (new / "pred.json").stat().st_size > 0
    _ok(cli(["summary", str(trace), "--csv", str(new / "csv")]))
    assert list((new / "csv").glob("*.csv"))
    # nothing half-written is left beside the outputs
    assert not [p for p in new.rglob("*") if p.name.endswith(".part")]


def test_html_and_svg_outputs_create_missing_folders(cli, tmp_path: Path) -> None:
    trace = write(tmp_path, "t.json")
    new = tmp_path / "x" / "y"
    _ok(cli(["report", str(trace), "--html", str(new / "r.html")]))
    assert "<html" in (new / "r.html").read_text()
    if shutil.which("dot") is None:
        pytest.skip("Graphviz dot not installed")
    _ok(cli(["export", str(trace), "--svg", str(new / "g.svg")]))
    assert "<svg" in (new / "g.svg").read_text()


def test_outputs_refuse_the_input(cli, tmp_path: Path) -> None:
    trace = write(tmp_path, "t.json")
    before = trace.read_bytes()
    link = tmp_path / "link.json"
    link.symlink_to(trace)
    for args in (["augment", str(trace), "-o", str(link)], ["export", str(trace), "--perfetto", str(link)],
                 ["overheads", str(trace), "-o", str(trace)], ["predict", str(trace), "--perfetto", str(link)],
                 ["kernel-models", str(trace), "--lookup", str(link)]):
        _one_line_error(cli(args), "input")
    assert trace.read_bytes() == before


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_outputs_refuse_fifos(cli, tmp_path: Path) -> None:
    trace = write(tmp_path, "t.json")
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for args in (["overheads", str(trace), "-o", str(fifo)], ["augment", str(trace), "-o", str(fifo)],
                 ["export", str(trace), "--perfetto", str(fifo)], ["report", str(trace), "--html",
                                                                   str(tmp_path / "f.html")]):
        if "--html" in args:
            os.mkfifo(tmp_path / "f.html")
        _one_line_error(cli(args), "FIFO")


def test_output_into_a_folder_or_under_a_file(cli, tmp_path: Path) -> None:
    trace = write(tmp_path, "t.json")
    (tmp_path / "d.json").mkdir()
    _one_line_error(cli(["overheads", str(trace), "-o", str(tmp_path / "d.json")]), "folder")
    _one_line_error(cli(["export", str(trace), "--perfetto", str(trace / "x.json")]), "cannot write")


# --------------------------------------------------------------------------- 6. scripts
@pytest.mark.parametrize("script", ["demo.sh", "test.sh"])
def test_scripts_use_a_project_venv(script: str) -> None:
    text = (ROOT / "scripts" / script).read_text()
    helper = (ROOT / "scripts" / "venv.sh").read_text()
    assert ". scripts/venv.sh" in text and "python3 -m venv .venv" in helper
    for t in (text, helper):
        code = "\n".join(ln for ln in t.splitlines() if not ln.lstrip().startswith("#"))
        # no bare python/pip command (PEP 668 images refuse a system-wide pip install)
        assert not re.search(r"(^\s*|[;&|(]\s*|then\s+|do\s+)(python|pip3?)\b(?!3)", code, re.M), script
        assert not re.search(r"python3 -m pip|pip install", code.replace('"$PY" -m pip install', "")
                             .replace(".venv/bin/python -m pip install", "")), script
    if shutil.which("bash"):
        for f in (script, "venv.sh"):
            assert subprocess.run(["bash", "-n", str(ROOT / "scripts" / f)]).returncode == 0
    assert ".venv/" in (ROOT / ".gitignore").read_text().split()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this platform")
def test_full_stdout_is_one_line_exit_2(tmp_path: Path) -> None:
    """Audit #14/#18: a full stdout (or disk) is the environment's doing: one line, exit 2,
    never 'internal error'."""
    import subprocess
    import sys

    import opgraph

    trace = opgraph.example_trace("gpu_bound", tmp_path)
    for args in (["idle", str(trace), "--json"], ["idle", str(trace)], ["overlap", str(trace), "--csv", "-"]):
        with open("/dev/full", "w") as full:
            p = subprocess.run([sys.executable, "-m", "opgraph", *args], stdout=full, stderr=subprocess.PIPE,
                               text=True, timeout=120)
        assert p.returncode == 2, (args, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and "cannot write the output: No space left on device" in lines[0], p.stderr


def test_csv_dash_is_stdout_for_one_table(tmp_path: Path, cli) -> None:
    """``--csv -``: a one-table command prints CSV on stdout (no folder named '-'); a command
    with several tables says to give a folder."""
    import opgraph

    trace = opgraph.example_trace("gpu_bound", tmp_path)
    r = cli(["overlap", str(trace), "--csv", "-"])
    assert r.exit_code == 0 and r.stdout.startswith("window,device,"), r.stdout[:80]
    assert not Path("-").exists()
    r = cli(["categories", str(trace), "--csv", "-"])
    assert r.exit_code == 2 and "give a folder instead of -" in r.stderr and not Path("-").exists()


@pytest.mark.parametrize("err", ["ENOSPC", "EROFS"])
def test_full_or_read_only_disk_is_one_line_and_leaves_nothing(tmp_path: Path, monkeypatch, cli, err: str) -> None:
    """Audit #14/#18: a write that fails with a full or read-only disk (simulated: root
    ignores permissions here) is one line naming the file, exit 2, and leaves neither the
    output nor a temporary file, for the JSON, Perfetto and CSV writers."""
    import errno

    import opgraph
    import opgraph.outfiles as of

    trace = opgraph.example_trace("gpu_bound", tmp_path / "src")
    code = getattr(errno, err)

    def failing_fsync(fd: int) -> None:
        raise OSError(code, os.strerror(code))
    monkeypatch.setattr(of.os, "fsync", failing_fsync)
    out = tmp_path / "out"
    cases = [(["overheads", str(trace), "-o", str(out / "o.json")], out / "o.json"),
             (["export", str(trace), "--perfetto", str(out / "p.json")], out / "p.json"),
             (["idle", str(trace), "--csv", str(out / "csv")], None)]
    for args, target in cases:
        r = cli(args)
        assert r.exit_code == 2, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and os.strerror(code) in r.stderr, r.stderr
        if target is not None:
            assert not target.exists()
    assert not [p for p in out.rglob("*") if p.is_file()], list(out.rglob("*"))
