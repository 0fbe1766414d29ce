"""Transpose: MIL `transpose` with ONNX's perm (reversed axes by default)."""

from __future__ import annotations

import numpy as np
from onnx import helper

from .mil_cases import FP16_TOLERANCE, FP32_TOLERANCE, coreml_error, mil_ops, one_node

X = np.random.default_rng(12).standard_normal((2, 3, 4, 5)).astype(np.float32)


def test_perm() -> None:
    model = one_node(helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 3, 1]), {"x": X})
    assert mil_ops(model) == [("transpose", {"perm": [0, 2, 3, 1]})]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE
    assert coreml_error(model, {"x": X}, "fp16") < FP16_TOLERANCE


def test_default_perm_reverses() -> None:
    model = one_node(helper.make_node("Transpose", ["x"], ["y"]), {"x": X})
    assert mil_ops(model) == [("transpose", {"perm": [3, 2, 1, 0]})]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE
