"""Conv: MIL `conv` with ONNX's pads reordered to MIL's (begin, end) per axis, groups, strides, dilations and
auto_pad, against `reference`."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from .mil_cases import FP16_TOLERANCE, FP32_TOLERANCE, coreml_error, mil_ops, one_node

RNG = np.random.default_rng(3)


def conv_case(spatial: int, group: int = 1, bias: bool = True, **attrs):
    x = RNG.standard_normal((1, 4, *[9] * spatial)).astype(np.float32)
    weights = {"w": RNG.standard_normal((6 if group == 1 else 4, 4 // group, *[3] * spatial)).astype(np.float32)}
    if bias:
        weights["b"] = RNG.standard_normal(weights["w"].shape[0]).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w", "b" if bias else ""], ["y"], group=group, **attrs)
    return one_node(node, {"x": x}, weights), {"x": x}


def test_pads_become_begin_end_per_axis() -> None:
    model, feeds = conv_case(2, pads=[1, 2, 0, 1], strides=[2, 1], dilations=[1, 2])
    [(op, args)] = mil_ops(model)
    assert op == "conv"
    assert args["pad_type"] == "custom" and args["pad"] == [1, 0, 2, 1]
    assert args["strides"] == [2, 1] and args["dilations"] == [1, 2] and args["groups"] == 1
    assert coreml_error(model, feeds) < FP32_TOLERANCE
    assert coreml_error(model, feeds, "fp16") < FP16_TOLERANCE


@pytest.mark.parametrize(("auto_pad", "pad_type"), [("SAME_UPPER", "same"), ("SAME_LOWER", "same_lower"),
                                                     ("VALID", "valid")])
def test_auto_pad(auto_pad: str, pad_type: str) -> None:
    model, feeds = conv_case(2, auto_pad=auto_pad, strides=[2, 2])
    [(_, args)] = mil_ops(model)
    assert args["pad_type"] == pad_type
    assert coreml_error(model, feeds) < FP32_TOLERANCE


@pytest.mark.parametrize("group", [2, 4])
def test_grouped_and_depthwise(group: int) -> None:
    model, feeds = conv_case(2, group=group, bias=False, pads=[1, 1, 1, 1])
    [(_, args)] = mil_ops(model)
    assert args["groups"] == group and "bias" not in args
    assert coreml_error(model, feeds) < FP32_TOLERANCE


def test_1d() -> None:
    model, feeds = conv_case(1, pads=[2, 1], strides=[2])
    [(_, args)] = mil_ops(model)
    assert args["pad"] == [2, 1]
    assert coreml_error(model, feeds) < FP32_TOLERANCE
