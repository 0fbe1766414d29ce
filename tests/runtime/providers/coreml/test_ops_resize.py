"""Resize: nearest with whole scales as MIL `upsample_nearest_neighbor`, linear as `resize_bilinear` with the sampling
mode of each coordinate transformation; against `reference`, and the variants MIL does not match refused."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from edgepack.runtime.capability import graph_values
from edgepack.runtime.providers import PROVIDERS

from .mil_cases import FP16_TOLERANCE, FP32_TOLERANCE, coreml_error, mil_ops, one_node

RNG = np.random.default_rng(29)
X = RNG.standard_normal((1, 2, 4, 6)).astype(np.float32)
EMPTY = np.zeros(0, np.float32)


def resize(scales=None, sizes=None, opset: int = 13, **attrs):
    weights = {"roi": EMPTY, "scales": np.asarray(scales if scales is not None else [], np.float32)}
    inputs = ["x", "roi", "scales"]
    if sizes is not None:
        weights["sizes"] = np.asarray(sizes, np.int64)
        inputs.append("sizes")
    return one_node(helper.make_node("Resize", inputs, ["y"], **attrs), {"x": X}, weights, opset=opset)


def refusal(model) -> str | None:
    return PROVIDERS["coreml"].capability.graph_refusal(model.graph, {"": 13}, graph_values(model.graph))


def test_pp_ocr_det_nearest() -> None:
    """The det model's (opset 12): nearest, asymmetric, floor, scales 2."""
    model = resize([1, 1, 2, 2], opset=12, mode="nearest", coordinate_transformation_mode="asymmetric",
                   nearest_mode="floor")
    assert mil_ops(model) == [("upsample_nearest_neighbor", {"scale_factor_height": 2, "scale_factor_width": 2})]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE
    assert coreml_error(model, {"x": X}, "fp16") < FP16_TOLERANCE


def test_nearest_half_pixel_sizes() -> None:
    model = resize(sizes=[1, 2, 12, 6], mode="nearest", coordinate_transformation_mode="half_pixel")
    assert mil_ops(model)[0][1] == {"scale_factor_height": 3, "scale_factor_width": 1}
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


@pytest.mark.parametrize(("transform", "sampling", "sizes"), [
    ("half_pixel", "UNALIGN_CORNERS", [1, 2, 8, 12]), ("pytorch_half_pixel", "UNALIGN_CORNERS", [1, 2, 3, 4]),
    ("asymmetric", "DEFAULT", [1, 2, 7, 9]), ("align_corners", "STRICT_ALIGN_CORNERS", [1, 2, 5, 3])])
def test_linear(transform: str, sampling: str, sizes) -> None:
    model = resize(sizes=sizes, mode="linear", coordinate_transformation_mode=transform)
    [(op, args)] = mil_ops(model)
    assert op == "resize_bilinear" and args["sampling_mode"] == sampling
    assert [args["target_size_height"], args["target_size_width"]] == sizes[2:]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


def test_linear_scales() -> None:
    model = resize([1, 1, 2, 1.5], mode="linear")
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE
    assert coreml_error(model, {"x": X}, "fp16") < FP16_TOLERANCE


@pytest.mark.parametrize(("kwargs", "reason"), [
    ({"scales": [1, 1, 1.5, 1.5], "mode": "nearest"}, "whole"),
    ({"scales": [1, 1, 2, 2], "mode": "nearest", "coordinate_transformation_mode": "asymmetric",
      "nearest_mode": "ceil"}, "ceil"),
    ({"scales": [1, 1, 2, 2], "mode": "cubic"}, "cubic"),
    ({"scales": [1, 2, 2, 2], "mode": "linear"}, "last two axes"),
    ({"scales": [1, 1, 2, 2], "mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"},
     "tf_crop_and_resize"),
])
def test_refusals(kwargs, reason) -> None:
    assert reason in refusal(resize(**kwargs))
