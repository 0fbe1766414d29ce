"""The reference provider's fixes to onnx's evaluator against onnxruntime: its own ConvTranspose over the attributes
the node tests leave out (groups, output padding, dilations, asymmetric pads, an output shape with either SAME, 1-D
and 3-D; and in fp16), quiet Sigmoid, opset-7 BatchNormalization's `spatial`, GlobalMaxPool on 3-D inputs,
Softmax/LogSoftmax/Hardmax before opset 13."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from edgepack.runtime import Session
from tests.oracle import run_onnxruntime

CASES = {
    "groups-stride-2": ((1, 4, 5, 6), (4, 3, 3, 3), {"group": 2, "strides": [2, 2]}),
    "output-padding": ((2, 3, 4, 4), (3, 2, 3, 3), {"strides": [3, 2], "output_padding": [2, 1]}),
    "dilations-pads": ((1, 2, 6, 5), (2, 3, 3, 2), {"dilations": [2, 3], "pads": [1, 0, 2, 1]}),
    "output-shape-same-upper": ((1, 2, 4, 5), (2, 2, 3, 3), {"strides": [2, 2], "output_shape": [9, 11],
                                                            "auto_pad": "SAME_UPPER"}),
    "output-shape": ((1, 2, 4, 5), (2, 2, 4, 4), {"strides": [2, 2], "output_shape": [10, 9]}),
    "same-lower": ((1, 3, 3, 4), (3, 1, 4, 3), {"strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    "depthwise-2x2": ((1, 6, 7, 7), (6, 1, 2, 2), {"group": 6, "strides": [2, 2]}),
    "1d": ((2, 3, 9), (3, 4, 5), {"strides": [3], "pads": [2, 1]}),
    "3d": ((1, 2, 3, 4, 3), (2, 2, 2, 3, 2), {"strides": [1, 2, 2], "pads": [0, 1, 0, 1, 0, 1]}),
}


def conv_transpose(x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray, attributes: dict) -> onnx.ModelProto:
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attributes)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("case", CASES)
def test_conv_transpose_matches_onnxruntime(case: str) -> None:
    x_shape, w_shape, attributes = CASES[case]
    rng = np.random.default_rng(0)
    w = rng.standard_normal(w_shape).astype(np.float32)
    bias = rng.standard_normal(w_shape[1] * attributes.get("group", 1)).astype(np.float32)
    x = rng.standard_normal(x_shape).astype(np.float32)
    model = conv_transpose(x_shape, w, bias, attributes)
    expected = run_onnxruntime(model, {"x": x})["y"]
    actual = Session(model, providers=["reference"]).run({"x": x})["y"]
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


def test_fp16_conv_transpose_accumulates_in_fp32_and_rounds_once() -> None:
    x_shape, w_shape, attributes = CASES["groups-stride-2"]
    rng = np.random.default_rng(1)
    w, bias = rng.standard_normal(w_shape).astype(np.float16), rng.standard_normal(6).astype(np.float16)
    x = rng.standard_normal(x_shape).astype(np.float16)
    model = conv_transpose(x_shape, w, bias, attributes)
    model.graph.input[0].type.tensor_type.elem_type = onnx.TensorProto.FLOAT16
    model.graph.output[0].type.tensor_type.elem_type = onnx.TensorProto.FLOAT16
    actual = Session(model, providers=["reference"]).run({"x": x})["y"]
    wide = conv_transpose(x_shape, w.astype(np.float32), bias.astype(np.float32), attributes)
    expected = run_onnxruntime(wide, {"x": x.astype(np.float32)})["y"]
    assert actual.dtype == np.float16
    np.testing.assert_allclose(actual.astype(np.float32), expected, rtol=1e-3, atol=1e-3)


def test_sigmoid_of_large_inputs_is_exact_and_quiet() -> None:
    """onnx's Sigmoid computes both of its branches; the one not taken overflows for large |x|. The provider keeps
    numpy quiet about it, and the values are still 0 and 1 where onnxruntime gives them."""
    node = helper.make_node("Sigmoid", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [5])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    feeds = {"x": np.array([-1000.0, -90.0, 0.0, 90.0, 1000.0], np.float32)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        actual = Session(model, providers=["reference"]).run(feeds)["y"]
    np.testing.assert_allclose(actual, run_onnxruntime(model, feeds)["y"], atol=1e-7)


@pytest.mark.parametrize("spatial", [1, 0])
def test_opset_7_batch_normalization_takes_spatial(spatial: int) -> None:
    """paddle2onnx's opset-7 exports (PP-OCRv5 rec) write `spatial`, which onnx's evaluator refuses; 0 means one
    statistic per activation."""
    rng = np.random.default_rng(0)
    stats = (3, 4, 5) if spatial == 0 else (3,)
    names = ("scale", "bias", "mean", "var")
    arrays = [rng.random(stats, np.float32) + 0.5 for _ in names]
    node = helper.make_node("BatchNormalization", ["x", *names], ["y"], epsilon=1e-3, spatial=spatial)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 4, 5])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3, 4, 5])],
                              [numpy_helper.from_array(a, n) for a, n in zip(arrays, names)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 7)], ir_version=8)
    feeds = {"x": rng.standard_normal((2, 3, 4, 5)).astype(np.float32)}
    actual = Session(model, providers=["reference"]).run(feeds)["y"]
    np.testing.assert_allclose(actual, run_onnxruntime(model, feeds)["y"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(1, 5, 7), (2, 3, 4, 5), (1, 2, 3, 2, 2)])
def test_global_max_pool_keeps_the_channel_axis(shape: tuple[int, ...]) -> None:
    """onnx's evaluator reduced a 3-D input to (1, 1); magika's jax2tf export pools (1, 512, 508) to (1, 512, 1)."""
    node = helper.make_node("GlobalMaxPool", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    feeds = {"x": np.random.default_rng(0).standard_normal(shape).astype(np.float32)}
    actual = Session(model, providers=["reference"]).run(feeds)["y"]
    np.testing.assert_array_equal(actual, run_onnxruntime(model, feeds)["y"])


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize(("opset", "axis"), [(9, None), (11, 2), (11, -3), (13, None), (13, 1)])
def test_softmax_family_coerces_to_2d_before_opset_13(op: str, opset: int, axis: int | None) -> None:
    """onnx's kernels normalize over `axis` alone at every opset; opsets 1-12 flatten from `axis` (default 1):
    SqueezeNet's [1, 1000, 1, 1] head came out as all ones."""
    node = helper.make_node(op, ["x"], ["y"], **({} if axis is None else {"axis": axis}))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 4, 1])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3, 4, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=7)
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 3, 4, 1)).astype(np.float32)}
    actual = Session(model, providers=["reference"]).run(feeds)["y"]
    np.testing.assert_allclose(actual, run_onnxruntime(model, feeds)["y"], rtol=1e-5, atol=1e-6)
