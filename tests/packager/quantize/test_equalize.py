"""Activation equalization on PP-OCR cls: the float model computes the same outputs, and the values between each
Conv and the depthwise Convs it feeds have their channel peaks evened out."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from edgepack import samples
from edgepack.model_check import check_model
from edgepack.packager.quantize import Calibration
from edgepack.packager.quantize.equalize import channel_peaks, equalizable_chains, equalize_channels
from edgepack.runtime.model_file import load_model
from edgepack.verify import compare
from tests.oracle import run_onnxruntime

from .test_activations_int8 import at_opset_13, run_unoptimized, text_lines


@pytest.fixture(scope="module")
def cls() -> onnx.ModelProto:
    return at_opset_13(check_model(load_model(samples.path("ppocr-cls")).model, "ppocr-cls"))


def test_equalized_model_computes_the_same_and_evens_channel_peaks(cls: onnx.ModelProto) -> None:
    calibration = Calibration(text_lines(1, 4), run_unoptimized)
    equalized = equalize_channels(cls, calibration)
    chains = equalizable_chains(cls.graph)
    assert len(chains) >= 3
    middles = [middle for _, middle, _ in chains]
    before, after = channel_peaks(cls, middles, calibration), channel_peaks(equalized, middles, calibration)
    spread = {name: (peaks.max() / np.median(peaks[peaks > 0])) for name, peaks in before.items()}
    evened = {name: (peaks.max() / np.median(peaks[peaks > 0])) for name, peaks in after.items()}
    assert all(evened[name] <= spread[name] + 1e-6 for name in middles)
    assert np.median([evened[name] for name in middles]) < 1.01 < np.median([spread[name] for name in middles])
    feeds = text_lines(7, 1)[0]
    expected, actual = run_onnxruntime(cls, feeds), run_onnxruntime(equalized, feeds)
    for name in expected:  # float rounding only: the scales cancel exactly in real arithmetic
        assert compare(expected[name], actual[name])["cosine"] >= 0.999999
        assert np.max(np.abs(expected[name] - actual[name])) <= 1e-4


def test_a_model_without_chains_is_returned_unchanged() -> None:
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4])
    model = onnx.helper.make_model(onnx.helper.make_graph([onnx.helper.make_node("Relu", ["x"], ["y"])], "g", [x],
                                                          [y]))
    calibration = Calibration([{"x": np.ones((1, 4), np.float32)}], run_unoptimized)
    assert equalize_channels(model, calibration) == model
