"""Device peak table: schema validation, datasheet sanity, fuzzy lookup, Inductor fixes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import jsonschema
import pytest

import opgraph
from opgraph.devices.peaks import DATA_PATH, Device, all_devices, lookup, lookup_properties, peak_dtype_key

SCHEMA_PATH = Path(opgraph.__file__).parent / "schemas" / "devices.schema.json"


def _by_name(name: str) -> Device:
    (d,) = [d for d in all_devices() if d.name == name]
    return d


def test_devices_json_validates_against_schema() -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    data = json.loads(DATA_PATH.read_text())
    jsonschema.Draft202012Validator(schema).validate(data)


def test_schema_rejects_bad_entries() -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    data = json.loads(DATA_PATH.read_text())
    bad = json.loads(json.dumps(data))
    bad["devices"][0]["peak_tflops"]["bf16"] = 0  # peaks must be > 0 or null
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema, cls=jsonschema.Draft202012Validator)
    bad = json.loads(json.dumps(data))
    del bad["devices"][0]["peak_tflops"]["fp8"]  # every dtype key is required
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema, cls=jsonschema.Draft202012Validator)


def test_required_devices_present() -> None:
    names = {d.name for d in all_devices()}
    required = {
        "V100 SXM2", "V100 PCIe", "A100 SXM4 40GB", "A100 SXM4 80GB", "A100 PCIe 40GB",
        "A100 PCIe 80GB", "H100 SXM", "H100 PCIe", "H100 NVL", "H200", "B200", "GB200", "L4",
        "L40S", "A10", "T4", "MI210", "MI250X", "MI300X", "MI325X", "MI355X",
        # named in the deviceProperties of the A_kineto traces
        "Quadro GP100", "V100 DGXS", "GeForce RTX 2080 Ti", "MI250",
    }
    assert required <= names
    assert len(names) == len(all_devices())  # unique names


# The L40S datasheet itself lists 362.05 dense and 733 sparse BF16/FP16 (2 x 362.05 = 724.1).
DATASHEET_INCONSISTENT = {("L40S", "bf16"), ("L40S", "fp16")}


def test_table_sanity() -> None:
    for d in all_devices():
        assert d.dram_gbps > 0 and d.memory_gb > 0
        assert "datasheet" in d.source.lower() or "data sheet" in d.source.lower() or \
            "whitepaper" in d.source.lower(), d.name
        assert "http" in d.source, d.name
        for k, dense in d.peak_tflops.items():
            sparse = d.peak_tflops_sparse.get(k)
            if dense is not None and sparse is not None and (d.name, k) not in DATASHEET_INCONSISTENT:
                # 2:4 sparsity doubles the Tensor/Matrix-core peak (datasheet rounding aside)
                assert sparse == pytest.approx(2 * dense, rel=2e-3), (d.name, k)
            if sparse is not None:
                assert dense is not None, (d.name, k)
        # every alias leads back to its own device
        for alias in d.aliases:
            assert lookup(alias) is d, (d.name, alias)


def test_inductor_table_errors_are_fixed() -> None:
    h100 = lookup("NVIDIA H100 80GB HBM3")  # Inductor's exact-name table missed this name
    assert h100 is not None and h100.name == "H100 SXM"
    assert h100.peak_tflops["bf16"] == 989.4 and h100.peak_tflops["bf16"] != 1979
    assert h100.peak_tflops_sparse["bf16"] == 1979
    assert h100.peak_tflops["tf32"] == 494.7 and h100.peak_tflops["tf32"] != 156
    assert h100.peak_tflops["fp8"] == 1978.9
    l4 = lookup("NVIDIA L4")
    assert l4 is not None and l4.dram_gbps == 300 and l4.dram_gbps != 3350
    assert l4.peak_tflops["bf16"] == 121  # 242 is the with-sparsity figure
    # a dtype the device lacks is None, not a KeyError
    assert h100.peak("int64") is None
    assert lookup("Tesla V100-SXM2-32GB").peak("bf16") is None  # type: ignore[union-attr]


def test_peak_dtype_spellings() -> None:
    h100 = _by_name("H100 SXM")
    assert h100.peak("c10::BFloat16") == 989.4
    assert h100.peak("torch.float16") == 989.4
    assert h100.peak("float") == 67 and h100.peak("float", tf32=True) == 494.7
    assert h100.peak("fp8_e4m3fn") == 1978.9 and h100.peak("c10::Float8_e5m2") == 1978.9
    assert h100.peak("bf16", sparse=True) == 1979
    assert h100.peak_flops_per_s("bf16") == pytest.approx(989.4e12)
    assert h100.dram_bytes_per_s == pytest.approx(3.35e12)
    assert peak_dtype_key("long int") is None and peak_dtype_key("double") == "fp64"


@pytest.mark.parametrize(
    "runtime_name, table_name",
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA H200", "H200"),
        ("NVIDIA H200 NVL", "H200 NVL"),
        ("Tesla V100-SXM2-32GB", "V100 SXM2"),
        ("Tesla V100-SXM2-16GB", "V100 SXM2"),
        ("Tesla V100-PCIE-32GB", "V100 PCIe"),
        ("Tesla V100-DGXS-32GB", "V100 DGXS"),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB"),
        ("NVIDIA A100-PG509-200", "A100 SXM4 40GB"),
        ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
        ("NVIDIA B200", "B200"),
        ("NVIDIA GB200", "GB200"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA A10", "A10"),
        ("Tesla T4", "T4"),
        ("Quadro GP100", "Quadro GP100"),
        ("NVIDIA GeForce RTX 2080 Ti", "GeForce RTX 2080 Ti"),
        ("AMD Instinct MI210", "MI210"),
        ("AMD Instinct MI250X", "MI250X"),
        ("AMD Instinct MI300X", "MI300X"),
        ("AMD Instinct MI300X VF", "MI300X"),
        ("AMD Instinct MI325X", "MI325X"),
        ("AMD Instinct MI355X", "MI355X"),
        ("H100 SXM", "H100 SXM"),
    ],
)
def test_fuzzy_lookup(runtime_name: str, table_name: str) -> None:
    d = lookup(runtime_name)
    assert d is not None and d.name == table_name


def test_ambiguous_and_unknown_names_return_none() -> None:
    assert lookup("AMD Radeon Graphics") is None  # MI250 trace: generic ROCm name
    assert lookup("NVIDIA H100") is None  # SXM, PCIe or NVL
    assert lookup("NVIDIA A100") is None
    assert lookup("") is None
    assert lookup("ARTEMIS") is None  # MTIA, not in the table
    assert lookup("NVIDIA A1000") is None
    assert lookup("Intel Data Center GPU Max 1550") is None


def test_arch_and_property_hints() -> None:
    # gfx90a alone: MI210, MI250 (GCD) or MI250X (GCD) -> still ambiguous
    assert lookup("AMD Radeon Graphics", arch="gfx90a") is None
    assert lookup("AMD Radeon Graphics gfx90a") is None
    # a 110-CU gfx90a device is an MI250X GCD
    mi250x = lookup("AMD Radeon Graphics", arch="gfx90a:sramecc+:xnack-", num_sms=110)
    assert mi250x is not None and mi250x.name == "MI250X"
    assert mi250x.logical_devices_per_package == 2 and mi250x.peak("bf16") == 191.5
    # 104 CUs: MI210 and an MI250 GCD look the same -> None
    assert lookup("AMD Radeon Graphics", arch="gfx90a", num_sms=104) is None
    # ROCm's combined marketing name: MI250X or MI250, told apart by the CU count
    assert lookup("AMD Instinct MI250X / MI250") is None
    assert lookup("AMD Instinct MI250X / MI250", num_sms=110).name == "MI250X"  # type: ignore[union-attr]
    assert lookup("AMD Instinct MI250X / MI250", num_sms=104).name == "MI250"  # type: ignore[union-attr]
    # H100 family disambiguated by SMs + memory
    sxm = lookup("NVIDIA H100", num_sms=132, memory_bytes=85_018_279_936)
    assert sxm is not None and sxm.name == "H100 SXM"
    pcie = lookup("NVIDIA H100", num_sms=114)
    assert pcie is not None and pcie.name == "H100 PCIe"
    # contradicting hints -> None
    assert lookup("NVIDIA H100 80GB HBM3", num_sms=114) is None


TRACES = (Path(__file__).resolve().parent.parent / ".." / "shared" / "traces" / "A_kineto").resolve()

# every deviceProperties entry seen in the A_kineto traces -> expected table entry
TRACE_DEVICES = {
    "AMD Radeon Graphics": None,        # hta_amd_mi250_minitoy: gfx90a, 104 CUs: MI210 or MI250 GCD
    "ARTEMIS": None,                    # hta_mtia_inference: Meta MTIA, not a GPU
    "NVIDIA A100-PG509-200": "A100 SXM4 40GB",
    "NVIDIA A100-SXM4-80GB": "A100 SXM4 80GB",
    "NVIDIA B200": "B200",
    "NVIDIA GeForce RTX 2080 Ti": "GeForce RTX 2080 Ti",
    "NVIDIA H100": None,                # kineto docs: 132 SMs but ~95 GiB: no 96 GB H100 in the table
    "NVIDIA H100 80GB HBM3": "H100 SXM",
    "Quadro GP100": "Quadro GP100",
    "Tesla V100-DGXS-32GB": "V100 DGXS",
    "Tesla V100-SXM2-32GB": "V100 SXM2",
    "AMD Instinct MI210": "MI210",
    "AMD Instinct MI300X": "MI300X",
    "AMD Instinct MI300X VF": "MI300X",
    "": "MI300X",                       # vLLM traces: empty name, gfx94x, 304 CUs, 192 GiB
}


def test_trace_device_properties() -> None:
    if not TRACES.is_dir():
        pytest.skip(f"traces not available at {TRACES}")
    seen: dict[str, dict] = {}
    for p in sorted(TRACES.iterdir()):
        if not p.name.endswith((".json", ".json.gz")):
            continue
        raw = p.read_bytes()
        data = json.loads(gzip.decompress(raw) if p.suffix == ".gz" else raw)
        if isinstance(data, dict):
            for props in data.get("deviceProperties") or []:
                seen.setdefault(props.get("name", ""), props)
    assert set(seen) == set(TRACE_DEVICES), set(seen) ^ set(TRACE_DEVICES)
    for name, props in seen.items():
        dev = lookup_properties(props)
        expected = TRACE_DEVICES[name]
        assert (dev.name if dev else None) == expected, (name, props)
        if expected is not None and name:
            by_name = lookup(name)
            assert by_name is not None and by_name.name == expected
