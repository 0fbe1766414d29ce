"""QuantizeLinear then DequantizeLinear with the same scale and zero point (a QDQ model's pair around an activation)
lowered to one Quantize op in round-trip mode, also when the exporter put other nodes between the two, or into the
epilogue of the Conv, Gemm or product before it, and results against onnxruntime on the source model."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgepack.compiler.emitters.tensor_ops import ACTIVATION_PARAM
from edgepack.compiler.lower import lower_to_plan
from edgepack.compiler.values import ROUND_TRIP
from edgepack.runtime.native.epk import ACTIVATIONS
from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

SHAPE = [4, 37]


def pairs_apart(shared_zero_point: bool = True) -> onnx.ModelProto:
    """Two activations quantized, then both dequantized (the order exporters write three Q nodes then their three DQ
    nodes in), then added; the second pair's DequantizeLinear takes another zero point when `shared_zero_point` is
    False."""
    constants = [numpy_helper.from_array(np.array(0.05, np.float32), "s"),
                 helper.make_tensor("z", TensorProto.INT8, [], [3]),
                 helper.make_tensor("other", TensorProto.INT8, [], [3 if shared_zero_point else 4])]
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("QuantizeLinear", ["x", "s", "z"], ["qa"]),
             helper.make_node("QuantizeLinear", ["r", "s", "z"], ["qb"]),
             helper.make_node("DequantizeLinear", ["qa", "s", "z"], ["da"]),
             helper.make_node("DequantizeLinear", ["qb", "s", "other"], ["db"]),
             helper.make_node("Add", ["da", "db"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], constants)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def quantize_modes(model: onnx.ModelProto) -> list[int]:
    return [op.params[0] for op in lower_to_plan(model, {"x": SHAPE}).ops if op.kind == "Quantize"]


def test_pairs_with_nodes_between_become_round_trips_and_match_onnxruntime() -> None:
    model = pairs_apart()
    assert quantize_modes(model) == [ROUND_TRIP, ROUND_TRIP]
    x = np.random.default_rng(3).uniform(-8, 8, SHAPE).astype(np.float32)
    expected = run_onnxruntime(model, {"x": x})["y"]
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6)


def test_a_pair_with_another_zero_point_stays_two_ops() -> None:
    assert quantize_modes(pairs_apart(shared_zero_point=False)).count(ROUND_TRIP) == 1


PRODUCERS = {  # name: (input shape, nodes writing "p" from "x" with the constants they take)
    "conv3x3": ([1, 6, 13, 17], lambda rng: ([helper.make_node("Conv", ["x", "w", "b"], ["p"], pads=[1] * 4)],
                                             {"w": rng.standard_normal((8, 6, 3, 3)), "b": rng.standard_normal(8)})),
    "conv1x1": ([1, 16, 7, 9], lambda rng: ([helper.make_node("Conv", ["x", "w"], ["p"])],
                                            {"w": rng.standard_normal((24, 16, 1, 1))})),
    "depthwise": ([1, 8, 20, 40], lambda rng: ([helper.make_node("Conv", ["x", "w"], ["p"], pads=[1] * 4, group=8,
                                                                 strides=[2, 2])],
                                               {"w": rng.standard_normal((8, 1, 3, 3))})),
    "narrow": ([1, 16, 4, 4], lambda rng: ([helper.make_node("Conv", ["x", "w"], ["p"])],
                                           {"w": rng.standard_normal((96, 16, 3, 3))})),
    "gemm": ([3, 20], lambda rng: ([helper.make_node("Gemm", ["x", "w", "b"], ["p"], transB=1)],
                                   {"w": rng.standard_normal((11, 20)), "b": rng.standard_normal(11)})),
    "matmul": ([9, 20], lambda rng: ([helper.make_node("MatMul", ["x", "w"], ["p"])],
                                     {"w": rng.standard_normal((20, 37))})),
}
"""Ops whose epilogue takes the round trip: a 3x3 conv, a 1x1 conv (panels), a depthwise one with stride 2 (bands), a
conv with 4 output positions (dot products, one value at a time), Gemm with a bias, and a MatMul by a constant of
over 4 rows (PackedMatMul)."""


def producer_then_pair(producer: str, zero_dtype: int, scale: float, zero: int, output: str) -> onnx.ModelProto:
    """The producer, then QuantizeLinear and DequantizeLinear of its output; the graph's output is `output` (the
    pair's result "y", or the producer's own "p", which then has no round trip to take)."""
    shape, make = PRODUCERS[producer]
    nodes, weights = make(np.random.default_rng(len(producer)))
    constants = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()]
    constants += [numpy_helper.from_array(np.array(scale, np.float32), "s"),
                  helper.make_tensor("z", zero_dtype, [], [zero])]
    nodes += [helper.make_node("QuantizeLinear", ["p", "s", "z"], ["q"]),
              helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
    graph = helper.make_graph(nodes if output == "y" else nodes[:-2], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)], constants)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


@pytest.mark.parametrize("producer", PRODUCERS)
@pytest.mark.parametrize(("zero_dtype", "zero"), [(TensorProto.UINT8, 128), (TensorProto.INT8, -5)])
def test_a_round_trip_after_a_product_becomes_its_activation(producer: str, zero_dtype: int, zero: int) -> None:
    """The pair after a Conv, Gemm or product is that op's activation (RoundTripU8 or RoundTripI8) and its Quantize
    op a Copy that shares the product's buffer. Its results are the ONNX round trip (x / scale rounded half to even,
    plus the zero point, saturated, less the zero point, times the scale) of the product's own, bit for bit, and
    onnxruntime's within one step of the scale where the product's float rounding lands on the other side of a
    half (the scale is small enough that the inputs saturate both ends)."""
    scale = 0.02
    model = producer_then_pair(producer, zero_dtype, scale, zero, "y")
    shape = PRODUCERS[producer][0]
    plan = lower_to_plan(model, {"x": shape})
    kinds = [op.kind for op in plan.ops]
    assert "Quantize" not in kinds and kinds[-1] == "Copy", kinds
    product = plan.ops[-2]
    activation = product.params[ACTIVATION_PARAM[product.kind]]
    assert activation == ACTIVATIONS["RoundTripI8" if zero_dtype == TensorProto.INT8 else "RoundTripU8"]
    x = np.random.default_rng(5).uniform(-2, 2, shape).astype(np.float32)
    fused = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    raw = PROVIDERS["cpu"].compile(producer_then_pair(producer, zero_dtype, scale, zero, "p"), {}).run({"x": x})["p"]
    low, high = (-128, 127) if zero_dtype == TensorProto.INT8 else (0, 255)
    steps = np.clip(np.rint(raw / np.float32(scale)) + zero, low, high) - zero
    assert np.array_equal(fused, (steps * np.float32(scale)).astype(np.float32))
    assert (steps == low - zero).any() and (steps == high - zero).any()
    expected = run_onnxruntime(model, {"x": x})["y"]
    assert np.max(np.abs(fused - expected)) <= scale * 1.001
    assert np.mean(fused != expected) <= 0.01


def test_a_round_trip_after_a_fused_activation_stays_its_own_pass() -> None:
    """A Conv whose Relu already fused in keeps the pair as a round-trip Quantize op; so does one whose output has
    another reader."""
    relu = producer_then_pair("conv3x3", TensorProto.UINT8, 0.02, 0, "y")
    relu.graph.node[0].output[0] = "c"
    relu.graph.node.insert(1, helper.make_node("Relu", ["c"], ["p"]))
    shared = producer_then_pair("conv3x3", TensorProto.UINT8, 0.02, 0, "y")
    shared.graph.node.append(helper.make_node("Add", ["y", "p"], ["sum"]))
    shared.graph.output[0].name = "sum"
    for model in (relu, shared):
        assert [op.params[0] for op in lower_to_plan(model, {"x": [1, 6, 13, 17]}).ops
                if op.kind == "Quantize"] == [ROUND_TRIP]


ACTIVATIONS_BETWEEN = {"HardSwish": {}, "Sigmoid": {}, "HardSigmoid": {"alpha": 0.3, "beta": 0.4},
                       "LeakyRelu": {"alpha": 0.2}, "Clip": {}, "Relu": {}}
"""Activations between two pairs; Clip takes its bounds as inputs. Relu stays a Unary of its own (it keeps NaN)."""


def activation_between_pairs(activation: str, also_output: bool) -> onnx.ModelProto:
    """x through a pair, the activation, and a second pair (its scale and int8 zero point apart from the first's);
    with `also_output` the activation's result is a graph output too, so nothing folds into the second pair."""
    constants = [numpy_helper.from_array(np.array(0.03, np.float32), "s1"),
                 helper.make_tensor("z1", TensorProto.UINT8, [], [120]),
                 numpy_helper.from_array(np.array(0.011, np.float32), "s2"),
                 helper.make_tensor("z2", TensorProto.INT8, [], [-20]),
                 numpy_helper.from_array(np.array(-0.5, np.float32), "low"),
                 numpy_helper.from_array(np.array(1.5, np.float32), "high")]
    bounds = ["low", "high"] if activation == "Clip" else []
    nodes = [helper.make_node("QuantizeLinear", ["x", "s1", "z1"], ["q1"]),
             helper.make_node("DequantizeLinear", ["q1", "s1", "z1"], ["d1"]),
             helper.make_node(activation, ["d1", *bounds], ["a"], **ACTIVATIONS_BETWEEN[activation]),
             helper.make_node("QuantizeLinear", ["a", "s2", "z2"], ["q2"]),
             helper.make_node("DequantizeLinear", ["q2", "s2", "z2"], ["y"])]
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in ["y", "a"][:1 + also_output]]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)], outputs,
                              constants)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


@pytest.mark.parametrize("activation", ACTIVATIONS_BETWEEN)
def test_a_round_trip_takes_in_the_activation_before_it(activation: str) -> None:
    """The second pair reads the first's result and applies the activation itself, a block at a time, and the
    Unary becomes a Copy: the same floats, bit for bit, as the Unary then the round trip (the model whose activation
    is also an output keeps them apart), and onnxruntime's within one step of the second scale."""
    model = activation_between_pairs(activation, False)
    ops = lower_to_plan(model, {"x": SHAPE}).ops
    if activation == "Relu":
        assert [op.kind for op in ops] == ["Quantize", "Unary", "Quantize"]
        return
    assert [op.kind for op in ops] == ["Quantize", "Copy", "Quantize"]
    assert ops[2].params[3] == ACTIVATIONS[activation] and ops[2].inputs[0] == ops[0].outputs[0]
    apart = lower_to_plan(activation_between_pairs(activation, True), {"x": SHAPE}).ops
    assert [op.kind for op in apart] == ["Quantize", "Unary", "Quantize"]
    x = np.random.default_rng(7).uniform(-4, 4, SHAPE).astype(np.float32)
    x[0, :3] = [np.nan, np.inf, -np.inf]
    folded = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    unfolded = PROVIDERS["cpu"].compile(activation_between_pairs(activation, True), {}).run({"x": x})["y"]
    assert np.array_equal(folded, unfolded)
    expected = run_onnxruntime(model, {"x": x})["y"]
    assert np.max(np.abs(folded - expected)) <= 0.011 * 1.001
