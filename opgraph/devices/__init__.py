"""Accelerator peak table: datasheet peak TFLOP/s per dtype and memory bandwidth.

The package's public names, no logic: each is defined in the module it is imported from
below (the package's own code is in :mod:`opgraph.devices.peaks`), and code inside opgraph
imports it from there."""

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
