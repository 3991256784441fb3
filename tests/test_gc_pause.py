"""Loading a graph in a long-lived process leaves nothing frozen (docs/dependencies.md):
frozen objects in a reference cycle are never freed, so only the ``opgraph`` program, which
loads one graph and exits, freezes what it loaded."""

from __future__ import annotations

import gc
import subprocess
import sys

from click.testing import CliRunner
from conftest import ROOT

from opgraph.cli import main
from opgraph.gc_pause import gc_paused

TRACE = str(ROOT / "fixtures" / "synth" / "gpu_bound.json")


def test_in_process_loads_freeze_nothing(tmp_path) -> None:
    before = gc.get_freeze_count()
    out = tmp_path / "g.gpickle"
    r = CliRunner().invoke(main, ["build", TRACE, "-o", str(out)])
    assert r.exit_code == 0, r.output
    for _ in range(2):
        assert CliRunner().invoke(main, ["info", str(out)]).exit_code == 0
    assert gc.get_freeze_count() == before
    assert gc.isenabled()


def test_gc_paused_restores_the_collector() -> None:
    assert gc.isenabled()
    with gc_paused(freeze=True):
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_program_freezes_what_it_loaded(tmp_path) -> None:
    code = ("import gc, sys; from opgraph.cli import run; sys.argv = ['opgraph', 'info', sys.argv[1]];\n"
            "import atexit; atexit.register(lambda: print('FROZEN', gc.get_freeze_count(), file=sys.stderr))\n"
            "run()")
    p = subprocess.run([sys.executable, "-c", code, TRACE], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    frozen = int(p.stderr.split("FROZEN")[1].split()[0])
    assert frozen > 10_000
