"""The writers on the trace model (docs/model.md): ``export`` (Perfetto, Graphviz, Parquet
tables), ``augment`` and ``--rank N`` on a job graph write from a saved graph byte for byte
what they write from the graph built from the raw trace, without making the networkx view;
one rank cut out of a job graph's columns equals that rank's trace built alone."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import opgraph
from opgraph.analysis.critical_path.path import critical_path
from opgraph.cli import main
from opgraph.export.dot import write_graphviz
from opgraph.export.tables.graph import graph_tables
from opgraph.export.perfetto.overlay import export_perfetto
from opgraph.export.perfetto.job import export_perfetto_job
from opgraph.graph.io import load_any, load_gpickle, save_gpickle
from opgraph.model.trace_graph import TraceGraph
from opgraph.multirank import rank_subgraph
from opgraph.pipelines import augment_file
from opgraph.testing.synth import synthesize, write_scenario

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
#: Real traces of different shapes: NCCL, CUDA-graph replays, MTIA, AMD, a helper thread,
#: an old format, Nsight Systems.
REAL = ["A_kineto/hta_critical_path_alexnet.json.gz",
        "A_kineto/tracelens_vllm_decode_full_graph_capture_rank0.pt.trace.json.gz",
        "A_kineto/hta_mtia_inference_rank0.json.gz", "A_kineto/hta_nccl_data.json.gz",
        "A_kineto/hta_call_stack_backward_thread.json", "A_kineto/tracelens_mi300_ddp_resnet18.json.gz",
        "A_kineto/hta_old_format_inference_rank1.json.gz", "C_nsys/nsightful_power_iteration.sqlite"]


def _inputs() -> list:
    synth = [pytest.param(sc, id=f"synth-{sc}") for sc in ("cpu_bound", "cuda_graph", "two_stream_event_wait", "gemm_shapes", "memory")]
    if not TRACES.is_dir():
        return synth + [pytest.param(None, id="no-traces", marks=pytest.mark.skip(reason="../shared/traces is absent"))]
    return synth + [pytest.param(TRACES / r, id=Path(r).name) for r in REAL]


def _trace(src, tmp_path: Path) -> Path:
    return src if isinstance(src, Path) else write_scenario(synthesize(src, steps=3), tmp_path)


def _pair(trace: Path, tmp_path: Path) -> tuple[TraceGraph, TraceGraph, Path]:
    """The graph built from ``trace``, and the same graph saved and loaded again."""
    g = tmp_path / "g.gpickle"
    B = load_any(trace)
    save_gpickle(B, g)
    T = load_gpickle(g)
    assert isinstance(B, TraceGraph) and isinstance(T, TraceGraph)
    return B, T, g


@pytest.mark.parametrize("src", _inputs())
def test_exports_from_a_saved_graph_equal_the_built_ones(tmp_path: Path, src) -> None:
    trace = _trace(src, tmp_path)
    B, T, g = _pair(trace, tmp_path)
    outs = {}
    for tag, H in (("built", B), ("saved", T)):
        p = tmp_path / f"{tag}.json"
        s = {k: v for k, v in export_perfetto(H, p).items() if k != "path"}
        d = tmp_path / f"{tag}.dot"
        v = write_graphviz(H, d, "dot", max_nodes=120)
        outs[tag] = (p.read_bytes(), s, d.read_bytes(), v.summary(), graph_tables(H))
    a, b = outs["built"], outs["saved"]
    assert a[0] == b[0] and a[1] == b[1], "Perfetto overlay"
    assert a[2] == b[2] and a[3] == b[3], "Graphviz view"
    for k in ("nodes", "edges"):
        pd.testing.assert_frame_equal(a[4][k], b[4][k])
    assert T._nx is None and B._nx is None, "the writers made the networkx view"
    # every edge and random pairs: the edge kinds (or none) of the columns are the view's
    rng = np.random.default_rng(0)
    ids = T.node_ids
    succ = B.to_networkx()._succ
    us, vs = T.payload["src"].tolist(), T.payload["dst"].tolist()
    if len(ids):
        us += rng.choice(ids, 500).tolist()
        vs += rng.choice(ids, 500).tolist()
    want = [succ[u][v]["kind"] if u in succ and v in succ[u] else None for u, v in zip(us, vs)]
    assert T.edge_kinds_between(us, vs) == want
    # augment: the saved graph (columns) writes what the raw trace writes
    a1, a2 = tmp_path / "a_raw.json", tmp_path / "a_saved.json"
    r1, r2 = augment_file(str(trace), str(a1)), augment_file(str(g), str(a2))
    assert a1.read_bytes() == a2.read_bytes() and r1.counts == r2.counts


def _job_dirs(tmp_path: Path) -> list[list[Path]]:
    from opgraph.testing.synth_multirank import synthesize_job, write_job

    jobs = [sorted(write_job(synthesize_job(world_size=4, seq=seq), tmp_path / f"job_{seq}"))
            for seq in (True, False)]
    dlrm = sorted(TRACES.glob("A_kineto/param_dlrm_8gpu_rank*.pt.trace.json.gz")) if TRACES.is_dir() else []
    return jobs + ([dlrm] if dlrm else [])


def _edges(H) -> dict:
    return {(u, v): d for u, v, d in H.to_networkx().edges(data=True)}


def test_rank_cut_from_columns_equals_the_rank_built_alone(tmp_path: Path) -> None:
    """``rank_subgraph`` on a job's columns: each rank's nodes, edges (their node-id
    attributes taken back to local ids), events and critical path equal its own trace
    built alone; on the aligned clock only the times move."""
    from test_trace_model import assert_same_arrays

    for files in _job_dirs(tmp_path):
        out = tmp_path / "job.gpickle"
        save_gpickle(opgraph.load(files), out)
        T = load_gpickle(out)
        job = T.graph["job"]
        for row in job["ranks"]:
            r = int(row["rank"])
            S = load_any(row["file"])
            H = rank_subgraph(T, r)
            assert isinstance(H, TraceGraph) and H._nx is None
            assert_same_arrays(S.arrays, H.arrays)
            assert _edges(H) == _edges(S)
            ev_h, ev_s = H.graph["events"], S.graph["events"]
            pd.testing.assert_frame_equal(ev_h.drop(columns=["args"]), ev_s.drop(columns=["args"]),
                                          check_categorical=False)
            assert ev_h["args"].tolist() == ev_s["args"].tolist()
            assert H.graph["source"] == S.graph["source"]
            a = json.dumps(critical_path(H).to_dict(), sort_keys=True, default=str)
            assert a == json.dumps(critical_path(S).to_dict(), sort_keys=True, default=str)
            Ha = rank_subgraph(T, r, aligned=True)
            off = job["alignment"]["offsets_ns"][r]
            assert np.array_equal(Ha.arrays.ts, H.arrays.ts + off)
            assert np.array_equal(Ha.graph["events"]["ts_ns"].to_numpy(), ev_h["ts_ns"].to_numpy() + off)
            assert dict(Ha.to_networkx().nodes(data=True)).keys() == dict(H.to_networkx().nodes(data=True)).keys()
            assert _edges(Ha) == _edges(H)
        assert T._nx is None
        with pytest.raises(KeyError, match="not in this job"):
            rank_subgraph(T, 99)


def test_job_overlay_from_a_saved_job_equals_the_built_one(tmp_path: Path) -> None:
    from opgraph.testing.synth_multirank import synthesize_job, write_job

    files = write_job(synthesize_job(world_size=4, seq=True), tmp_path / "job")
    out = tmp_path / "job.gpickle"
    G = opgraph.load(files)
    save_gpickle(G, out)
    T = load_gpickle(out)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert export_perfetto_job(G, a) == {**export_perfetto_job(T, b), "path": str(a)}
    assert a.read_bytes() == b.read_bytes()
    assert T._nx is None and G._nx is None


def test_export_and_augment_commands_never_make_the_networkx_view(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's writers on a saved graph and on a job graph (whole, and ``--rank N``) run
    on the columns: making the networkx view fails the test."""
    from opgraph.testing.synth_multirank import synthesize_job, write_job

    trace = opgraph.example_trace("cpu_bound", tmp_path)
    g, job = tmp_path / "g.gpickle", tmp_path / "job.gpickle"
    runner = CliRunner()
    assert runner.invoke(main, ["build", str(trace), "-o", str(g)]).exit_code == 0
    files = write_job(synthesize_job(world_size=4, seq=True), tmp_path / "job")
    assert runner.invoke(main, ["build", str(files[0].parent), "-o", str(job)]).exit_code == 0

    def refuse(self):
        raise AssertionError("the networkx view was made")
    monkeypatch.setattr(TraceGraph, "to_networkx", refuse)
    for args in (["export", str(g), "--perfetto", str(tmp_path / "p.json"), "--dot", str(tmp_path / "v.dot"),
                  "--parquet", str(tmp_path / "pq")],
                 ["augment", str(g), "-o", str(tmp_path / "aug.json")],
                 ["export", str(job), "--perfetto", str(tmp_path / "j.json")],
                 ["export", str(job), "--rank", "2", "--perfetto", str(tmp_path / "r2.json"),
                  "--dot", str(tmp_path / "r2.dot")],
                 ["idle", str(job), "--rank", "1", "--json"],
                 ["overlap", str(job), "--json"], ["collectives", str(job), "--json"]):
        if "--parquet" in args:
            pytest.importorskip("pyarrow")
        res = runner.invoke(main, args, catch_exceptions=False)
        assert res.exit_code == 0, (args, res.output)
    res = runner.invoke(main, ["export", str(job), "--rank", "9", "--perfetto", str(tmp_path / "x.json")])
    assert res.exit_code == 2 and "rank 9 is not in this job" in res.output
