"""``opgraph queue`` / ``opgraph.queue_length``: exact on a hand-written trace, invariants on
every real trace."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

import opgraph
from opgraph.cli import main

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_700_000_000_000_000


def _trace(tmp_path: Path) -> Path:
    """Stream 7: calls at 0, 10, 20 (5 µs each); kernels [30, 130), [130, 230), [230, 330).
    Queue: 1 on [0, 10), 2 on [10, 20), 3 on [20, 130), 2 on [130, 230), 1 on [230, 330)."""
    ev = []
    for i, (c0, k0) in enumerate([(0, 30), (10, 130), (20, 230)]):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": T0 + c0,
                   "dur": 5, "args": {"correlation": i + 1}})
        ev.append({"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": T0 + k0, "dur": 100,
                   "args": {"device": 0, "stream": 7, "correlation": i + 1}})
    p = tmp_path / "queue.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    return p


def test_exact_answers(tmp_path: Path) -> None:
    q = opgraph.queue_length(opgraph.load(_trace(tmp_path)), limit=3).to_frame().iloc[0]
    assert (q["activities"], q["span_us"], q["max"]) == (3, 330, 3)
    assert q["mean"] == pytest.approx((1 * 10 + 2 * 10 + 3 * 110 + 2 * 100 + 1 * 100) / 330)
    assert (q["p50"], q["p90"]) == (2, 3)
    assert q["time_full_us"] == pytest.approx(110)


def test_cli_schema(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["queue", str(_trace(tmp_path)), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    jsonschema.validate(doc, json.loads((ROOT / "schemas" / "queue-length.schema.json").read_text()))
    assert doc["queues"][0]["max"] == 3 and doc["queues"][0]["time_full_us"] == 0


@pytest.mark.real_traces
def test_real_traces(kineto_graph) -> None:
    res = opgraph.queue_length(kineto_graph)
    q, s = res.to_frame(), res.tables()["series"]
    if not len(q):
        pytest.skip("no launches")
    assert (s["length"] >= 0).all()
    last = s.groupby(["device", "stream"])["length"].last()
    assert (last == 0).all()                      # every launched activity ends
    assert ((q["mean"] <= q["max"]) & (q["p50"] <= q["p90"]) & (q["p90"] <= q["max"])).all()
