"""ConvTranspose: MIL `conv_transpose` with ONNX's weight layout, custom pads (output_padding taken off the end pad,
auto_pad and output_shape resolved as onnx's reference does), groups, strides and dilations; against `reference`."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

from edgepack.runtime.capability import graph_values
from edgepack.runtime.providers import PROVIDERS
from tests.output_error import relative_error

from .mil_cases import FP16_TOLERANCE, FP32_TOLERANCE, coreml_error, mil_ops, one_node

RNG = np.random.default_rng(9)


def case(spatial: int = 2, group: int = 1, bias: bool = True, **attrs):
    x = RNG.standard_normal((1, 4, *[5] * spatial)).astype(np.float32)
    weights = {"w": RNG.standard_normal((4, 6 // group if group > 1 else 3, *[3] * spatial)).astype(np.float32)}
    if bias:
        weights["b"] = RNG.standard_normal(weights["w"].shape[1] * group).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w", "b" if bias else ""], ["y"], group=group, **attrs)
    return one_node(node, {"x": x}, weights), {"x": x}


def test_pads_strides_dilations_and_output_padding() -> None:
    model, feeds = case(pads=[1, 0, 2, 2], strides=[2, 3], dilations=[1, 2], output_padding=[1, 2])
    [(op, args)] = mil_ops(model)
    assert op == "conv_transpose"
    assert args["pad_type"] == "custom" and args["pad"] == [1, 1, 0, 0]
    assert args["strides"] == [2, 3] and args["dilations"] == [1, 2] and args["groups"] == 1
    assert coreml_error(model, feeds) < FP32_TOLERANCE
    assert coreml_error(model, feeds, "fp16") < FP16_TOLERANCE


def test_pp_ocr_upsampling() -> None:
    """The det model's: 2x2 kernel, stride 2, no pads, no bias."""
    model, feeds = case(bias=False, kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0], dilations=[1, 1])
    model.graph.initializer[0].CopyFrom(helper.make_tensor("w", 1, [4, 3, 2, 2], RNG.standard_normal(48).tolist()))
    assert coreml_error(model, feeds) < FP32_TOLERANCE


@pytest.mark.parametrize("group", [2, 4])
def test_groups(group: int) -> None:
    """Against `reference` per group (group=1 on each slice of channels): onnx's reference slices a grouped weight
    along the wrong axis."""
    attrs = {"strides": [2, 2], "pads": [1, 1, 1, 1]}
    model, feeds = case(group=group, **attrs)
    [(_, args)] = mil_ops(model)
    assert args["groups"] == group
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    per_in, per_out = 4 // group, weights["w"].shape[1]
    expected = []
    for g in range(group):
        x = feeds["x"][:, g * per_in:(g + 1) * per_in]
        single = one_node(helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs), {"x": x},
                          {"w": weights["w"][g * per_in:(g + 1) * per_in],
                           "b": weights["b"][g * per_out:(g + 1) * per_out]})
        expected.append(PROVIDERS["reference"].compile(single, {}).run({"x": x})["y"])
    actual = PROVIDERS["coreml"].compile(model, {"compute_precision": "fp32"}).run(feeds)["y"]
    assert relative_error(np.concatenate(expected, axis=1), actual) < FP32_TOLERANCE


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_auto_pad_and_output_shape(auto_pad: str) -> None:
    model, feeds = case(auto_pad=auto_pad, strides=[2, 2], output_shape=[9, 10])
    [(_, args)] = mil_ops(model)
    assert args["pad"] == ([1, 1, 0, 1] if auto_pad == "SAME_UPPER" else [1, 1, 1, 0])
    assert coreml_error(model, feeds) < FP32_TOLERANCE


def test_1d() -> None:
    model, feeds = case(spatial=1, strides=[3], pads=[2, 1])
    assert coreml_error(model, feeds) < FP32_TOLERANCE


def test_output_padding_past_the_end_pad_is_refused() -> None:
    model, _ = case(strides=[2, 2], output_padding=[1, 1])
    refusal = PROVIDERS["coreml"].capability.graph_refusal(model.graph, {"": 17}, graph_values(model.graph))
    assert "output_padding" in refusal
