"""Reshape, Flatten, Squeeze, Unsqueeze: MIL reshape/squeeze/expand_dims with the shape resolved at conversion."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from .mil_cases import FP16_TOLERANCE, FP32_TOLERANCE, coreml_error, mil_ops, one_node

X = np.random.default_rng(11).standard_normal((2, 3, 4, 5)).astype(np.float32)


def ints(*values: int) -> np.ndarray:
    return np.asarray(values, np.int64)


@pytest.mark.parametrize(("shape", "expected"), [((0, -1, 5), [2, 12, 5]), ((-1,), [120]), ((0, 0, -1), [2, 3, 20]),
                                                 ((2, 3, 20), [2, 3, 20])])
def test_reshape_resolves_zero_and_minus_one(shape, expected) -> None:
    model = one_node(helper.make_node("Reshape", ["x", "s"], ["y"]), {"x": X}, {"s": ints(*shape)})
    assert mil_ops(model) == [("reshape", {"shape": expected})]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


def test_reshape_allowzero_keeps_a_literal_shape() -> None:
    model = one_node(helper.make_node("Reshape", ["x", "s"], ["y"], allowzero=1), {"x": X}, {"s": ints(6, 4, 5)},
                     opset=18)
    assert mil_ops(model) == [("reshape", {"shape": [6, 4, 5]})]
    assert coreml_error(model, {"x": X}, "fp16") < FP16_TOLERANCE


def test_reshape_of_a_constant_folds() -> None:
    node = helper.make_node("Reshape", ["w", "s"], ["r"])
    add = helper.make_node("Add", ["x", "r"], ["y"])
    model = one_node(node, {}, {"w": X[0].reshape(-1), "s": ints(3, 4, 5)})
    graph = model.graph
    graph.node.append(add)
    graph.input.append(helper.make_tensor_value_info("x", 1, [2, 3, 4, 5]))
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info("y", 1, [2, 3, 4, 5]))
    assert [op for op, _ in mil_ops(model)] == ["add"]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


@pytest.mark.parametrize(("axis", "expected"), [(0, [1, 120]), (2, [6, 20]), (-1, [24, 5])])
def test_flatten(axis: int, expected: list[int]) -> None:
    model = one_node(helper.make_node("Flatten", ["x"], ["y"], axis=axis), {"x": X})
    assert mil_ops(model) == [("reshape", {"shape": expected})]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


def test_squeeze_axes_input_and_attribute() -> None:
    data = X[:, :1, :, :1]
    model = one_node(helper.make_node("Squeeze", ["x", "a"], ["y"]), {"x": data}, {"a": ints(-1, 1)})
    assert mil_ops(model) == [("squeeze", {"axes": [1, 3]})]
    assert coreml_error(model, {"x": data}) < FP32_TOLERANCE
    old = one_node(helper.make_node("Squeeze", ["x"], ["y"], axes=[1]), {"x": data}, opset=11)
    assert mil_ops(old) == [("squeeze", {"axes": [1]})]
    every = one_node(helper.make_node("Squeeze", ["x"], ["y"]), {"x": data})
    assert mil_ops(every) == [("squeeze", {"axes": [1, 3]})]
    assert coreml_error(every, {"x": data}) < FP32_TOLERANCE


@pytest.mark.parametrize(("opset", "axes", "expected"), [(13, (0, -1), [0, 4]), (11, (1,), [1])])
def test_unsqueeze(opset: int, axes, expected) -> None:
    data = X[0]
    if opset >= 13:
        model = one_node(helper.make_node("Unsqueeze", ["x", "a"], ["y"]), {"x": data}, {"a": ints(*axes)}, opset)
    else:
        model = one_node(helper.make_node("Unsqueeze", ["x"], ["y"], axes=list(axes)), {"x": data}, opset=opset)
    assert mil_ops(model) == [("expand_dims", {"axes": expected})]
    assert coreml_error(model, {"x": data}) < FP32_TOLERANCE
