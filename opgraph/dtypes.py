"""The dtype vocabulary of profiler traces: Kineto / c10 ``Input type`` strings and torch
spellings -> (canonical name, bytes per element), the ``c10::ScalarType`` codes, the
strings that mark non-tensor arguments, and the promotion category of each dtype. Read by
the FLOP rules (:mod:`opgraph.analysis.flops`) and the device table
(:mod:`opgraph.devices`); imports nothing of opgraph."""

from __future__ import annotations

#: Kineto / c10 ``Input type`` strings (and torch spellings) -> (canonical name, bytes).
DTYPE_TABLE: dict[str, tuple[str, int]] = {}


def _reg_dtype(canon: str, size: int, *names: str) -> None:
    for n in (canon, *names):
        DTYPE_TABLE[n] = (canon, size)
        DTYPE_TABLE["torch." + n] = (canon, size)


_reg_dtype("fp32", 4, "float", "float32", "c10::Float")
_reg_dtype("fp64", 8, "double", "float64", "c10::Double")
_reg_dtype("fp16", 2, "c10::Half", "half", "float16", "Half")
_reg_dtype("bf16", 2, "c10::BFloat16", "bfloat16", "BFloat16")
_reg_dtype("fp8_e4m3fn", 1, "c10::Float8_e4m3fn", "float8_e4m3fn")
_reg_dtype("fp8_e5m2", 1, "c10::Float8_e5m2", "float8_e5m2")
_reg_dtype("fp8_e4m3fnuz", 1, "c10::Float8_e4m3fnuz", "float8_e4m3fnuz")
_reg_dtype("fp8_e5m2fnuz", 1, "c10::Float8_e5m2fnuz", "float8_e5m2fnuz")
_reg_dtype("fp8_e8m0fnu", 1, "c10::Float8_e8m0fnu", "float8_e8m0fnu")
# packed: one stored element (1 byte) holds two fp4 values; numel counts stored elements
_reg_dtype("fp4_e2m1fn_x2", 1, "c10::Float4_e2m1fn_x2", "float4_e2m1fn_x2")
_reg_dtype("int64", 8, "long int", "long", "long long", "long long int", "int64_t", "Long")
_reg_dtype("int32", 4, "int", "int32_t", "Int32")
_reg_dtype("int16", 2, "short int", "short", "int16_t")
_reg_dtype("int8", 1, "signed char", "int8_t", "char", "Char")
_reg_dtype("uint8", 1, "unsigned char", "uint8_t", "byte", "Byte")
_reg_dtype("uint16", 2, "unsigned short", "unsigned short int", "uint16_t")
_reg_dtype("uint32", 4, "unsigned int", "uint32_t")
_reg_dtype("uint64", 8, "unsigned long", "unsigned long int", "unsigned long long", "uint64_t")
_reg_dtype("bool", 1)
_reg_dtype("complex32", 4, "c10::complex<c10::Half>", "chalf")
_reg_dtype("complex64", 8, "c10::complex<float>", "cfloat")
_reg_dtype("complex128", 16, "c10::complex<double>", "cdouble")
_reg_dtype("qint8", 1, "c10::qint8")
_reg_dtype("quint8", 1, "c10::quint8")
_reg_dtype("qint32", 4, "c10::qint32")
_reg_dtype("quint4x2", 1, "c10::quint4x2")
_reg_dtype("quint2x4", 1, "c10::quint2x4")

#: ``Input type`` strings that mark non-tensor arguments.
NON_TENSOR_TYPES = frozenset(
    {
        "", "Scalar", "ScalarList", "TensorList", "GenericList", "Int", "Double", "Bool",
        "String", "Device", "Layout", "MemoryFormat", "ScalarType", "None", "Tuple",
        "Generator", "Stream", "Storage", "Object", "SymInt", "SymIntList", "IntList",
        "Dict", "Enum",
    }
)

#: c10::ScalarType codes (as recorded in ``Concrete Inputs`` for ``dtype=`` arguments).
SCALAR_TYPE_CODES: dict[int, str] = {
    0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "fp16", 6: "fp32",
    7: "fp64", 8: "complex32", 9: "complex64", 10: "complex128", 11: "bool", 12: "qint8",
    13: "quint8", 14: "qint32", 15: "bf16", 16: "quint4x2", 17: "quint2x4",
    23: "fp8_e5m2", 24: "fp8_e4m3fn", 25: "fp8_e5m2fnuz", 26: "fp8_e4m3fnuz",
    27: "uint16", 28: "uint32", 29: "uint64",
}

#: Promotion category of each canonical dtype: 0 bool, 1 integer, 2 floating, 3 complex.
DTYPE_CATEGORY = {"bool": 0}
for _n in ("uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
           "qint8", "quint8", "qint32", "quint4x2", "quint2x4"):
    DTYPE_CATEGORY[_n] = 1
for _n in ("fp16", "bf16", "fp32", "fp64", "fp8_e4m3fn", "fp8_e5m2", "fp8_e4m3fnuz",
           "fp8_e5m2fnuz", "fp8_e8m0fnu", "fp4_e2m1fn_x2"):
    DTYPE_CATEGORY[_n] = 2
for _n in ("complex32", "complex64", "complex128"):
    DTYPE_CATEGORY[_n] = 3


def dtype_info(type_string: str) -> tuple[str, int] | None:
    """Map a Kineto ``Input type`` string to ``(canonical dtype, bytes per element)``.

    Returns ``None`` for non-tensor markers and unknown strings (callers must then treat
    byte counts as unknown).
    """
    return DTYPE_TABLE.get(type_string.strip()) if isinstance(type_string, str) else None


def scalar_type_info(code: int) -> tuple[str, int] | None:
    """Map a ``c10::ScalarType`` integer code to ``(canonical dtype, bytes per element)``."""
    canon = SCALAR_TYPE_CODES.get(code) if isinstance(code, int) else None
    return DTYPE_TABLE[canon] if canon else None


def itemsize(canon: str | None) -> int | None:
    """Bytes per element of a canonical dtype name (None when unknown)."""
    return DTYPE_TABLE[canon][1] if canon in DTYPE_TABLE else None
