"""Accelerator peak table: datasheet peak TFLOP/s per dtype and memory bandwidth.

Public names only (docs/architecture.md, "Packages"); the code is in
:mod:`opgraph.devices.peaks`."""

from opgraph.devices.peaks import (  # noqa: F401 - the package's public names
    Device,
    lookup,
    lookup_properties,
    all_devices,
    builtin_devices,
    peak_dtype_key,
    device_files,
    active_device_files,
    load_device_file,
    device_entries,
    DATA_PATH,
    PEAK_DTYPES,
    ENV_VAR,
)

__all__ = [
    "Device",
    "lookup",
    "lookup_properties",
    "all_devices",
    "builtin_devices",
    "peak_dtype_key",
    "device_files",
    "active_device_files",
    "load_device_file",
    "device_entries",
    "DATA_PATH",
    "PEAK_DTYPES",
    "ENV_VAR",
]
