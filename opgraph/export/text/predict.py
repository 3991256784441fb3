"""Terminal output of ``opgraph predict`` (replay / what-if) and ``opgraph predict --et``
(the documents of :mod:`opgraph.predict`; times in µs)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from opgraph.export.text.console import styled
from opgraph.export.text.numbers import share, us


def render_predict(doc: dict[str, Any], con: Console, perfetto: str | None = None) -> None:
    """The predicted steps against the measured ones, the critical-path composition, GPU
    busy / idle per device, and what the model inferred."""
    s = doc["summary"]
    title = ("replay" if doc["mode"] == "replay" else "what-if") + (
        ": " + "; ".join(transform_text(t) for t in doc["transforms"]) if doc["transforms"] else "")
    con.print(styled(("opgraph predict", "bold"), f" — {title}"))
    if doc.get("device"):
        d = doc["device"]
        con.print(f"device: {d['source']} -> {d['target']}: {d['roofline_modelled']} kernels re-timed by roofline, "
                  f"{d['bandwidth_scaled']} by the bandwidth ratio (no FLOP/byte model), "
                  f"{d['unchanged_collective'] + d['unchanged_other']} kernels and "
                  f"{d['unchanged_copies_memsets']} copies/memsets unchanged")
    sp = s.get("makespan_speedup")
    con.print(styled(("makespan", "bold"), f" {us(s['makespan_measured_us'])} → {us(s['makespan_predicted_us'])} µs "
                     f"({s['makespan_delta_pct']:+.2f} %" + (f", {sp:.3f}x" if sp else "") + ")"
                     + ("" if doc["mode"] == "replay" else ": the whole timeline, first event to last")))
    t = Table(title="Per step: its own time, the window clipped at the next step's start (µs)", title_justify="left",
              show_lines=False)
    for c, j in (("window", "left"), ("meas. µs", "right"), ("pred. µs", "right"), ("Δ %", "right"),
                 ("GPU %", "right"), ("bound", "left")):
        t.add_column(c, justify=j, no_wrap=True)
    for st in doc["steps"][:200]:
        if st["predicted_step_us"] is None:
            t.add_row(st["name"], us(st["measured_step_us"]), "-", "-", "-", st["measured_bound"])
            continue
        t.add_row(st["name"], us(st["measured_step_us"]), us(st["predicted_step_us"]), f"{st['step_delta_pct']:+.2f}",
                  f"{share(st['measured_gpu_busy_us'], st['measured_us'])} → "
                  f"{share(st['predicted_gpu_busy_us'], st['predicted_us'])}",
                  _bound(st["measured_bound"], st["predicted_bound"]))
    if len(doc["steps"]) > 200:
        t.add_row(f"… {len(doc['steps']) - 200} more", "", "", "", "", "")
    steps_pct = (100.0 * (s["steps_predicted_us"] - s["steps_measured_us"]) / s["steps_measured_us"]
                 if s["steps_measured_us"] else 0.0)
    t.add_row(styled(("sum", "bold")), us(s["steps_measured_us"]), us(s["steps_predicted_us"]), f"{steps_pct:+.2f}",
              "", _bound(s["measured_bound"], s["predicted_bound"]))
    con.print(t)
    if doc["mode"] == "replay":
        con.print(f"replay error per step: max {s['step_error_pct']['max']:.4f} %, "
                  f"mean {s['step_error_pct']['mean']:.4f} %")
    if s.get("speedup"):
        con.print(f"speedup over the steps (summed step time): {s['speedup']:.3f}x")
    elif s.get("steps_speedup") and not s.get("speedup_agrees", True):
        con.print(f"summed step time {s['steps_speedup']:.3f}x disagrees with the makespan: work moved out of the "
                  "steps (into the lead-in or the tail); the makespan is the answer")
    b = Table(title="critical-path composition (all windows, µs)")
    for c, j in (("category", "left"), ("measured", "right"), ("predicted", "right"), ("Δ", "right")):
        b.add_column(c, justify=j)
    for c, v in s["measured_breakdown_us"].items():
        p = s["predicted_breakdown_us"][c]
        if v or p:
            b.add_row(c, us(v), us(p), f"{p - v:+,.1f}")
    if b.row_count:
        con.print(b)
    g = Table(title="GPU busy / idle (µs)")
    for c in ("device", "busy meas", "busy pred", "idle meas", "idle pred", "busy % pred"):
        g.add_column(c, justify="right")
    for d in doc["gpu"]:
        g.add_row(str(d["device"]), us(d['measured']['busy_us']), us(d['predicted']['busy_us']),
                  us(d['measured']['idle_us']), us(d['predicted']['idle_us']),
                  f"{d['predicted']['busy_pct']:.1f}")
    if doc["gpu"]:
        con.print(g)
    for tr in doc["transforms"]:
        if tr["matched"] == 0:
            con.print(styled(("warning:", "yellow"), f" {transform_text(tr)} matched nothing"))
    inf = doc["model"]["inferred"]
    parts = [f"{inf.get('blocked_calls', 0)} launch calls blocked on a full launch queue"
             + (f" (depth {', '.join(str(q) for q in inf['queue_depth'].values())})" if inf.get("queue_depth") else ""),
             f"{inf.get('handoff_edges', 0)} cross-thread hand-offs", f"{inf.get('stream_wait_edges', 0)} cross-stream waits"]
    if any(inf.get(k) for k in ("blocked_calls", "handoff_edges", "stream_wait_edges")):
        con.print("inferred dependencies: " + ", ".join(parts))
    if doc["model"]["dropped_cycle_edges"]:
        con.print(styled(("note:", "yellow"), f" {doc['model']['dropped_cycle_edges']} edges dropped to break cycles"))
    if perfetto:
        con.print(f"predicted timeline written to {perfetto}")


def _bound(measured: str, predicted: str) -> str:
    return predicted if measured == predicted else f"{measured} → {predicted}"


def transform_text(t: dict[str, Any]) -> str:
    """One transform of a prediction as text (``scale-kernels 'gemm' x0.5 (12 matched)``)."""
    k = t["kind"]
    if k in ("scale_kernels", "scale_cpu"):
        return f"{k.replace('_', '-')} '{t['pattern']}' x{t['factor']:g} ({t['matched']} matched)"
    if k == "launch_overhead":
        return f"launch-overhead {t['value_us']:g} us ({t['matched']} calls)"
    if k == "remove":
        return f"remove '{t['pattern']}' ({t['matched']} matched)"
    if k == "typical_latencies":
        return f"typical latencies ({t['matched']} binding latencies replaced)"
    return f"device {t['device']}"


def render_predict_et(doc: dict[str, Any], et: str, con: Console) -> None:
    """The per-step prediction of an execution trace and what it could not model."""
    con.print(styled(("opgraph predict --et", "bold"), f" {et} on {doc['inputs']['device']}"))
    t = Table()
    for c in ("step", "E2E µs", "CPU µs", "GPU active µs", "data loading µs", "ops", "lookup", "analytic",
              "roofline", "by name", "cpu only", "unmodelled"):
        t.add_column(c, justify="right")
    for it in doc["iterations"]:
        s = it["ops_by_source"]
        t.add_row(str(it["step"]) if it["step"] >= 0 else "-", us(it['e2e_us']), us(it['cpu_us']),
                  us(it['gpu_active_us']), us(it['data_loading_us']), str(it["ops"]), str(s["lookup"]),
                  str(s["analytic"]), str(s["roofline"]), str(s["lookup_name"]), str(s["cpu_only"]), str(s["unmodelled"]))
    con.print(t)
    sm = doc["summary"]
    if sm["ops_by_source"]["unmodelled"] or sm["ops_without_cpu_model"]:
        con.print(styled(("note:", "yellow"), f" {sm['ops_by_source']['unmodelled']} ops launch GPU work with no "
                         f"kernel model, {sm['ops_without_cpu_model']} ops have no CPU overhead in the overheads file "
                         "(counted as 0)"))
