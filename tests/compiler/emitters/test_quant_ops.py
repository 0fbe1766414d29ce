"""QuantizeLinear then DequantizeLinear with the same scale and zero point (a QDQ model's pair around an activation)
lowered to one Quantize op in round-trip mode, also when the exporter put other nodes between the two, and results
against onnxruntime on the source model."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from edgepack.compiler.lower import lower_to_plan
from edgepack.compiler.values import ROUND_TRIP
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
