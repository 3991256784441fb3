"""Shared test configuration: where the real traces are, a per-session graph cache, and
small helpers to run the CLI in-process (click's CliRunner) or as a real subprocess.

Real traces live beside the repository in ``../shared/traces`` (read-only, never copied
into the repo). Tests that use them are marked ``real_traces`` and skip with a clear reason
when the folder is absent.

Graph cache: the session fixture ``kineto_graph`` is parametrised over every file in
``A_kineto``; pytest groups the tests by trace, so each real trace is read and built once
for all the tests that need it and is released when the next trace starts (the cache
below keeps only the last few graphs, so memory stays bounded).

Test modules import these helpers one way, ``from conftest import ...`` (the module pytest
itself loaded: importing it as ``tests.conftest`` would make a second copy with its own
graph cache); ``tests/test_architecture.py`` checks it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from click.testing import CliRunner

from opgraph.model.trace_graph import TraceGraph

ROOT = Path(__file__).resolve().parents[1]

# Every document opgraph writes during the tests is validated against its schema
# (opgraph.schemas_util.check_output; at run time users skip the self-check). Subprocesses
# inherit it.
os.environ["OPGRAPH_CHECK_OUTPUT"] = "1"
# Piped output is laid out for $COLUMNS (default 100); the tests expect the default whatever
# the shell (or pytest-xdist's workers, which set COLUMNS=80) exported. Tests of a width set
# it themselves.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)
TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
KINETO_DIR = TRACES / "A_kineto"
SYNTH_DIR = ROOT / "fixtures" / "synth"

KINETO_FILES: list[Path] = sorted(p for p in KINETO_DIR.iterdir() if p.is_file()) if KINETO_DIR.is_dir() else []
NO_TRACES_REASON = f"real traces not available: {KINETO_DIR} does not exist"
SYNTH_TRACES: list[Path] = sorted(p for p in SYNTH_DIR.glob("*.json") if not p.name.endswith(".answers.json"))

#: Skip marker for anything that needs ../shared/traces.
requires_traces = pytest.mark.skipif(not KINETO_DIR.is_dir(), reason=NO_TRACES_REASON)


def kineto_params() -> list[Any]:
    """``pytest.param`` per real Kineto trace (id = file name), or one skipped param."""
    if not KINETO_FILES:
        return [pytest.param(None, id="no-traces", marks=pytest.mark.skip(reason=NO_TRACES_REASON))]
    return [pytest.param(p, id=p.name) for p in KINETO_FILES]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "real_traces: needs ../shared/traces (skipped when absent)")


#: The files of ../shared/traces by name and by path inside it (a test names a trace either way).
TRACE_NAMES: frozenset[str] = frozenset(
    n for p in (TRACES.rglob("*") if TRACES.is_dir() else ()) if p.is_file()
    for n in (p.name, str(p.relative_to(TRACES))))


def _is_trace(v: Any) -> bool:
    if isinstance(v, Path):
        return TRACES in v.parents
    if isinstance(v, str):
        if v in TRACE_NAMES or v.startswith(str(TRACES) + os.sep):
            return True
        return "*" in v and not os.path.isabs(v) and "/" in v and TRACES.is_dir() and any(TRACES.glob(v))
    return False


def sweeps_real_traces(item: pytest.Item) -> bool:
    """The item is one case of a sweep over real traces: a parameter is a file (or a list of
    files, or a glob) of ../shared/traces, as a path or by its name."""
    cs = getattr(item, "callspec", None)
    if cs is None:
        return False
    return any(_is_trace(v) or (isinstance(v, (list, tuple)) and any(_is_trace(x) for x in v))
               for v in cs.params.values())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Cases of the sweeps over real traces are marked ``slow`` (plain ``pytest`` leaves them
    out; ``scripts/test.sh`` runs them: pyproject.toml); without ../shared/traces, whatever
    needs them is skipped."""
    slow = pytest.mark.slow
    for item in items:
        if sweeps_real_traces(item):
            item.add_marker(slow)
    if KINETO_DIR.is_dir():
        return
    skip = pytest.mark.skip(reason=NO_TRACES_REASON)
    for item in items:
        if "real_traces" in item.keywords:
            item.add_marker(skip)


# --------------------------------------------------------------------------- graph cache
_CACHE_SIZE = 3
_GRAPHS: "OrderedDict[str, TraceGraph]" = OrderedDict()
_FACTS: "OrderedDict[str, GraphFacts]" = OrderedDict()
BUILD_COUNT: dict[str, int] = {}


def load_graph(path: str | Path) -> TraceGraph:
    """The graph of ``path`` (built with ``opgraph.graph.io.load_any``), cached per session.

    Callers must not mutate the returned graph (nor its cached ``to_networkx()`` view)."""
    from opgraph.graph.io import load_any

    key = str(Path(path).resolve())
    G = _GRAPHS.get(key)
    if G is None:
        G = load_any(key)
        BUILD_COUNT[key] = BUILD_COUNT.get(key, 0) + 1
        _GRAPHS[key] = G
        while len(_GRAPHS) > _CACHE_SIZE:
            old, _ = _GRAPHS.popitem(last=False)
            _FACTS.pop(old, None)
    else:
        _GRAPHS.move_to_end(key)
    return G


@dataclass
class GraphFacts:
    """Arrays of a graph for vectorised checks. Node attributes are indexed by node id
    (eid); ``src``/``dst``/``ekind`` list every edge."""

    G: TraceGraph
    ids: np.ndarray
    kind: np.ndarray     # object, by eid ('' for eids that are not nodes)
    ts: np.ndarray       # int64 ns, by eid
    end: np.ndarray      # ts + dur, by eid
    pid: np.ndarray      # object, by eid
    tid: np.ndarray      # object, by eid
    device: np.ndarray   # int64, by eid
    stream: np.ndarray   # int64, by eid
    corr: np.ndarray     # int64, by eid
    src: np.ndarray
    dst: np.ndarray
    ekind: np.ndarray    # object, per edge
    edata: list[dict]

    def edges_of(self, kind: str) -> tuple[np.ndarray, np.ndarray]:
        m = self.ekind == kind
        return self.src[m], self.dst[m]


def graph_facts(path: str | Path) -> GraphFacts:
    """Arrays of the cached graph of ``path`` (computed once per graph)."""
    key = str(Path(path).resolve())
    G = load_graph(key)
    f = _FACTS.get(key)
    if f is not None and f.G is G:
        return f
    ids = G.node_ids
    size = int(ids.max()) + 1 if len(ids) else 0

    def by_eid(col: np.ndarray, fill: Any, dtype: Any) -> np.ndarray:
        out = np.full(size, fill, dtype=dtype)
        out[ids] = col
        return out

    cols = G.payload["node_cols"]
    kind = by_eid(G.column("kind"), "", object)
    ts = by_eid(cols["ts"], 0, np.int64)
    end = by_eid(cols["ts"] + cols["dur"], 0, np.int64)
    pid = by_eid(G.column("pid"), None, object)
    tid = by_eid(G.column("tid"), None, object)
    device = by_eid(cols["device"], -1, np.int64)
    stream = by_eid(cols["stream"], -1, np.int64)
    corr = by_eid(cols["correlation"], -1, np.int64)
    order = G.edge_order()   # edges in the order the networkx view lists them
    sel = slice(None) if order is None else order
    src = G.payload["src"][sel]
    dst = G.payload["dst"][sel]
    ekind = G.edge_kinds()[sel]
    extra = G.payload["edge_extra"]
    idx = range(len(src)) if order is None else order.tolist()
    edata = [{"kind": k, **extra[j]} if j in extra else {"kind": k} for j, k in zip(idx, ekind.tolist())]
    f = GraphFacts(G, ids, kind, ts, end, pid, tid, device, stream, corr, src, dst, ekind, edata)
    _FACTS[key] = f
    return f


@pytest.fixture(scope="session", params=kineto_params())
def kineto_path(request: pytest.FixtureRequest) -> Path:
    """Each real Kineto trace in turn (session scope: tests are grouped per trace)."""
    return request.param


@pytest.fixture(scope="session")
def kineto_graph(kineto_path: Path) -> TraceGraph:
    """The built graph of the current real trace (built once per session)."""
    return load_graph(kineto_path)


@pytest.fixture(scope="session")
def kineto_facts(kineto_path: Path, kineto_graph: TraceGraph) -> GraphFacts:
    return graph_facts(kineto_path)


# --------------------------------------------------------------------------- CLI helpers
@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None = None


def _run_cli(args: list[str]) -> CliResult:
    from opgraph.cli import main

    r = CliRunner().invoke(main, [str(a) for a in args])
    exc = r.exception if r.exception is not None and not isinstance(r.exception, SystemExit) else None
    return CliResult(r.exit_code, r.stdout, r.stderr, exc)


def _run_subprocess(args: list[str], cwd: Path | None = None) -> CliResult:
    p = subprocess.run([sys.executable, "-m", "opgraph.cli", *[str(a) for a in args]],
                       capture_output=True, text=True, cwd=cwd, timeout=120)
    return CliResult(p.returncode, p.stdout, p.stderr)


@pytest.fixture
def cli() -> Callable[[list[str]], CliResult]:
    """Run ``opgraph <args>`` in-process with click's CliRunner (stderr kept apart)."""
    return _run_cli


@pytest.fixture
def cli_subprocess() -> Callable[..., CliResult]:
    """Run ``python -m opgraph.cli <args>`` in a real subprocess."""
    return _run_subprocess


def assert_one_line_error(r: CliResult, path: str | Path, *needles: str) -> str:
    """Exit code 2, nothing on stdout, exactly one line on stderr that names ``path`` and
    contains every needle (case-insensitive); no traceback. Returns the line."""
    assert r.exception is None, f"unexpected exception {r.exception!r}"
    assert r.exit_code == 2, f"exit code {r.exit_code}; stderr={r.stderr!r}"
    assert r.stdout == "", f"stdout should be empty, got {r.stdout!r}"
    assert "Traceback" not in r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and r.stderr.endswith("\n"), f"expected one line, got {r.stderr!r}"
    line = lines[0]
    assert line.startswith("opgraph: error: "), line
    assert str(path) in line, f"{path} not named in {line!r}"
    for n in needles:
        assert n.lower() in line.lower(), f"{n!r} not in {line!r}"
    return line


@pytest.fixture
def one_line_error() -> Callable[..., str]:
    """:func:`assert_one_line_error` as a fixture."""
    return assert_one_line_error


def same_values(a: object, b: object) -> bool:
    """Equal values of equal types, recursively (NaN equals NaN; 1 is not 1.0 or True; an
    :class:`~opgraph.exact_json.ExactNumber`, the float an args integer beyond 64 bits
    decodes to, is a float)."""
    import math

    from opgraph.exact_json import ExactNumber

    if (float if type(a) is ExactNumber else type(a)) is not (float if type(b) is ExactNumber else type(b)):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_values(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_values(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def write_payload(path: Path, payload: dict) -> Path:
    """``payload`` saved as a ``.gpickle`` exactly as given (already packed, or edited after
    packing), the way opgraph's own pickler writes a column payload."""
    from opgraph.graph.io import GraphPickler, _rebuild_digraph

    class _Raw:
        def __reduce__(self):
            return _rebuild_digraph, (payload,)
    with open(path, "wb") as fh:
        GraphPickler(fh, protocol=5).dump(_Raw())
    return path


def prose(text: str) -> str:
    """``text`` with every run of whitespace made one space: piped output wraps sentences at
    spaces (at 100 columns), so a phrase is found whatever the line breaks."""
    return " ".join(text.split())


def table_headers(text: str) -> list[str]:
    """The column headers of every box table printed in ``text``, each header's lines joined
    with a space (fitted tables wrap a header over several lines: ``data`` / ``loading``)."""
    out: list[str] = []
    block: list[list[str]] = []
    for ln in text.splitlines() + [""]:
        if ln.startswith("┃"):
            block.append([c.strip() for c in ln.split("┃")[1:-1]])
        elif block:
            out += [" ".join(w for w in col if w) for col in zip(*block)]
            block = []
    return out
