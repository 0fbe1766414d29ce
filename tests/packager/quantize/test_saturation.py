"""Quantization ranges clipped where a value's readers saturate: which readers saturate where, and a Conv followed
by HardSwish as exporters decompose it, quantized statically and run by onnxruntime against fp32."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from edgepack.packager.quantize import Calibration, quantize
from edgepack.packager.quantize.ranges import scale_zero_point
from edgepack.packager.quantize.saturation import UNBOUNDED, useful_interval
from edgepack.packager.quantize.sensitivity import with_outputs
from tests.oracle import run_onnxruntime

F = onnx.TensorProto.FLOAT


def scalar(name: str, value: float) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(value, np.float32), name)


def decomposed_hardswish(x: str, out: str, offset: str = "three") -> list[onnx.NodeProto]:
    """x * Clip(x + offset, 0, 6) / 6: HardSwish as exporters write it when `offset` is the constant 3."""
    return [helper.make_node("Add", [x, offset], [f"{out}_shifted"]),
            helper.make_node("Clip", [f"{out}_shifted", "zero", "six"], [f"{out}_gate"]),
            helper.make_node("Mul", [x, f"{out}_gate"], [f"{out}_scaled"]),
            helper.make_node("Div", [f"{out}_scaled", "six"], [out])]


CONSTANTS = [scalar("three", 3.0), scalar("two", 2.0), scalar("zero", 0.0), scalar("six", 6.0)]


def interval(nodes: list[onnx.NodeProto], value: str = "v") -> tuple[float, float]:
    readers_of: dict[str, list[onnx.NodeProto]] = {}
    for node in nodes:
        for name in node.input:
            readers_of.setdefault(name, []).append(node)
    return useful_interval(value, readers_of.get(value, []), readers_of, {t.name: t for t in CONSTANTS})


@pytest.mark.parametrize(("nodes", "expected"), [
    ([helper.make_node("HardSigmoid", ["v"], ["y"], alpha=0.2, beta=0.5)], (-2.5, 2.5)),
    ([helper.make_node("HardSigmoid", ["v"], ["y"], alpha=0.25, beta=0.25)], (-1.0, 3.0)),
    ([helper.make_node("HardSwish", ["v"], ["y"])], (-3.0, math.inf)),
    ([helper.make_node("Relu", ["v"], ["y"])], (0.0, math.inf)),
    ([helper.make_node("Clip", ["v", "zero", "six"], ["y"])], (0.0, 6.0)),
    ([helper.make_node("Clip", ["v", "", "six"], ["y"])], (-math.inf, 6.0)),
    ([helper.make_node("Clip", ["v", "zero", "six"], ["y"]), helper.make_node("HardSigmoid", ["v"], ["z"])],
     (-2.5, 6.0)),
    (decomposed_hardswish("v", "y"), (-3.0, math.inf)),
], ids=["hardsigmoid", "hardsigmoid-attributes", "hardswish", "relu", "clip", "clip-max-only", "hull",
        "decomposed-hardswish"])
def test_saturating_readers(nodes: list[onnx.NodeProto], expected: tuple[float, float]) -> None:
    assert interval(nodes) == pytest.approx(expected)


@pytest.mark.parametrize("nodes", [
    [helper.make_node("Clip", ["v", "low", "six"], ["y"])],
    [helper.make_node("Relu", ["v"], ["y"]), helper.make_node("Mul", ["v", "w"], ["z"])],
    [helper.make_node("Clip", ["w", "v", "six"], ["y"])],
    decomposed_hardswish("v", "y", offset="two"),
    [*decomposed_hardswish("v", "y")[:2], helper.make_node("Mul", ["w", "y_gate"], ["y_scaled"])],
    [],
], ids=["clip-min-not-constant", "one-reader-uses-all", "value-is-a-bound", "add-2-is-not-hardswish",
        "gate-times-another-value", "no-readers"])
def test_readers_that_use_every_value(nodes: list[onnx.NodeProto]) -> None:
    assert interval(nodes) == UNBOUNDED


def conv_hardswish_conv(channels: int = 8) -> onnx.ModelProto:
    """x -> 1x1 Conv -> decomposed HardSwish -> 1x1 Conv -> y. The first Conv's weights are on their int8 grid (each
    row's largest is 127/64) and its outputs mostly below -3."""
    rng = np.random.default_rng(0)
    grid = rng.integers(-127, 128, (channels, channels)).astype(np.float32)
    grid[:, 0] = 127.0
    weights = [numpy_helper.from_array((grid / 64.0).reshape(channels, channels, 1, 1), "w1"),
               numpy_helper.from_array(np.full(channels, -4.0, np.float32), "b1"),
               numpy_helper.from_array(rng.normal(0.0, 0.5, (channels, channels, 1, 1)).astype(np.float32), "w2")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1"), *decomposed_hardswish("c1", "h"),
             helper.make_node("Conv", ["h", "w2"], ["y"], name="conv2")]
    shape = [1, channels, 8, 8]
    graph = helper.make_graph(nodes, "conv_hardswish_conv", [helper.make_tensor_value_info("x", F, shape)],
                              [helper.make_tensor_value_info("y", F, shape)], [*weights, *CONSTANTS])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def test_a_conv_output_read_by_hardswish_is_quantized_from_minus_3() -> None:
    model = conv_hardswish_conv()
    rng = np.random.default_rng(1)

    def on_the_uint8_grid() -> dict[str, np.ndarray]:
        """Inputs in [-8, 7.9375] in steps of 1/16 (both ends in each), which uint8 quantization keeps exactly."""
        x = rng.integers(-128, 128, (1, 8, 8, 8)) / 16.0
        x.reshape(-1)[:2] = [-8.0, 127.0 / 16.0]
        return {"x": x.astype(np.float32)}

    samples = [on_the_uint8_grid() for _ in range(8)]
    held_out = [on_the_uint8_grid() for _ in range(8)]
    calibration = Calibration(samples, run_onnxruntime)
    result = quantize(model, "int8", activations="int8", calibration=calibration)
    tensors = {t.name: numpy_helper.to_array(t) for t in result.model.graph.initializer}
    scale, zero_point = float(tensors["c1__act_scale"]), int(tensors["c1__act_zero"])
    low, high = calibration.ranges["c1"]
    assert low < -6.0
    assert -3.0 - scale < -zero_point * scale <= -3.0
    assert high <= (255 - zero_point) * scale < high + scale

    unquantized = onnx.ModelProto()
    unquantized.CopyFrom(result.model)
    for node in unquantized.graph.node:
        node.input[:] = ["c1" if name == "c1__dq" else name for name in node.input]

    def error(quantized: onnx.ModelProto) -> float:
        """Mean |error| of the HardSwish output (before its own quantization) on the held-out inputs, against the
        same weights with c1 unquantized: the error of c1's range alone."""
        exposed = [with_outputs(m, {"h": helper.make_tensor_value_info("h", F, None)})
                   for m in (unquantized, quantized)]
        return float(np.mean([np.abs(run_onnxruntime(exposed[1], feeds)["h"] - run_onnxruntime(exposed[0], feeds)["h"])
                              .mean() for feeds in held_out]))

    measured = onnx.ModelProto()
    measured.CopyFrom(result.model)
    full_scale, full_zero_point = scale_zero_point(low, high, symmetric=False)
    for tensor in measured.graph.initializer:
        if tensor.name in ("c1__act_scale", "c1__act_zero"):
            value = np.array(full_scale, np.float32) if tensor.name.endswith("scale") else np.array(full_zero_point,
                                                                                                    np.uint8)
            tensor.CopyFrom(numpy_helper.from_array(value, tensor.name))
    assert error(result.model) < 0.6 * error(measured)


def test_a_graph_output_keeps_its_whole_range_whatever_reads_it() -> None:
    model = conv_hardswish_conv()
    model.graph.output.append(helper.make_tensor_value_info("c1", F, [1, 8, 8, 8]))
    rng = np.random.default_rng(2)
    calibration = Calibration([{"x": rng.normal(0.0, 2.0, (1, 8, 8, 8)).astype(np.float32)} for _ in range(4)],
                              run_onnxruntime)
    result = quantize(model, "int8", activations="int8", calibration=calibration)
    tensors = {t.name: numpy_helper.to_array(t) for t in result.model.graph.initializer}
    assert (float(tensors["c1__act_scale"]), int(tensors["c1__act_zero"])) == pytest.approx(
        scale_zero_point(*calibration.ranges["c1"], symmetric=False))
