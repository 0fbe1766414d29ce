"""TopK on the `cpu` provider against onnxruntime, on single-node models: several axes, largest and smallest, k of 1
and of the whole axis, ties (the lower index first), int32 and int64 inputs and opset 1's `k` attribute; exact."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

RNG = np.random.default_rng(11)


def top_k_model(x: np.ndarray, k: int, opset: int = 18, **attributes: object) -> onnx.ModelProto:
    """One TopK node over model input `x`; k an initializer (opset 10 on) or the attribute (opset 1)."""
    inputs = ["x"] if opset < 10 else ["x", "k"]
    if opset < 10:
        attributes["k"] = k
    node = helper.make_node("TopK", inputs, ["values", "indices"], **attributes)
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", elem, x.shape)],
        [helper.make_value_info("values", onnx.TypeProto()), helper.make_value_info("indices", onnx.TypeProto())],
        [] if opset < 10 else [numpy_helper.from_array(np.array([k], np.int64), "k")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)


def check(x: np.ndarray, k: int, opset: int = 18, **attributes: object) -> None:
    model = top_k_model(x, k, opset, **attributes)
    ours = PROVIDERS["cpu"].compile(model, {}).run({"x": x})
    expected = run_onnxruntime(model, {"x": x})
    for name in ("values", "indices"):
        assert ours[name].dtype == expected[name].dtype and ours[name].shape == expected[name].shape, name
        np.testing.assert_array_equal(ours[name], expected[name], err_msg=name)


SHAPE = (3, 5, 7)


@pytest.mark.parametrize("largest", [0, 1])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2])
def test_axes_and_k(axis: int, largest: int) -> None:
    x = RNG.standard_normal(SHAPE).astype(np.float32)
    length = SHAPE[axis]
    for k in sorted({1, 2, length}):
        check(x, k, axis=axis, largest=largest)


@pytest.mark.parametrize("largest", [0, 1])
@pytest.mark.parametrize("axis", [0, 2])
def test_ties_take_the_lower_index_first(axis: int, largest: int) -> None:
    x = RNG.integers(-2, 3, SHAPE).astype(np.float32)  # few distinct integer values: many ties
    for k in (1, 3, SHAPE[axis]):
        check(x, k, axis=axis, largest=largest)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("largest", [0, 1])
def test_integer_inputs(dtype: str, largest: int) -> None:
    x = RNG.integers(-4, 4, (4, 9)).astype(dtype)
    if dtype == "int64":
        x[0, :3] = [2**40, -(2**40), 2**40 + 1]  # beyond float's exact integers
    for k in (1, 4, 9):
        check(x, k, axis=1, largest=largest)
    check(x, 2, axis=0, largest=largest)


def test_opset_1_attribute_k() -> None:
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    check(x, 3, opset=1)
    check(x, 2, opset=1, axis=0)


def test_one_dimensional_and_long_rows() -> None:
    check(RNG.standard_normal(100).astype(np.float32), 10)
    check(RNG.integers(0, 10, (2, 257)).astype(np.float32), 17, largest=0)
