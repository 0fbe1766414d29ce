"""Static int8 in QDQ form: each Conv, MatMul and Gemm with int8 weights reads its activation through a
QuantizeLinear/DequantizeLinear pair (uint8, asymmetric), its output (after a Relu or Clip that follows it) gets a
pair too, and its bias becomes int32 at the input scale times the weight scale. Runtimes that know QDQ (OpenVINO,
onnxruntime) fuse each group into one int8 op. The ranges come from running the calibration samples, clipped where
a value's readers saturate (`saturation.py`)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from . import Calibration, QuantizeResult, readers
from .int8_weights import Int8Weight, int8_weight, without_dead_code
from .ranges import RangeCollector, covering_scale_zero_point, scale_zero_point
from .saturation import UNBOUNDED, useful_interval
from .sensitivity import float_values, with_outputs

CLAMPS = {"Relu", "Clip"}
"""Activations that follow an op and are quantized in its place: the range after them is the one that matters."""


def static_qdq(model: onnx.ModelProto, keep: frozenset[str], calibration: Calibration) -> QuantizeResult:
    graph = model.graph
    producers = {out: node for node in graph.node for out in node.output}
    initializers = {t.name: t for t in graph.initializer}
    weights = {node.name: weight for node in graph.node if node.name not in keep
               and (weight := int8_weight(node, producers, initializers)) is not None}
    floats = float_values(model)
    floats.update({v.name: v for v in graph.input if v.type.tensor_type.elem_type == onnx.TensorProto.FLOAT})
    chosen = {name: node for name, node in ((n.name, n) for n in graph.node) if name in weights
              and node.input[0] in floats}
    readers_of: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            readers_of.setdefault(name, []).append(node)
    outputs = {o.name for o in graph.output}
    points = {node.input[0] for node in chosen.values()} | {_output_point(node, readers_of, outputs)
                                                            for node in chosen.values()}
    points = {name for name in points if name in floats and name not in initializers}
    ranges = _measure(model, {name: floats[name] for name in points}, calibration)
    every_reader = _every_reader(model)
    params = {name: _scale_zero_point(ranges[name], UNBOUNDED if name in outputs else useful_interval(
        name, every_reader.get(name, []), every_reader, initializers)) for name in points}
    biases = [dequantize for node in chosen.values() if (dequantize := _quantize_bias(
        graph, node, initializers.get(node.input[2]) if len(node.input) > 2 else None, weights[node.name],
        params[node.input[0]][0]))]
    for node in chosen.values():
        _with_zero_point(graph, weights[node.name].dequantize, np.int8)
    _insert_pairs(graph, params)
    nodes = [*biases, *graph.node]
    del graph.node[:]
    graph.node.extend(nodes)
    return QuantizeResult(without_dead_code(model), list(chosen), len(points))


def _output_point(node: onnx.NodeProto, readers_of: dict[str, list[onnx.NodeProto]], outputs: set[str]) -> str:
    """`node`'s output, or the output of the Relu/Clip that is its only reader."""
    output = node.output[0]
    consumers = readers_of.get(output, [])
    if len(consumers) == 1 and consumers[0].op_type in CLAMPS and output not in outputs:
        return consumers[0].output[0]
    return output


def _every_reader(model: onnx.ModelProto) -> dict[str, list[onnx.NodeProto]]:
    """For each value, the top-level nodes that read it, directly or inside their subgraphs."""
    nodes = {node.name: node for node in model.graph.node}
    return {value: [nodes[name] for name in names] for value, names in readers(model).items()}


def _scale_zero_point(measured: tuple[float, float], useful: tuple[float, float]) -> tuple[float, int]:
    """uint8 parameters for a value's measured range, clipped to where its readers do not saturate."""
    low, high = max(measured[0], useful[0]), min(measured[1], useful[1])
    if (low, high) == measured or not low <= 0.0 < high:
        return scale_zero_point(*measured, symmetric=False)
    return covering_scale_zero_point(low, high)


def _measure(model: onnx.ModelProto, values: dict[str, onnx.ValueInfoProto], calibration: Calibration
             ) -> dict[str, tuple[float, float]]:
    missing = {name: info for name, info in values.items() if name not in calibration.ranges}
    if missing:
        probe = with_outputs(model, missing)
        collector = RangeCollector(calibration.method)
        for feeds in calibration.samples:
            outputs = calibration.run(probe, feeds)
            for name in missing:
                collector.add(name, np.asarray(outputs[name]))
        calibration.ranges.update(collector.ranges())
    return {name: calibration.ranges[name] for name in values}


def _paired(name: str) -> str:
    return f"{name}__dq"


def _insert_pairs(graph: onnx.GraphProto, params: dict[str, tuple[float, int]]) -> None:
    """A Q/DQ pair after each value in `params`; every top-level reader then reads the dequantized value. A graph
    output keeps its name on the DequantizeLinear (its producer writes `<name>__float`), so that runtimes see the
    pair and fuse the op that makes it."""
    outputs = {o.name for o in graph.output}
    for name, (scale, zero_point) in params.items():
        graph.initializer.extend([numpy_helper.from_array(np.array(scale, np.float32), f"{name}__act_scale"),
                                  numpy_helper.from_array(np.array(zero_point, np.uint8), f"{name}__act_zero")])
    inputs = {v.name for v in graph.input}
    dequantized = {name: name if name in outputs and name not in inputs else _paired(name) for name in params}
    nodes = [node for name in params if name in inputs for node in _pair(name, dequantized[name])]
    for node in graph.node:
        node.input[:] = [dequantized.get(n, n) for n in node.input]
        nodes.append(node)
        for index, out in enumerate(node.output):
            if out in params and dequantized[out] == out:
                node.output[index] = f"{out}__float"
                nodes.extend(_pair(out, out, source=f"{out}__float"))
            elif out in params:
                nodes.extend(_pair(out, dequantized[out]))
    del graph.node[:]
    graph.node.extend(nodes)


def _pair(name: str, dequantized: str, source: str | None = None) -> list[onnx.NodeProto]:
    """QuantizeLinear of `source` (default `name`) with `name`'s scale and zero point, and its DequantizeLinear
    into `dequantized`."""
    inputs = [f"{name}__act_scale", f"{name}__act_zero"]
    return [helper.make_node("QuantizeLinear", [source or name, *inputs], [f"{name}__q"], f"{name}__quantize"),
            helper.make_node("DequantizeLinear", [f"{name}__q", *inputs], [dequantized], f"{name}__dequantize")]


def _quantize_bias(graph: onnx.GraphProto, node: onnx.NodeProto, bias: onnx.TensorProto | None, weight: Int8Weight,
                   input_scale: float) -> onnx.NodeProto | None:
    """Conv/Gemm bias as int32 at scale input_scale x weight scale, per output channel: the DequantizeLinear that
    now gives `node` its bias, or None where the bias is not a 1-D fp32 initializer or does not fit int32."""
    if node.op_type == "MatMul" or bias is None or bias.data_type != onnx.TensorProto.FLOAT or len(bias.dims) != 1:
        return None
    values = numpy_helper.to_array(bias).astype(np.float64)
    scale = (np.float32(input_scale) * weight.scale.astype(np.float32)).reshape(-1)
    if scale.size not in (1, values.size):
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        steps = values / scale.astype(np.float64)
    if not np.all(np.abs(steps) < 2**31 - 1):  # a near-zero weight scale: the bias does not fit int32
        return None
    quantized = np.rint(steps).astype(np.int32)
    name = f"{node.name}__bias"
    graph.initializer.extend([numpy_helper.from_array(quantized, f"{name}_int32"),
                              numpy_helper.from_array(np.broadcast_to(scale, values.shape).copy(), f"{name}_scale")])
    node.input[2] = name
    dequantize = helper.make_node("DequantizeLinear", [f"{name}_int32", f"{name}_scale"], [name],
                                  f"{name}__dequantize", axis=0)
    _with_zero_point(graph, dequantize, np.int32)
    return dequantize


def _with_zero_point(graph: onnx.GraphProto, dequantize: onnx.NodeProto, dtype: type) -> None:
    """Give a weight or bias DequantizeLinear its (zero) zero point explicitly: onnxruntime fuses Gemm into QGemm
    only then."""
    if len(dequantize.input) > 2:
        return
    scale = next(t for t in graph.initializer if t.name == dequantize.input[1])
    name = f"{dequantize.input[0]}__zero"
    graph.initializer.append(numpy_helper.from_array(np.zeros(list(scale.dims), dtype), name))
    dequantize.input.append(name)
