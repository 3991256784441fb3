"""The public API (``import opgraph``): doctests of every public analysis, the same numbers
as the CLI's ``--json``, tables for notebooks, ``python -m opgraph``."""

from __future__ import annotations

import doctest
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import opgraph

ROOT = Path(__file__).resolve().parent.parent
DOCTEST_MODULES = ("opgraph", "opgraph.api", "opgraph.analysis.idle", "opgraph.analysis.critical_path.run_result",
                   "opgraph.analysis.overlap", "opgraph.analysis.memory_bw", "opgraph.analysis.collectives",
                   "opgraph.analysis.launch_stats", "opgraph.analysis.queue_length", "opgraph.analysis.categories")


@pytest.mark.parametrize("module", DOCTEST_MODULES)
def test_doctests(module: str) -> None:
    mod = importlib.import_module(module)
    res = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS, verbose=False)
    assert res.attempted > 0 and res.failed == 0, res


def test_public_names() -> None:
    import pkgutil
    import types

    # importing every subpackage binds its name on ``opgraph``: no public name may collide
    for m in pkgutil.iter_modules(opgraph.__path__):
        importlib.import_module(f"opgraph.{m.name}")
    for name in opgraph.__all__:
        assert getattr(opgraph, name) is not None, name
        assert not isinstance(getattr(opgraph, name), types.ModuleType), name
    assert callable(opgraph.critical_path) and callable(opgraph.load)
    with pytest.raises(AttributeError):
        opgraph.no_such_name  # noqa: B018
    assert "critical_path" in dir(opgraph)


def test_package_and_api_name_lists_agree() -> None:
    """``opgraph.__all__`` (kept without importing the API) and ``opgraph.api.__all__`` list
    the same functions."""
    from opgraph import api

    package_level = {"OpgraphInputError", "__version__", "GRAPH_SCHEMA_VERSION"}
    assert set(opgraph.__all__) - package_level == set(api.__all__)


def test_api_equals_cli_json(tmp_path: Path) -> None:
    """The API's tables hold the numbers ``opgraph <command> --json`` prints."""
    trace = opgraph.example_trace("two_stream_event_wait", tmp_path)
    G = opgraph.load(trace)

    def cli(*args: str) -> dict:
        out = subprocess.run([sys.executable, "-m", "opgraph", *args, str(trace), "--json"], capture_output=True,
                             text=True, check=True, cwd=ROOT).stdout
        return json.loads(out)

    cp = cli("critical-path")
    bd = opgraph.critical_path(G).to_frame("breakdown")
    assert bd["window"].tolist() == [w["name"] for w in cp["windows"]]
    for row, w in zip(bd.to_dict("records"), cp["windows"]):
        for c, v in w["breakdown_us"].items():
            assert row[c] == pytest.approx(v, abs=1e-9)
    path = opgraph.critical_path(G).to_frame()
    assert len(path) == sum(len(w["path"]) for w in cp["windows"])
    idle = cli("idle")
    dev = opgraph.idle(G).to_frame()
    for row, d in zip(dev.to_dict("records"), idle["devices"]):
        assert row["idle_us"] == pytest.approx(d["idle_us"])
        for c, v in d["causes_us"].items():
            assert row[f"{c}_us"] == pytest.approx(v)
    assert opgraph.summary(G).to_dict() == cli("summary")


def test_results_render_in_notebooks(tmp_path: Path) -> None:
    G = opgraph.load(opgraph.example_trace("gpu_bound", tmp_path))
    for res in (opgraph.critical_path(G), opgraph.idle(G), opgraph.roofline(G), opgraph.info(G),
                opgraph.summary(G), opgraph.breakdown(G, device=True), opgraph.iterations(G)):
        t = res.tables()
        assert t and all(isinstance(v, pd.DataFrame) for v in t.values())
        h = res._repr_html_()
        assert "<table" in h and h.count("<table") <= len(t)
    with pytest.raises(KeyError, match="no table"):
        opgraph.idle(G).to_frame("nope")


def test_python_dash_m(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "opgraph", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and "opgraph" in r.stdout
    r = subprocess.run([sys.executable, "-m", "opgraph", "info", str(tmp_path / "missing.json")],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_bad_input_is_one_line_error(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text("{not json")
    with pytest.raises(opgraph.OpgraphInputError, match="bad.json"):
        opgraph.load(p)


@pytest.mark.real_traces
def test_real_trace_notebook_flow() -> None:
    """The README's notebook lines on a real training trace."""
    from conftest import KINETO_DIR

    p = KINETO_DIR / "kineto_tbplugin_resnet50_w0_2021-06.pt.trace.json.gz"
    if not p.exists():
        pytest.skip("trace absent")
    g = opgraph.load(p)
    res = opgraph.critical_path(g)
    df = res.to_frame()
    assert set(df["bound_by"]) <= set(res.to_frame("breakdown").columns)
    per_window = df.groupby("window", sort=False)["dur_us"].sum()
    for w in res.windows:
        assert per_window[w.name] == pytest.approx(w.length_ns / 1e3)
    idle = opgraph.idle(g).to_frame()
    assert (idle["idle_us"] > 0).all()


def test_plots(tmp_path: Path) -> None:
    """Every picture of the API renders (Agg) and draws the result's numbers."""
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    G = opgraph.load(opgraph.example_trace("two_stream_event_wait", tmp_path))
    cp = opgraph.critical_path(G)
    fig = opgraph.plot(cp)
    bars = fig.axes[0].patches
    heights = sum(b.get_height() for b in bars)
    assert heights * 1e3 == pytest.approx(sum(w.length_ns for w in cp.windows) / 1e3, rel=1e-9)
    g = opgraph.plot(cp, "gantt", 1)
    assert "ProfilerStep" in g.axes[0].get_title()
    assert opgraph.plot(opgraph.idle(G)).axes and opgraph.plot(opgraph.roofline(G)).axes
    for f in (fig, g):
        f.savefig(tmp_path / "x.png")
    with pytest.raises(TypeError):
        opgraph.plot(opgraph.info(G))
    with pytest.raises(ValueError):
        opgraph.plot(cp, "pie")
