"""Accelerator peak table: datasheet peak TFLOP/s per dtype and memory bandwidth.

Data lives in ``devices.json`` (validated by ``schemas/devices.schema.json``). Units:
``peak_tflops`` / ``peak_tflops_sparse`` in TFLOP/s (1e12 operations/s; TOPS for int8),
dense and 2:4-sparse separately, per *runtime device* (one MI250X GCD, one GB200 GPU);
``dram_gbps`` in GB/s (1e9 bytes/s); ``memory_gb`` in GB as marketed.

:func:`lookup` maps a runtime device name (``deviceProperties[].name`` in a Kineto trace,
``torch.cuda.get_device_name()``) to a :class:`Device`, tolerating vendor prefixes and
punctuation ("NVIDIA H100 80GB HBM3" -> H100 SXM, "Tesla V100-SXM2-32GB" -> V100 SXM2).
A name that identifies several table entries ("NVIDIA H100": SXM, PCIe or NVL) or none
("AMD Radeon Graphics") returns ``None`` unless hints (architecture, SM/CU count, memory
size) single one out; nothing is guessed.

**User device files** (docs/roofline.md, "Your own device"): JSON documents with the same
schema as ``devices.json``, named by ``--device-file FILE`` on the commands that use the
table, or by the environment variable ``OPGRAPH_DEVICES`` (one path, or several joined by
``os.pathsep``) when no option is given (:func:`device_files` in Python). Their entries
replace built-in entries of the same ``name`` and add the others; a runtime name that a
user entry matches resolves to it before the built-in table is consulted. A bad file
raises :class:`~opgraph.errors.OpgraphInputError` naming the file and the entry.
"""

from __future__ import annotations

import json
import os
import re
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Iterator, Mapping

__all__ = ['Device', 'lookup', 'lookup_properties', 'all_devices', 'builtin_devices', 'peak_dtype_key',
           'device_files', 'active_device_files', 'load_device_file', 'device_entries', 'DATA_PATH',
           'PEAK_DTYPES', 'ENV_VAR']

DATA_PATH = Path(__file__).with_name("devices.json")

#: Environment variable naming user device files (``os.pathsep``-separated) when no
#: ``--device-file`` option (or :func:`device_files`) is given.
ENV_VAR = "OPGRAPH_DEVICES"

#: dtype keys of the peak tables (``fp4`` only for devices that list it).
PEAK_DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")


@dataclass(frozen=True)
class Device:
    """One accelerator model.

    Attributes:
        name: table name, e.g. ``"H100 SXM"``.
        vendor: ``"NVIDIA"`` or ``"AMD"``.
        aliases: normalised token sets matched against runtime names.
        peak_tflops: dense peak per dtype in TFLOP/s (``None`` = not offered).
        peak_tflops_sparse: 2:4 structured-sparsity peak per dtype in TFLOP/s.
        dram_gbps: device-memory bandwidth in GB/s (1e9 B/s).
        memory_gb: device memory in GB (as marketed).
        source: vendor datasheet (document name and URL).
        family: product-family token(s), e.g. ``"h100"``.
        arch: ``sm_XY`` or ``gfxNNN``.
        num_sms: SMs / CUs per runtime device.
        logical_devices_per_package: runtime devices per package (MI250X: 2 GCDs); all
            figures are per runtime device.
        memory_variants_gb: all marketed memory sizes sharing these peaks.
        peak_tflops_vector: non-tensor fp64/fp32 peaks in TFLOP/s.
        notes: provenance and caveats.
        origin: path of the user device file the entry came from (``None``: built in).
    """

    name: str
    vendor: str
    aliases: tuple[str, ...]
    peak_tflops: Mapping[str, float | None] = field(hash=False)
    peak_tflops_sparse: Mapping[str, float | None] = field(hash=False)
    dram_gbps: float
    memory_gb: float
    source: str
    family: str = ""
    arch: str | None = None
    num_sms: int | None = None
    logical_devices_per_package: int = 1
    memory_variants_gb: tuple[float, ...] = ()
    peak_tflops_vector: Mapping[str, float | None] = field(default_factory=dict, hash=False)
    notes: str = ""
    origin: str | None = field(default=None, compare=False)

    def peak(self, dtype: str, *, sparse: bool = False, tf32: bool = False) -> float | None:
        """Peak TFLOP/s for *dtype* (any spelling: ``"bf16"``, ``"c10::BFloat16"``,
        ``"torch.float16"``, ``"fp8_e4m3fn"`` ...); ``tf32=True`` reads fp32 as TF32 Tensor
        Core math. Returns ``None`` (never raises) when the device has no such rate."""
        key = peak_dtype_key(dtype)
        if key is None:
            return None
        if key == "fp32" and tf32:
            key = "tf32"
        table = self.peak_tflops_sparse if sparse else self.peak_tflops
        return table.get(key)

    def peak_flops_per_s(self, dtype: str, *, sparse: bool = False, tf32: bool = False) -> float | None:
        """Peak in FLOP/s (``peak() * 1e12``)."""
        p = self.peak(dtype, sparse=sparse, tf32=tf32)
        return None if p is None else p * 1e12

    @property
    def dram_bytes_per_s(self) -> float:
        """Memory bandwidth in bytes/s."""
        return self.dram_gbps * 1e9


_KEY_ALIASES = {
    "fp64": "fp64", "float64": "fp64", "double": "fp64",
    "fp32": "fp32", "float32": "fp32", "float": "fp32",
    "tf32": "tf32", "bf16": "bf16", "bfloat16": "bf16",
    "fp16": "fp16", "float16": "fp16", "half": "fp16",
    "fp8": "fp8", "int8": "int8", "fp4": "fp4",
}


def peak_dtype_key(dtype: str) -> str | None:
    """Map a dtype spelling to a peak-table key (``fp64 fp32 tf32 bf16 fp16 fp8 int8 fp4``).

    All fp8 formats (e4m3fn, e5m2, fnuz) map to ``fp8``, packed fp4 to ``fp4``; Kineto
    strings (``"c10::BFloat16"``, ``"float"``) are accepted. Unknown -> ``None``.
    """
    if not isinstance(dtype, str):
        return None
    s = dtype.strip()
    if s.startswith("torch."):
        s = s[6:]
    key = _KEY_ALIASES.get(s.lower())
    if key:
        return key
    from opgraph.dtypes import dtype_info

    info = dtype_info(dtype)
    canon = info[0] if info else s.lower()
    if canon.startswith("fp8"):
        return "fp8"
    if canon.startswith("fp4"):
        return "fp4"
    return _KEY_ALIASES.get(canon)


# ---------------------------------------------------------------------------------------
# loading

def _device_from_json(d: Mapping[str, Any], origin: str | None = None) -> Device:
    return Device(
        name=d["name"],
        vendor=d["vendor"],
        aliases=tuple(d["aliases"]),
        peak_tflops=MappingProxyType(dict(d["peak_tflops"])),
        peak_tflops_sparse=MappingProxyType(dict(d["peak_tflops_sparse"])),
        dram_gbps=float(d["dram_gbps"]),
        memory_gb=float(d["memory_gb"]),
        source=d["source"],
        family=d.get("family", ""),
        arch=d.get("arch"),
        num_sms=d.get("num_sms"),
        logical_devices_per_package=int(d.get("logical_devices_per_package", 1)),
        memory_variants_gb=tuple(float(m) for m in d.get("memory_variants_gb", ())),
        peak_tflops_vector=MappingProxyType(dict(d.get("peak_tflops_vector", {}))),
        notes=d.get("notes", ""),
        origin=origin,
    )


@lru_cache(maxsize=1)
def _builtin_doc() -> dict[str, Any]:
    return json.loads(DATA_PATH.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _load() -> tuple[Device, ...]:
    return tuple(_device_from_json(d) for d in _builtin_doc()["devices"])


def builtin_devices() -> tuple[Device, ...]:
    """The built-in table (``devices.json``), in file order, without user files."""
    return _load()


def all_devices() -> tuple[Device, ...]:
    """Every device in the table, in file order: the built-in entries (each replaced by the
    user entry of the same name, if any), then the new entries of the active user device
    files (:func:`active_device_files`) in file order."""
    files = active_device_files()
    if not files:
        return _load()
    return _merged(_file_keys(files))


# ---------------------------------------------------------------------------------------
# user device files

_FILES: ContextVar[tuple[str, ...] | None] = ContextVar("opgraph_device_files", default=None)


def active_device_files() -> tuple[str, ...]:
    """The user device files in force: those set by :func:`device_files` (the CLI's
    ``--device-file``), else the ``OPGRAPH_DEVICES`` paths, else none."""
    got = _FILES.get()
    if got is not None:
        return got
    env = os.environ.get(ENV_VAR, "")
    return tuple(p.strip() for p in env.split(os.pathsep) if p.strip())


def set_device_files(paths: Iterable[str | os.PathLike[str]]) -> Token:
    """Put ``paths`` in force (instead of ``OPGRAPH_DEVICES``) until ``_FILES.reset(token)``;
    the CLI option does this. Prefer :func:`device_files`."""
    return _FILES.set(tuple(os.fspath(p) for p in paths))


def reset_device_files(token: Token) -> None:
    """Undo :func:`set_device_files`."""
    _FILES.reset(token)


@contextmanager
def device_files(*paths: str | os.PathLike[str]) -> Iterator[tuple[Device, ...]]:
    """Use these user device files (not ``OPGRAPH_DEVICES``) inside the ``with`` block;
    yields the merged table. Every file is read and validated on entry.

    Examples
    --------
    >>> from opgraph.devices import device_files, lookup
    >>> with device_files() as table:          # no file: the built-in table only
    ...     lookup("NVIDIA H100 80GB HBM3").name
    'H100 SXM'
    """
    token = set_device_files(paths)
    try:
        yield all_devices()
    finally:
        reset_device_files(token)


def _file_keys(files: tuple[str, ...]) -> tuple[tuple[str, int, int], ...]:
    """(path, mtime_ns, size) per file: the cache key (an edited file is read again)."""
    from opgraph.errors import OpgraphInputError

    keys = []
    for f in files:
        try:
            st = os.stat(f)
        except OSError as e:
            raise OpgraphInputError(f, f"device file: cannot read: {e.strerror or e}") from None
        if not os.path.isfile(f):
            raise OpgraphInputError(f, "device file: not a regular file")
        keys.append((f, st.st_mtime_ns, st.st_size))
    return tuple(keys)


@lru_cache(maxsize=16)
def _merged(keys: tuple[tuple[str, int, int], ...]) -> tuple[Device, ...]:
    from opgraph.errors import OpgraphInputError

    table = {d.name: d for d in _load()}
    user: dict[str, tuple[str, dict[str, Any]]] = {}
    for path, _, _ in keys:
        for e in _read_user_doc(path)["devices"]:
            user[e["name"]] = (path, e)  # a later file wins over an earlier one and the built-in entry
            table[e["name"]] = _device_from_json(e, origin=path)
    if len(keys) > 1:
        problem = _alias_problem([(path, e) for path, e in user.values()])
        if problem is not None:
            raise OpgraphInputError(keys[-1][0], f"device files: {problem}")
    return tuple(table.values())


def _entry_label(doc: Any, path: list[Any]) -> str:
    if len(path) >= 2 and path[0] == "devices" and isinstance(path[1], int):
        e = doc["devices"][path[1]]
        name = e.get("name") if isinstance(e, dict) else None
        return f"devices[{path[1]}]" + (f" {name!r}" if isinstance(name, str) else "")
    return "document"


def _validation_problem(doc: Any) -> str | None:
    """One line: the entry and the first schema violation of a user file, or None."""
    import jsonschema

    from opgraph.schemas_util import load_schema

    validator = jsonschema.Draft202012Validator(load_schema("devices.schema.json"))
    err = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if err is None:
        return None
    path = list(err.absolute_path)
    entry = _entry_label(doc, path)
    field_path = ".".join(str(p) for p in path[2:]) if entry != "document" else ".".join(str(p) for p in path)
    msg = err.message
    if err.validator == "additionalProperties" and path and str(path[-1]).startswith("peak_tflops"):
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        msg = (f"unknown dtype key{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))} "
               f"(known: {' '.join(err.schema.get('properties', {}))})")
    elif err.validator in ("exclusiveMinimum", "minimum") or (
            err.validator == "oneOf" and isinstance(err.instance, (int, float)) and not isinstance(err.instance, bool)
            and err.instance <= 0):
        msg = f"{err.instance!r} is not a positive number"
    msg = " ".join(msg.split())[:200]
    return f"{entry}: {field_path + ': ' if field_path else ''}{msg}"


#: Physical bounds of a user entry's figures. The largest built-in peak is about 2e4 TFLOP/s
#: (fp4 with 2:4 sparsity on a B200-class GPU) and the fastest memory about 8e3 GB/s, so
#: 1e5 leaves a 5-12x margin for future parts while refusing typos and overflow values
#: (1e308 made "% of peak" 1e-303 and flipped kernels between memory and compute bound).
MAX_PEAK_TFLOPS = 1e5
MAX_DRAM_GBPS = 1e5
MAX_MEMORY_GB = 1e5
_PEAK_TABLES = ("peak_tflops", "peak_tflops_sparse", "peak_tflops_vector")


def _bounds_problem(doc: dict[str, Any]) -> str | None:
    """One line: the first figure of a (schema-valid) user document that is not a finite
    positive number within :data:`MAX_PEAK_TFLOPS` / :data:`MAX_DRAM_GBPS` / :data:`MAX_MEMORY_GB`."""
    import math

    for i, e in enumerate(doc["devices"]):
        figures = [(f"{t}.{k}", v, MAX_PEAK_TFLOPS, "TFLOP/s") for t in _PEAK_TABLES
                   for k, v in (e.get(t) or {}).items() if v is not None]
        figures += [("dram_gbps", e.get("dram_gbps"), MAX_DRAM_GBPS, "GB/s"),
                    ("memory_gb", e.get("memory_gb"), MAX_MEMORY_GB, "GB")]
        figures += [(f"memory_variants_gb[{j}]", v, MAX_MEMORY_GB, "GB")
                    for j, v in enumerate(e.get("memory_variants_gb") or ())]
        for name, v, cap, unit in figures:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                continue  # the schema names wrong types
            if not math.isfinite(v) or v <= 0 or v > cap:
                return (f"devices[{i}] {e['name']!r}: {name}: {v!r} is out of range (a finite positive "
                        f"number of at most {cap:g} {unit}, the physical bound)")
    return None


def _alias_problem(entries: list[tuple[str, dict[str, Any]]]) -> str | None:
    """One line when two entries of different names (``(label, entry)`` pairs: one file, or
    every file in force) share an alias (the same model tokens): a runtime name matching it
    would be ambiguous, and the device silently unknown."""
    owner: dict[frozenset[str], tuple[str, str]] = {}
    for label, e in entries:
        for alias in e.get("aliases") or ():
            toks = _model_tokens(alias)
            if not toks:
                continue
            other = owner.get(toks)
            if other is not None and other[1] != e["name"]:
                return (f"{label} {e['name']!r}: alias {alias!r} is also an alias of {other[0]} {other[1]!r} "
                        "(a runtime name matching it would be ambiguous); aliases must be unique")
            owner.setdefault(toks, (label, e["name"]))
    return None


def _read_user_doc(p: str) -> dict[str, Any]:
    """The validated document of user device file ``p`` (see :func:`load_device_file`)."""
    import orjson

    from opgraph.errors import OpgraphInputError
    from opgraph.infiles import read_regular_file

    try:
        raw = read_regular_file(p)  # a regular file under the input cap: never a FIFO or /dev/zero
    except OpgraphInputError as e:
        problem = "cannot read: no such file" if e.problem == "no such file" else e.problem
        raise OpgraphInputError(p, f"device file: {problem}") from None
    try:
        # orjson: NaN / Infinity are not JSON, 1e400 is refused rather than read as inf, and
        # nesting past 1024 levels is an error rather than a RecursionError
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise OpgraphInputError(p, f"device file: not JSON ({' '.join(str(e).split())[:160]})") from None
    try:
        problem = _validation_problem(doc)
    except RecursionError:
        problem = "document: nested too deeply"
    if problem is None:
        problem = _bounds_problem(doc)
    if problem is not None:
        raise OpgraphInputError(p, f"device file: {problem}")
    seen: set[str] = set()
    for i, e in enumerate(doc["devices"]):
        if e["name"] in seen:
            raise OpgraphInputError(p, f"device file: devices[{i}] {e['name']!r}: name listed twice in this file")
        seen.add(e["name"])
    problem = _alias_problem([(f"devices[{i}]", e) for i, e in enumerate(doc["devices"])])
    if problem is not None:
        raise OpgraphInputError(p, f"device file: {problem}")
    return doc


def load_device_file(path: str | os.PathLike[str]) -> tuple[Device, ...]:
    """Read and validate one user device file (``schemas/devices.schema.json``).

    Raises :class:`~opgraph.errors.OpgraphInputError` (one line naming ``path`` and the
    entry) when the file cannot be read, is not JSON, does not follow the schema (wrong
    types, missing fields, peaks or bandwidth <= 0, unknown dtype keys) or names a device
    twice. Each :class:`Device` has ``origin = path``."""
    p = os.fspath(path)
    doc = _read_user_doc(p)
    return tuple(_device_from_json(e, origin=p) for e in doc["devices"])


def device_entries() -> list[dict[str, Any]]:
    """The table as ``devices.json`` entries (dicts), merged like :func:`all_devices`; an
    entry read from a user file carries ``user_file`` (its path)."""
    table = {e["name"]: dict(e) for e in _builtin_doc()["devices"]}
    for f in active_device_files():
        for e in _read_user_doc(f)["devices"]:
            table[e["name"]] = {**{k: v for k, v in e.items() if k != "user_file"}, "user_file": f}
    return list(table.values())


def device_table_doc(name: str | None = None) -> dict[str, Any]:
    """The ``devices.json`` document with the merged entries (:func:`device_entries`), or
    only the entry ``name`` resolves to (:func:`lookup`; ``KeyError`` when none does)."""
    entries = device_entries()
    if name:
        dev = lookup(name)
        if dev is None:
            raise KeyError(name)
        entries = [e for e in entries if e["name"] == dev.name]
    return dict(_builtin_doc(), devices=entries)


# ---------------------------------------------------------------------------------------
# lookup

#: tokens that carry no model information
_NOISE = frozenset({"nvidia", "amd", "ati", "tesla", "quadro", "geforce", "instinct", "radeon",
                    "graphics", "tensor", "core", "gpu", "vf", "accelerator", "oam", "device",
                    "corporation", "inc"})
_NVIDIA_HINTS = frozenset({"nvidia", "tesla", "quadro", "geforce"})
_AMD_HINTS = frozenset({"amd", "radeon", "instinct", "ati"})
_GFX_RE = re.compile(r"\bgfx[0-9a-f]{2,4}\b", re.I)


def _tokens(text: str) -> list[str]:
    return [t for t in re.split(r"[^a-z0-9]+", text.lower()) if t]


def _model_tokens(text: str) -> frozenset[str]:
    return frozenset(t for t in _tokens(text) if t not in _NOISE and not t.startswith("gfx"))


def _vendor_of(text: str) -> str | None:
    toks = set(_tokens(text))
    if toks & _NVIDIA_HINTS:
        return "NVIDIA"
    if toks & _AMD_HINTS:
        return "AMD"
    return None


def _arch_matches(dev: Device, arch: str) -> bool:
    if dev.arch is None:
        return True
    a = arch.strip().lower().split(":", 1)[0]
    if re.fullmatch(r"\d+\.\d+", a):  # compute capability "9.0"
        a = "sm_" + a.replace(".", "")
    return dev.arch == a or (a.startswith("gfx") and dev.arch.startswith(a))


def _memory_matches(dev: Device, memory_bytes: float) -> bool:
    gib = memory_bytes / 2**30
    sizes = dev.memory_variants_gb or (dev.memory_gb,)
    # marketed GB of HBM/GDDR is binary-sized; the runtime reports a little less
    return any(0.85 * m <= gib <= m * 1.001 for m in sizes)


def _candidates(name: str, devs: tuple[Device, ...] | list[Device]) -> list[Device] | None:
    """Devices of ``devs`` a runtime name may denote; ``None`` if the name is not recognised."""
    toks = _model_tokens(name)
    if not toks:  # generic name ("AMD Radeon Graphics", ""): vendor only
        vendor = _vendor_of(name)
        return [d for d in devs if vendor is None or d.vendor == vendor]
    best: list[Device] = []
    best_len = 0
    for d in devs:
        for alias in d.aliases:
            at = _model_tokens(alias)
            if at and at <= toks:
                if len(at) > best_len:
                    best, best_len = [d], len(at)
                elif len(at) == best_len and d not in best:
                    best.append(d)
    if best:
        return best
    fam = [d for d in devs if d.family and _model_tokens(d.family) <= toks]
    return fam or None


def lookup(name: str, *, arch: str | None = None, num_sms: int | None = None,
           memory_bytes: int | None = None) -> Device | None:
    """Find the table entry for a runtime device name.

    Args:
        name: e.g. ``"NVIDIA H100 80GB HBM3"``, ``"Tesla V100-SXM2-32GB"``,
            ``"AMD Instinct MI300X"``; also table names (``"H100 SXM"``). A ``gfx...``
            token inside the name is used as an *arch* hint.
        arch: optional hint: ``"gfx90a"`` (``"gfx90a:sramecc+:xnack-"`` accepted), an AMD
            prefix such as ``"gfx94"``, ``"sm_90"`` or ``"9.0"``.
        num_sms: optional hint: SMs / CUs per device (``deviceProperties.numSms``).
        memory_bytes: optional hint: device memory in bytes (``totalGlobalMem``).

    Returns:
        The unique matching :class:`Device`, or ``None`` when the name is unknown or still
        ambiguous after applying the hints (e.g. ``"AMD Radeon Graphics"`` with no hint,
        ``"NVIDIA H100"`` without SM/memory hints). Entries of user device files are tried
        first (a name with model tokens only), then the whole merged table.
    """
    if not isinstance(name, str):
        return None
    devs = all_devices()
    user = [d for d in devs if d.origin is not None]
    if user and _model_tokens(name):
        got = _lookup_in(user, name, arch, num_sms, memory_bytes)
        if got is not None:
            return got
    return _lookup_in(devs, name, arch, num_sms, memory_bytes)


def _lookup_in(devs: tuple[Device, ...] | list[Device], name: str, arch: str | None, num_sms: int | None,
               memory_bytes: int | None) -> Device | None:
    cands = _candidates(name, devs)
    if not cands:
        return None
    m = _GFX_RE.search(name)
    if arch is None and m:
        arch = m.group(0)
    if arch:
        cands = [d for d in cands if _arch_matches(d, arch)]
    if num_sms is not None:
        cands = [d for d in cands if d.num_sms is None or d.num_sms == num_sms]
    if memory_bytes:
        cands = [d for d in cands if _memory_matches(d, memory_bytes)]
    return cands[0] if len(cands) == 1 else None


def lookup_properties(props: Mapping[str, Any]) -> Device | None:
    """:func:`lookup` for one Kineto ``deviceProperties`` entry (uses ``name``,
    ``numSms``, ``totalGlobalMem``, ``gcnArchName`` when present, else
    ``computeMajor``/``computeMinor``: ``sm_XY`` for 32-wide warps, the ``gfxXY`` family
    prefix for AMD's 64-wide wavefronts, since HIP reports gfx90a as 9.0)."""
    name = props.get("name") or ""
    arch = props.get("gcnArchName") or None
    major, minor = props.get("computeMajor"), props.get("computeMinor")
    if arch is None and isinstance(major, int) and isinstance(minor, int):
        wavefront = props.get("warpSize")
        vendor = _vendor_of(name) or ("AMD" if wavefront == 64 else "NVIDIA" if wavefront == 32 else None)
        if vendor == "AMD":
            arch = f"gfx{major}{minor}"
        elif vendor == "NVIDIA":
            arch = f"sm_{major}{minor}"
    if not name:
        wavefront = props.get("warpSize")
        name = "AMD" if wavefront == 64 else "NVIDIA" if wavefront == 32 else ""
    return lookup(name, arch=arch, num_sms=props.get("numSms"),
                  memory_bytes=props.get("totalGlobalMem"))
