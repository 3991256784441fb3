"""The device peak table as printed by ``opgraph devices`` and as its ``--csv`` frame
(peaks in TFLOP/s per dtype, DRAM in GB/s, memory in GB)."""

from __future__ import annotations

from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from opgraph.devices.peaks import PEAK_DTYPES


def devices_frame(entries: list[dict[str, Any]], sparse: bool = False) -> pd.DataFrame:
    """One row per device: its scalar fields, one ``peak_tflops[_sparse]_<dtype>`` column
    per dtype, and the user device file it came from (if any)."""
    key = "peak_tflops_sparse" if sparse else "peak_tflops"
    rows = [{**{k: v for k, v in e.items() if not isinstance(v, (dict, list)) and k != "user_file"},
             **{f"{key}_{dt}": (e.get(key) or {}).get(dt) for dt in PEAK_DTYPES},
             "user_file": e.get("user_file")} for e in entries]
    return pd.DataFrame(rows)


def render_devices(doc: dict[str, Any], sparse: bool, console: Console) -> None:
    """The table, its numbered sources, the user-file entries and the units."""
    entries = doc["devices"]
    key = "peak_tflops_sparse" if sparse else "peak_tflops"
    t = Table(title=f"Peak {'2:4-sparse' if sparse else 'dense'} TFLOP/s and DRAM bandwidth, per runtime device",
              title_justify="left")
    for c in ("#", "device", "vendor", "arch", "SMs/CUs", "memory GB", "DRAM GB/s", *PEAK_DTYPES):
        t.add_column(c, justify="left" if c in ("device", "vendor", "arch") else "right", no_wrap=True)
    sources: dict[str, int] = {}
    for e in entries:
        # an entry from a user file cites the file (its own `source` text follows it)
        cite = f"user device file {e['user_file']} (entry's source: {e['source']})" if e.get("user_file") \
            else e["source"]
        j = sources.setdefault(cite, len(sources) + 1)
        pk = e.get(key) or {}
        t.add_row(str(j), e["name"], e["vendor"], e.get("arch") or "", str(e.get("num_sms") or ""),
                  f"{e['memory_gb']:g}", f"{e['dram_gbps']:g}",
                  *[("" if pk.get(k) is None else f"{pk[k]:g}") for k in PEAK_DTYPES])
    console.print(t)
    console.print("Sources:")
    for s, j in sources.items():
        console.print(f"  [{j}] {s}")
    n_user = sum(1 for e in entries if e.get("user_file"))
    if n_user:
        console.print(f"{n_user} entr{'y' if n_user == 1 else 'ies'} from user device files (replacing built-in "
                      "entries of the same name; matched before the built-in table)")
    console.print("Units: " + "; ".join(f"{k}: {v}" for k, v in doc.get("units", {}).items()))
