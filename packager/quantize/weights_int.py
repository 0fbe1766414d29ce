"""Weight-only integer quantization with standard ONNX DequantizeLinear: int8 symmetric per output channel, int4
symmetric in blocks along the reduction axis (opset 21). The graph then computes in fp32 on dequantized weights."""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgepack.runtime.graph_protos import iter_graph_protos

from . import MIN_ELEMENTS, Calibration, QuantizeResult, readers, register_weights
from .compensate import CompensatedRounding, Rounding, nearest
from .weight_slots import Slot, slot

BLOCK_SIZE = 32
"""Weights per int4 scale, at most."""
MIN_BLOCK = 8
"""Fewer weights per fp16 scale would cost more bytes than int8 per channel saves."""

INTEGER_LEVELS = 63
"""Steps each side of zero of an int8 weight that an op multiplies in integers (static or dynamic int8 compute), not
127. x86 CPUs without VNNI (AVX2 ones, such as the AMD EPYC this was found on) multiply uint8 by int8 with
vpmaddubsw, which adds two products in int16 and saturates: 255 x 127 x 2 overflows it, and onnxruntime's fused
QLinearConv and MatMulInteger then return wrong values (PP-OCR cls in int8 compute: top-1 agreement 0.59 where the
same QDQ model computed unfused gives 0.97). 255 x 63 x 2 fits on every CPU; onnxruntime's quantizer calls this
reduce_range."""

CLIP_RATIOS = np.linspace(0.5, 1.0, 26)
"""Each group's scale is the one of these fractions of its largest magnitude that gives the least squared error."""

TensorQuantizer = Callable[[onnx.GraphProto, onnx.TensorProto, np.ndarray, Slot, Rounding], list[onnx.NodeProto]]


def best_scales(groups: np.ndarray, levels: int) -> np.ndarray:
    """Per row of `groups` (rows x values), the symmetric scale with the least squared rounding error."""
    peak = np.max(np.abs(groups), axis=1, keepdims=True)
    peak = np.where(peak > 0, peak, 1.0)
    best, best_error = peak / levels, np.full(peak.shape, np.inf)
    for ratio in CLIP_RATIOS:
        scale = peak * ratio / levels
        error = np.sum((np.clip(np.rint(groups / scale), -levels, levels) * scale - groups) ** 2, axis=1,
                       keepdims=True)
        better = error < best_error
        best, best_error = np.where(better, scale, best), np.where(better, error, best_error)
    return best[:, 0]


def per_channel(levels: int) -> TensorQuantizer:
    """int8 symmetric per output channel, `levels` steps each side of zero."""

    def quantize_tensor(graph: onnx.GraphProto, tensor: onnx.TensorProto, weight: np.ndarray, where: Slot,
              rounding: Rounding) -> list[onnx.NodeProto]:
        axis = where.channel_axis
        rows = np.moveaxis(weight, axis, 0).reshape(weight.shape[axis], -1)
        scale = best_scales(rows, levels).astype(np.float32)
        shaped = scale.reshape([-1 if a == axis else 1 for a in range(weight.ndim)])
        quantized = rounding(weight, np.broadcast_to(shaped, weight.shape), -levels, levels).astype(np.int8)
        graph.initializer.extend([numpy_helper.from_array(quantized, f"{tensor.name}__int8"),
                                  numpy_helper.from_array(scale, f"{tensor.name}__scale")])
        return [helper.make_node("DequantizeLinear", [f"{tensor.name}__int8", f"{tensor.name}__scale"],
                                 [tensor.name], f"{tensor.name}__dequantize", axis=axis)]

    return quantize_tensor


int8_per_channel = per_channel(127)
int8_integer_per_channel = per_channel(INTEGER_LEVELS)
"""For weights that an op multiplies in integers."""


def block_length(length: int, most: int) -> int | None:
    """The largest block of at most `most` weights that divides a reduction axis of `length`, or None when that is
    under MIN_BLOCK. OpenVINO's ONNX reader refuses a partial last block, so blocks always divide the axis: a
    3x3 Conv over 16 channels (144 taps) gets blocks of 24, a depthwise 3x3 filter one block of 9."""
    block = next(size for size in range(min(most, length), 0, -1) if length % size == 0)
    return block if block >= MIN_BLOCK else None


def blocked(most: int, levels: int, dtype: type, kind: str) -> TensorQuantizer:
    """Symmetric blocks of at most `most` weights along the reduction axis (`block_length`), `levels` steps each
    side of zero, fp16 scales; an axis with no such block is int8 per channel instead."""

    def quantize_tensor(graph: onnx.GraphProto, tensor: onnx.TensorProto, weight: np.ndarray, where: Slot,
              rounding: Rounding) -> list[onnx.NodeProto]:
        name = tensor.name
        view = weight.reshape(weight.shape[0], -1) if where.flatten else weight
        axis = 1 if where.flatten else where.reduce_axis
        length = view.shape[axis]
        block_size = block_length(length, most)
        if block_size is None:
            return int8_per_channel(graph, tensor, weight, where, rounding)
        moved = np.moveaxis(view, axis, -1)
        grouped = moved.reshape(*moved.shape[:-1], length // block_size, block_size)
        scale = best_scales(grouped.reshape(-1, block_size), levels).reshape(grouped.shape[:-1]).astype(np.float16)
        scale = np.where(scale > 0, scale, np.float16(1.0))
        steps = np.moveaxis(np.repeat(scale.astype(np.float32), block_size, axis=-1), -1, axis)
        quantized = rounding(weight, steps.reshape(weight.shape), -levels - 1, levels).reshape(view.shape).astype(dtype)
        graph.initializer.extend([numpy_helper.from_array(quantized, f"{name}__{kind}"),
                                  numpy_helper.from_array(np.moveaxis(scale, -1, axis), f"{name}__scale")])
        dequantized = f"{name}__fp16" if not where.flatten else f"{name}__fp16_flat"
        nodes = [helper.make_node("DequantizeLinear", [f"{name}__{kind}", f"{name}__scale"], [dequantized],
                                  f"{name}__dequantize", axis=axis, block_size=block_size)]
        if where.flatten:
            graph.initializer.append(numpy_helper.from_array(np.array(weight.shape, np.int64), f"{name}__shape"))
            nodes.append(helper.make_node("Reshape", [dequantized, f"{name}__shape"], [f"{name}__fp16"],
                                          f"{name}__unflatten"))
        nodes.append(helper.make_node("Cast", [f"{name}__fp16"], [name], f"{name}__to_fp32",
                                      to=onnx.TensorProto.FLOAT))
        return nodes

    return quantize_tensor


def quantize_weights(model: onnx.ModelProto, keep: frozenset[str], calibration: Calibration | None,
                     quantizer: TensorQuantizer, kind: str, integer_ops: frozenset[str]) -> QuantizeResult:
    """Replace each fp32 weight that only weight slots read, all with the same axes, by `quantizer`'s nodes (by int8
    per channel at INTEGER_LEVELS where a top-level node of `integer_ops` reads it); with `calibration`, the weights
    of top-level Conv/MatMul/Gemm round with compensated errors (`compensate.py`)."""
    readers_of = readers(model)
    integer_nodes = {node.name for node in model.graph.node if node.op_type in integer_ops}
    compensated = CompensatedRounding(model, keep, calibration, kind) if calibration is not None else None
    quantized_for: set[str] = set()
    tensors = 0
    for graph in iter_graph_protos(model.graph):
        overridable = {value.name for value in graph.input}
        tensors_by_name = {t.name: t for t in graph.initializer}
        slots: dict[str, set[Slot | None]] = {}
        for node in graph.node:
            for index, name in enumerate(node.input):
                if name in tensors_by_name:
                    slots.setdefault(name, set()).add(slot(node, index, len(tensors_by_name[name].dims)))
        added: list[onnx.NodeProto] = []
        kept_initializers = []
        for tensor in list(graph.initializer):
            where = slots.get(tensor.name, set())
            users = readers_of.get(tensor.name, set())
            if (tensor.data_type != onnx.TensorProto.FLOAT or tensor.name in overridable or users & keep
                    or len(where) != 1 or None in where or int(np.prod(tensor.dims)) < MIN_ELEMENTS):
                kept_initializers.append(tensor)
                continue
            rounding = (compensated.rounding(tensor.name) if compensated and graph is model.graph else None) or nearest
            chosen = int8_integer_per_channel if users & integer_nodes else quantizer
            added.extend(chosen(graph, tensor, numpy_helper.to_array(tensor), next(iter(where)), rounding))
            quantized_for |= users
            tensors += 1
        fresh = [t for t in graph.initializer if t.name not in tensors_by_name]
        del graph.initializer[:]
        graph.initializer.extend([*kept_initializers, *fresh])
        nodes = [*added, *graph.node]
        del graph.node[:]
        graph.node.extend(nodes)
    return QuantizeResult(model, [n.name for n in model.graph.node if n.name in quantized_for], tensors)


@register_weights("int8")
def int8_weights(model: onnx.ModelProto, keep: frozenset[str], calibration: Calibration | None,
                 integer_ops: frozenset[str]) -> QuantizeResult:
    return quantize_weights(model, keep, calibration, int8_per_channel, "int8", integer_ops)


@register_weights("int4")
def int4_weights(model: onnx.ModelProto, keep: frozenset[str], calibration: Calibration | None,
                 integer_ops: frozenset[str]) -> QuantizeResult:
    return quantize_weights(model, keep, calibration, blocked(BLOCK_SIZE, 7, ml_dtypes.int4, "int4"), "int4",
                            integer_ops)

