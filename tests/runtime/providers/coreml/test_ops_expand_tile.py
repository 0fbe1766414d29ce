"""Expand (MIL `tile`, after `expand_dims` when the rank grows) and Tile with constant repeats."""

from __future__ import annotations

import numpy as np
from onnx import helper

from .mil_cases import FP16_TOLERANCE, FP32_TOLERANCE, coreml_error, mil_ops, one_node

X = np.random.default_rng(17).standard_normal((3, 1, 4)).astype(np.float32)


def test_expand_broadcasts_with_tile() -> None:
    model = one_node(helper.make_node("Expand", ["x", "s"], ["y"]), {"x": X}, {"s": np.asarray([2, 1, 5, 1])})
    assert mil_ops(model) == [("expand_dims", {"axes": [0]}), ("tile", {"reps": [2, 1, 5, 1]})]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE
    assert coreml_error(model, {"x": X}, "fp16") < FP16_TOLERANCE


def test_expand_to_the_same_shape_is_identity() -> None:
    model = one_node(helper.make_node("Expand", ["x", "s"], ["y"]), {"x": X}, {"s": np.asarray([1, 1])})
    assert mil_ops(model) == [("identity", {})]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


def test_tile() -> None:
    model = one_node(helper.make_node("Tile", ["x", "r"], ["y"]), {"x": X}, {"r": np.asarray([1, 3, 2])})
    assert mil_ops(model) == [("tile", {"reps": [1, 3, 2]})]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE
