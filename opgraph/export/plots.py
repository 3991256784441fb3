"""Pictures of analysis results with matplotlib (the optional ``plot`` extra:
``pip install opgraph[plot]``). Each function takes a result and returns a
``matplotlib.figure.Figure``; nothing is shown or saved here.

* :func:`plot_critical_path`: per window, stacked bars of the path's time by category
  (``kind="breakdown"``), or a Gantt chart of one window's path by lane (``kind="gantt"``);
* :func:`plot_idle`: a timeline of each device's idle gaps, coloured by cause;
* :func:`plot_roofline`: achieved TFLOP/s against arithmetic intensity per kernel, with the
  device's compute and bandwidth roofs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opgraph.time_categories import COLOURS, IDLE_CAUSES

#: One colour per critical-path category and idle cause (the catalog: :mod:`opgraph.time_categories`).
COLORS: dict[str, str] = COLOURS


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ModuleNotFoundError:
        raise ModuleNotFoundError("plots need matplotlib: pip install 'opgraph[plot]'") from None
    return plt


def plot_critical_path(res: Any, kind: str = "breakdown", window: int = 0) -> Any:
    """``res``: a critical-path result (single- or cross-rank). ``kind="breakdown"``: one
    stacked bar per window (ms by category); ``kind="gantt"``: window number ``window``'s
    path segments on their lanes over time (ms from the window start)."""
    plt = _pyplot()
    t = res.tables()
    if kind == "breakdown":
        bd = t["breakdown"]
        cats = [c for c in bd.columns[6:] if float(bd[c].sum()) > 0]
        fig, ax = plt.subplots(figsize=(max(6.0, 0.5 * len(bd) + 3), 4))
        bottom = np.zeros(len(bd))
        x = np.arange(len(bd))
        for c in cats:
            v = bd[c].to_numpy(float) / 1e3
            ax.bar(x, v, bottom=bottom, label=c, color=COLORS.get(c))
            bottom += v
        ax.set_xticks(x, bd["window"].astype(str).tolist(), rotation=45, ha="right", fontsize=8)
        ax.set_ylabel("ms on the critical path")
        ax.set_title("Critical path by category")
        ax.legend(fontsize=7, ncols=2)
        fig.tight_layout()
        return fig
    if kind == "gantt":
        path = t["path"]
        names = list(dict.fromkeys(path["window"].tolist()))
        if not names:
            raise ValueError("the result has no path to draw")
        seg = path[path["window"] == names[window]]
        t0 = float(seg["start_us"].min())
        lanes = list(dict.fromkeys(seg["lane"].astype(str).tolist()))
        fig, ax = plt.subplots(figsize=(10, 0.4 * len(lanes) + 1.5))
        y = {ln: i for i, ln in enumerate(lanes)}
        seen: set[str] = set()
        for (lane, cat), g in seg.groupby(["lane", "bound_by"], sort=False):
            ax.broken_barh(list(zip((g["start_us"] - t0) / 1e3, g["dur_us"] / 1e3)), (y[str(lane)], 0.8),
                           color=COLORS.get(str(cat)), linewidth=0, label=None if cat in seen else str(cat))
            seen.add(str(cat))
        ax.set_yticks([i + 0.4 for i in range(len(lanes))], lanes, fontsize=7)
        ax.set_ylim(0, len(lanes))
        ax.set_xlabel(f"ms from the start of {names[window]}")
        ax.set_title(f"Critical path of {names[window]}")
        ax.legend(fontsize=7, ncols=3, loc="upper left")
        fig.tight_layout()
        return fig
    raise ValueError(f"unknown kind {kind!r}: breakdown or gantt")


def plot_idle(res: Any) -> Any:
    """``res``: an idle result. Per device, its idle gaps on a time axis (ms from the
    first gap), coloured by their largest cause; bar height is the gap's length."""
    plt = _pyplot()
    gaps = res.tables()["gaps"]
    causes = [c for c in IDLE_CAUSES if c in gaps.columns]
    fig, ax = plt.subplots(figsize=(10, 3.5))
    if len(gaps):
        t0 = float(gaps["start_us"].min())
        main = gaps[causes].to_numpy(float).argmax(axis=1)
        for i, c in enumerate(causes):
            g = gaps[main == i]
            if len(g):
                ax.bar((g["start_us"] - t0) / 1e3, (g["end_us"] - g["start_us"]) / 1e3,
                       width=np.maximum((g["end_us"] - g["start_us"]) / 1e3, 1e-3), align="edge",
                       color=COLORS.get(c), label=c)
        ax.set_yscale("log")
        ax.legend(fontsize=7, ncols=3)
    ax.set_xlabel("ms from the first gap")
    ax.set_ylabel("gap length (ms)")
    ax.set_title("GPU idle gaps by main cause")
    fig.tight_layout()
    return fig


def plot_roofline(res: Any) -> Any:
    """``res``: a roofline result. One point per kernel name with a FLOP model (achieved
    TFLOP/s against FLOP/byte), and each device's compute roof and bandwidth slope."""
    plt = _pyplot()
    k = res.tables()["by_kernel"]
    k = k[(k["tflops"].notna()) & (k["arithmetic_intensity"].notna())] if len(k) else k
    fig, ax = plt.subplots(figsize=(6, 4.5))
    if len(k):
        ax.scatter(k["arithmetic_intensity"].astype(float), k["tflops"].astype(float),
                   s=np.clip(k["total_us"].astype(float) / max(float(k["total_us"].max()), 1e-9) * 200, 8, 200),
                   alpha=0.6, color=COLORS["gpu_compute"])
    dtypes = sorted({str(d) for d in k["dtype"].dropna()}) if len(k) and "dtype" in k else []
    ai = np.logspace(-2, 4, 200)
    for dev in res.devices.values():
        tab = dev.table
        if tab is None or not tab.dram_gbps:
            continue
        for dt in dtypes or list(tab.peak_tflops)[:1]:
            pf = tab.peak_tflops.get(dt)
            if pf:
                ax.plot(ai, np.minimum(pf, ai * tab.dram_gbps / 1e3), lw=1, label=f"{tab.name} {dt}")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title("Roofline (point size: time)")
    fig.tight_layout()
    return fig
