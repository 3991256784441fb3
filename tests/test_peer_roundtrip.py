"""Round trip with the peers: the 8-rank DLRM job, exported one Perfetto trace per rank,
loads in HTA as the same 8 ranks with the same stragglers, kernel time, idle breakdown and
communication/computation overlap as the original traces.

HTA is not a dependency: the HTA part runs with the interpreter named by
``OPGRAPH_HTA_PYTHON`` (a venv with ``holistictraceanalysis``), or with this interpreter
when HTA is importable here, and is skipped otherwise. The format checks always run."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import KINETO_DIR

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "peers" / "hta_roundtrip.py"
#: HTA's rank regex (hta/common/trace_file.py): a compact "rank":3 does not match it.
HTA_RANK_RE = re.compile(rb'"rank":\s+(\d+)')

pytestmark = pytest.mark.real_traces


def _hta_python() -> str | None:
    env = os.environ.get("OPGRAPH_HTA_PYTHON")
    if env and Path(env).exists():
        return env
    if importlib.util.find_spec("hta") is not None:
        return sys.executable
    return None


@pytest.fixture(scope="module")
def dlrm_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    files = sorted(KINETO_DIR.glob("param_dlrm_8gpu_rank*.pt.trace.json.gz"))
    if len(files) != 8:
        pytest.skip("the 8 DLRM rank traces are absent")
    d = tmp_path_factory.mktemp("dlrm")
    orig, out = d / "orig", d / "exported"
    orig.mkdir()
    out.mkdir()
    for f in files:
        shutil.copy(f, orig / f.name)
    job = d / "job.gpickle"
    run = [sys.executable, "-m", "opgraph"]
    subprocess.run([*run, "build", str(orig), "-o", str(job)], check=True, capture_output=True, cwd=ROOT)
    for r in range(8):
        subprocess.run([*run, "export", str(job), "--rank", str(r), "--perfetto", str(out / f"rank{r}.json.gz")],
                       check=True, capture_output=True, cwd=ROOT)
    return orig, out


def test_exports_carry_rank_as_kineto_writes_it(dlrm_dirs: tuple[Path, Path]) -> None:
    orig, out = dlrm_dirs
    for r in range(8):
        data = gzip.open(out / f"rank{r}.json.gz").read()
        m = HTA_RANK_RE.search(data)
        assert m and int(m.group(1)) == r
        doc = json.loads(data)
        src = json.load(gzip.open(orig / f"param_dlrm_8gpu_rank{r}.pt.trace.json.gz"))
        assert doc["distributedInfo"] == src["distributedInfo"]
        assert doc["deviceProperties"] == src["deviceProperties"]


def test_hta_loads_exports_as_the_originals(dlrm_dirs: tuple[Path, Path]) -> None:
    py = _hta_python()
    if py is None:
        pytest.skip("HTA (holistictraceanalysis) not installed; set OPGRAPH_HTA_PYTHON")
    orig, out = dlrm_dirs

    def hta(folder: Path) -> dict:
        r = subprocess.run([py, str(SCRIPT), str(folder)], capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stderr[-2000:]
        return json.loads(r.stdout.strip().splitlines()[-1])

    a, b = hta(orig), hta(out)
    assert a["ranks"] == b["ranks"] == list(range(8))
    assert "stragglers" in a and a["stragglers"] == b["stragglers"]
    for key in ("kernel_time_us", "idle", "comm_comp_overlap_pct"):
        assert key in a and a[key] == b[key], key


# --------------------------------------------------------------------------- TraceLens
def _tracelens() -> tuple[str, str] | None:
    """(python, source folder) of a TraceLens checkout: ``OPGRAPH_TRACELENS_PYTHON`` and
    ``OPGRAPH_TRACELENS_PATH`` (TraceLens is not on the package index; docs/peers/tracelens.md)."""
    py, path = os.environ.get("OPGRAPH_TRACELENS_PYTHON"), os.environ.get("OPGRAPH_TRACELENS_PATH")
    if py and path and Path(py).exists() and (Path(path) / "TraceLens").is_dir():
        return py, path
    return None


@pytest.mark.parametrize("name", ["tracelens_h100_bert_small.json.gz", "param_dlrm_8gpu_rank0.pt.trace.json.gz"])
def test_tracelens_reads_exports_as_the_originals(name: str, tmp_path: Path) -> None:
    """TraceLens's whole CSV report (GPU timeline, per-category and per-op summaries, GEMM /
    SDPA / CONV / elementwise shape tables) of opgraph's Perfetto export is byte-identical
    to its report of the original trace."""
    tl = _tracelens()
    if tl is None:
        pytest.skip("TraceLens not configured; set OPGRAPH_TRACELENS_PYTHON and OPGRAPH_TRACELENS_PATH")
    src = KINETO_DIR / name
    if not src.exists():
        pytest.skip(f"{name} not available")
    py, path = tl
    exported = tmp_path / "exported.json.gz"
    subprocess.run([sys.executable, "-m", "opgraph", "export", str(src), "--perfetto", str(exported)], check=True,
                   capture_output=True, cwd=ROOT)
    outs = {}
    for tag, trace in (("orig", src), ("exported", exported)):
        outs[tag] = tmp_path / tag
        subprocess.run([py, "-m", "TraceLens.Reporting.generate_perf_report_pytorch", "--profile_json_path", str(trace),
                        "--output_csvs_dir", str(outs[tag])], check=True, capture_output=True,
                       env=dict(os.environ, PYTHONPATH=path), timeout=900)
    files = sorted(p.name for p in outs["orig"].glob("*.csv"))
    assert "gpu_timeline.csv" in files and "GEMM.csv" in files
    assert files == sorted(p.name for p in outs["exported"].glob("*.csv"))
    for f in files:
        assert (outs["orig"] / f).read_bytes() == (outs["exported"] / f).read_bytes(), f


def test_tracelens_reads_every_exported_rank_as_the_original(dlrm_dirs: tuple[Path, Path], tmp_path: Path) -> None:
    """Every rank of the 8-rank DLRM job, exported from the job graph one file per rank:
    TraceLens's GPU timeline and op summaries of each equal those of the rank's original
    file (TraceLens names the rank from the file name, which the export keeps)."""
    tl = _tracelens()
    if tl is None:
        pytest.skip("TraceLens not configured; set OPGRAPH_TRACELENS_PYTHON and OPGRAPH_TRACELENS_PATH")
    py, path = tl
    orig, out = dlrm_dirs

    def report(trace: Path, dest: Path) -> dict[str, bytes]:
        subprocess.run([py, "-m", "TraceLens.Reporting.generate_perf_report_pytorch", "--profile_json_path",
                        str(trace), "--output_csvs_dir", str(dest)], check=True, capture_output=True,
                       env=dict(os.environ, PYTHONPATH=path), timeout=900)
        return {p.name: p.read_bytes() for p in dest.glob("*.csv")}
    for r in range(8):
        a = report(orig / f"param_dlrm_8gpu_rank{r}.pt.trace.json.gz", tmp_path / f"o{r}")
        b = report(out / f"rank{r}.json.gz", tmp_path / f"e{r}")
        for name in ("gpu_timeline.csv", "ops_summary.csv", "ops_summary_by_category.csv", "GEMM.csv"):
            assert a[name] == b[name], (r, name)
