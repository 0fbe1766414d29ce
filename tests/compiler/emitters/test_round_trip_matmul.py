"""A QDQ MatMul of two run-time values (each through QuantizeLinear and DequantizeLinear: attention's Q by K
transposed, and its probabilities by V) lowered to RoundTripMatMul: when the lowering takes the form and drops the
round trips, and the results of the cpu core (int16 pairs on AVX2), of the wasm and neon (qemu) cores (the float
path) and of K past the pairs' limit, against onnxruntime on the source model."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgepack.compiler.lower import lower_to_plan
from edgepack.runtime.native import epk
from edgepack.runtime.native.binding import NativeError, NativeSession
from edgepack.runtime.native.epk import ACTIVATIONS
from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

ZEROS = {TensorProto.UINT8: 131, TensorProto.INT8: -3}


def qdq_attention(a_shape: list[int], b_shape: list[int], a_type: int = TensorProto.UINT8,
                  b_type: int = TensorProto.INT8, also_add: bool = False, round_trip_out: bool = False
                  ) -> onnx.ModelProto:
    """a -> QuantizeLinear -> DequantizeLinear, b the same with its own scale and zero point, then MatMul; the round
    trip of a also added to itself, and the product through its own round trip (uint8), if asked."""
    constants = [numpy_helper.from_array(np.array(0.02, np.float32), "as"),
                 helper.make_tensor("az", a_type, [], [ZEROS[a_type]]),
                 numpy_helper.from_array(np.array(0.03, np.float32), "bs"),
                 helper.make_tensor("bz", b_type, [], [ZEROS[b_type]])]
    nodes = [helper.make_node("QuantizeLinear", ["a", "as", "az"], ["aq"]),
             helper.make_node("DequantizeLinear", ["aq", "as", "az"], ["ad"]),
             helper.make_node("QuantizeLinear", ["b", "bs", "bz"], ["bq"]),
             helper.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["bd"]),
             helper.make_node("MatMul", ["ad", "bd"], ["p" if round_trip_out else "y"])]
    if round_trip_out:
        constants += [numpy_helper.from_array(np.array(0.5, np.float32), "ys"),
                      helper.make_tensor("yz", TensorProto.UINT8, [], [100])]
        nodes += [helper.make_node("QuantizeLinear", ["p", "ys", "yz"], ["yq"]),
                  helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if also_add:
        nodes.append(helper.make_node("Add", ["ad", "ad"], ["z"]))
        outputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, a_shape),
                                           helper.make_tensor_value_info("b", TensorProto.FLOAT, b_shape)],
                              outputs, constants)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def inputs(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """Values across each operand's quantized range and past both ends (saturation), and ties of the rounding."""
    feeds = {}
    for i, value in enumerate(model.graph.input):
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        x = np.random.default_rng(i + sum(shape)).uniform(-5.0, 5.0, shape).astype(np.float32)
        x.reshape(-1)[::7] = (np.float32(0.01) * np.arange(x.size)[::7] % 3).astype(np.float32)
        feeds[value.name] = x
    return feeds


FORMS = {
    "attention scores: 3 heads of 20 x 16 by 16 x 40": ([1, 3, 20, 16], [1, 3, 16, 40], {}),
    "weighted values: 2 heads of 9 x 45 (odd K) by 45 x 33": ([2, 9, 45], [2, 45, 33], {}),
    "both uint8, B broadcast over the batch": ([4, 7, 24], [24, 70], {"b_type": TensorProto.UINT8}),
    "both int8, A broadcast over the batch": ([13, 8], [3, 8, 16], {"a_type": TensorProto.INT8}),
    "the product's own round trip after it": ([2, 30, 24], [2, 24, 50], {"round_trip_out": True}),
}


def assert_matches_onnxruntime(model: onnx.ModelProto, actual: dict[str, np.ndarray], tolerance: float = 1e-5
                                ) -> None:
    expected = run_onnxruntime(model, inputs(model))
    for name, value in expected.items():
        assert actual[name].shape == value.shape
        np.testing.assert_allclose(actual[name], value, rtol=tolerance, atol=tolerance * np.abs(value).max())


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("provider", ["cpu", "wasm", "neon"])
def test_qdq_matmul_of_two_values_runs_as_round_trip_matmul_and_matches_onnxruntime(provider: str, form: str) -> None:
    if reason := PROVIDERS[provider].missing():
        pytest.skip(reason)
    a_shape, b_shape, options = FORMS[form]
    model = qdq_attention(a_shape, b_shape, **options)
    kinds = [op.kind for op in lower_to_plan(model, {"a": a_shape, "b": b_shape}).ops]
    assert [kind for kind in kinds if kind != "Copy"] == ["RoundTripMatMul"]
    assert_matches_onnxruntime(model, PROVIDERS[provider].compile(model, {}).run(inputs(model)))


def test_k_past_the_int16_pairs_limit_takes_the_float_path() -> None:
    """K of 33026, every value saturated at 255 with zero points 0: 33026 products of 255 * 255 pass int32 (33025
    do not), so the AVX2 core sums the float round trips (within 1e-3: one float32 sum of 33026 equal terms drifts
    by 3e-4; an int32 overflow would wrap to a negative sum)."""
    k = 33026
    model = qdq_attention([6, k], [k, 3], b_type=TensorProto.UINT8)
    for constant in model.graph.initializer:
        if constant.name in ("az", "bz"):
            constant.CopyFrom(helper.make_tensor(constant.name, TensorProto.UINT8, [], [0]))
    feeds = {"a": np.full((6, k), 100.0, np.float32), "b": np.full((k, 3), 100.0, np.float32)}
    actual = PROVIDERS["cpu"].compile(model, {}).run(feeds)["y"]
    np.testing.assert_allclose(actual, run_onnxruntime(model, feeds)["y"], rtol=1e-3)
    np.testing.assert_allclose(actual, np.full((6, 3), 255 * 255 * k * 0.02 * 0.03), rtol=1e-3)


def test_the_products_own_round_trip_becomes_its_activation() -> None:
    model = qdq_attention([2, 30, 24], [2, 24, 50], round_trip_out=True)
    op, copy = lower_to_plan(model, {"a": [2, 30, 24], "b": [2, 24, 50]}).ops
    assert op.kind == "RoundTripMatMul" and op.params[0] == ACTIVATIONS["RoundTripU8"] and copy.kind == "Copy"


def test_a_round_trip_another_op_reads_stays() -> None:
    model = qdq_attention([12, 32], [32, 20], also_add=True)
    kinds = [op.kind for op in lower_to_plan(model, {"a": [12, 32], "b": [32, 20]}).ops]
    assert "RoundTripMatMul" in kinds and kinds.count("Quantize") == 1
    assert_matches_onnxruntime(model, PROVIDERS["cpu"].compile(model, {}).run(inputs(model)))


def test_few_rows_keep_the_float_product() -> None:
    """At most 4 rows per product run as the round trips and a MatMul on their floats (the 6-row integer tile would
    be mostly idle)."""
    kinds = [op.kind for op in lower_to_plan(qdq_attention([8, 4, 32], [8, 32, 32]),
                                             {"a": [8, 4, 32], "b": [8, 32, 32]}).ops]
    assert "RoundTripMatMul" not in kinds and kinds.count("Quantize") == 2


@pytest.mark.parametrize("field", ["two scales for A", "a float zero point for B"])
def test_loader_refuses_a_round_trip_matmul_whose_inputs_do_not_fit(field: str) -> None:
    plan = lower_to_plan(qdq_attention([8, 16], [16, 8]), {"a": [8, 16], "b": [16, 8]})
    op, = plan.ops
    NativeSession(epk.write(plan))
    if field == "two scales for A":
        scale = plan.tensors[op.inputs[2]]
        scale.shape, scale.data = (2,), np.array([0.02, 0.02], np.float32)
    else:
        zero = plan.tensors[op.inputs[5]]
        zero.dtype, zero.data = "float32", np.zeros((), np.float32)
    with pytest.raises(NativeError) as caught:
        NativeSession(epk.write(plan))
    assert "RoundTripMatMul" in str(caught.value)
