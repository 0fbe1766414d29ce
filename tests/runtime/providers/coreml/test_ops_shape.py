"""Shape, Size and ConstantOfShape fold at conversion; a Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain
leaves one `reshape` in the program."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from .mil_cases import FP32_TOLERANCE, coreml_error, mil_ops, one_node

X = np.random.default_rng(19).standard_normal((2, 3, 4)).astype(np.float32)


def test_shape_with_start_and_end_is_a_constant() -> None:
    model = one_node(helper.make_node("Shape", ["x"], ["y"], start=1, end=-1), {"x": X}, opset=15)
    assert mil_ops(model) == [("identity", {"x": [3]})]
    assert coreml_error(model, {"x": X}) == 0


def test_constant_of_shape() -> None:
    value = helper.make_tensor("v", TensorProto.FLOAT, [1], [2.5])
    model = one_node(helper.make_node("ConstantOfShape", ["s"], ["c"], value=value), {}, {"s": np.asarray([3, 4])})
    model.graph.node.append(helper.make_node("Add", ["x", "c"], ["y"]))
    model.graph.input.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4]))
    del model.graph.output[:]
    model.graph.output.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4]))
    assert [op for op, _ in mil_ops(model)] == ["add"]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


def test_shape_arithmetic_folds_into_one_reshape() -> None:
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus_one"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 12])],
        [helper.make_tensor("zero", TensorProto.INT64, [], [0]),
         helper.make_tensor("axes", TensorProto.INT64, [1], [0]),
         helper.make_tensor("minus_one", TensorProto.INT64, [1], [-1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert mil_ops(model) == [("reshape", {"shape": [2, 12]})]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE
