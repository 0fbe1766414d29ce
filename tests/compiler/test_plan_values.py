"""Plans for the values of model inputs that shape other tensors: the lowering names such inputs (NeedsValues), a plan
lowered for their values guards them (a Guard op refuses another value at run time), and a planned partition keeps a
plan per value, each matching onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from edgepack.compiler.lower import NeedsValues, lower
from edgepack.runtime.capability import graph_values
from edgepack.runtime.native.binding import NativeSession
from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime


def reshape_by_input() -> onnx.ModelProto:
    """y = ReduceSum(Reshape(x, shape), axes): both the shape and the axes are model inputs."""
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"]),
             helper.make_node("ReduceSum", ["r", "axes"], ["y"], keepdims=0)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4]),
                                           helper.make_tensor_value_info("shape", TensorProto.INT64, [2]),
                                           helper.make_tensor_value_info("axes", TensorProto.INT64, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def feeds(shape: list[int], axis: int) -> dict[str, np.ndarray]:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
    return {"x": x, "shape": np.array(shape, np.int64), "axes": np.array([axis], np.int64)}


def test_lowering_names_the_inputs_a_plan_needs_the_values_of() -> None:
    with pytest.raises(NeedsValues) as raised:
        lower(reshape_by_input())
    assert raised.value.names == ["shape"]


@pytest.mark.parametrize(("shape", "axis"), [([6, 4], 0), ([6, 4], 1), ([4, 6], 1), ([-1, 2], 0)])
def test_cpu_runs_each_value_like_onnxruntime(shape: list[int], axis: int) -> None:
    model = reshape_by_input()
    expected = run_onnxruntime(model, feeds(shape, axis))["y"]
    actual = PROVIDERS["cpu"].compile(model, {}).run(feeds(shape, axis))["y"]
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-6)


def test_one_partition_keeps_a_plan_per_value() -> None:
    partition = PROVIDERS["cpu"].compile(reshape_by_input(), {})
    for shape, axis in [([6, 4], 0), ([4, 6], 1), ([6, 4], 0)]:
        partition.run(feeds(shape, axis))
    assert partition.value_inputs == {"shape", "axes"}
    assert len(partition.sessions) == 2


def test_a_plan_refuses_a_value_it_was_not_lowered_for() -> None:
    lowered_for = feeds([6, 4], 0)
    plan = lower(reshape_by_input(), values={"shape": lowered_for["shape"], "axes": lowered_for["axes"]})
    session = NativeSession(plan)
    np.testing.assert_allclose(session.run(lowered_for)["y"], lowered_for["x"].reshape(6, 4).sum(0), rtol=1e-6)
    with pytest.raises(Exception, match="lowered for"):
        session.run(feeds([6, 4], 1))


def pad_by_computed_amount() -> onnx.ModelProto:
    """y = Pad(x, Concat(0, n + 1)): the pads are computed from the model input n, not given by it."""
    nodes = [helper.make_node("Add", ["n", "one"], ["n1"]),
             helper.make_node("Concat", ["zero", "n1"], ["pads"], axis=0),
             helper.make_node("Pad", ["x", "pads"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5]),
                                           helper.make_tensor_value_info("n", TensorProto.INT64, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [helper.make_tensor("one", TensorProto.INT64, [1], [1]),
                               helper.make_tensor("zero", TensorProto.INT64, [1], [0])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_values_computed_from_model_inputs_are_lowered_for_those_inputs() -> None:
    """The claims accept the computed pads; the lowering asks for `n`, the input they come from."""
    model = pad_by_computed_amount()
    inferred = onnx.shape_inference.infer_shapes(model)
    assert PROVIDERS["cpu"].capability.graph_refusal(inferred.graph, {"": 18}, graph_values(inferred.graph)) is None
    with pytest.raises(NeedsValues) as raised:
        lower(model)
    assert raised.value.names == ["n"]
    x = np.arange(5, dtype=np.float32)
    partition = PROVIDERS["cpu"].compile(model, {})
    for n in (0, 2, 0):
        feeds = {"x": x, "n": np.array([n], np.int64)}
        np.testing.assert_array_equal(partition.run(feeds)["y"], run_onnxruntime(model, feeds)["y"])
    assert len(partition.sessions) == 2
