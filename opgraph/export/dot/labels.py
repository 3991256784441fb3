"""The text of a Graphviz picture (:mod:`opgraph.export.dot`): node labels, tooltips and
attributes, lane titles, and the legend in the graph's title (what was drawn and cut, the
node and edge kinds).

Names are cut and cleaned first (:func:`opgraph.export.dot.style.safe_name`); the node
look per kind is :data:`opgraph.export.dot.style.NODE_STYLE`.
"""

from __future__ import annotations

import html
import re

from opgraph.names import short_kernel_name
from opgraph.export.dot.style import CRITICAL_COLOR, EDGE_STYLE, NODE_STYLE, dot_str, fmt_us, safe_name
from opgraph.export.dot.view import GraphView, ViewNode

#: A python frame's file and function (``…/modeling_bert.py(1160): forward``).
_PY_FRAME_RE = re.compile(r"^(?:.*/)?([^/]+\.py\(\d+\): .*)$")


def label_name(vn: ViewNode, width: int = 38) -> str:
    """The short name in a node's label: a kernel's base name, a python frame's file and
    function, at most ``width`` characters."""
    nm = safe_name(vn.name) if vn.name else "(unnamed)"
    if vn.kind == "kernel":
        # "void at::native::(anonymous namespace)::max_pool_forward_nchw<float>(...)" -> max_pool_forward_nchw
        from opgraph.names import normalize_kernel_name
        parts = [p for p in (normalize_kernel_name(nm, "base") or "").split("::") if p.strip()]
        nm = parts[-1].strip() if parts else (short_kernel_name(nm) or nm)
    elif vn.kind == "python":  # "transformers/models/bert/modeling_bert.py(1160): forward" -> file and function
        m = _PY_FRAME_RE.match(nm)
        if m:
            nm = m.group(1)
    nm = " ".join(nm.split())
    if len(nm) > width:
        nm = nm[: width - 1] + "…"
    return nm


def lane_title(lane: tuple, names: dict[tuple, str], pids: int) -> str:
    """A lane cluster's title: ``GPU d · stream s``, or ``CPU · thread t`` with the thread's
    name (``pid p ·`` first when the picture has several processes)."""
    if lane[0] == "gpu":
        return f"GPU {lane[1]} · stream {lane[2]}"
    nm = names.get(lane)
    nm = safe_name(nm) if nm else nm
    lane = (lane[0], safe_name(lane[1], 40), safe_name(lane[2], 40))
    who = f"pid {lane[1]} · " if pids > 1 else ""
    if nm and str(lane[2]) in nm:
        return f"CPU · {who}{nm}"
    return f"CPU · {who}thread {lane[2]}" + (f" ({nm})" if nm else "")


def legend_label(view: GraphView, title: str) -> str:
    """The graph label: title line, what was drawn/cut, node and edge legend (HTML)."""
    def esc(x: str) -> str:  # control characters and huge names never reach the HTML label
        return html.escape(safe_name(x, 2000))

    kinds = [k for k in NODE_STYLE if k in view.counts()]
    ekinds = [k for k in EDGE_STYLE if any(e.kind == k for e in view.edges)]
    if "critical" not in ekinds:
        ekinds.append("critical")
    rows = [f'<TR><TD ALIGN="LEFT"><B>{esc(title)}</B></TD></TR>']
    summary = safe_name(view.summary().split("; --max-nodes")[0], 2000)  # window names can be huge
    info = "<BR ALIGN=\"LEFT\"/>".join(esc(x) for x in summary.split("; "))
    rows.append(f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="10">{info}<BR ALIGN="LEFT"/></FONT></TD></TR>')
    br = '<BR ALIGN="LEFT"/>'
    if view.cut:
        import textwrap
        cut = br.join(esc(x) for x in textwrap.wrap(view.cut_text(), 110))
        rows.append(f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="10" COLOR="#b00000">{cut}{br}</FONT></TD></TR>')
    cells = []
    c = view.counts()
    for k in kinds:
        shape, extra, fill, text = NODE_STYLE[k]
        cells.append(f'<TD BGCOLOR="{fill}" BORDER="1" COLOR="#666666"><FONT POINT-SIZE="10">'
                     f'{esc(text)} ({c[k]:,}) · {esc(shape)}</FONT></TD>')
    trs = "".join("<TR>" + "".join(cells[i:i + 4]) + "</TR>" for i in range(0, len(cells), 4))
    rows.append(f'<TR><TD ALIGN="LEFT"><TABLE BORDER="0" CELLSPACING="4" CELLPADDING="3">{trs}</TABLE></TD></TR>')
    ecells = []
    for k in ekinds:
        attrs, glyph, text = EDGE_STYLE[k]
        g = f"<B>{esc(glyph)}</B>" if attrs.get("style") == "bold" else esc(glyph)
        ecells.append(f'<FONT COLOR="{attrs["color"]}">{g}</FONT> {esc(text)}')
    ecells.append('<FONT COLOR="#888888">┈┈▸</FONT> order across undrawn events')
    lines = [" &#160;&#160; ".join(ecells[i:i + 4]) for i in range(0, len(ecells), 4)]
    rows.append(f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="10">{br.join(lines)}{br}</FONT></TD></TR>')
    rows.append(f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="10">'
                f'<FONT COLOR="{CRITICAL_COLOR}"><B>thick orange border</B></FONT>: on the critical path '
                f'(its time on the path after ◆) · labels: name (+merged events) and duration{br}'
                f'time runs down · lanes: one per CPU thread (nesting indented) and one per GPU stream{br}'
                f'</FONT></TD></TR>')
    return '<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="3" CELLPADDING="2">' + "".join(rows) + "</TABLE>>"


def node_attrs(vn: ViewNode) -> dict[str, str]:
    """A node's DOT attributes: HTML label (name, merged count, duration, time on the
    critical path), shape and colours by kind, tooltip, SVG id and classes."""
    shape, extra, fill, _ = NODE_STYLE.get(vn.kind, ("box", "", "#ffffff", vn.kind))
    name = html.escape(label_name(vn))
    more = f" (+{vn.merged:,})" if vn.merged else ""
    dur = fmt_us(vn.dur)
    crit = f' · ◆ {fmt_us(vn.critical_ns)}' if vn.critical and vn.critical_ns else ""
    more = f'<FONT POINT-SIZE="8" COLOR="#555555">{html.escape(more)}</FONT>' if more else ""
    label = (f'<{name}{more}<BR/>'
             f'<FONT POINT-SIZE="8" COLOR="#333333">{html.escape(dur + crit)}</FONT>>')
    style = ",".join(x for x in ("filled", extra) if x)
    tip = (f"{vn.kind}: {safe_name(vn.name)}\ndur {vn.dur / 1000:.3f} µs, start {vn.ts / 1000:.3f} µs, eid {vn.eid}"
           + (f"\n+{vn.merged} collapsed events" if vn.merged else "")
           + (f"\ncritical path: {vn.critical_ns / 1000:.3f} µs" if vn.critical else ""))
    attrs = {"label": label, "shape": shape, "style": style, "fillcolor": fill,
             "tooltip": dot_str(tip), "id": f"n{vn.eid}",
             "class": f"kind-{vn.kind}" + (" critical" if vn.critical else "")}
    if vn.critical:
        attrs.update(color=CRITICAL_COLOR, penwidth="3")
    return attrs
