"""The Perfetto export's activity counters and copy args agree with the analyses they draw:
time with ``comm`` > 0 and ``compute`` = 0 is ``opgraph overlap``'s exposed communication,
time with ``compute`` > 0 its compute time; ``opgraph.gbps`` is ``opgraph memory-bw``'s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import opgraph
from opgraph.schemas_util import validation_error

from conftest import KINETO_DIR, ROOT

CASES = [ROOT / "fixtures" / "multirank" / "seq" / "rank1.json", KINETO_DIR / "param_dlrm_8gpu_rank0.pt.trace.json.gz",
         KINETO_DIR / "hta_nccl_data.json.gz"]


def _integrate(samples: list[dict], pred) -> float:
    """µs during which ``pred(args)`` holds, from step-counter samples of one track."""
    tot = 0.0
    for a, b in zip(samples, samples[1:]):
        if pred(a["args"]):
            tot += b["ts"] - a["ts"]
    return tot


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_activity_counters_equal_overlap(path: Path, tmp_path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path.name} not available")
    G = opgraph.load(path)
    out = tmp_path / "p.json"
    opgraph.export_perfetto(G, out)
    doc = json.loads(out.read_text())
    assert validation_error(doc, "perfetto-trace.schema.json") is None
    rows = {r["device"]: r for r in opgraph.comm_overlap(G, "all").to_dict()["rows"] if r["window"] == "all"}
    tracks: dict[str, list[dict]] = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "C" and str(e.get("name", "")).endswith(" activity"):
            tracks.setdefault(e["name"], []).append(e)
    assert tracks
    for name, samples in tracks.items():
        d = int(name.split()[1])
        samples.sort(key=lambda e: e["ts"])
        assert samples[-1]["args"] == {"compute": 0, "comm": 0, "memory": 0}
        exposed = _integrate(samples, lambda a: a["comm"] > 0 and a["compute"] == 0)
        compute = _integrate(samples, lambda a: a["compute"] > 0)
        # the file's µs timestamps are floats: a few ns of rounding per sample on epoch times
        tol = 0.005 * len(samples)
        assert exposed == pytest.approx(rows[d]["exposed_comm_us"], abs=tol)
        assert compute == pytest.approx(rows[d]["compute_us"], abs=tol)
    # copy args: the memory-bw figures
    bw = opgraph.memory_bandwidth(G).copies
    want = {int(e): g for e, g in zip(bw["eid"], bw["gbps"]) if g == g and g is not None}
    got = {}
    for e in doc["traceEvents"]:
        a = e.get("args") or {}
        if "opgraph.gbps" in a:
            got[(e.get("ts"), e.get("name"))] = a["opgraph.gbps"]
    assert len(got) == len(want)
