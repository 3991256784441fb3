"""``opgraph sequences --op OP --whole-calls`` beside HTA's ``get_frequent_cuda_kernel_sequences``
(docs/sequences.md, "Beside HTA").

Run with the HTA venv (docs/peers/hta/README.md) from the repository root:

    /work/hta-venv/bin/python benchmarks/peers/hta_sequences.py docs/peers/hta/frequent_sequences.json

then, in opgraph's own environment,

    python benchmarks/peers/hta_sequences.py --compare docs/peers/hta/frequent_sequences.json

HTA runs on every (trace, op) pair below; a pair where HTA raises is recorded with its
error (HTA 0.5.0's call graph rejects several real traces).
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces" / "A_kineto"
PAIRS: list[tuple[str, str]] = [
    ("param_dlrm_8gpu_rank0.pt.trace.json.gz", "aten::linear"),
    ("param_dlrm_8gpu_rank0.pt.trace.json.gz", "Optimizer.step"),
    ("param_dlrm_8gpu_rank0.pt.trace.json.gz", "autograd::engine::evaluate_function: AddmmBackward0"),
    ("tracelens_h100_bert_small.json.gz", "aten::scaled_dot_product_attention"),
    ("tracelens_mi300_qwen1.5_0.5b.json.gz", "aten::layer_norm"),
    ("hta_ns_resolution_rank0.pt.trace.json.gz", "aten::linear"),
    ("kineto_tbplugin_resnet50_w0_2021-06.pt.trace.json.gz", "aten::conv2d"),
]


def run_hta(out: str) -> None:
    from hta.trace_analysis import TraceAnalysis

    res = []
    for name, op in PAIRS:
        row: dict = {"trace": name, "op": op}
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "rank0.json.gz").symlink_to(TRACES / name)
            try:
                df = TraceAnalysis(trace_dir=d).get_frequent_cuda_kernel_sequences(
                    operator_name=op, output_dir=d, min_pattern_len=3, top_k=5, visualize=False)
                row["patterns"] = [{"pattern": p, "count": int(c), "gpu_us": float(g)} for p, c, g in zip(
                    df["pattern"], df["count"], df["GPU kernel duration (us)"])] if len(df) else []
            except Exception as e:  # noqa: BLE001 - record HTA's failure as it is
                row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
        res.append(row)
    Path(out).write_text(json.dumps({"hta": "0.5.0", "min_pattern_len": 3, "pairs": res}, indent=1) + "\n")


def compare(path: str) -> int:
    import opgraph
    from opgraph.analysis.sequences import kernel_sequences

    doc = json.loads(Path(path).read_text())
    for row in doc["pairs"]:
        G = opgraph.load(TRACES / row["trace"])
        ours = kernel_sequences(G, re.escape(row["op"]), 3, 3, 1000, whole_calls=True).patterns
        print(f"{row['trace']} / {row['op']}: opgraph {len(ours)} pattern(s)", end="")
        if "error" in row:
            print(f"; HTA raised {row['error']}")
            continue
        hta = {p["pattern"]: p for p in row["patterns"]}
        print(f"; HTA {len(hta)}")
        # HTA's pattern text: "<op>|<kernel>|<kernel>..." (full names); rows compared by op,
        # length, count and GPU time
        same = 0
        for r in ours.itertuples(index=False):
            match = [p for p in hta.values() if p["count"] == r.occurrences and abs(p["gpu_us"] - r.total_us) < 1e-6
                     and p["pattern"].split("|")[0] == r.op and len(p["pattern"].split("|")) - 1 == r.length]
            same += bool(match)
            print(f"  {r.op} × {r.length} kernels: opgraph {r.occurrences} calls, {r.total_us:g} µs"
                  f"{' = HTA' if match else ' (HTA: no equal row)'}")
        print(f"  equal rows: {same}/{len(ours)} (HTA rows: {len(hta)})")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--compare":
        sys.exit(compare(sys.argv[2]))
    run_hta(sys.argv[1])
