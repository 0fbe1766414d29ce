"""ONNX function bodies: the inlined body of one node reads and writes the node's own names, binds the schema's
default attributes, follows the model's opset, and the C core's claims take a node whose body they cover."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from edgepack.runtime.capability import graph_values, model_opsets
from edgepack.runtime.function_bodies import defines_body, function_nodes
from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

FLOAT_2x3 = helper.make_tensor_type_proto(TensorProto.FLOAT, [2, 3])


def test_mish_body_reads_and_writes_the_nodes_names() -> None:
    body = function_nodes(helper.make_node("Mish", ["x"], ["y"], name="m"), {"": 22}, [FLOAT_2x3])
    assert [n.op_type for n in body] == ["Softplus", "Tanh", "Mul"]
    assert body[0].input == ["x"] and body[-1].output == ["y"]
    inner = {name for n in body for name in n.output} - {"y"}
    assert all(name.startswith("m/Mish/") for name in inner)


def test_left_out_attributes_take_the_schemas_defaults() -> None:
    tensor = helper.make_tensor_type_proto(TensorProto.FLOAT, [1, 2, 3, 3])
    body = function_nodes(helper.make_node("MeanVarianceNormalization", ["x"], ["y"]), {"": 13}, [tensor])
    reductions = [n for n in body if n.op_type == "ReduceMean"]
    axes = [[list(helper.get_attribute_value(a)) for a in n.attribute if a.name == "axes"] for n in reductions]
    assert axes == [[[0, 2, 3]], [[0, 2, 3]]]


def test_the_body_follows_the_models_opset() -> None:
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1)
    by_opset = {opset: [len(n.input) for n in function_nodes(node, {"": opset}, [FLOAT_2x3] * 3)
                        if n.op_type == "ReduceMean"] for opset in (17, 18, 21)}
    assert by_opset == {17: [1, 1], 18: [2, 2], 21: [2, 2]}  # axes moved from an attribute to an input in opset 18


def test_ops_without_a_body_have_none() -> None:
    node = helper.make_node("Conv", ["x", "w"], ["y"])
    assert not defines_body(node, {"": 18}) and function_nodes(node, {"": 18}, [FLOAT_2x3] * 2) is None


def rms_model() -> onnx.ModelProto:
    node = helper.make_node("RMSNormalization", ["x", "scale"], ["y"], axis=-1, epsilon=1e-5)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5, 8])],
                              [onnx.numpy_helper.from_array(np.linspace(0.5, 2, 8, dtype=np.float32), "scale")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])


def test_cpu_claims_and_runs_an_op_through_its_body_like_onnxruntime() -> None:
    model = onnx.shape_inference.infer_shapes(rms_model())
    capability = PROVIDERS["cpu"].capability
    values = graph_values(model.graph)
    node = model.graph.node[0]
    assert capability.claim_refusal(node, model_opsets(model), values) is not None  # no kernel of its own
    assert capability.refusal(node, model_opsets(model), values) is None  # but its body is covered
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32)
    expected = run_onnxruntime(rms_model(), {"x": x})["y"]
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)
