"""The Reduce ops as MIL `reduce_*`: axes from the attribute or a constant input, keepdims, every axis when none,
noop_with_empty_axes; against `reference`."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from .mil_cases import FP16_TOLERANCE, FP32_TOLERANCE, coreml_error, mil_ops, one_node, op_types

RNG = np.random.default_rng(23)
X = (RNG.random((2, 3, 4)) + 0.5).astype(np.float32)
OPS = [("ReduceMean", "reduce_mean"), ("ReduceSum", "reduce_sum"), ("ReduceMax", "reduce_max"),
       ("ReduceMin", "reduce_min"), ("ReduceProd", "reduce_prod"), ("ReduceL1", "reduce_l1_norm"),
       ("ReduceL2", "reduce_l2_norm"), ("ReduceSumSquare", "reduce_sum_square"), ("ReduceLogSum", "reduce_log_sum"),
       ("ReduceLogSumExp", "reduce_log_sum_exp")]


@pytest.mark.parametrize(("op", "mil"), OPS)
def test_axes_attribute(op: str, mil: str) -> None:
    model = one_node(helper.make_node(op, ["x"], ["y"], axes=[-1, 1], keepdims=0), {"x": X}, opset=11)
    assert mil_ops(model) == [(mil, {"axes": [-1, 1], "keep_dims": False})]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


def test_axes_input_keepdims() -> None:
    model = one_node(helper.make_node("ReduceMean", ["x", "axes"], ["y"]), {"x": X},
                     {"axes": np.array([2], np.int64)}, opset=18)
    assert mil_ops(model) == [("reduce_mean", {"axes": [2], "keep_dims": True})]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE
    assert coreml_error(model, {"x": X}, "fp16") < FP16_TOLERANCE


def test_no_axes_reduces_all_or_is_identity() -> None:
    model = one_node(helper.make_node("ReduceSum", ["x"], ["y"]), {"x": X}, opset=13)
    assert mil_ops(model) == [("reduce_sum", {"axes": [0, 1, 2], "keep_dims": True})]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE
    noop = one_node(helper.make_node("ReduceSum", ["x"], ["y"], noop_with_empty_axes=1), {"x": X}, opset=13)
    assert op_types(noop) == ["identity"]
