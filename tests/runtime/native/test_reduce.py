"""The Reduce family on the `cpu` provider against onnxruntime, by where the reduced axes lie: trailing (one row per
output), one block with kept axes on both sides or before only (rows added into the outputs), and apart (the
general walk). Rows of 76 values (eight at a time in vector lanes, then a tail), of both signs but for ReduceLogSum.
A NaN makes ReduceMax's and ReduceMin's result NaN, as numpy's max and min (and onnx's evaluator)
give it; onnxruntime drops it, so those two compare with numpy."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

RNG = np.random.default_rng(11)
KINDS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
         "ReduceSumSquare", "ReduceLogSum"]
AXES = {"trailing": [2, 3], "middle block": [1, 2], "leading block": [0, 1], "apart": [0, 2]}


@pytest.mark.parametrize("where", list(AXES))
@pytest.mark.parametrize("kind", KINDS)
def test_reduce_matches_onnxruntime(kind: str, where: str) -> None:
    x = RNG.uniform(0.5, 1.5, (3, 5, 4, 19)).astype(np.float32)
    if kind != "ReduceLogSum":
        x *= RNG.choice(np.array([-1, 1], np.float32), x.shape)
    if kind in ("ReduceMax", "ReduceMin"):
        x[1, 2, 3, 7] = np.nan
    graph = helper.make_graph([helper.make_node(kind, ["x", "axes"], ["y"], keepdims=0)], "g",
                              [helper.make_tensor_value_info("x", 1, x.shape)],
                              [helper.make_tensor_value_info("y", 1, None)],
                              [numpy_helper.from_array(np.array(AXES[where], np.int64), "axes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    if kind in ("ReduceMax", "ReduceMin"):
        expected = (np.max if kind == "ReduceMax" else np.min)(x, axis=tuple(AXES[where]))
    else:
        expected = run_onnxruntime(model, {"x": x})["y"]
    ours = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    assert ours.shape == expected.shape
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)
