"""A first screen that fits (issue 31, item 7): every command rendered on real traces at
80, 100 and 120 terminal columns and piped.

- On a terminal no line is wider than the terminal and no number is cut (``12,3…``): a
  table that does not fit leaves whole columns out (and says so), never part of a value.
- No escaped control character (a literal ``\\n``) in a cell.
- Piped, a line is no wider than its table needs: the prose wraps at 100 columns (a word
  longer than that, a name, stays whole) and a table line is at most 100 columns plus the
  one name column piped output prints whole, or made of numbers that need the width.
- Long C++ kernel names print short; ``--full-names`` prints them whole.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.cells import cell_len

from conftest import KINETO_DIR, requires_traces
from opgraph.catalog.entries import ANALYSES as CATALOG

#: Real traces of different shapes: a CPU-bound training run with long op names, an LLM
#: decode with C++/Triton kernel names, an accelerator that is not a GPU, a small
#: multi-stream training step.
TRACES = ("kineto_tbplugin_resnet50_w0_2021-06.pt.trace.json.gz",
          "tracelens_vllm_decode_full_graph_capture_rank0.pt.trace.json.gz",
          "hta_mtia_inference_rank0.json.gz", "hta_critical_path_alexnet.json.gz",
          "tracelens_h100_bert_small.json.gz")

COMMANDS: tuple[tuple[str, ...], ...] = (
    ("info",), ("summary",), ("iterations",), ("breakdown",), ("breakdown", "--device"), ("overheads",),
    ("critical-path",), ("idle",), ("overlap",), ("launch-stats",), ("queue",), ("memory-bw",),
    ("categories",), ("kernels",), ("shapes",), ("sequences",), ("advise",), ("nvtx",), ("report",),
    ("predict",), ("predict", "--scale-cpu", ".*=0.5"),
)
#: ... and every command the catalog makes from its entry.
COMMANDS += tuple((a.command,) for a in CATALOG if not a.command_impl and (a.command,) not in COMMANDS)

#: A number cut short: a table cell that is digits and separators ending in "…" (a name
#: elided after a digit, ``kernel<128, 6…``, is not a number).
CUT_CELL = re.compile(r"^[-+(]?\d[\d,. ()%x±→]*…$")


def _cut_numbers(line: str) -> list[str]:
    return [c for c in re.split("[│┃]", line) if CUT_CELL.match(c.strip())]
BOX = "│┃"
NUMERIC = re.compile(r"^([-+−–∞\d,.%x→±()/ ]|µs|ms)*$")
PIPE = 100
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _run(args: list[str], width: int | None) -> str:
    from opgraph.cli import main

    env = {"COLUMNS": str(width), "TTY_COMPATIBLE": "1", "NO_COLOR": "1"} if width else {
        "COLUMNS": None, "TTY_COMPATIBLE": None, "FORCE_COLOR": None}
    r = CliRunner().invoke(main, args, env=env)
    assert r.exit_code == 0, (args, r.stderr, r.exception)
    return ANSI.sub("", r.stdout)


@pytest.fixture(scope="module", params=[pytest.param(t, id=t.split(".")[0]) for t in TRACES])
def graph(request, tmp_path_factory) -> str:
    src = KINETO_DIR / request.param
    if not src.is_file():
        pytest.skip(f"{src} not available")
    out = tmp_path_factory.mktemp("g") / (request.param.split(".")[0] + ".gpickle")
    from opgraph.cli import main

    r = CliRunner().invoke(main, ["build", str(src), "-o", str(out)])
    assert r.exit_code == 0, r.stderr
    return str(out)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(f"[{BOX}]", line)[1:-1]]


@requires_traces
@pytest.mark.real_traces
@pytest.mark.parametrize("cmd", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_every_command_fits(graph: str, cmd: tuple[str, ...]) -> None:
    args = [cmd[0], graph, *cmd[1:]]
    for width in (80, 100, 120):
        out = _run(args, width)
        for ln in out.splitlines():
            assert cell_len(ln) <= width, (width, cmd, ln)
            assert not _cut_numbers(ln), (width, cmd, ln)
            assert "\\n" not in ln, (width, cmd, ln)
    out = _run(args, None)
    for ln in out.splitlines():
        if cell_len(ln) <= PIPE:
            continue
        assert not _cut_numbers(ln), (cmd, ln)
        if ln[:1] in BOX:  # a table row: 100 columns + the one name column printed whole, or numbers
            seg = re.split(f"[{BOX}]", ln)[1:-1]
            wide = max(seg, key=cell_len)
            others = [c.strip() for c in seg if c is not wide]
            assert cell_len(ln) - cell_len(wide) <= PIPE or all(
                NUMERIC.match(c) or cell_len(c) <= 24 for c in others), (cmd, ln)
        elif ln[:1] in "┏┡└├┗┣":
            continue  # a rule of a table checked by its rows
        else:  # prose: wrapped at spaces, so only a single word (a name) may be longer
            words = ln.split()
            assert len(words) == 1 or cell_len(ln) - max(cell_len(w) for w in words) <= PIPE, (cmd, ln)


@requires_traces
@pytest.mark.real_traces
def test_kernel_names_short_unless_asked(tmp_path: Path) -> None:
    src = KINETO_DIR / "hta_critical_path_alexnet.json.gz"
    if not src.is_file():
        pytest.skip("trace not available")
    short = _run(["critical-path", str(src)], 120)
    full = _run(["--full-names", "critical-path", str(src)], None)
    assert "void at::native::elementwise_kernel<128, 2," in full
    assert "void " not in short and "at::native::" not in short and "elementwise_kernel<128, 2," in short


def test_fit_table_never_cuts_a_number() -> None:
    from rich.table import Table

    from opgraph.export.text.console import make_console

    for width in (40, 80, 200):
        t = Table(title="t")
        t.add_column("name")
        for c in "abcdefghij":
            t.add_column(c, justify="right")
        t.add_row("a_long_name_" * 5, *[f"{10 ** 6 + i:,}.5" for i in range(10)])
        con = make_console(width=width, full=False, force_terminal=True, no_color=True, record=True)
        con.print(t)
        text = con.export_text()
        assert not any(_cut_numbers(ln) for ln in text.splitlines()), text
        assert all(cell_len(ln) <= width for ln in text.splitlines()), text
        assert ("not shown" in text) == (width < 200), text
