"""Expand and Where on the cpu core against onnxruntime, for each element width (1, 2, 4 and 8 bytes): Expand's rows
broadcast from one element (filled in a loop of that width) and rows copied whole; Where's rows, selected in a loop
of that width."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper
from onnx.helper import np_dtype_to_tensor_dtype

from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

DTYPES = [np.uint8, np.bool_, np.float16, np.float32, np.int32, np.int64, np.float64]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("source", "target"), [((2, 3, 1), (2, 3, 37)), ((2, 1, 5), (2, 4, 5)), ((3, 1), (2, 3, 9))],
                         ids=["along the last axis", "along a middle axis", "into a new leading axis"])
def test_expand_agrees_with_onnxruntime(dtype: type, source: tuple[int, ...], target: tuple[int, ...]) -> None:
    rng = np.random.default_rng(len(source) + np.dtype(dtype).itemsize)
    x = (rng.standard_normal(source) * 100).astype(dtype)
    tensor_type = np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph([helper.make_node("Expand", ["x", "shape"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", tensor_type, source)],
                              [helper.make_tensor_value_info("y", tensor_type, None)],
                              [numpy_helper.from_array(np.array(target, np.int64), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    expected = run_onnxruntime(model, {"x": x})["y"]
    assert actual.dtype == expected.dtype and actual.shape == target
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d is not np.bool_], ids=lambda d: np.dtype(d).name)
def test_where_agrees_with_onnxruntime(dtype: type) -> None:
    """A mask broadcast over heads against a tensor and a scalar, each width's row loop (onnxruntime has no Where
    of booleans)."""
    rng = np.random.default_rng(np.dtype(dtype).itemsize)
    condition = rng.random((1, 1, 5, 7)) > 0.4
    x = (rng.standard_normal((1, 3, 5, 7)) * 100).astype(dtype)
    tensor_type = np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph([helper.make_node("Where", ["c", "x", "fill"], ["y"])], "g",
                              [helper.make_tensor_value_info("c", np_dtype_to_tensor_dtype(np.dtype(bool)),
                                                             condition.shape),
                               helper.make_tensor_value_info("x", tensor_type, x.shape)],
                              [helper.make_tensor_value_info("y", tensor_type, None)],
                              [numpy_helper.from_array(np.array(1, dtype), "fill")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    feeds = {"c": condition, "x": x}
    actual = PROVIDERS["cpu"].compile(model, {}).run(feeds)["y"]
    expected = run_onnxruntime(model, feeds)["y"]
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)
