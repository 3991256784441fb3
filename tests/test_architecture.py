"""The shape of the package, checked with the tests (docs/architecture.md):

- the layer contract in pyproject.toml (``[tool.importlinter]``), run by import-linter:
  a wrong-way import fails here with the contract's name and the offending line;
- no module imports a private name (``_name``) of another opgraph module, nor reaches one
  through a module attribute (``mod._name``);
- commands are added to the group explicitly, and every command that reads one rank
  declares ``--rank`` itself.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "opgraph"


def _module_name(p: Path) -> str:
    parts = p.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_layer_contract() -> None:
    """``lint-imports`` keeps the layers contract of pyproject.toml."""
    import importlinter  # noqa: F401  (the test extra installs it; a missing tool is a failure, not a skip)

    r = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                        "sys.exit(lint_imports_command())"], cwd=ROOT, capture_output=True, text=True)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "1 kept, 0 broken" in out, out[-4000:]


def private_imports(root: Path = PKG) -> list[str]:
    """Every place a module of ``root`` uses a private name of another opgraph module:
    ``from opgraph.x import _name`` or ``x._name`` with ``x`` an imported opgraph module."""
    bad: list[str] = []
    for p in sorted(root.rglob("*.py")):
        mod = _module_name(p)
        tree = ast.parse(p.read_text(encoding="utf-8"))
        modules: dict[str, str] = {}  # local name -> opgraph module it stands for
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and n.level == 0 and (n.module or "").startswith("opgraph"):
                for a in n.names:
                    if a.name.startswith("_") and not a.name.startswith("__") and n.module != mod:
                        bad.append(f"{p.relative_to(ROOT)}:{n.lineno}: imports {n.module}.{a.name}")
                    modules[a.asname or a.name] = f"{n.module}.{a.name}"
            elif isinstance(n, ast.Import):
                for a in n.names:
                    if a.name.startswith("opgraph"):
                        modules[a.asname or a.name.split(".")[0]] = a.name
        for n in ast.walk(tree):
            if (isinstance(n, ast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__")
                    and isinstance(n.value, ast.Name) and n.value.id in modules):
                bad.append(f"{p.relative_to(ROOT)}:{n.lineno}: uses {modules[n.value.id]}.{n.attr}")
    return bad


def test_no_private_names_across_modules() -> None:
    assert private_imports() == []


def test_private_name_lint_finds_a_violation(tmp_path: Path, monkeypatch) -> None:
    """The lint is not vacuous: a planted private import is reported with its line."""
    pkg = tmp_path / "opgraph"
    pkg.mkdir()
    (pkg / "a.py").write_text("def _helper():\n    return 1\n")
    (pkg / "b.py").write_text("from opgraph.a import _helper\nimport opgraph.a as a\nx = a._helper()\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    got = private_imports(pkg)
    assert got == ["opgraph/b.py:1: imports opgraph.a._helper", "opgraph/b.py:3: uses opgraph.a._helper"]


def test_commands_are_listed_explicitly() -> None:
    """The group holds exactly the catalog's commands, loaded when used (none registered on
    import), and no command module imports the cli module."""
    import subprocess
    import sys as _sys

    from opgraph.catalog.entries import COMMAND_ORDER
    from opgraph.cli import commands, main

    assert [c.name for c in commands()] == list(COMMAND_ORDER)
    assert sorted(main.commands) == sorted(COMMAND_ORDER)
    # running one command imports that command's module, not the others'
    code = ("import sys; from opgraph.cli import main; main.get_command(None, 'queue'); "
            "print(sorted(m for m in sys.modules if m.startswith('opgraph.commands.')))")
    out = subprocess.run([_sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "opgraph.commands.critical_path" not in out and "opgraph.commands.catalog_command" in out, out
    for p in sorted((PKG / "commands").glob("*.py")):
        for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            names = [n.module] if isinstance(n, ast.ImportFrom) else \
                [a.name for a in n.names] if isinstance(n, ast.Import) else []
            assert "opgraph.cli" not in names, f"{p.name}:{n.lineno} imports opgraph.cli"


def test_rank_declared_where_it_means_something() -> None:
    """``--rank`` is declared by the commands that analyse one rank of a job, and only by them."""
    from opgraph.cli import NO_RANK_COMMANDS, commands

    for cmd in commands():
        name = cmd.name
        takes_input = any(isinstance(p, click.Argument) for p in cmd.params)
        assert any(p.name == "rank" for p in cmd.params) == (takes_input and name not in NO_RANK_COMMANDS), name


def test_test_helpers_are_imported_one_way() -> None:
    """Tests import shared helpers as ``conftest`` / sibling modules, never through a
    ``tests.`` package path (a second copy of conftest with its own graph cache)."""
    import re

    bad = [f"{p.name}:{i}" for p in sorted((ROOT / "tests").glob("*.py"))
           for i, ln in enumerate(p.read_text().splitlines(), 1)
           if re.match(r"\s*(from tests[. ]|import tests\b)", ln)]
    assert not bad, bad


def test_ci_runs_the_real_trace_sweeps_that_plain_pytest_leaves_out() -> None:
    """Plain ``pytest`` deselects the cases marked ``slow`` (the sweeps over real traces,
    marked by tests/conftest.py); ``scripts/test.sh`` (what .ci/run calls) selects them
    again, so CI runs every test."""
    import re

    addopts = re.search(r'^addopts = "(.*)"$', (ROOT / "pyproject.toml").read_text(), re.M)
    assert addopts and "-m 'not slow'" in addopts[1] and "-n auto" in addopts[1]
    script = (ROOT / "scripts" / "test.sh").read_text()
    assert '-m "slow or not slow" "$@"' in script
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
    from conftest import KINETO_FILES, sweeps_real_traces

    if KINETO_FILES:
        class Item:   # a collected case of a sweep over real traces, and one of synthesized traces
            def __init__(self, v):
                self.callspec = type("CS", (), {"params": {"path": v}})()
        assert sweeps_real_traces(Item(KINETO_FILES[0])) and sweeps_real_traces(Item([KINETO_FILES[0]]))
        assert not sweeps_real_traces(Item(ROOT / "fixtures" / "synth" / "cpu_bound.json"))


def test_benchmark_scripts_import(monkeypatch) -> None:
    """Every script of benchmarks/ imports: a name it takes from opgraph that was renamed or
    removed fails here, not at the next measurement (the peer scripts under
    benchmarks/peers/ run in the peers' own environments and are left out)."""
    import importlib.util

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    scripts = sorted((ROOT / "benchmarks").glob("*.py"))
    assert scripts
    for p in scripts:
        spec = importlib.util.spec_from_file_location(f"opgraph_bench_{p.stem}", p)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)   # each script runs its work under `if __name__ == "__main__"`
