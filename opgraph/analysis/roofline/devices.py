"""Which device (and so which peaks) each device index of a trace runs on: the trace's
``deviceProperties`` entry looked up in the device table (fuzzy), or one table entry
named by the caller for all. Peaks are the table's dense datasheet rates (TFLOP/s per
dtype, DRAM GB/s)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from opgraph.devices.peaks import Device, all_devices, lookup, lookup_properties


#: What an unknown device means for "% of peak", and how to name one: said by the terminal
#: report and, as a warning, by every command that reports % of peak (:func:`unknown_device_lines`).
UNKNOWN_DEVICE = ("not in the peak table: no % of peak for it; name it with --device, or add it with --device-file "
                  "/ $OPGRAPH_DEVICES: docs/roofline.md")


def unknown_device_lines(devices: list[dict[str, Any]]) -> list[str]:
    """One line per device (:meth:`DeviceInfo.to_dict` dicts) the peak table does not
    resolve: ``device 0: NVIDIA Z9000 -> unknown (not in the peak table: …)``."""
    return [f"device {d.get('device')}: {d.get('runtime_name') or '?'} -> unknown ({UNKNOWN_DEVICE})"
            for d in devices if d.get("table_name") is None]


@dataclass
class DeviceInfo:
    """The device used for one device index of the trace."""

    device: int
    runtime_name: str | None
    table: Device | None
    overridden: bool = False
    inferred: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the index, both names, how it was chosen, and the table's peaks
        (``dram_gbps`` in GB/s, ``peak_tflops`` in TFLOP/s per dtype)."""
        t = self.table
        return {
            "device": int(self.device), "runtime_name": self.runtime_name,
            "table_name": t.name if t else None, "overridden": self.overridden,
            "inferred": self.inferred,
            "dram_gbps": t.dram_gbps if t else None,
            "peak_tflops": {k: v for k, v in t.peak_tflops.items()} if t else None,
            "source": t.source if t else None,
        }


def resolve_devices(props: list[Any] | None, device_ids: list[int], override: str | None = None
                    ) -> dict[int, DeviceInfo]:
    """Device index -> :class:`DeviceInfo` from ``deviceProperties`` (fuzzy lookup), or the
    table entry named by ``override`` for all. Raises ``ValueError`` for an unknown
    override name."""
    by_id: dict[int, Mapping[str, Any]] = {}
    for i, p in enumerate(props or []):
        if isinstance(p, Mapping):
            pid = p.get("id", i)
            if isinstance(pid, int):
                by_id[pid] = p
    ov = None
    if override:
        ov = lookup(override)
        if ov is None:
            raise ValueError(f"unknown or ambiguous device {override!r}; known: "
                             + ", ".join(d.name for d in all_devices()))
    out: dict[int, DeviceInfo] = {}
    found = {d: lookup_properties(p) for d, p in by_id.items()}
    same = {x.name: x for x in found.values() if x is not None}
    only = next(iter(same.values())) if len(same) == 1 and all(found.values()) else None
    for d in sorted(set(device_ids) or set(by_id)):
        p = by_id.get(d)
        rn = p.get("name") if p else None
        if ov is not None:
            out[d] = DeviceInfo(d, rn, ov, True)
        elif p is not None:
            out[d] = DeviceInfo(d, rn, found[d])
        else:
            # no deviceProperties entry for this index (e.g. a ROCm VF listed as id 0 while
            # the kernels run on device 2): use the model all listed devices share, if any
            out[d] = DeviceInfo(d, None, only, inferred=only is not None)
    return out
