"""MaxPool/AveragePool as MIL `max_pool`/`avg_pool` (pads, strides, count_include_pad, ceil_mode where MIL matches
ONNX) and the global pools as reductions; against `reference`."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from edgepack.runtime.capability import graph_values
from edgepack.runtime.providers import PROVIDERS

from .mil_cases import FP16_TOLERANCE, FP32_TOLERANCE, coreml_error, mil_ops, one_node

RNG = np.random.default_rng(13)
X = RNG.standard_normal((1, 3, 9, 8)).astype(np.float32)


def refusal(model) -> str | None:
    return PROVIDERS["coreml"].capability.graph_refusal(model.graph, {"": 17}, graph_values(model.graph))


@pytest.mark.parametrize(("op", "mil"), [("MaxPool", "max_pool"), ("AveragePool", "avg_pool")])
def test_pads_and_strides(op: str, mil: str) -> None:
    model = one_node(helper.make_node(op, ["x"], ["y"], kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1]),
                     {"x": X})
    [(got, args)] = mil_ops(model)
    assert got == mil and args["pad"] == [1, 1, 0, 1] and args["kernel_sizes"] == [3, 2]
    assert args["strides"] == [2, 1] and args["ceil_mode"] is False
    if op == "AveragePool":
        assert args["exclude_padding_from_average"] is True
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE
    assert coreml_error(model, {"x": X}, "fp16") < FP16_TOLERANCE


def test_count_include_pad() -> None:
    model = one_node(helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                      count_include_pad=1), {"x": X})
    [(_, args)] = mil_ops(model)
    assert args["exclude_padding_from_average"] is False
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


def test_pp_ocr_rec_average_pool() -> None:
    x = RNG.standard_normal((1, 4, 12, 10)).astype(np.float32)
    model = one_node(helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 2], strides=[3, 2],
                                      pads=[0, 0, 0, 0], ceil_mode=0, count_include_pad=0), {"x": x}, opset=12)
    assert coreml_error(model, {"x": x}) < FP32_TOLERANCE


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_ceil_mode(op: str) -> None:
    model = one_node(helper.make_node(op, ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                      ceil_mode=1), {"x": X})
    [(_, args)] = mil_ops(model)
    assert args["ceil_mode"] is True
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


def test_same_upper() -> None:
    model = one_node(helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                      auto_pad="SAME_UPPER"), {"x": X})
    [(_, args)] = mil_ops(model)
    assert args["pad_type"] == "same"
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


@pytest.mark.parametrize(("attrs", "reason"), [
    ({"dilations": [2, 2]}, "dilations"),
    ({"ceil_mode": 1, "pads": [1, 1, 0, 0], "strides": [2, 2]}, "asymmetric"),
    ({"ceil_mode": 1, "strides": [4, 4]}, "past the input"),
])
def test_refusals(attrs, reason) -> None:
    model = one_node(helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], **attrs), {"x": X})
    assert reason in refusal(model)


@pytest.mark.parametrize(("op", "mil"), [("GlobalAveragePool", "reduce_mean"), ("GlobalMaxPool", "reduce_max")])
def test_global(op: str, mil: str) -> None:
    model = one_node(helper.make_node(op, ["x"], ["y"]), {"x": X})
    [(got, args)] = mil_ops(model)
    assert got == mil and args["axes"] == [2, 3] and args["keep_dims"] is True
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE
