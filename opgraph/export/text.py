"""Terminal rendering (rich) of analysis results. Pure presentation: no analysis here."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def _kv_table(title: str, items: dict[str, Any], key: str = "kind", val: str = "count") -> Table:
    t = Table(title=title, title_justify="left")
    t.add_column(key)
    t.add_column(val, justify="right")
    for k, v in items.items():
        t.add_row(str(k), f"{v:,}" if isinstance(v, int) else str(v))
    return t


def render_info(doc: dict[str, Any], console: Console) -> None:
    """Print ``opgraph info`` tables."""
    src = doc["source"]
    console.print(f"[bold]{src.get('file')}[/bold]  format={src.get('format')}  "
                  f"sha256={str(src.get('sha256'))[:12]}…  opgraph {doc.get('opgraph_version')}")
    span = doc["span"]
    console.print(f"events {doc['events']:,}   nodes {doc['nodes']:,}   edges {doc['edges']:,}   "
                  f"span {span['duration_us']:,.3f} µs")
    grid = Table.grid(padding=(0, 4))
    grid.add_row(_kv_table("Events by kind", doc["events_by_kind"]),
                 _kv_table("Nodes by kind", doc["nodes_by_kind"]),
                 _kv_table("Edges by kind", doc["edges_by_kind"]))
    console.print(grid)
    if doc["devices"]:
        t = Table(title="Devices", title_justify="left")
        for c in ("id", "name", "memory GB", "SMs"):
            t.add_column(c)
        for d in doc["devices"]:
            t.add_row(str(d["id"]), str(d["name"]), str(d["memory_gb"]), str(d["sms"]))
        console.print(t)
    if doc["streams"]:
        t = Table(title="Streams", title_justify="left")
        for c in ("device", "stream", "activities", "busy µs"):
            t.add_column(c, justify="right")
        for s in doc["streams"]:
            t.add_row(str(s["device"]), str(s["stream"]), f"{s['activities']:,}", f"{s['busy_us']:,.3f}")
        console.print(t)
    if doc["threads"]:
        t = Table(title="Threads (host events)", title_justify="left")
        for c in ("pid", "tid", "name", "events"):
            t.add_column(c)
        for th in doc["threads"][:20]:
            t.add_row(str(th["pid"]), str(th["tid"]), str(th["name"] or ""), f"{th['events']:,}")
        if len(doc["threads"]) > 20:
            t.add_row("…", f"{len(doc['threads']) - 20} more", "", "")
        console.print(t)
    r = doc["ranks"]
    it = doc["iterations"]
    console.print(f"rank {r.get('rank')} of {r.get('world_size')}   iterations found: {it['count']}"
                  + (f" ({it['names'][0]} … {it['names'][-1]})" if it["count"] else ""))
    health = doc["health"]
    t = Table(title="Trace health", title_justify="left")
    t.add_column("check")
    t.add_column("count", justify="right")
    t.add_column("example eid", justify="right")
    t.add_column("what it means")
    for h in health:
        t.add_row(h["code"], f"{h['count']:,}", str(h["example_eid"]), h["message"])
    if not health:
        t.add_row("ok", "0", "", "no oddities found")
    console.print(t)
