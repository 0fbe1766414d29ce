"""Slice on the `cpu` provider against onnxruntime: trailing axes taken whole (merged into runs), a stepped last
axis, negative steps, and element sizes of 1 to 8 bytes (a run of 4 bytes takes the word loop)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

RNG = np.random.default_rng(3)
CASES = {
    "trailing axes whole": ((1, 6, 5, 1), [0, 1], [1, 5], [0, 1], [1, 1]),
    "every axis whole": ((2, 3, 4), [0], [2], [0], [1]),
    "stepped last axis": ((3, 4, 9), [1, 0], [3, 9], [1, 2], [1, 3]),
    "negative steps": ((4, 5, 6), [3, 5], [0, 0], [0, 2], [-1, -2]),
    "whole inner rows, stepped middle": ((2, 8, 3, 2), [1], [8], [1], [3]),
}


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.int16, np.int64])
@pytest.mark.parametrize("case", list(CASES))
def test_slice_matches_onnxruntime(case: str, dtype: type) -> None:
    shape, starts, ends, axes, steps = CASES[case]
    x = (RNG.standard_normal(shape) * 50).astype(dtype)
    constants = {"starts": starts, "ends": ends, "axes": axes, "steps": steps}
    graph = helper.make_graph(
        [helper.make_node("Slice", ["x", *constants], ["y"])], "g",
        [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype), shape)],
        [helper.make_tensor_value_info("y", helper.np_dtype_to_tensor_dtype(x.dtype), None)],
        [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    expected = run_onnxruntime(model, {"x": x})["y"]
    ours = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    assert ours.shape == expected.shape and ours.dtype == expected.dtype
    np.testing.assert_array_equal(ours, expected)
