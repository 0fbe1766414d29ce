"""Emitters of the quantized ops over run-time values: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv (the last two as an integer product and Requantize)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from edgepack.runtime.native.epk import ACTIVATIONS, ARENA, UNARY, Tensor

from ..values import DEQUANTIZE, DYNAMIC, QUANTIZE, ROUND_TRIP, Runtime, attributes
from . import dtype_of, emitter, shape_of, unsupported
from .nn_ops import _kernel2d, _spatial_params
from .tensor_ops import ACTIVATION_PARAM, FUSABLE, _fusing_producer, _set_activation

if TYPE_CHECKING:
    from ..lower import Lowering


def _optional(inputs: list[Any], index: int) -> Any:
    return inputs[index] if len(inputs) > index else None


@emitter("QuantizeLinear", "DequantizeLinear")
def emit_linear_quantization(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """(De)quantization with one scale, one per index along `axis`, or one per `block_size` indices there."""
    x, scale = inputs[0], inputs[1]
    rank = len(shape_of(x))
    attrs = attributes(node)
    axis = int(attrs.get("axis", 1)) % rank if rank else 0
    block = int(attrs.get("block_size", 0))
    if int(np.prod(shape_of(scale))) != 1 and block == 0 and len(shape_of(scale)) != 1:
        raise unsupported(node, "per-axis scales must be 1-D")
    if node.op_type == "DequantizeLinear" and block == 0 and _round_trip(lw, x, scale, _optional(inputs, 2)):
        lw.tensors[x.index] = Tensor(node.output[0], "float32", x.shape)
        _fold_into_producer(lw, x)
        return [Runtime(x.index, "float32", x.shape)]
    out, = lw.outputs(node, inputs)
    mode = QUANTIZE if node.op_type == "QuantizeLinear" else DEQUANTIZE
    lw.emit("Quantize", [x, scale, _optional(inputs, 2)], [out], [mode, axis, block])
    return [out]


def _round_trip(lw: Lowering, x: Any, scale: Any, zero: Any) -> bool:
    """Whether this DequantizeLinear of x undoes the QuantizeLinear that wrote x, which nothing else reads, with the
    same single scale and zero point (a QDQ model's pair around every activation, emitted just before or with other
    ops between, as an exporter orders three Q nodes then their three DQ nodes); if so that op now gives the pair's
    float32 result in one pass (mode ROUND_TRIP) and x is that output."""
    if not isinstance(x, Runtime) or zero is None or isinstance(scale, Runtime) or isinstance(zero, Runtime) or \
            np.size(scale) != 1 or np.asarray(zero).dtype.name not in ("int8", "uint8"):
        return False
    quantize = lw.writer(x.index)
    name = lw.tensors[x.index].name
    if quantize is None or quantize.kind != "Quantize" or quantize.params[::2] != [QUANTIZE, 0] or \
            quantize.outputs != [x.index] or len(quantize.inputs) < 3 or quantize.inputs[2] is None or \
            lw.uses.get(name, 0) != 1 or name in lw.graph_outputs:
        return False
    held_scale, held_zero = (lw.tensors[i].data for i in quantize.inputs[1:3])
    if held_scale is None or held_zero is None or held_zero.dtype != np.asarray(zero).dtype or \
            held_scale.size != 1 or held_scale.reshape(()) != np.asarray(scale).reshape(()) or \
            held_zero.reshape(()) != np.asarray(zero).reshape(()):
        return False
    quantize.params[0] = ROUND_TRIP
    return True


ACTIVATIONS_BEFORE_A_ROUND_TRIP = {UNARY[name]: name for name in FUSABLE - {"Relu"}}
"""The Unary kinds a round trip takes in as its activation (by kind, their name): the fusable ones that compute as
the fused activation does (Unary Relu keeps NaN, the activation gives 0)."""


def _fold_into_producer(lw: Lowering, x: Runtime) -> None:
    """The round trip that writes x folded into the op that wrote its input, when the input has no other reader (a
    QDQ model's pairs after every product and activation): after a Conv, ConvTranspose, Gemm or product with no
    activation yet, it becomes that op's activation and its own op a Copy whose output shares that op's buffer; after
    a Unary HardSwish, Sigmoid, Swish, HardSigmoid, LeakyRelu or Clip, that activation becomes the round trip's own,
    applied as it reads the Unary's input, and the Unary a Copy. Either way one pass over the values is left."""
    quantize = lw.writer(x.index)
    assert quantize is not None
    source = quantize.inputs[0]
    held = lw.tensors[source] if source is not None else None
    if held is None or held.dtype != "float32" or held.location != ARENA:
        return
    producer = _fusing_producer(lw, Runtime(source, held.dtype, held.shape), (*ACTIVATION_PARAM, "Unary"))
    if producer is None:
        return
    if producer.kind == "Unary":
        kind = ACTIVATIONS_BEFORE_A_ROUND_TRIP.get(producer.params[0])
        unary_input = producer.inputs[0]
        if kind is None or unary_input is None or lw.tensors[unary_input].location != ARENA:
            return
        quantize.inputs[0] = unary_input
        quantize.params += [ACTIVATIONS[kind], *producer.params[1:3]]
        producer.kind, producer.params = "Copy", []
        lw.aliases[source] = unary_input
        return
    scale, zero = (lw.tensors[i].data for i in quantize.inputs[1:3])
    kind = "RoundTripI8" if zero.dtype == np.int8 else "RoundTripU8"
    if not _set_activation(producer, kind, float(scale.reshape(())), float(zero.reshape(()))):
        return
    quantize.kind, quantize.inputs, quantize.params = "Copy", [source], []
    lw.aliases[x.index] = source


@emitter("DynamicQuantizeLinear")
def emit_dynamic_quantize(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    outputs = lw.outputs(node, inputs)
    lw.emit("Quantize", inputs[:1], outputs, [DYNAMIC, 0, 0])
    return outputs


def _as_3d(lw: Lowering, value: Any, name: str) -> Any:
    """A matrix operand as [batch, rows, columns] (a 2-D one gets a batch of 1)."""
    shape = shape_of(value)
    flat = (int(np.prod(shape[:-2])), shape[-2], shape[-1])
    if isinstance(value, Runtime):
        return lw.alias(f"{name}/3d", value, flat)
    return np.asarray(value).reshape(flat)


def _integer_matmul(lw: Lowering, node: onnx.NodeProto, a: Any, b: Any, a_zero: Any, b_zero: Any) -> Runtime:
    """The int32 product of the operands less their zero points, as [batch, M, N]."""
    if len(shape_of(a)) < 2 or len(shape_of(b)) < 2:
        raise unsupported(node, "operands of rank 2 or more only")
    a3, b3 = _as_3d(lw, a, f"{node.output[0]}/a"), _as_3d(lw, b, f"{node.output[0]}/b")
    batch = max(shape_of(a3)[0], shape_of(b3)[0])
    acc = lw.arena(f"{node.output[0]}/acc", "int32", (batch, shape_of(a3)[1], shape_of(b3)[2]))
    lw.emit("MatMulInteger", [a3, b3, a_zero, b_zero], [acc])
    return acc


@emitter("MatMulInteger")
def emit_matmul_integer(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    acc = _integer_matmul(lw, node, inputs[0], inputs[1], _optional(inputs, 2), _optional(inputs, 3))
    (_, shape), = lw.infer(node, inputs)
    return [lw.alias(node.output[0], acc, shape)]


@emitter("QLinearMatMul")
def emit_qlinear_matmul(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero = inputs
    acc = _integer_matmul(lw, node, a, b, a_zero, b_zero)
    (dtype, shape), = lw.infer(node, inputs)
    y = lw.arena(f"{node.output[0]}/3d", dtype, shape_of(acc))
    lw.emit("Requantize", [acc, a_scale, b_scale, y_scale, y_zero], [y], [2])
    return [lw.alias(node.output[0], y, shape)]


def _integer_conv(lw: Lowering, node: onnx.NodeProto, x: Any, w: Any, x_zero: Any, w_zero: Any, acc: Runtime) -> None:
    """`acc` (int32): the convolution of the operands less their zero points."""
    if len(shape_of(x)) not in (3, 4):
        raise unsupported(node, "1-D and 2-D convolutions only")
    kernel = list(shape_of(w)[2:])
    strides, begin, end, dilations = _spatial_params(node, shape_of(x)[2:], kernel)
    params = [int(attributes(node).get("group", 1)), *_kernel2d(kernel), *strides, *begin, *end, *dilations]
    lw.emit("ConvInteger", [x, w, x_zero, w_zero], [acc], params)


@emitter("ConvInteger")
def emit_conv_integer(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    out, = lw.outputs(node, inputs)
    _integer_conv(lw, node, inputs[0], inputs[1], _optional(inputs, 2), _optional(inputs, 3), out)
    return [out]


@emitter("QLinearConv")
def emit_qlinear_conv(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero = inputs[:8]
    if dtype_of(x_scale) != "float32":
        raise unsupported(node, "float32 scales only")
    out, = lw.outputs(node, inputs)
    acc = lw.arena(f"{node.output[0]}/acc", "int32", out.shape)
    _integer_conv(lw, node, x, w, x_zero, w_zero, acc)
    lw.emit("Requantize", [acc, x_scale, w_scale, y_scale, y_zero, _optional(inputs, 8)], [out], [1])
    return [out]
