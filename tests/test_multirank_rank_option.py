"""Single-rank commands on a multi-rank job graph: ``--rank N`` analyses that rank as the
single-rank build of its file would; without it they stop with one line (a single-rank
analysis over several ranks' events would mix their steps, devices and threads)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from conftest import ROOT, _run_cli, assert_one_line_error
from opgraph.cli import NO_RANK_COMMANDS
from opgraph.multirank.job import format_rank_set as fmt_ranks

FIX = ROOT / "fixtures" / "multirank" / "seq"


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rankopt") / "job.gpickle"
    r = _run_cli(["build", str(FIX), "-o", str(out), "--workers", "1", "--keep", "0,2"])
    assert r.exit_code == 0, r.stderr
    return out


def test_every_single_rank_command_has_rank_option() -> None:
    from opgraph.cli import commands

    for cmd in commands():
        name = cmd.name
        has = any(p.name == "rank" for p in cmd.params)
        takes_input = any(isinstance(p, click.Argument) for p in cmd.params)  # not e.g. `devices`
        assert has == (name not in NO_RANK_COMMANDS and takes_input), name


@pytest.mark.parametrize("cmd", [["idle"], ["iterations"], ["summary"], ["breakdown", "--host"], ["overheads"]])
def test_job_without_rank_is_one_line_error(job: Path, cmd: list[str]) -> None:
    r = _run_cli([*cmd, str(job)])
    assert_one_line_error(r, job, "multi-rank job graph", "--rank", "ranks 0-3", "kept in full: 0,2")


@pytest.mark.parametrize("cmd", [["idle", "--json"], ["iterations", "--json"]])
def test_rank_equals_single_rank_file(job: Path, cmd: list[str]) -> None:
    """``--rank 2`` on the job gives exactly what the command gives on rank 2's file."""
    a = _run_cli([*cmd, str(job), "--rank", "2"])
    b = _run_cli([*cmd, str(FIX / "rank2.json")])
    assert a.exit_code == 0 and b.exit_code == 0, (a.stderr, b.stderr)
    da, db = json.loads(a.stdout), json.loads(b.stdout)
    for d in (da, db):  # the input's name differs by construction
        d.pop("source", None)
        d.pop("input", None)
    assert da == db


def test_rank_not_kept_or_absent(job: Path) -> None:
    r = _run_cli(["idle", str(job), "--rank", "1"])
    assert_one_line_error(r, job, "--rank 1", "not kept in full", "kept in full: 0,2")
    r = _run_cli(["idle", str(job), "--rank", "7"])
    assert_one_line_error(r, job, "--rank 7", "not in this job")


def test_rank_on_single_rank_graph(tmp_path: Path) -> None:
    p = FIX / "rank0.json"
    r = _run_cli(["idle", str(p), "--rank", "0"])
    assert_one_line_error(r, p, "--rank 0", "one rank")


def test_job_commands_still_take_the_whole_job(job: Path) -> None:
    for cmd in (["info", "--json"], ["stragglers", "--json"], ["critical-path", "--json", "--no-path"]):
        r = _run_cli([*cmd, str(job)])
        assert r.exit_code == 0, (cmd, r.stderr)
        assert json.loads(r.stdout)


def testfmt_ranks() -> None:
    assert fmt_ranks([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert fmt_ranks([3]) == "3"
    assert fmt_ranks([]) == "none"


def test_rank_option_with_python_m(job: Path) -> None:
    """``python -m opgraph.cli`` imports the CLI module twice; ``--rank`` is there too."""
    from conftest import _run_subprocess

    r = _run_subprocess(["idle", str(job), "--rank", "0", "--json"])
    assert r.exit_code == 0, r.stderr
    b = _run_cli(["idle", str(FIX / "rank0.json"), "--json"])
    da, db = json.loads(r.stdout), json.loads(b.stdout)
    for d in (da, db):
        d.pop("source", None)
        d.pop("input", None)
    assert da == db


def test_report_html_with_rank(job: Path, tmp_path: Path) -> None:
    """``report JOB --rank N --html`` writes rank N's page (it used to say "pass --rank N":
    the page was loaded outside the command's --rank), and without --rank it stops with one
    line like every single-rank command."""
    out = tmp_path / "r.html"
    r = _run_cli(["report", str(job), "--rank", "2", "--html", str(out)])
    assert r.exit_code == 0, r.stderr
    assert out.stat().st_size > 10_000 and "sections" in r.stderr
    r = _run_cli(["report", str(job), "--html", str(tmp_path / "s.html")])
    assert_one_line_error(r, job, "multi-rank job graph", "--rank")


def test_report_html_with_csv_writes_both(tmp_path: Path) -> None:
    """``--html`` with ``--csv DIR`` writes the page and the table (the table was dropped)."""
    out, d = tmp_path / "r.html", tmp_path / "tables"
    r = _run_cli(["report", str(FIX / "rank0.json"), "--html", str(out), "--csv", str(d)])
    assert r.exit_code == 0, r.stderr
    assert out.exists() and sorted(p.name for p in d.iterdir()) == ["rank0.report_kernel.csv"]
