"""One-file HTML report: ``opgraph report g.gpickle --html report.html`` (docs/pictures.md).

The page is self-contained: CSS, JavaScript and data inline, no network fetch, so it opens
from disk offline. Charts are small hand-written SVG (no plotting library: the page stays a
few hundred kB): hover shows values, drag a box to zoom, double-click to reset; the
breakdown icicles zoom into an entry on click.

Every number printed in the page is a value of one of the CLI's ``--json`` documents,
computed here with the same functions and the same default options as the command:

=====================  =====================================================
section data           the same as
=====================  =====================================================
``summary``            ``opgraph summary IN --json [--batch-size N]``
``idle``               ``opgraph idle IN --json``
``critical_path``      ``opgraph critical-path IN --json --no-path``
``breakdown_host``     ``opgraph breakdown IN --host --json``
``breakdown_device``   ``opgraph breakdown IN --device --json``
``overheads``          ``opgraph overheads IN --json``
``roofline``           ``opgraph report IN --json [--device D] [--dtype T]``
``info``               ``opgraph info IN --json``
``overlap`` ...        the table sections (:mod:`opgraph.export.html.tables`): ``overlap``,
                       ``categories``, ``memory-bw``, ``collectives``, ``launch-stats``,
                       ``queue``, ``memory``, ``counters`` with ``--json`` and their defaults
=====================  =====================================================

Each printed number carries ``data-src`` (the section), ``data-path`` (its place in that
document, ``/``-separated) and ``data-value`` (the JSON value), so a test can check the
page against the CLI.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any, Callable

import orjson

from opgraph.exact_json import exact_default
from opgraph.export.html.format import chart as _chart
from opgraph.export.html.format import esc as _esc
from opgraph.export.html.format import fmt_num, fmt_pct, get_path  # noqa: F401  (re-exported for tests)
from opgraph.export.html.format import html_table as _table
from opgraph.export.html.format import num_span as _num
from opgraph.export.html.format import path_key as _k
from opgraph.export.html.format import short_name as _short
from opgraph.model.trace_graph import TraceGraph

#: Options of the embedded critical-path picture (``export --svg --critical-only
#: --collapse op --max-nodes 120 --window <the median step>``).
CP_PICTURE = {"collapse": "op", "max_nodes": 120}
_ORJSON = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def script_json(doc: Any) -> str:
    """``doc`` as JSON safe inside ``<script type="application/json">``: every ``<``, ``>``
    and ``&`` written as ``\\u003c``/``\\u003e``/``\\u0026`` (the same JSON value), so no
    name can close the script (``</script>``) or open a comment or another script
    (``<!--<script>``, which puts the HTML parser in its double-escaped state)."""
    text = orjson.dumps(doc, option=_ORJSON, default=exact_default).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _json_roundtrip(doc: Any) -> Any:
    """``doc`` as the CLI prints it (orjson, numpy values converted), parsed back."""
    return orjson.loads(orjson.dumps(doc, option=_ORJSON, default=exact_default))


# --------------------------------------------------------------------------- data
def report_data(G: TraceGraph, batch_size: int | None = None, device: str | None = None,
                dtype: str | None = None, notes: list[str] | None = None) -> dict[str, Any]:
    """The JSON documents of every section (see the module docstring); a section whose
    analysis fails or is not installed is absent, with a line in ``notes``."""
    notes = notes if notes is not None else []
    out: dict[str, Any] = {}

    def section(name: str, fn: Callable[[], Any]) -> None:
        try:
            out[name] = _json_roundtrip(fn())
        except ImportError as e:
            notes.append(f"{name}: not available ({e})")
        except Exception as e:  # noqa: BLE001 - one section failing leaves the others
            notes.append(f"{name}: left out ({type(e).__name__}: {e})")

    from opgraph.analysis.critical_path.path import critical_path
    from opgraph.analysis.busy_windows import idle_with_windows
    from opgraph.analysis.info import trace_info
    from opgraph.predict.gains import path_document

    section("info", lambda: trace_info(G))
    section("critical_path", lambda: path_document(G, critical_path(G), with_path=False))
    section("idle", lambda: idle_with_windows(G, kernel_wait_us=30.0).to_dict(top=15))

    frame: dict[str, Any] = {}

    def window():
        if "w" not in frame:
            from opgraph.analysis.window import analysis_window
            from opgraph.analysis.graph_frame import graph_frame
            f = graph_frame(G)
            frame["f"], frame["w"] = f, analysis_window(f, None, None, use_steps=True)
        return frame["f"], frame["w"]

    def summary():
        from opgraph.analysis.summary_doc import summary_doc
        return summary_doc(G, batch_size, None, None)

    def host():
        from opgraph.analysis.host_breakdown import host_breakdown, host_breakdown_doc
        f, w = window()
        return host_breakdown_doc(host_breakdown(f, w, include_python=False), 3, 5, 3)

    def dev():
        from opgraph.analysis.device_breakdown import device_breakdown, device_breakdown_doc
        f, w = window()
        return device_breakdown_doc(device_breakdown(f, w, include_python=False), 3, 10)

    def overheads():
        from opgraph.analysis.op_hierarchy import DEFAULT_MODULE_MARKERS
        from opgraph.analysis.overheads import (
            DEFAULT_LAUNCH_APIS, OverheadParams, overhead_samples, overheads_doc,
        )
        p = OverheadParams(t1_max_gap_us=200.0, t1_min_gap_us=None, launch_apis=DEFAULT_LAUNCH_APIS,
                           module_markers=DEFAULT_MODULE_MARKERS, data_markers=None, step_regex=None)
        f, w = window()
        return overheads_doc(f, p, False, overhead_samples(f, p, w, with_shapes=False))

    from opgraph.export.html.tables import COMPUTED_LAST, TABLE_SECTIONS, Shared
    shared = Shared()

    def roofline():
        from opgraph.analysis.roofline import report_doc
        from opgraph.analysis.roofline import roofline as run
        res = run(G, device=device, dtype=dtype)
        if device is None and dtype is None:  # the default options: the other sections reuse it
            shared["_roofline"] = res
        return report_doc(res, "kernel", None)

    section("summary", summary)
    section("breakdown_host", host)
    section("breakdown_device", dev)
    section("overheads", overheads)
    section("roofline", roofline)
    for spec in sorted(TABLE_SECTIONS, key=lambda sp: sp.key in COMPUTED_LAST):
        shared.update(out)  # the documents so far
        section(spec.key, lambda spec=spec: spec.compute(G, shared))
    return out


# --------------------------------------------------------------------------- sections
def _cards(data: dict[str, Any]) -> str:
    cards = []

    def card(title: str, body: str, sub: str, key: str) -> None:
        cards.append(f'<div class="card" data-card="{key}"><div class="ct">{_esc(title)}</div>'
                     f'<div class="cv">{body}</div><div class="cs">{sub}</div></div>')

    s = data.get("summary")
    if s:
        w = s["window"]
        card("Step time", _num(data, "summary", "step_time_us", " µs"),
             f'{_num(data, "summary", "steps")} step(s), {_esc(w["step_source"])}; data loading '
             f'{_num(data, "summary", "window/data_loading_us", " µs")} excluded', "step_time")
        wins = (s.get("windows") or {}).get("devices") or []
        for i, d in enumerate(wins):  # one place: summary's reconciling windows table
            card(f"GPU {d['device']} busy", _num(data, "summary", f"windows/devices/{i}/busy_pct_steps", " %", pct=True),
                 f'of the steps\' window ({_num(data, "summary", f"windows/devices/{i}/steps_span_us", " µs")}); '
                 f'{_num(data, "summary", f"windows/devices/{i}/busy_pct_gpu_span", " %", pct=True)} of the GPU span '
                 f'({_num(data, "summary", f"windows/devices/{i}/gpu_span_us", " µs")}) = steps\' window − lead-in '
                 f'{_num(data, "summary", f"windows/devices/{i}/lead_in_us", " µs")} − tail '
                 f'{_num(data, "summary", f"windows/devices/{i}/tail_us", " µs")}', f"gpu_busy_{d['device']}")
        if s.get("qps") is not None:
            card("QPS", _num(data, "summary", "qps", nd=2),
                 f'batch size {_num(data, "summary", "batch_size")} × steps / host runtime', "qps")
    idle = data.get("idle")
    if idle:
        for i, d in enumerate(idle["devices"]):
            span = d["span_us"]
            pct = 100.0 * d["cpu_induced_idle_us"] / span if span else 0.0
            card(f"GPU {d['device']} CPU-induced idle",
                 f'<span class="num derived" data-derived="cpu_induced_pct" data-device-index="{i}" '
                 f'data-value="{pct!r}" data-fmt="pct">{fmt_pct(pct)}</span><span class="unit"> %</span>',
                 f'{_num(data, "idle", f"devices/{i}/cpu_induced_idle_us", " µs")} of the GPU\'s span '
                 f'{_num(data, "idle", f"devices/{i}/span_us", " µs")} (whole trace; idle '
                 f'{_num(data, "idle", f"devices/{i}/idle_us", " µs")})', f"cpu_idle_{d['device']}")
    cp = data.get("critical_path")
    if cp and cp.get("run"):
        run = cp["run"]
        why = "; ".join(f'{_esc(o["name"])}: {_esc(o["reason"].replace("_", " "))}' for o in run["outliers"][:3])
        card("Run verdict", f'<span class="bound">{_esc(run["headline"])}</span>',
             f'steady-state step {_num(data, "critical_path", "run/step_us", " µs")} '
             f'({_num(data, "critical_path", "run/steady_windows")} of {_num(data, "critical_path", "run/windows")} '
             f'window(s) steady{"; outliers: " + why if why else ""})', "run_verdict")
        cards.insert(0, cards.pop())   # the answer first
    if cp:
        b = cp["summary"]["bound"]
        card("Critical path bound", f'<span class="bound">{_esc(b)}</span> '
             + _num(data, "critical_path", f"summary/breakdown_pct/{b}", " %", pct=True),
             f'of {_num(data, "critical_path", "summary/length_us", " µs")} over '
             f'{_num(data, "critical_path", "summary/windows")} window(s) ({_esc(cp["window_mode"])})', "cp_bound")
    return '<div class="cards">' + "".join(cards) + "</div>"


def _section_cp(data: dict[str, Any], picture: str | None, picture_note: str) -> str:
    cp = data["critical_path"]
    n = len(cp["windows"])
    parts = [_chart("cp_steps", "Critical path per window, by category (µs)",
                    "hover: values · drag: zoom · double-click: reset", 340 if n <= 40 else 400)]
    rows = []
    for i, w in enumerate(cp["windows"][:50]):
        rows.append([_esc(w["name"]), _num(data, "critical_path", f"windows/{i}/span_us"),
                     _esc(w["bound"]),
                     _num(data, "critical_path", f"windows/{i}/breakdown_pct/{w['bound']}", pct=True)])
    parts.append(_table(["window", "span = path length µs", "bound by", "bound %"], rows, "small"))
    if n > 50:
        parts.append(f'<p class="note">{n - 50} more windows in the chart and in the JSON.</p>')
    if picture:
        parts.append(f'<figure class="fig"><figcaption>{_esc(picture_note)}<span class="hint">hover a node or edge '
                     f'for details · buttons zoom</span></figcaption><div class="zoombar">'
                     f'<button data-z="1.25">+</button>'
                     f'<button data-z="0.8">−</button><button data-z="0">fit</button></div>'
                     f'<div class="cpsvg" data-chart="cp_svg">{picture}</div></figure>')
    elif picture_note:
        parts.append(f'<p class="note">{_esc(picture_note)}</p>')
    return "".join(parts)


def _section_idle(data: dict[str, Any]) -> str:
    idle = data["idle"]
    parts = []
    crow = []
    for i, d in enumerate(idle["devices"]):
        for c in d.get("causes_us", {}):
            pct = 100.0 * d["causes_us"][c] / d["idle_us"] if d["idle_us"] else 0.0
            crow.append([f"GPU {d['device']}", _esc(c), _num(data, "idle", f"devices/{i}/causes_us/{c}"),
                         f'<span class="val">{fmt_pct(pct)}</span>'])
        for what, by in (("device_wait held by", "device_wait_by_us"), ("launch_unknown while busy:", "launch_unknown_by_us")):
            for k, v in d.get(by, {}).items():
                crow.append([f"GPU {d['device']}", f"{what} {_esc(k)}", f'<span class="val">{fmt_num(v)}</span>', ""])
    if crow:
        parts.append('<h3>Why the GPU was idle (µs; the causes sum to the idle, docs/idle.md)</h3>')
        parts.append(_table(["device", "cause", "µs", "% of idle"], crow, "small"))
    parts.append(_chart("idle_streams", "GPU idle per stream by category (µs, HTA's categories)",
                        "hover: values · drag: zoom · double-click: reset", 300))
    rows = []
    for i, r in enumerate(idle["blame_top"]):
        rows.append([_esc(r["kind"]), f'<span class="name" title="{_esc(r["name"])}">{_esc(_short(r["name"]))}</span>',
                     _num(data, "idle", f"blame_top/{i}/blame_us"),
                     _num(data, "idle", f"blame_top/{i}/share_pct", pct=True),
                     _num(data, "idle", f"blame_top/{i}/count")])
    parts.append(_chart("idle_blame", "Top CPU ops blamed for CPU-induced GPU idle (µs, exclusive blame, rolled up "
                        "to the outermost op)", "hover: values", 60 + 22 * max(1, len(idle["blame_top"]))))
    parts.append(_table(["kind", "op", "blame µs", "share %", "count"], rows, "small"))
    return "".join(parts)


def _section_breakdowns(data: dict[str, Any]) -> str:
    parts = []
    if "breakdown_host" in data:
        w = data["breakdown_host"]["window"]
        parts.append(_chart("icicle_host", f"Host time per thread (icicle: CPU op hierarchy, "
                            f"{fmt_num(w['host_runtime_us'])} µs host runtime)",
                            "hover: values · click: zoom into an entry · click the top bar: back", 330))
    if "breakdown_device" in data:
        parts.append(_chart("icicle_device", "Device time per stream (icicle: CPU op → kernel)",
                            "hover: values · click: zoom · click the top bar: back", 330))
    return "".join(parts)


def _section_roofline(data: dict[str, Any], top: int = 20) -> str:
    r = data["roofline"]
    devs = ", ".join(f"{_esc(d['runtime_name'])} → {_esc(d['table_name'] or 'unknown')}" for d in r["devices"])
    parts = [f'<p class="note">Devices: {devs}. Kernels {_num(data, "roofline", "summary/kernels")}, '
             f'{_num(data, "roofline", "summary/kernel_time_us", " µs")}; with a cost model: '
             f'{_num(data, "roofline", "summary/modelled_kernels")} '
             f'({_num(data, "roofline", "summary/coverage_time_pct", " %", pct=True)} of kernel time).</p>']
    rows = []
    for i, row in enumerate(r["rows"][:top]):
        rows.append([f'<span class="name" title="{_esc(row["name"])}">{_esc(_short(row["name"], kernel=True))}</span>',
                     _num(data, "roofline", f"rows/{i}/count"), _num(data, "roofline", f"rows/{i}/total_us"),
                     _num(data, "roofline", f"rows/{i}/tflops"), _num(data, "roofline", f"rows/{i}/gbps"),
                     _num(data, "roofline", f"rows/{i}/pct_peak_flops", pct=True),
                     _num(data, "roofline", f"rows/{i}/pct_peak_bw", pct=True),
                     _esc(row.get("bound") or ""), _esc(row.get("dtype") or ""), _esc(row.get("model") or "no model")])
    parts.append(_table(["kernel", "count", "total µs", "TFLOP/s", "GB/s", "% peak FLOP/s", "% peak BW", "bound",
                         "dtype", "model"], rows, "small"))
    parts.append(_chart("roofline", "Roofline: achieved TFLOP/s against arithmetic intensity (FLOP/byte), "
                        "one point per kernel name", "log-log · hover: values · drag: zoom · double-click: reset",
                        420))
    return "".join(parts)


def _section_overheads(data: dict[str, Any], top: int = 15) -> str:
    o = data["overheads"]
    rows = []
    if o.get("t1"):
        rows.append(["T1", "gap between ops", _num(data, "overheads", "t1/mean"), _num(data, "overheads", "t1/std"),
                     _num(data, "overheads", "t1/n")])
    for k in sorted(o.get("t4") or {}):
        p = f"t4/{_k(k)}"
        rows.append(["T4", _esc(k), _num(data, "overheads", f"{p}/mean"), _num(data, "overheads", f"{p}/std"),
                     _num(data, "overheads", f"{p}/n")])
    parts = [_chart("overheads", "CPU overheads T1–T5, mean ± std (µs)", "hover: values · drag: zoom · "
                    "double-click: reset", 320),
             _table(["type", "key", "mean µs", "std µs", "n"], rows, "small")]
    ops = sorted((o.get("ops") or {}).items(), key=lambda kv: (-kv[1]["count"], kv[0]))[:top]
    orows = []
    for name, v in ops:
        cells = [f'<span class="name" title="{_esc(name)}">{_esc(_short(name, 60))}</span>',
                 _num(data, "overheads", f"ops/{_k(name)}/count")]
        for t in ("t2", "t3", "t5", "whole"):
            cells.append(_num(data, "overheads", f"ops/{_k(name)}/{t}/mean") if v.get(t) else "")
        orows.append(cells)
    parts.append(_table(["op (top by count)", "count", "T2 mean µs", "T3 mean µs", "T5 mean µs", "whole mean µs"],
                        orows, "small"))
    return "".join(parts)


def _section_health(data: dict[str, Any], missing: list[str] | None = None) -> str:
    h = data["info"]["health"]
    gone = ""
    if missing:
        gone = ('<h3>Not in this trace</h3><ul class="note">' + "".join(f"<li>{_esc(m)}</li>" for m in missing)
                + "</ul>")
    if not h:
        return '<p class="note ok">No trace-health warnings.</p>' + gone
    rows = [[f'<code>{_esc(x["code"])}</code>', _num(data, "info", f"health/{i}/count"),
             _esc(x.get("example_eid")), _esc(x.get("message"))] for i, x in enumerate(h)]
    return _table(["check", "count", "example eid", "what it means"], rows, "small health") + gone


def _section_graph_replay(data: dict[str, Any]) -> str:
    g = data["info"]["graph_replay"]
    rows = [[_esc(label), _num(data, "info", f"graph_replay/{k}")]
            for k, label in (("replays", "graph launches"), ("activities", "replayed activities"),
                             ("mapped", "mapped to the ops that captured them"), ("unmapped", "not mapped"))]
    caps = [[_esc(c.get("source")), _esc(c.get("label")), _num(data, "info", f"graph_replay/captures/{i}/nodes"),
             "yes" if c.get("names_recorded") else "no"] for i, c in enumerate(g.get("captures") or [])]
    out = ('<p class="note">Kernels run by graph replays are counted under the op that captured them '
           '(docs/graph-replay.md); unmapped ones are named <code>(graph replay) &lt;category&gt;</code>.</p>'
           + _table(["", "count"], rows, "small"))
    if caps:
        out += _table(["capture trace", "capture", "nodes", "kernel names recorded"], caps, "small")
    return out


# --------------------------------------------------------------------------- page
def _critical_picture(G: TraceGraph, data: dict[str, Any], notes: list[str]) -> tuple[str | None, str]:
    """The embedded SVG of the critical path of the median-length window."""
    from opgraph.export.dot import GraphvizMissing, critical_path_svg

    cp = data.get("critical_path")
    if not cp or not cp["windows"]:
        return None, ""
    ws = sorted(cp["windows"], key=lambda w: (w["span_us"], w["start_us"]))
    w = ws[(len(ws) - 1) // 2]
    window = "all" if cp["window_mode"] == "all" else "^" + re.escape(w["name"]) + "$"
    try:
        svg, view = critical_path_svg(G, window, max_nodes=CP_PICTURE["max_nodes"],
                                      collapse=CP_PICTURE["collapse"], title=f"critical path of {w['name']}")
    except GraphvizMissing:
        notes.append("critical-path picture: left out (Graphviz's `dot` is not installed)")
        return None, "The critical-path picture needs Graphviz (`dot`), which is not installed."
    except Exception as e:  # noqa: BLE001
        notes.append(f"critical-path picture: left out ({type(e).__name__}: {e})")
        return None, ""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
    note = (f"The critical path of {w['name']} (median window, span {fmt_num(w['span_us'])} µs) and its one-hop "
            f"neighbours: `opgraph export --svg --window '{window}' --critical-only --collapse op --max-nodes "
            f"{CP_PICTURE['max_nodes']}`")
    return svg, note


def render_html(G: TraceGraph, data: dict[str, Any], notes: list[str], title: str,
                with_picture: bool = True) -> str:
    from opgraph.export.assets.report import CSS, JS
    from opgraph.time_categories import COLOURS, CROSS_RANK_CATEGORIES, IDLE_CAUSES

    picture, pnote = _critical_picture(G, data, notes) if with_picture else (None, "")
    sec: list[tuple[str, str, str]] = []
    if "critical_path" in data:
        sec.append(("critical-path", "Critical path", _section_cp(data, picture, pnote)))
    if "idle" in data:
        sec.append(("idle", "GPU idle and its CPU causes", _section_idle(data)))
    if "breakdown_host" in data or "breakdown_device" in data:
        sec.append(("breakdowns", "Host and device breakdowns", _section_breakdowns(data)))
    if "roofline" in data:
        sec.append(("roofline", "Top kernels and roofline", _section_roofline(data)))
    if "overheads" in data:
        sec.append(("overheads", "CPU overheads T1–T5", _section_overheads(data)))
    from opgraph.export.html.tables import table_sections
    extra, missing = table_sections(data)
    sec[:0] = [x for x in extra if x[0] == "advise"]  # what to try next: right after the summary
    sec.extend(x for x in extra if x[0] != "advise")
    if "info" in data and data["info"].get("graph_replay"):
        sec.append(("graph-replay", "CUDA/HIP-graph replays", _section_graph_replay(data)))
    if "info" in data:
        sec.append(("health", "Trace health", _section_health(data, missing)))
    nav = "".join(f'<a href="#{k}">{_esc(t)}</a>' for k, t, _ in sec)
    body = "".join(f'<section id="{k}"><h2>{_esc(t)}</h2>{c}</section>' for k, t, c in sec)
    info = data.get("info") or {}
    src = (info.get("source") or {}).get("file") or ""
    span = info.get("span") or {}
    meta = (f'{_esc(src)} · {fmt_num(info.get("events"))} events, {fmt_num(info.get("nodes"))} nodes · trace span '
            f'{fmt_num(span.get("duration_us"))} µs · opgraph {_esc(info.get("opgraph_version"))} · '
            f'{time.strftime("%Y-%m-%d %H:%M")}')
    # the data the charts draw (the sections' documents, large lists trimmed)
    cdata = {k: v for k, v in data.items() if k in ("critical_path", "idle", "breakdown_host", "breakdown_device")}
    if "roofline" in data:
        cdata["roofline"] = {"devices": data["roofline"]["devices"], "rows": data["roofline"]["rows"][:400]}
    if "overheads" in data:
        o = data["overheads"]
        cdata["overheads"] = {k: o.get(k) for k in ("t1", "t2", "t3", "t4", "t5")}
        cdata["overheads"]["ops"] = {k: {"count": v["count"]} for k, v in (o.get("ops") or {}).items()}
    cdata["categories"] = {"path": list(CROSS_RANK_CATEGORIES), "idle": list(IDLE_CAUSES), "colours": dict(COLOURS)}
    blob = script_json(cdata)
    foot = "".join(f"<li>{_esc(n)}</li>" for n in notes)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_esc(title)}</title>
<style>{CSS}</style></head>
<body>
<header><h1>{_esc(title)}</h1><div class="meta">{meta}</div><nav>{nav}</nav></header>
<main>
<section id="summary"><h2>Summary</h2>{_cards(data)}</section>
{body}
<footer><p>Every number above is a value of the CLI's JSON output (see docs/pictures.md); charts are inline SVG
drawn by the script in this file, no network access.</p>{f"<ul>{foot}</ul>" if foot else ""}</footer>
</main>
<div id="tip" role="tooltip"></div>
<script type="application/json" id="opgraph-data">{blob}</script>
<script>{JS}</script>
</body></html>
"""


def write_report(G: TraceGraph, path: str | Path, batch_size: int | None = None, device: str | None = None,
                 dtype: str | None = None, title: str | None = None, with_picture: bool = True,
                 inputs: tuple[str | Path, ...] = ()) -> dict[str, Any]:
    """Write the HTML report of ``G`` to ``path`` (whole or not at all, never over one of
    ``inputs``: :func:`opgraph.outfiles.write_atomic`); returns ``{"bytes", "sections", "notes"}``."""
    from opgraph.outfiles import write_atomic

    notes: list[str] = []
    data = report_data(G, batch_size=batch_size, device=device, dtype=dtype, notes=notes)
    src = ((G.graph.get("source") or {}).get("file") if isinstance(G.graph.get("source"), dict) else None) or ""
    title = title or f"opgraph report · {Path(src).name or 'trace'}"
    text = render_html(G, data, notes, title, with_picture=with_picture)
    raw = text.encode("utf-8")
    write_atomic(path, raw, inputs)
    return {"bytes": len(raw), "sections": sorted(data), "notes": notes}
