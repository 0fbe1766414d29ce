"""Softmax/LogSoftmax: one axis (opset 13) as MIL `softmax`; opset 11's flatten-at-axis over several axes, and
LogSoftmax, written out with the maximum taken off; against `reference`."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from edgepack.runtime.providers import PROVIDERS
from tests.output_error import relative_error

from .mil_cases import FP16_TOLERANCE, FP32_TOLERANCE, coreml_error, mil_ops, one_node, op_types

RNG = np.random.default_rng(19)
X = (RNG.standard_normal((2, 3, 4, 5)) * 4).astype(np.float32)


@pytest.mark.parametrize("axis", [1, -1])
def test_softmax_one_axis(axis: int) -> None:
    model = one_node(helper.make_node("Softmax", ["x"], ["y"], axis=axis), {"x": X}, opset=13)
    [(op, args)] = mil_ops(model)
    assert op == "softmax" and args["axis"] == axis % 4
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE
    assert coreml_error(model, {"x": X}, "fp16") < FP16_TOLERANCE


def test_opset_11_last_axis_is_one_softmax() -> None:
    """PP-OCR rec's Softmax (opset 12, axis = rank - 1)."""
    model = one_node(helper.make_node("Softmax", ["x"], ["y"], axis=3), {"x": X}, opset=12)
    assert op_types(model) == ["softmax"]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_opset_11_flattens_from_axis(op: str) -> None:
    """Against numpy, not `reference`: onnx's ReferenceEvaluator normalizes along `axis` alone before opset 13 too."""
    model = one_node(helper.make_node(op, ["x"], ["y"]), {"x": X}, opset=11)
    ops = mil_ops(model)
    assert ops[0] == ("reduce_max", {"axes": [1, 2, 3], "keep_dims": True})
    assert ops[3][1]["axes"] == [1, 2, 3]
    flat = X.reshape(2, -1).astype(np.float64)
    shifted = flat - flat.max(axis=1, keepdims=True)
    log = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    expected = (log if op == "LogSoftmax" else np.exp(log)).reshape(X.shape)
    actual = PROVIDERS["coreml"].compile(model, {"compute_precision": "fp32"}).run({"x": X})["y"]
    assert relative_error(expected, actual) < FP32_TOLERANCE


def test_log_softmax_one_axis() -> None:
    model = one_node(helper.make_node("LogSoftmax", ["x"], ["y"], axis=2), {"x": X}, opset=13)
    assert op_types(model) == ["reduce_max", "sub", "exp", "reduce_sum", "log", "sub"]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE
    assert coreml_error(model, {"x": X}, "fp16") < FP16_TOLERANCE
