"""Activation equalization before static int8: where a Conv's output reaches only depthwise Convs (through a Relu
or nothing), scale each of its channels up to the tensor's largest channel peak and divide the depthwise filters by
the same factor. The float model computes the same values, but the one per-tensor uint8 range between them no
longer spends most of its levels on a single loud channel. Both weights are quantized per channel, so the scales
cost their int8 form nothing."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from edgepack.runtime.capability import attribute

from . import Calibration
from .sensitivity import float_values, with_outputs

HOMOGENEOUS = {"Relu"}
"""Activations f with f(s * x) = s * f(x) for s > 0: a per-channel scale passes through them."""

MAX_FACTOR = 256.0
"""The largest scale given to a channel: a channel that was near zero on every sample stays as it is."""


def equalize_channels(model: onnx.ModelProto, calibration: Calibration) -> onnx.ModelProto:
    """A copy of `model` with each Conv -> [Relu] -> depthwise Conv chain equalized on the calibration samples."""
    equalized = onnx.ModelProto()
    equalized.CopyFrom(model)
    chains = equalizable_chains(equalized.graph)
    if not chains:
        return equalized
    peaks = channel_peaks(equalized, [middle for _, middle, _ in chains], calibration)
    initializers = {t.name: t for t in equalized.graph.initializer}
    for producer, middle, depthwise in chains:
        peak = peaks[middle]
        factor = np.where(peak > 0, np.minimum(peak.max() / np.maximum(peak, 1e-30), MAX_FACTOR), 1.0)
        _scale(initializers, producer, factor, divide=False)
        for node in depthwise:
            _scale(initializers, node, factor, divide=True)
    return equalized


def equalizable_chains(graph: onnx.GraphProto) -> list[tuple[onnx.NodeProto, str, list[onnx.NodeProto]]]:
    """(producer Conv, the value the depthwise Convs read, those Convs) for every chain whose weights and biases
    are initializers that nothing else reads."""
    initializers = {t.name: t for t in graph.initializer}
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    outputs = {o.name for o in graph.output}
    chains = []
    for node in graph.node:
        if not _own_weights(node, initializers, readers):
            continue
        channels = initializers[node.input[1]].dims[0]
        middle = node.output[0]
        after = readers.get(middle, [])
        if len(after) == 1 and after[0].op_type in HOMOGENEOUS and middle not in outputs:
            middle = after[0].output[0]
            after = readers.get(middle, [])
        if (after and middle not in outputs
                and all(_own_weights(n, initializers, readers) and n.input[0] == middle
                        and int(attribute(n, "group", 1)) == channels for n in after)):
            chains.append((node, middle, after))
    return chains


def _own_weights(node: onnx.NodeProto, initializers: dict[str, onnx.TensorProto],
                 readers: dict[str, list[onnx.NodeProto]]) -> bool:
    """A float Conv whose weight (and bias, if any) are initializers only it reads."""
    if node.op_type != "Conv" or node.domain not in ("", "ai.onnx") or len(node.input) < 2:
        return False
    params = [name for name in node.input[1:] if name]
    return all(name in initializers and initializers[name].data_type == onnx.TensorProto.FLOAT
               and len(readers.get(name, [])) == 1 for name in params)


def channel_peaks(model: onnx.ModelProto, values: list[str], calibration: Calibration) -> dict[str, np.ndarray]:
    """Largest |value| per channel (axis 1) of each of `values` over the calibration samples."""
    infos = float_values(model)
    probe = with_outputs(model, {name: infos[name] for name in values if name in infos})
    peaks: dict[str, np.ndarray] = {}
    for feeds in calibration.samples:
        outputs = calibration.run(probe, feeds)
        for name in values:
            data = np.abs(np.asarray(outputs[name], np.float64))
            data = np.where(np.isfinite(data), data, 0.0)
            peak = data.max(axis=tuple(i for i in range(data.ndim) if i != 1))
            peaks[name] = np.maximum(peaks[name], peak) if name in peaks else peak
    return peaks


def _scale(initializers: dict[str, onnx.TensorProto], node: onnx.NodeProto, factor: np.ndarray,
           divide: bool) -> None:
    """Multiply (or divide) `node`'s output channels by `factor`: its filters, and its bias unless dividing (a
    depthwise Conv's input is scaled, not its output, so its bias stays)."""
    weight = initializers[node.input[1]]
    values = numpy_helper.to_array(weight).astype(np.float64)
    per_filter = np.repeat(factor, values.shape[0] // factor.size).reshape(-1, *[1] * (values.ndim - 1))
    weight.CopyFrom(numpy_helper.from_array((values / per_filter if divide else values * per_filter)
                                            .astype(np.float32), weight.name))
    if not divide and len(node.input) > 2 and node.input[2]:
        bias = initializers[node.input[2]]
        scaled = numpy_helper.to_array(bias).astype(np.float64) * factor
        bias.CopyFrom(numpy_helper.from_array(scaled.astype(np.float32), bias.name))
