"""Model checks of the load stage: weights listed as inputs (IR 3) become constants the slimmer can fold."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from edgepack.model_check import initializers_as_constants
from edgepack.packager.slim import slim


def ir3_model() -> onnx.ModelProto:
    """y = Reshape(Relu(x) + w, Shape(x)): an IR 3 export lists its weight w as an input too."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    w_input = helper.make_tensor_value_info("w", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    weight = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "w"], ["a"]),
                               helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Reshape", ["a", "s"], ["y"])],
                              "ir3", [x, w_input], [y], [weight])
    return helper.make_model(graph, ir_version=3, opset_imports=[helper.make_opsetid("", 9)])


def test_weights_listed_as_inputs_become_constants_of_a_model_the_checker_and_slimmer_accept() -> None:
    model, moved = initializers_as_constants(ir3_model())
    assert moved == 1 and [i.name for i in model.graph.input] == ["x"]
    assert model.ir_version >= 4
    onnx.checker.check_model(model)
    slimmed, records = slim(model)
    assert all(record.status == "ok" for record in records), [(r.name, r.note) for r in records if r.status != "ok"]
    assert "Shape" not in {node.op_type for node in slimmed.graph.node}


def test_a_model_without_weight_inputs_is_left_as_it_is() -> None:
    model, _ = initializers_as_constants(ir3_model())
    again, moved = initializers_as_constants(model)
    assert moved == 0 and again is model
