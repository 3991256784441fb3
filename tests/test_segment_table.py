"""A critical path held as columns (SegmentTable) answers exactly as the list of
PathSegment objects it stands for: documents, breakdowns, confidence, top events, totals
over windows, tables, and the objects themselves."""

from __future__ import annotations

import pickle
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import KINETO_FILES, SYNTH_TRACES, requires_traces

from opgraph.analysis.critical_path.boundary_edges import CATEGORIES
from opgraph.analysis.critical_path.result import SegmentTable, summarize_windows
from opgraph.analysis.critical_path.run_result import CriticalPathResult
from opgraph.analysis.critical_path.path import critical_path
from opgraph.graph.io import load_any


def _both(path: Path) -> tuple[CriticalPathResult, CriticalPathResult]:
    res = critical_path(load_any(path))
    assert all(isinstance(w.path, SegmentTable) for w in res.windows)
    as_list = CriticalPathResult([replace(w, path=list(w.path)) for w in res.windows], res.window_mode)
    return res, as_list


def _check(res: CriticalPathResult, as_list: CriticalPathResult) -> None:
    assert res.to_dict() == as_list.to_dict()
    assert res.to_dict(with_path=False) == as_list.to_dict(with_path=False)
    for t, w in zip(res.windows, as_list.windows):
        assert t.path == w.path and list(t.path) == w.path and len(t.path) == len(w.path)
        assert t.breakdown_ns == w.breakdown_ns and t.length_ns == w.length_ns
        assert t.inferred_ns == w.inferred_ns and t.longest_wait == w.longest_wait and t.bound == w.bound
        assert t.top(True, 3) == w.top(True, 3) and t.top(False, 50) == w.top(False, 50)
        if len(w.path):
            assert t.path[0] == w.path[0] and t.path[-1] == w.path[-1] and t.path[1:4] == w.path[1:4]
    assert summarize_windows(res.windows, CATEGORIES) == summarize_windows(as_list.windows, CATEGORIES)
    for name in ("path", "breakdown"):
        assert res.tables()[name].equals(as_list.tables()[name])
    back = pickle.loads(pickle.dumps(res))
    assert back.to_dict() == res.to_dict()


@pytest.mark.parametrize("path", SYNTH_TRACES, ids=[p.name for p in SYNTH_TRACES])
def test_segment_table_equals_segment_list_on_scenarios(path: Path) -> None:
    _check(*_both(path))


@requires_traces
@pytest.mark.parametrize("name", ["hta_ns_resolution_rank0.pt.trace.json.gz", "hta_mtia_inference_rank0.json.gz",
                                  "tracelens_h100_bert_small.json.gz", "hta_nccl_data.json.gz"])
def test_segment_table_equals_segment_list_on_real_traces(name: str) -> None:
    trace = next((p for p in KINETO_FILES if p.name == name), None)
    if trace is None:
        pytest.skip(f"{name} not in ../shared/traces")
    _check(*_both(trace))
