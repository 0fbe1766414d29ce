"""Transpose on the `cpu` provider against numpy, exactly: 4-byte elements whose output's last axis is not the
input's move in tiles (sizes off the tile, several outer axes, axes of 1), and so do pairs of 4-byte values kept
as the last axis (8-byte elements); a last axis kept otherwise is copied a row at a time, and other sizes move element
by element."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from edgepack.runtime.providers import PROVIDERS

CASES = {
    "plane": ((512, 256), (1, 0)),
    "plane off the tile": ((37, 19), (1, 0)),
    "channels last": ((2, 5, 17, 33), (0, 2, 3, 1)),
    "heads": ((3, 40, 6, 21), (0, 2, 3, 1)),
    "outer axes around": ((4, 3, 18, 2), (2, 1, 0, 3)),
    "axes of one": ((1, 64, 1, 7), (0, 3, 2, 1)),
    "trailing axis of one": ((1, 40, 24, 1), (0, 2, 1, 3)),
    "merged neighbours": ((3, 4, 5, 6), (2, 3, 0, 1)),
    "last axis kept": ((6, 7, 9), (1, 0, 2)),
    "attention heads apart": ((1, 40, 6, 16), (0, 2, 1, 3)),
    "pairs kept last": ((1, 17, 40, 2), (0, 2, 1, 3)),
    "pairs kept last, three axes": ((3, 5, 7, 2), (2, 0, 1, 3)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("case", list(CASES))
def test_transpose_matches_numpy(case: str, dtype: type) -> None:
    shape, perm = CASES[case]
    rng = np.random.default_rng(len(shape) * 31 + sum(shape))
    x = (rng.standard_normal(shape) * 100).astype(dtype)
    if dtype == np.float32:
        x.view(np.uint32).flat[::7] = 0x7FC01234  # NaNs with a payload: moved as bits
    graph = helper.make_graph(
        [helper.make_node("Transpose", ["x"], ["y"], perm=list(perm))], "g",
        [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype), shape)],
        [helper.make_tensor_value_info("y", helper.np_dtype_to_tensor_dtype(x.dtype), None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    ours = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    expected = np.transpose(x, perm)
    assert ours.shape == expected.shape and ours.dtype == expected.dtype
    np.testing.assert_array_equal(ours.view(np.uint8), np.ascontiguousarray(expected).view(np.uint8))
