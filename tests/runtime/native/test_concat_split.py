"""Concat and Split on the `cpu` provider against onnxruntime: along a last axis of one element (each run one value:
4-byte values a word at a time, others by copy) and along outer axes (long runs), for element sizes of 1 to 8
bytes."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

RNG = np.random.default_rng(9)
CASES = {  # the parts' shapes (Concat's inputs, Split's outputs), axis
    "last axis of one": ([(1, 17, 30, 1), (1, 17, 30, 1), (1, 17, 30, 2)], 3),
    "middle axis": ([(2, 3, 5, 4), (2, 6, 5, 4)], 1),
    "first axis": ([(1, 4, 3), (3, 4, 3)], 0),
}
DTYPES = [np.float32, np.int32, np.int8, np.int64]


def elem(dtype: type) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(CASES))
def test_concat_matches_onnxruntime(case: str, dtype: type) -> None:
    shapes, axis = CASES[case]
    feeds = {f"x{i}": (RNG.standard_normal(shape) * 50).astype(dtype) for i, shape in enumerate(shapes)}
    graph = helper.make_graph([helper.make_node("Concat", list(feeds), ["y"], axis=axis)], "g",
                              [helper.make_tensor_value_info(name, elem(dtype), x.shape) for name, x in feeds.items()],
                              [helper.make_tensor_value_info("y", elem(dtype), None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    expected = run_onnxruntime(model, feeds)["y"]
    np.testing.assert_array_equal(PROVIDERS["cpu"].compile(model, {}).run(feeds)["y"], expected)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(CASES))
def test_split_matches_onnxruntime(case: str, dtype: type) -> None:
    shapes, axis = CASES[case]
    whole = list(shapes[0])
    whole[axis] = sum(shape[axis] for shape in shapes)
    x = (RNG.standard_normal(whole) * 50).astype(dtype)
    outputs = [f"y{i}" for i in range(len(shapes))]
    graph = helper.make_graph([helper.make_node("Split", ["x", "sizes"], outputs, axis=axis)], "g",
                              [helper.make_tensor_value_info("x", elem(dtype), x.shape)],
                              [helper.make_tensor_value_info(name, elem(dtype), None) for name in outputs],
                              [numpy_helper.from_array(np.array([s[axis] for s in shapes], np.int64), "sizes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    expected = run_onnxruntime(model, {"x": x})
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})
    for name in outputs:
        np.testing.assert_array_equal(actual[name], expected[name])
