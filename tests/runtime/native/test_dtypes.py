"""Every dtype the core holds, on single-node models against onnxruntime (onnx's ReferenceEvaluator where onnxruntime
has no kernel for the dtype): Cast between each pair (exact, NaN where NaN), the binary and unary kinds on the number
dtypes without a fast path, ops lowered through float32, and packed sub-byte values through the neon and wasm
runners' files."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from edgepack.runtime.native import epk
from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

RNG = np.random.default_rng(5)
FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTEGERS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
TOLERANCE = {"float64": 1e-6, "float16": 1e-2, "bfloat16": 4e-2}
"""Relative: float64 computed in float32; float16 and bfloat16 within two of their steps (the oracle computes in them,
we in float32 rounded once)."""
SMALL = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float4_e2m1fn", "int4", "uint4", "int2",
         "uint2"]


def model(op: str, inputs: dict[str, str], output: str, opset: int = 25, **attributes: object) -> onnx.ModelProto:
    node = helper.make_node(op, list(inputs), ["y"], **attributes)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(name, epk.DTYPES[dtype], [2, 7])
                                            for name, dtype in inputs.items()],
                              [helper.make_tensor_value_info("y", epk.DTYPES[output], None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def expected(m: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    """onnxruntime's output (float8 comes back as its bytes: read as float8), or the ReferenceEvaluator's where
    onnxruntime has no kernel for the op on these dtypes."""
    dtype = epk.numpy_dtype(epk.NAMES[m.graph.output[0].type.tensor_type.elem_type])
    try:
        result = run_onnxruntime(m, feeds)["y"]
    except Exception:
        try:
            result = ReferenceEvaluator(m).run(None, feeds)[0]
        except TypeError:  # numpy casts between two sub-byte dtypes only through a wider integer
            result = feeds["x"].astype(np.int64).astype(dtype)
    return result.view(dtype) if result.dtype != dtype and result.dtype.itemsize == dtype.itemsize else result


def values(dtype: str) -> np.ndarray:
    """Values every dtype of its family holds: small integers, halves, a NaN and infinities for the floats."""
    if dtype in INTEGERS or dtype in ("int4", "uint4", "int2", "uint2"):
        info = ml_dtypes.iinfo(epk.numpy_dtype(dtype))
        low, high = max(int(info.min), -100), min(int(info.max), 100)
        return RNG.integers(low, high + 1, (2, 7)).astype(epk.numpy_dtype(dtype))
    x = RNG.normal(0, 3, (2, 7)).round(1)
    x[0, :4] = [np.nan, 0.5, -2.0, 1e6] if dtype not in ("float4_e2m1fn",) else [1.5, 0.5, -2.0, 6.0]
    return x.astype(epk.numpy_dtype(dtype))


def same(ours: np.ndarray, reference: np.ndarray) -> None:
    assert ours.dtype == reference.dtype and ours.shape == reference.shape
    np.testing.assert_array_equal(ours.astype(np.float64), reference.astype(np.float64))


@pytest.mark.parametrize("source", FLOATS + INTEGERS + SMALL + ["bool"])
def test_cast_to_every_dtype_matches(source: str) -> None:
    for target in [t for t in FLOATS + INTEGERS + SMALL + ["bool"] if t != source]:  # a same-dtype Cast copies
        x = values(source) if source != "bool" else RNG.integers(0, 2, (2, 7)).astype(bool)
        if source in FLOATS + SMALL and target in INTEGERS + SMALL[5:]:  # undefined in ONNX: NaN, infinities and
            wide = np.nan_to_num(x.astype(np.float64), nan=1.0, posinf=3.0, neginf=-3.0)  # (wider integers) floats
            x = np.clip(np.abs(wide), 0, 100).astype(x.dtype)  # outside their range
        m = model("Cast", {"x": source}, target, to=epk.DTYPES[target])
        ours = PROVIDERS["cpu"].compile(m, {}).run({"x": x})["y"]
        same(ours, expected(m, {"x": x}))


@pytest.mark.parametrize("saturate", [0, 1])
@pytest.mark.parametrize("target", ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"])
def test_float8_saturates_only_when_asked(target: str, saturate: int) -> None:
    x = np.array([[1e6, -1e6, np.inf, -np.inf, 500.0, 464.0, 0.0], [-0.0, 1e-9, 240.5, 57344.0, 61440.0, 2.0, np.nan]],
                 np.float32)
    m = model("Cast", {"x": "float32"}, target, to=epk.DTYPES[target], saturate=saturate)
    same(PROVIDERS["cpu"].compile(m, {}).run({"x": x})["y"], ReferenceEvaluator(m).run(None, {"x": x})[0])


@pytest.mark.parametrize("dtype", FLOATS[1:] + INTEGERS)
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min", "Equal", "Less", "Greater", "Pow", "Mod"])
def test_binary_kinds_on_every_number_dtype(op: str, dtype: str) -> None:
    a, b = values(dtype), values(dtype)
    if op in ("Div", "Mod"):
        b = np.where(b == 0, np.ones_like(b), b)
    if op == "Pow":
        a, b = (a % 5).astype(a.dtype), np.abs(b.astype(np.float64) % 4).astype(b.dtype)
    output = "bool" if op in ("Equal", "Less", "Greater") else dtype
    attributes = {"fmod": 1} if op == "Mod" and dtype in FLOATS else {}
    m = model(op, {"a": dtype, "b": dtype}, output, **attributes)
    ours = PROVIDERS["cpu"].compile(m, {}).run({"a": a, "b": b})["y"]
    reference = expected(m, {"a": a, "b": b})
    if dtype in FLOATS:
        np.testing.assert_allclose(ours.astype(np.float64), reference.astype(np.float64), rtol=TOLERANCE[dtype],
                                   atol=1e-6)
    else:
        same(ours, reference)


@pytest.mark.parametrize("shapes", [((3, 1, 6), (1, 4, 6)), ((3, 4, 1), (1, 1, 6)), ((3, 4, 6), (3, 4, 1))],
                         ids=["rows", "row of b", "one of b"])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Equal"])
def test_integer_binary_rows_broadcast_and_wrap(op: str, dtype: str, shapes: tuple[tuple[int, ...], ...]) -> None:
    """The integer row loops (each operand stepping by 1 or 0 along a row) against numpy, which wraps like two's
    complement: values near the dtype's ends, and repeats so that Equal finds matches."""
    info = np.iinfo(dtype)
    pool = np.array([info.min, info.min + 1, -7, -1, 0, 1, 3, 7, info.max - 1, info.max], dtype)
    a, b = (RNG.choice(pool, shape) for shape in shapes)
    node = helper.make_node(op, ["a", "b"], ["y"])
    output = helper.make_tensor_value_info("y", epk.DTYPES["bool" if op == "Equal" else dtype], None)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(k, epk.DTYPES[dtype], v.shape)
                                            for k, v in {"a": a, "b": b}.items()], [output])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
    ours = PROVIDERS["cpu"].compile(m, {}).run({"a": a, "b": b})["y"]
    with np.errstate(over="ignore"):
        want = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Equal": np.equal}[op](a, b)
    same(ours, want)


@pytest.mark.parametrize("provider", ["cpu", "wasm"])
@pytest.mark.parametrize("shapes", [((3, 4, 6), (3, 4, 6)), ((3, 1, 6), (1, 4, 6)), ((3, 4, 1), (1, 1, 6)),
                                    ((3, 4, 6), (3, 4, 1))], ids=["same", "rows", "one of a", "one of b"])
@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
def test_float32_comparisons_broadcast_with_ties_and_nan(op: str, shapes: tuple[tuple[int, ...], ...],
                                                         provider: str) -> None:
    """float32 comparisons (binary_exact.c) in each row form, on values that repeat, so that ties are common, and
    NaN, which compares false, against numpy."""
    pool = np.array([-np.inf, -2.5, -0.0, 0.0, 1.0, 1.5, np.inf, np.nan], np.float32)
    a, b = (RNG.choice(pool, shape) for shape in shapes)
    node = helper.make_node(op, ["a", "b"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(k, epk.DTYPES["float32"], v.shape)
                                            for k, v in {"a": a, "b": b}.items()],
                              [helper.make_tensor_value_info("y", epk.DTYPES["bool"], None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
    ours = PROVIDERS[provider].compile(m, {}).run({"a": a, "b": b})["y"]
    want = {"Equal": np.equal, "Less": np.less, "Greater": np.greater, "LessOrEqual": np.less_equal,
            "GreaterOrEqual": np.greater_equal}[op](a, b)
    same(ours, want)


@pytest.mark.parametrize("dtype", FLOATS[1:])
@pytest.mark.parametrize("op", ["Relu", "Exp", "Abs", "Neg", "Sqrt", "Floor", "IsNaN", "Softmax", "ReduceSum"])
def test_float_ops_on_wider_floats_within_float32_precision(op: str, dtype: str) -> None:
    """Unary kinds computed in float32, and `via_float32` ops (Softmax, ReduceSum) on casts to float32 and back."""
    x = np.abs(values(dtype)) if op == "Sqrt" else values(dtype)
    output = "bool" if op == "IsNaN" else dtype
    m = model(op, {"x": dtype}, output, **({"keepdims": 0} if op == "ReduceSum" else {}))
    ours = PROVIDERS["cpu"].compile(m, {}).run({"x": x})["y"]
    reference = expected(m, {"x": x})
    assert ours.dtype == reference.dtype and ours.shape == reference.shape
    np.testing.assert_allclose(ours.astype(np.float64), reference.astype(np.float64), rtol=TOLERANCE[dtype],
                               atol=1e-6)


@pytest.mark.parametrize("provider", ["neon", "wasm"])
def test_packed_and_numpy_less_dtypes_cross_the_runner_files(provider: str) -> None:
    """int4 (packed), float8 and bfloat16 travel to ep_run as their plan bytes and come back intact."""
    if PROVIDERS[provider].missing():
        pytest.skip(PROVIDERS[provider].missing())
    for source, target in [("int4", "float32"), ("float32", "uint2"), ("float8_e5m2", "bfloat16")]:
        x = values(source)
        m = model("Cast", {"x": source}, target, to=epk.DTYPES[target])
        same(PROVIDERS[provider].compile(m, {}).run({"x": x})["y"], expected(m, {"x": x}))


def test_plan_bytes_pack_sub_byte_values_low_bits_first() -> None:
    packed = epk.plan_bytes(np.array([1, -1, 2], ml_dtypes.int4), "int4")
    assert packed == bytes([0xF1, 0x02])
    round_trip = epk.from_plan_bytes(packed, "int4", (3,))
    np.testing.assert_array_equal(round_trip.astype(np.int8), [1, -1, 2])
    assert epk.plan_bytes(np.array([1, 2, 3, 0, 1], ml_dtypes.uint2), "uint2") == bytes([0b00111001, 0b01])
    assert TensorProto.UINT2 == epk.DTYPES["uint2"]


@pytest.mark.parametrize(("source", "target"), [("float32", "int32"), ("int64", "float64"), ("float16", "bfloat16"),
                                                ("uint8", "float8_e4m3fn"), ("int4", "uint4")])
def test_bit_cast_keeps_the_bits(source: str, target: str) -> None:
    x = values(source)
    m = model("BitCast", {"x": source}, target, opset=26, to=epk.DTYPES[target])
    ours = PROVIDERS["cpu"].compile(m, {}).run({"x": x})["y"]
    assert ours.dtype == epk.numpy_dtype(target)
    assert epk.plan_bytes(ours, target) == epk.plan_bytes(x, source)
