"""Rich tables and CSV frames for the breakdown, overheads, iterations and summary
documents. Pure presentation: every number comes from the analysis documents (µs)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table
from rich.text import Text

from opgraph.export.text.numbers import pct, us
from opgraph.export.text.console import NO_GPU, clean, print_table, styled


def _tree_rows(t: Table, entries: list[dict[str, Any]], level: int, shapes: bool) -> None:
    for e in entries:
        style = "dim" if e["kind"] in ("others", "unaccounted") else None
        label = ("  " * level) + clean(e["name"])
        if e["kind"] == "others":
            label += f" ({e.get('entries', 0)} entries)"
        if e["kind"] == "kernel":
            label = ("  " * level) + "⚙ " + clean(e["name"])
        row = [Text(label, style=style), us(e["time_us"]), pct(e["percent"]), f"{e['count']:,}" if e["count"] else ""]
        if shapes:
            sh = ""
            if e.get("shapes_distinct"):
                top = e["shapes"][0]
                sh = (f"{e['shapes_distinct']}: {clean(top['dims'])}"
                      + (f" ×{top['count']}" if e["shapes_distinct"] > 1 else ""))
            row.append(sh)
        t.add_row(*row)
        _tree_rows(t, e.get("children", []), level + 1, shapes)


def _window_line(w: dict[str, Any]) -> str:
    steps = f"{w['steps']} steps ({w['step_source']})" if w["steps"] else "no steps: whole trace"
    s = f"window {us(w['duration_us'])} µs, {steps}"
    if w.get("data_loading_us"):
        s += f"; data loading {us(w['data_loading_us'])} µs excluded"
    return s + f"; host runtime {us(w['host_runtime_us'])} µs"


#: Thread tables printed by ``breakdown --host`` (the busiest; JSON/CSV hold all): a trace
#: with 10^5 one-event threads would print 10^5 tables.
MAX_THREAD_TABLES = 50


def render_host_breakdown(doc: dict[str, Any], console: Console) -> None:
    """Print ``opgraph breakdown --host``: one tree table per thread."""
    console.print(styled(("Host breakdown", "bold"), "  " + _window_line(doc["window"])))
    dl = doc["data_loading"]
    if dl["by_name"]:
        t = Table(title="Data loading (reported apart, excluded from step time)", title_justify="left")
        for c in ("marker", "count", "time µs"):
            t.add_column(c, justify="left" if c == "marker" else "right", no_wrap=True,
                         max_width=80 if c == "marker" else None)
        for r in dl["by_name"]:
            t.add_row(r["name"], f"{r['count']:,}", us(r["time_us"]))
        console.print(t)
    threads = doc["threads"]  # busiest first
    for th in threads[:MAX_THREAD_TABLES]:
        title = f"thread {th['pid']}/{th['tid']}" + (f" “{clean(th['name'])}”" if th.get("name") else "")
        title += f": {us(th['time_us'])} µs, busy {us(th['busy_us'])} µs"
        t = Table(title=title, title_justify="left")
        t.add_column("entry", no_wrap=True, overflow="ellipsis", max_width=70)
        t.add_column("time µs", justify="right", no_wrap=True)
        t.add_column("% parent", justify="right", no_wrap=True)
        t.add_column("count", justify="right", no_wrap=True)
        t.add_column("shapes: most common", no_wrap=True, overflow="ellipsis", max_width=48)
        _tree_rows(t, th["entries"], 0, True)
        console.print(t)
    if len(threads) > MAX_THREAD_TABLES:
        console.print(f"{len(threads) - MAX_THREAD_TABLES:,} less busy threads not shown (one table each would "
                      f"be printed): --json or --csv list all {len(threads):,}")


def render_device_breakdown(doc: dict[str, Any], console: Console, top_ops: int = 20) -> None:
    """Print ``opgraph breakdown --device``: stream summary, per-stream trees, per-op table."""
    console.print(styled(("Device breakdown", "bold"), "  " + _window_line(doc["window"])))
    for d in doc.get("devices", []):
        span = d["span_us"] or 1
        console.print(f"device {d['device']}: span {us(d['span_us'])} µs, busy (union) {us(d['busy_us'])} µs "
                      f"({100 * d['busy_us'] / span:.2f} %), idle {us(d['idle_us'])} µs, "
                      f"multistream overlap {us(d['overlap_us'])} µs over {d['streams']} streams")
    t = Table(title="Streams", title_justify="left")
    for c in ("device", "stream", "span µs", "active µs", "active %", "idle µs", "idle %", "activities", "kernels"):
        t.add_column(c, justify="right", no_wrap=True)
    for s in doc["streams"]:
        t.add_row(str(s["device"]), str(s["stream"]), us(s["span_us"]), us(s["active_us"]), pct(s["active_pct"]),
                  us(s["idle_us"]), pct(s["idle_pct"]), f"{s['activities']:,}", f"{s['kernels']:,}")
    print_table(console, t, NO_GPU)
    for s in doc["streams"]:
        t = Table(title=f"device {s['device']} stream {s['stream']}: device time {us(s['device_us'])} µs "
                        f"(CPU op → kernel)", title_justify="left")
        t.add_column("entry", no_wrap=True, overflow="ellipsis", max_width=80)
        t.add_column("device µs", justify="right", no_wrap=True)
        t.add_column("% parent", justify="right", no_wrap=True)
        t.add_column("activities", justify="right", no_wrap=True)
        _tree_rows(t, s["entries"], 0, False)
        console.print(t)
    t = Table(title=f"Device time per op (top {min(top_ops, len(doc['ops']))} of {len(doc['ops'])})",
              title_justify="left")
    t.add_column("op", no_wrap=True, overflow="ellipsis", max_width=70)
    graphs = any(o.get("graph_kernels") for o in doc["ops"])
    for c in ("count", "kernels") + (("graph replay",) if graphs else ()) + ("device µs", "host µs", "device/host"):
        t.add_column(c, justify="right", no_wrap=True)
    for o in doc["ops"][:top_ops]:
        t.add_row(o["op"], f"{o['count']:,}", f"{o['kernels']:,}",
                  *((f"{o.get('graph_kernels', 0):,}",) if graphs else ()), us(o["device_us"]), us(o["host_us"]),
                  "" if o["ratio"] is None else f"{o['ratio']:.2f}")
    console.print(t)
    if graphs:
        console.print("graph replay: kernels run by CUDA/HIP-graph replays, under the op that captured them "
                      "(opgraph build --capture) or named '(graph replay) <category>' (docs/graph-replay.md)")


def _st(s: dict[str, Any] | None) -> tuple[str, str, str]:
    if not s:
        return "", "", ""
    return f"{s['mean']:,.2f}", f"{s['std']:,.2f}", f"{s['n']:,}"


def render_overheads(doc: dict[str, Any], console: Console, top: int = 20) -> None:
    """Print ``opgraph overheads``: T1, T4 and the per-op T2/T3/T5/whole table."""
    console.print(styled(("CPU overheads", "bold"), " (µs: mean / std / n)  " + _window_line(doc["window"])))
    p = doc["params"]
    t = Table(title="Op-independent", title_justify="left")
    for c in ("type", "key", "mean", "std", "n"):
        t.add_column(c, justify="right" if c in ("mean", "std", "n") else "left")
    t.add_row("T1", f"gap between ops < {p['t1_max_gap_us']:g} µs", *_st(doc["t1"]))
    for k, s in sorted(doc["t4"].items(), key=lambda kv: -kv[1]["n"]):
        t.add_row("T4", k, *_st(s))
    console.print(t)
    ops = sorted(doc["ops"].items(), key=lambda kv: -kv[1]["count"])
    t = Table(title=f"Per op (top {min(top, len(ops))} of {len(ops)} by count; mean ± std µs)", title_justify="left")
    t.add_column("op", no_wrap=True, overflow="ellipsis", max_width=60)
    t.add_column("count", justify="right", no_wrap=True)
    for c in ("T2", "T3", "T5", "whole"):
        t.add_column(c, justify="right", no_wrap=True)
    t.add_column("launches", no_wrap=True, overflow="ellipsis", max_width=50)
    for name, e in ops[:top]:
        row = [name, f"{e['count']:,}"]
        for k in ("t2", "t3", "t5", "whole"):
            st = e[k]
            row.append(f"{st['mean']:,.2f} ± {st['std']:,.2f}" if st else "")
        la = e["launches"]
        row.append(", ".join(la[:3]) + (f" … ({len(la)})" if len(la) > 3 else ""))
        t.add_row(*row)
    console.print(t)


def render_iterations(doc: dict[str, Any], console: Console) -> None:
    """Print ``opgraph iterations``: one row per step, times relative to the first step."""
    steps = doc["steps"]
    if not steps:
        console.print("no steps found (no ProfilerStep#N, no range matching --step-regex, "
                      "fewer than two data-loader markers)")
        return
    t0 = steps[0]["cpu_start_ns"]
    t = Table(title=f"{doc['count']} steps ({doc['step_source']}), µs; starts relative to the first step",
              title_justify="left")
    for c in ("#", "step", "name", "cpu start", "cpu", "gpu start", "gpu", "gpu busy", "kernel", "kernels",
              "data load"):
        if c == "name":
            t.add_column(c, no_wrap=True, overflow="ellipsis", min_width=8, max_width=40)
        else:
            t.add_column(c, justify="right", no_wrap=True)
    for s in steps:
        gs = "" if s["gpu_start_ns"] is None else us((s["gpu_start_ns"] - t0) / 1e3)
        t.add_row(str(s["index"]), str(s["step"]), s["name"], us((s["cpu_start_ns"] - t0) / 1e3), us(s["cpu_us"]),
                  gs, us(s["gpu_us"]), us(s["gpu_busy_us"]), us(s["kernel_us"]), f"{s['kernels']:,}",
                  us(s["data_loading_us"]))
    console.print(t)
    console.print(f"mean CPU step {us(doc['mean_cpu_us'])} µs, mean GPU busy {us(doc['mean_gpu_busy_us'])} µs")


def render_summary(doc: dict[str, Any], console: Console) -> None:
    """Print ``opgraph summary``."""
    w = doc["window"]
    console.print(styled(("Summary", "bold"), "  " + _window_line(w)))
    if doc["steps"]:
        line = f"steps {doc['steps']}, step time {us(doc['step_time_us'])} µs"
        if doc["qps"] is not None:
            line += f", batch {doc['batch_size']:,} → QPS {doc['qps']:,.2f}"
        else:
            line += " (give --batch-size for QPS)"
        console.print(line)
    t = Table(title="GPU per device (µs). Window: the steps' window above, not the GPU span (`opgraph idle` uses "
                    "the GPU span, first to last activity)", title_justify="left")
    t.add_column("", no_wrap=True)
    for d in doc["devices"]:
        t.add_column(f"device {d['device']}", justify="right", no_wrap=True)
    rows = [("streams", lambda d: str(d["streams"])), ("window", lambda d: us(d["span_us"])),
            ("busy (union), % of window", lambda d: f"{us(d['busy_us'])} ({pct(d['busy_pct'])} %)"),
            ("idle", lambda d: f"{us(d['idle_us'])} ({pct(d['idle_pct'])} %)"),
            ("Σ stream active", lambda d: us(d["stream_active_us"])),
            ("overlap", lambda d: f"{us(d['overlap_us'])} ({pct(d['overlap_pct'])} %)")]
    for label, fn in rows:
        t.add_row(label, *[fn(d) for d in doc["devices"]])
    if doc["devices"]:
        console.print(t)
        console.print("busy = union of activity intervals; idle = window − busy; overlap = Σ stream active − busy")
        from opgraph.export.text.results import render_busy_windows

        render_busy_windows(doc.get("windows"), console)
    else:
        console.print(f"GPU per device: {NO_GPU}")
    t = Table(title="Streams", title_justify="left")
    for c in ("device", "stream", "activities", "kernels", "active µs", "active %", "idle µs"):
        t.add_column(c, justify="right", no_wrap=True)
    for s in doc["streams"]:
        t.add_row(str(s["device"]), str(s["stream"]), f"{s['activities']:,}", f"{s['kernels']:,}", us(s["active_us"]),
                  pct(s["active_pct"]), us(s["idle_us"]))
    print_table(console, t, NO_GPU)


# --------------------------------------------------------------------------- CSV
def breakdown_frames(doc: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """Flat tables of a breakdown document: ``host`` or ``device_tree`` +
    ``device_streams`` + ``device_ops``."""
    from opgraph.analysis.breakdown_tree import flatten_tree

    if doc["mode"] == "host":
        rows = []
        for th in doc["threads"]:
            rows += flatten_tree(th["entries"], shapes=True, pid=th["pid"], tid=th["tid"])
        return {"host": pd.DataFrame(rows)}
    rows = []
    for s in doc["streams"]:
        rows += flatten_tree(s["entries"], device=s["device"], stream=s["stream"])
    streams = pd.DataFrame([{k: v for k, v in s.items() if k != "entries"} for s in doc["streams"]])
    return {"device_tree": pd.DataFrame(rows), "device_streams": streams, "device_ops": pd.DataFrame(doc["ops"])}


def overheads_frames(doc: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """Flat table of an overheads document: one row per (type, key[, shapes])."""
    rows = []
    if doc["t1"]:
        rows.append({"type": "t1", "key": "", "shapes": "", **doc["t1"]})
    for k, s in doc["t4"].items():
        rows.append({"type": "t4", "key": k, "shapes": "", **s})
    for op, e in doc["ops"].items():
        for t in ("t2", "t3", "t5", "whole"):
            if e[t]:
                rows.append({"type": t, "key": op, "shapes": "", **e[t]})
        for sh, se in e.get("shapes", {}).items():
            for t in ("t2", "t3", "t5", "whole"):
                if se[t]:
                    rows.append({"type": t, "key": op, "shapes": sh, **se[t]})
    return {"overheads": pd.DataFrame(rows, columns=["type", "key", "shapes", "mean", "std", "n"])}


def iterations_frames(doc: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """One row per step."""
    return {"iterations": pd.DataFrame(doc["steps"])}


def summary_frames(doc: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """Devices and streams tables, plus a one-row summary."""
    one = {"steps": doc["steps"], "step_time_us": doc["step_time_us"], "batch_size": doc["batch_size"],
           "qps": doc["qps"], **{f"window_{k}": v for k, v in doc["window"].items() if not isinstance(v, list)}}
    return {"summary": pd.DataFrame([one]), "summary_devices": pd.DataFrame(doc["devices"]),
            "summary_streams": pd.DataFrame(doc["streams"])}


def info_frames(doc: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """Tables of an ``info`` document: counts by kind, devices, streams, threads, health
    warnings and inferred dependencies."""
    frames: dict[str, pd.DataFrame] = {}
    for key in ("nodes_by_kind", "edges_by_kind", "events_by_kind"):
        v = doc.get(key)
        if isinstance(v, dict):
            frames[key] = pd.DataFrame({"kind": list(v), "count": list(v.values())})
    for key in ("devices", "streams", "threads", "health", "inferred_dependencies"):
        v = doc.get(key)
        if isinstance(v, list) and v and isinstance(v[0], dict):
            frames[key] = pd.DataFrame(v)
    return frames


def predict_frames(doc: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """Tables of a ``predict`` document: ``steps`` (one row per window: measured and
    predicted span, delta, GPU busy; µs) and ``steps_breakdown`` (per window and category,
    measured and predicted µs on the critical path)."""
    steps = doc.get("steps") or []
    flat = pd.DataFrame([{k: v for k, v in s.items() if not isinstance(v, (dict, list))} for s in steps])
    rows = []
    for s in steps:
        mb, pb = s.get("measured_breakdown_us") or {}, s.get("predicted_breakdown_us") or {}
        for c in dict.fromkeys([*mb, *pb]):
            rows.append({"name": s["name"], "category": c, "measured_us": mb.get(c), "predicted_us": pb.get(c)})
    return {"steps": flat, "steps_breakdown": pd.DataFrame(rows, columns=["name", "category", "measured_us",
                                                                           "predicted_us"])}


def diff_frames(doc: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """Tables of a ``diff`` document: ``kernels`` and ``ops`` (one row per matched name)."""
    return {k: pd.DataFrame(doc[k].get("rows") or []) for k in ("kernels", "ops") if isinstance(doc.get(k), dict)}


def write_csv(frames: dict[str, pd.DataFrame], directory: str | Path, stem: str,
              inputs: tuple[str | Path, ...] = ()) -> list[Path]:
    """Write each frame to ``<directory>/<stem>.<name>.csv`` (the folder created, each file
    whole or not at all, never over one of ``inputs``); return the paths."""
    from opgraph.outfiles import check_output_path, write_atomic

    paths = [check_output_path(p, inputs) for p in table_file_paths(frames, directory, stem, "csv")]
    for p, df in zip(paths, frames.values()):
        write_atomic(p, csv_text(df).encode("utf-8"), inputs)
    return paths


def table_file_paths(frames: dict[str, pd.DataFrame], directory: str | Path, stem: str, ext: str) -> list[Path]:
    """The files :func:`write_csv` / :func:`write_parquet` write: ``<directory>/<stem>.<name>.<ext>``."""
    return [Path(directory) / _file_name(stem, name, ext) for name in frames]


def csv_text(df: pd.DataFrame) -> str:
    """``df`` as CSV text, made safe for spreadsheets (:func:`spreadsheet_safe`) and for CSV
    readers: a text field holding a line break (LF or CR) is always quoted. pandas quotes
    fields holding its line terminator (LF) only, and a bare CR split the row in two
    (Python's csv, pandas and spreadsheets all end a row at a CR); a table holding a CR in
    a text cell is written with every text field quoted."""
    import csv

    safe = spreadsheet_safe(df)
    has_cr = any(safe[c].map(lambda v: isinstance(v, str) and "\r" in v).any()
                 for c in safe.columns if not pd.api.types.is_numeric_dtype(safe[c]))
    return safe.to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC if has_cr else csv.QUOTE_MINIMAL)


#: First characters that make a spreadsheet evaluate a cell as a formula (CSV injection).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every text cell that a spreadsheet would evaluate (starting with ``=``,
    ``+``, ``-``, ``@``, tab or CR) prefixed with ``'``; numbers are untouched."""
    out = df.copy()
    for c in out.columns:
        if out[c].dtype == object or pd.api.types.is_string_dtype(out[c]):
            out[c] = out[c].map(lambda v: "'" + v if isinstance(v, str) and v.startswith(FORMULA_START) else v)
    return out


def write_parquet(frames: dict[str, pd.DataFrame], directory: str | Path, stem: str,
                  inputs: tuple[str | Path, ...] = ()) -> list[Path]:
    """Write each frame to ``<directory>/<stem>.<name>.parquet`` (needs pyarrow:
    ``pip install 'opgraph[parquet]'``); return the paths."""
    from opgraph.errors import OpgraphInputError
    from opgraph.outfiles import check_output_path, open_atomic

    try:
        import pyarrow  # noqa: F401
    except ModuleNotFoundError:
        raise OpgraphInputError(str(directory), "Parquet output needs pyarrow: pip install 'opgraph[parquet]'") from None
    paths = [check_output_path(p, inputs) for p in table_file_paths(frames, directory, stem, "parquet")]
    for p, df in zip(paths, frames.values()):
        with open_atomic(p, inputs) as fh:
            _plain(df).to_parquet(fh, index=False)
    return paths


def write_xlsx(frames: dict[str, pd.DataFrame], path: str | Path, inputs: tuple[str | Path, ...] = ()) -> Path:
    """Write the frames to one Excel workbook at ``path``, one sheet per table (names cut to
    Excel's 31 characters), text that a spreadsheet would evaluate made literal (needs
    openpyxl: ``pip install 'opgraph[excel]'``)."""
    from opgraph.errors import OpgraphInputError
    from opgraph.outfiles import open_atomic

    try:
        import openpyxl  # noqa: F401
    except ModuleNotFoundError:
        raise OpgraphInputError(str(path), "Excel output needs openpyxl: pip install 'opgraph[excel]'") from None
    names: dict[str, int] = {}
    with open_atomic(path, inputs) as fh:
        with pd.ExcelWriter(fh, engine="openpyxl") as xw:
            for name, df in frames.items():
                sheet = name[:31]
                if sheet in names:
                    names[sheet] += 1
                    sheet = f"{name[:27]}_{names[sheet]}"
                names.setdefault(sheet, 0)
                xlsx_safe(spreadsheet_safe(_plain(df))).to_excel(xw, sheet_name=sheet, index=False)
    return Path(path)


#: The characters a worksheet cannot hold (openpyxl's ``ILLEGAL_CHARACTERS_RE``: C0 controls
#: except tab, LF and CR).
_XLSX_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def xlsx_safe(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every character a worksheet cannot hold (NUL, ESC, the other C0 controls
    but tab, LF and CR) written as a visible escape (``\\x1b``), as on the terminal; in the
    cells and the column names."""
    def fix(v: Any) -> Any:
        return _XLSX_ILLEGAL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", v) if isinstance(v, str) else v

    out = df.copy()
    out.columns = [fix(c) for c in out.columns]
    for c in out.columns:
        if out[c].dtype == object or pd.api.types.is_string_dtype(out[c]):
            out[c] = out[c].map(fix)
    return out


def _file_name(stem: str, name: str, ext: str) -> str:
    """``<stem>.<name>.<ext>``, or ``<name>.<ext>`` without a stem."""
    return f"{stem}.{name}.{ext}" if stem else f"{name}.{ext}"


def json_text(v: Any) -> Any:
    """A dict / list / tuple cell as JSON text (tables take scalars only); others unchanged."""
    import orjson

    from opgraph.exact_json import exact_default

    if isinstance(v, (dict, list, tuple)):
        return orjson.dumps(v, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS, default=exact_default).decode()
    return v


def _plain(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with dict/list cells as JSON text (Parquet and Excel take scalars only)."""
    out = df.copy()
    for c in out.columns:
        if out[c].dtype == object and out[c].map(lambda v: isinstance(v, (dict, list, tuple))).any():
            out[c] = out[c].map(json_text)
    return out
