"""opgraph's CUPTI counter attribution beside HTA's ``get_cupti_counter_data_with_operators``
on the one trace recorded in CUPTI range-profiler mode (docs/counters.md).

Run with the HTA venv (docs/peers/hta/README.md) from the repository root:

    /work/hta-venv/bin/python benchmarks/peers/hta_counters.py docs/peers/hta/cupti_counters.json

then ``python benchmarks/peers/hta_counters.py --compare docs/peers/hta/cupti_counters.json``
with opgraph's own environment prints the comparison.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path

TRACE = Path(__file__).resolve().parents[2].parent / "shared" / "traces" / "A_kineto" / "hta_cupti_profiler_range.json.gz"


def run_hta() -> dict:
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "rank0.json.gz").symlink_to(TRACE)
        df = TraceAnalysis(trace_dir=d).get_cupti_counter_data_with_operators(ranks=[0])[0]
    counters = [c for c in df.columns if "__" in c and "." in c]
    rows = []
    for d in df.sort_values("ts").to_dict("records"):
        rows.append({"name": d["name"], "top_level_op": d.get("top_level_op"), "bottom_level_op": d.get("bottom_level_op"),
                     "counters": {c: (None if d[c] is None or (isinstance(d[c], float) and math.isnan(d[c]))
                                      else float(d[c])) for c in counters}})
    return {"hta": "0.5.0", "trace": TRACE.name, "ranges": rows}


def compare(path: str) -> int:
    import opgraph

    hta = json.loads(Path(path).read_text())
    r = opgraph.cupti_counters(str(TRACE)).tables()["ranges"].sort_values("range")
    ours = r.to_dict("records")
    same_inner = sum(o["op"] == h["bottom_level_op"] for o, h in zip(ours, hta["ranges"]))
    same_top = sum(o["top_op"] == h["top_level_op"] for o, h in zip(ours, hta["ranges"]))
    same_vals = sum(all((o.get(c) is None and v is None) or (v is not None and float(o.get(c)) == float(v))
                        for c, v in h["counters"].items()) for o, h in zip(ours, hta["ranges"]))
    print(f"ranges: opgraph {len(ours)}, HTA {len(hta['ranges'])}")
    print(f"innermost op equal to HTA's bottom_level_op: {same_inner}/{len(ours)}")
    print(f"outermost op equal to HTA's top_level_op: {same_top}/{len(ours)}")
    print(f"every counter value equal: {same_vals}/{len(ours)}")
    for o, h in zip(ours, hta["ranges"]):
        if o["op"] != h["bottom_level_op"] or o["top_op"] != h["top_level_op"]:
            print(f"  differs: {h['name'][:60]!r}: opgraph {o['top_op']} > {o['op']}; "
                  f"HTA {h['top_level_op']} > {h['bottom_level_op']}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--compare":
        sys.exit(compare(sys.argv[2]))
    Path(sys.argv[1]).write_text(json.dumps(run_hta(), indent=1) + "\n")
