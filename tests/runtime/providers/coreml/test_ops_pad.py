"""Pad: MIL `pad` over the trailing padded axes (constant, reflect, edge as replicate); negative pads crop."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from edgepack.runtime.providers import PROVIDERS

from .mil_cases import FP16_TOLERANCE, FP32_TOLERANCE, coreml_error, mil_ops, one_node

X = np.random.default_rng(15).standard_normal((1, 3, 4, 5)).astype(np.float32)


def pads(*values: int) -> np.ndarray:
    return np.asarray(values, np.int64)


@pytest.mark.parametrize(("mode", "mil_mode"), [("constant", "constant"), ("reflect", "reflect"),
                                                ("edge", "replicate")])
def test_modes_pad_the_trailing_axes(mode: str, mil_mode: str) -> None:
    model = one_node(helper.make_node("Pad", ["x", "p"], ["y"], mode=mode), {"x": X},
                     {"p": pads(0, 0, 1, 2, 0, 0, 2, 1)})
    [(op, args)] = mil_ops(model)
    assert op == "pad" and args["mode"] == mil_mode and args["pad"] == [1, 2, 2, 1]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


def test_constant_value_and_fp16() -> None:
    model = one_node(helper.make_node("Pad", ["x", "p", "v"], ["y"]), {"x": X},
                     {"p": pads(0, 1, 0, 0, 0, 2, 0, 3), "v": np.float32(1.5)})
    [(op, args)] = mil_ops(model)
    assert args["pad"] == [1, 2, 0, 0, 0, 3] and args["constant_val"] == 1.5
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE
    assert coreml_error(model, {"x": X}, "fp16") < FP16_TOLERANCE


def test_axes_input() -> None:
    model = one_node(helper.make_node("Pad", ["x", "p", "", "a"], ["y"]), {"x": X},
                     {"p": pads(1, 2, 3, 0), "a": pads(1, -1)}, opset=18)
    [(_, args)] = mil_ops(model)
    assert args["pad"] == [1, 3, 0, 0, 2, 0]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


def test_before_opset_11_reads_attributes() -> None:
    model = one_node(helper.make_node("Pad", ["x"], ["y"], pads=[0, 0, 1, 1, 0, 0, 1, 1], value=2.0), {"x": X},
                     opset=10)
    [(_, args)] = mil_ops(model)
    assert args["pad"] == [1, 1, 1, 1] and args["constant_val"] == 2.0
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


def test_negative_pads_crop() -> None:
    """onnx's reference cannot run negative pads; numpy gives the expected result."""
    model = one_node(helper.make_node("Pad", ["x", "p"], ["y"]), {"x": X}, {"p": pads(0, 0, 1, -1, 0, 0, -2, 2)})
    assert [op for op, _ in mil_ops(model)] == ["pad", "slice_by_index"]
    result = PROVIDERS["coreml"].compile(model, {}).run({"x": X})["y"]
    # axis 2: one row before, two cropped at the end; axis 3: one column cropped at the start, two after
    expected = np.pad(X, [(0, 0), (0, 0), (1, 0), (0, 2)])[:, :, :-2, 1:]
    np.testing.assert_array_equal(result, expected)
