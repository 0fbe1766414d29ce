"""A QDQ MatMul (X through QuantizeLinear and DequantizeLinear, by a constant int8 weight with a scale per column)
lowered to Int8MatMul: the weight's panel layout, when the lowering takes the form and drops the round trip, and the
results of the cpu core (int32 products on AVX-512 VNNI where the host has it), of a core built for x86-64-v3 (int16
pairs on AVX2) and of the wasm and neon (qemu) cores (the float path) against onnxruntime on the source model."""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgepack.compiler.emitters.int8_matmul import int8_panels
from edgepack.compiler.lower import lower_to_plan
from edgepack.runtime.native import epk
from edgepack.runtime.native.binding import NativeError, NativeSession
from edgepack.runtime.native.build import shared_library
from edgepack.runtime.native.epk import ACTIVATIONS
from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime


def test_int8_panels_hold_four_rows_of_a_column_side_by_side() -> None:
    values = np.random.default_rng(0).integers(-127, 128, (10, 40)).astype(np.int8)
    panels = int8_panels(values)
    assert panels.shape == (2, 3, 32, 4)
    for row in range(12):
        for column in range(64):
            expected = values[row, column] if row < 10 and column < 40 else 0
            assert panels[column // 32, row // 4, column % 32, row % 4] == expected


def qdq_matmul(rows: int, k: int, n: int, zero_type: int = TensorProto.UINT8, per_tensor: bool = False,
               readers: int = 1, then_relu: bool = False, also_add: bool = False, bias: bool = False,
               before: str = "Identity", round_trip_out: bool = False) -> onnx.ModelProto:
    """x [rows, k] -> `before` -> QuantizeLinear -> DequantizeLinear -> `readers` MatMuls by int8 weights (k x n,
    scales per column or one), summed; then the sum's own QuantizeLinear and DequantizeLinear, a bias per column
    added, a Relu, and the round trip also added to itself, if asked."""
    rng = np.random.default_rng(rows * 1000 + k + n)
    zero = 3 if zero_type == TensorProto.INT8 else 131
    constants = [numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
                 helper.make_tensor("xz", zero_type, [], [zero])]
    nodes = [helper.make_node(before, ["x"], ["xa"]),
             helper.make_node("QuantizeLinear", ["xa", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"])]
    products = []
    for r in range(readers):
        scale = np.full((), 0.01, np.float32) if per_tensor else rng.uniform(0.002, 0.02, n).astype(np.float32)
        constants += [numpy_helper.from_array(rng.integers(-127, 128, (k, n)).astype(np.int8), f"w{r}"),
                      numpy_helper.from_array(scale, f"ws{r}")]
        nodes += [helper.make_node("DequantizeLinear", [f"w{r}", f"ws{r}"], [f"wd{r}"], axis=1),
                  helper.make_node("MatMul", ["xd", f"wd{r}"], [f"p{r}"])]
        products.append(f"p{r}")
    total = products[0]
    for r, product in enumerate(products[1:]):
        nodes.append(helper.make_node("Add", [total, product], [f"s{r}"]))
        total = f"s{r}"
    if round_trip_out:
        constants += [numpy_helper.from_array(np.array(0.05, np.float32), "ys"),
                      helper.make_tensor("yz", zero_type, [], [zero])]
        nodes += [helper.make_node("QuantizeLinear", [total, "ys", "yz"], ["yq"]),
                  helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["yd"])]
        total = "yd"
    if bias:
        constants.append(numpy_helper.from_array(np.linspace(-2, 2, n, dtype=np.float32), "bias"))
        nodes.append(helper.make_node("Add", [total, "bias"], ["biased"]))
        total = "biased"
    nodes.append(helper.make_node("Relu" if then_relu else "Identity", [total], ["y"]))
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if also_add:
        nodes.append(helper.make_node("Add", ["xd", "xd"], ["z"]))
        outputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, k])],
                              outputs, constants)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


FORMS = {
    "uint8 X, 70 rows, K 48, N 70": (70, 48, 70, {}),
    "int8 X, 11 rows, K 50 (not a multiple of 4)": (11, 50, 40, {"zero_type": TensorProto.INT8}),
    "one weight scale, 9 rows, K 384, N 33": (9, 384, 33, {"per_tensor": True}),
    "Relu fused, 8 rows": (8, 64, 32, {"then_relu": True}),
    "three MatMuls on one round trip": (16, 40, 24, {"readers": 3}),
    "a bias added after it, then Relu": (12, 64, 40, {"bias": True, "then_relu": True}),
    "its output's round trip, then a bias": (30, 64, 70, {"round_trip_out": True, "bias": True}),
    "int8 X, its output's round trip, then a bias": (9, 40, 33, {"zero_type": TensorProto.INT8,
                                                                 "round_trip_out": True, "bias": True}),
}


def inputs(rows: int, k: int) -> dict[str, np.ndarray]:
    """Values across X's quantized range and past both ends (saturation), and ties of the rounding."""
    x = np.random.default_rng(rows + k).uniform(-3.5, 3.5, (rows, k)).astype(np.float32)
    x.reshape(-1)[::7] = np.float32(0.01) * np.arange(x.size)[::7] % 3
    return {"x": x}


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("provider", ["cpu", "wasm", "neon"])
def test_qdq_matmul_runs_as_int8_matmul_and_matches_onnxruntime(provider: str, form: str) -> None:
    if reason := PROVIDERS[provider].missing():
        pytest.skip(reason)
    rows, k, n, options = FORMS[form]
    model = qdq_matmul(rows, k, n, **options)
    kinds = [op.kind for op in lower_to_plan(model, {"x": [rows, k]}).ops]
    assert kinds.count("Int8MatMul") == options.get("readers", 1) and "Quantize" not in kinds
    assert "Binary" not in kinds or options.get("readers", 1) > 1
    feeds = inputs(rows, k)
    expected = run_onnxruntime(model, feeds)["y"]
    actual = PROVIDERS[provider].compile(model, {}).run(feeds)["y"]
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def host_flags() -> set[str]:
    cpuinfo = Path("/proc/cpuinfo")
    text = cpuinfo.read_text() if cpuinfo.exists() else ""
    return set(next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), []))


@pytest.mark.skipif(platform.machine() != "x86_64" or not {"avx2", "fma"} <= host_flags(),
                    reason="the x86-64-v3 core needs an x86 CPU with AVX2 and FMA")
@pytest.mark.parametrize("form", list(FORMS))
def test_the_avx2_core_runs_it_on_int16_pairs_and_matches_onnxruntime(form: str) -> None:
    """A core built for x86-64-v3 (no VNNI) takes the int16-pair path: the same forms against onnxruntime."""
    rows, k, n, options = FORMS[form]
    model = qdq_matmul(rows, k, n, **options)
    feeds = inputs(rows, k)
    session = NativeSession(epk.write(lower_to_plan(model, {"x": [rows, k]})), shared_library("x86-64-v3"))
    expected = run_onnxruntime(model, feeds)["y"]
    actual = session.run(feeds)["y"]
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def test_a_bias_after_its_round_trip_fuses_after_the_activation() -> None:
    """A QDQ Linear's bias added after the output's QuantizeLinear and DequantizeLinear: the round trip is the
    product's activation, and the bias its input 7, added after it."""
    ops = lower_to_plan(qdq_matmul(30, 64, 70, round_trip_out=True, bias=True), {"x": [30, 64]}).ops
    op, = [op for op in ops if op.kind == "Int8MatMul"]
    assert op.params[1] == ACTIVATIONS["RoundTripU8"] and op.inputs[6] is None and op.inputs[7] is not None
    assert "Binary" not in [op.kind for op in ops]


def test_the_relu_after_it_fuses() -> None:
    op, = [op for op in lower_to_plan(qdq_matmul(8, 64, 32, then_relu=True), {"x": [8, 64]}).ops
           if op.kind == "Int8MatMul"]
    assert op.params[1] == ACTIVATIONS["Relu"]


def test_a_round_trip_another_op_reads_stays() -> None:
    model = qdq_matmul(12, 32, 32, also_add=True)
    kinds = [op.kind for op in lower_to_plan(model, {"x": [12, 32]}).ops]
    assert "Int8MatMul" in kinds and "Quantize" in kinds
    feeds = inputs(12, 32)
    expected = run_onnxruntime(model, feeds)
    actual = PROVIDERS["cpu"].compile(model, {}).run(feeds)
    for name in ("y", "z"):
        np.testing.assert_allclose(actual[name], expected[name], rtol=1e-5, atol=1e-5 * np.abs(expected[name]).max())


def test_few_rows_keep_the_float_product() -> None:
    """At most 4 rows run as the round trip and a MatMul on its floats (the 8-row integer tile would be mostly idle)."""
    kinds = [op.kind for op in lower_to_plan(qdq_matmul(4, 32, 32), {"x": [4, 32]}).ops]
    assert "Int8MatMul" not in kinds and "Quantize" in kinds


@pytest.mark.parametrize("before", ["Sigmoid", "HardSwish"])
def test_a_round_trip_holding_an_activation_keeps_the_float_product(before: str) -> None:
    """An activation before the QuantizeLinear folds into the round trip, which Int8MatMul (reading the round trip's
    input) would skip: the round trip stays and the MatMul reads its floats."""
    model = qdq_matmul(16, 64, 40, before=before)
    kinds = [op.kind for op in lower_to_plan(model, {"x": [16, 64]}).ops]
    assert "Int8MatMul" not in kinds and "Quantize" in kinds
    feeds = inputs(16, 64)
    expected = run_onnxruntime(model, feeds)["y"]
    actual = PROVIDERS["cpu"].compile(model, {}).run(feeds)["y"]
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("field", ["B's groups", "column sums", "bias after the activation"])
def test_loader_refuses_an_int8_matmul_whose_inputs_do_not_fit(field: str) -> None:
    plan = lower_to_plan(qdq_matmul(8, 64, 32, round_trip_out=True, bias=True), {"x": [8, 64]})
    op, = [op for op in plan.ops if op.kind == "Int8MatMul"]
    NativeSession(epk.write(plan))
    if field == "B's groups":
        weight = plan.tensors[op.inputs[1]]
        weight.shape, weight.data = (1, 15, 32, 4), weight.data[:, :15]
    else:
        held = plan.tensors[op.inputs[3] if field == "column sums" else op.inputs[7]]
        held.shape, held.data = (31,), held.data[:31]
    with pytest.raises(NativeError) as caught:
        NativeSession(epk.write(plan))
    assert "Int8MatMul" in str(caught.value)
