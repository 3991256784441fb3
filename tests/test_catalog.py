"""The analysis catalog (opgraph/catalog/entries.py) is the one list: every command, API
function, schema, doc page and HTML section of an analysis is reached from it, and an
analysis module without a catalog line fails here."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from pathlib import Path

import click
import pytest

import opgraph
from conftest import ROOT, _run_cli
from opgraph.analysis.display import TableResult
from opgraph.catalog.entries import ANALYSES, COMMAND_ORDER, TOOLS, api_names, by_command, by_name
from opgraph.catalog.schema import GENERATED, schema_text
from opgraph.catalog.spec import COLUMN_FORMATS, OPTION_KINDS, OPTION_ROLES, resolve
from opgraph.cli import commands, main
from opgraph.schemas_util import validation_error

#: Modules with a result class that is a part of a catalog analysis, not one of its own.
PARTS = {
    "opgraph.analysis.busy_windows": "the windows table of idle and summary (opgraph.busy_windows)",
    "opgraph.analysis.crossrank": "critical-path on a multi-rank job",
    "opgraph.analysis.job_tables": "collectives on a multi-rank job",
    "opgraph.analysis.roofline.result": "the result of report's function (opgraph.analysis.roofline:roofline)",
    "opgraph.analysis.critical_path.run_result": "the result of critical-path's function",
    "opgraph.analysis.enqueue_stats": "enqueue-stats (its function is enqueue_report, same module)",
}
#: Commands the schema sweep cannot run on one single-rank trace, and why.
NOT_ON_ONE_TRACE = {"diff": "compares two traces", "stragglers": "needs a multi-rank job",
                    "nvtx": "needs NVTX ranges (tests/test_nsys.py)",
                    "enqueue-stats": "reads OpenCL logs (tests/test_dvdt.py)"}

ENTRY_IDS = [a.command for a in ANALYSES]


def _result_modules() -> set[str]:
    """Every module of opgraph.analysis and opgraph.predict that defines a TableResult class."""
    found: set[str] = set()
    for pkg_name in ("opgraph.analysis", "opgraph.predict"):
        pkg = importlib.import_module(pkg_name)
        for m in pkgutil.walk_packages(pkg.__path__, pkg_name + "."):
            mod = importlib.import_module(m.name)
            for obj in vars(mod).values():
                if (inspect.isclass(obj) and issubclass(obj, TableResult) and obj is not TableResult
                        and obj.__module__ == m.name):
                    found.add(m.name)
    return found


def test_every_analysis_module_has_a_catalog_line() -> None:
    homes = {resolve(a.function).__module__ for a in ANALYSES}
    missing = sorted(_result_modules() - homes - set(PARTS))
    assert not missing, f"analysis modules with a result class but no catalog entry: {missing}"


def test_the_cli_is_the_catalog() -> None:
    names = [c.name for c in commands()]
    assert names == list(COMMAND_ORDER)
    assert set(main.commands) == set(COMMAND_ORDER)
    assert sorted(COMMAND_ORDER) == sorted([a.command for a in ANALYSES] + [t.command for t in TOOLS])
    for t in TOOLS:
        assert resolve(t.command_impl).name == t.command


@pytest.mark.parametrize("command", ENTRY_IDS)
def test_entry_is_whole(command: str) -> None:
    a = by_command(command)
    fn = resolve(a.function)
    assert callable(fn) and (ROOT / "schemas" / a.schema).is_file() and (ROOT / a.doc).is_file()
    assert a.help and a.help.strip() == a.help
    if a.command_impl:
        cmd = resolve(a.command_impl)
        assert isinstance(cmd, click.Command) and cmd.name == a.command
    cmd = main.get_command(click.Context(main), a.command)
    params = {p.name: p for p in cmd.params}
    sig = inspect.signature(fn)
    for o in a.options:
        assert o.kind in OPTION_KINDS and o.role in OPTION_ROLES, o
        assert o.name in params, f"{command}: no {o.flag} option"
        assert params[o.name].default == o.default, (command, o.name)
        if o.role == "analysis":  # the function's own default is the catalog's
            assert sig.parameters[o.name].default == o.default, (command, o.name)
    for t in a.tables:
        assert all(f in COLUMN_FORMATS for _c, _h, f in t.columns or ()), t.path
    if a.name:
        api_fn = getattr(opgraph, a.name)
        api_sig = inspect.signature(api_fn)
        for o in a.options_for("analysis"):
            assert api_sig.parameters[o.name].default == o.default, (a.name, o.name)
        assert by_name(a.name) is a


def test_api_lists_follow_the_catalog() -> None:
    from opgraph import api

    for name in api_names():
        assert name in api.__all__ and name in opgraph.__all__
        assert callable(getattr(opgraph, name))
    made = [a for a in ANALYSES if a.name and not a.api_impl]
    assert made, "no API function is made from the catalog"
    for a in made:
        doc = getattr(api, a.name).__doc__
        assert a.example and ">>> " in doc and a.schema in doc, a.name


@pytest.mark.parametrize("command", ENTRY_IDS)
def test_generated_schemas_are_current(command: str) -> None:
    a = by_command(command)
    text = (ROOT / "schemas" / a.schema).read_text(encoding="utf-8")
    if GENERATED in text:
        assert text == schema_text(a), f"run: python -m opgraph.catalog.schema {a.command}"


@pytest.fixture(scope="module")
def gpu_bound(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return opgraph.example_trace("gpu_bound", tmp_path_factory.mktemp("catalog"))


@pytest.mark.parametrize("command", [c for c in ENTRY_IDS if c not in NOT_ON_ONE_TRACE])
def test_json_matches_its_schema(command: str, gpu_bound: Path) -> None:
    """Every analysis's ``--json`` on a synthesized trace is valid against its schema, and,
    for each table the catalog declares, holds the declared columns."""
    a = by_command(command)
    r = _run_cli([command, str(gpu_bound), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert validation_error(doc, a.schema) is None
    from opgraph.export.html.format import get_path

    for t in a.tables:
        try:
            rows = get_path(doc, t.path)
        except (KeyError, IndexError, TypeError):
            continue  # e.g. a shapes family the trace has no call of
        if isinstance(rows, list) and rows and t.columns:
            missing = [c for c, _h, _f in t.columns if c not in rows[0]]
            assert not missing, (command, t.path, missing)


def test_sections_come_from_the_catalog() -> None:
    from opgraph.export.html.tables import TABLE_SECTIONS

    assert [s.key for s in TABLE_SECTIONS] == [a.command.replace("-", "_") for a in
                                              sorted((a for a in ANALYSES if a.section),
                                                     key=lambda a: a.section.order)]
    for s in TABLE_SECTIONS:
        assert s.tables == by_command(s.command[0]).tables


def test_table_command_renders_declared_tables(gpu_bound: Path) -> None:
    """An entry without its own renderer prints its declared tables (captions, headers)."""
    plain = [a for a in ANALYSES if not a.command_impl and not a.render]
    assert plain
    for a in plain:
        r = _run_cli([a.command, str(gpu_bound)])
        assert r.exit_code == 0, r.stderr
        for t in a.tables:
            assert t.caption.split(" (")[0] in r.stdout, (a.command, t.caption)
