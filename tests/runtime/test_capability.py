"""What a graph records about its values: constants flow through nodes that only read constants, so claims that
need a constant input (an int4 weight's Reshape and Cast) see one."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from edgepack.runtime.capability import graph_values


def test_nodes_that_only_read_constants_make_constants() -> None:
    weight = numpy_helper.from_array(np.ones((4, 2), np.float16), "w")
    shape = numpy_helper.from_array(np.array([2, 4], np.int64), "shape")
    nodes = [helper.make_node("Reshape", ["w", "shape"], ["w_flat"]),
             helper.make_node("Cast", ["w_flat"], ["w_float"], to=TensorProto.FLOAT),
             helper.make_node("MatMul", ["x", "w_float"], ["y"]),
             helper.make_node("RandomNormalLike", ["w_float"], ["noise"]),
             helper.make_node("Shape", ["x"], ["x_shape"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [weight, shape])
    constants = graph_values(graph).constants
    assert {"w", "shape", "w_flat", "w_float"} <= constants
    assert not {"x", "y", "noise", "x_shape"} & constants


def test_a_node_with_a_subgraph_does_not_make_constants() -> None:
    branch = helper.make_graph([helper.make_node("Identity", ["c"], ["out"])], "branch", [],
                               [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1])])
    flag = numpy_helper.from_array(np.array(True), "flag")
    value = numpy_helper.from_array(np.ones(1, np.float32), "c")
    graph = helper.make_graph([helper.make_node("If", ["flag"], ["out"], then_branch=branch, else_branch=branch)],
                              "g", [], [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1])], [flag, value])
    assert "out" not in graph_values(graph).constants


def test_an_if_reading_only_known_values_makes_known_values_but_not_constants() -> None:
    """What an If's branches read from outside counts with its condition (the lowering folds it once they are known);
    a model input among them makes the outputs values a plan can be lowered for."""
    branch = helper.make_graph([helper.make_node("Identity", ["c"], ["inner"])], "branch", [],
                               [helper.make_tensor_value_info("inner", TensorProto.FLOAT, [1])])
    flag = numpy_helper.from_array(np.array(True), "flag")
    value = numpy_helper.from_array(np.ones(1, np.float32), "c")
    node = helper.make_node("If", ["flag"], ["out"], then_branch=branch, else_branch=branch)
    known = graph_values(helper.make_graph([node], "g", [], [], [flag, value]))
    assert "out" in known.known and "out" not in known.constants
    from_input = graph_values(helper.make_graph([node], "g", [helper.make_tensor_value_info("flag", TensorProto.BOOL,
                                                                                            [])], [], [value]))
    assert "out" in from_input.model_inputs and "out" not in from_input.known
