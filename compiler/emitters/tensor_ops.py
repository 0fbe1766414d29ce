"""Emitters of elementwise, shape and layout ops."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from edgepack.runtime.native import epk
from edgepack.runtime.native.epk import ACTIVATIONS, BINARY, F32, UNARY

from ..values import Runtime, Value, attributes
from . import FLOAT_MAX, constant, dtype_of, emitter, shape_of, unsupported

if TYPE_CHECKING:
    from ..lower import Lowering


@emitter("Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Dropout")
def emit_reshape(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """The reshape family as a Copy that shares its buffer; Dropout at inference, whose mask is all true."""
    training = constant(node, inputs[2], "training mode") if node.op_type == "Dropout" and len(inputs) > 2 else None
    if training is not None and bool(training):
        raise unsupported(node, "training mode is not supported")
    (dtype, shape), *_ = lw.infer(node, inputs)
    source = inputs[0]
    mask = [np.ones(shape, bool)] if node.op_type == "Dropout" and len(node.output) > 1 and node.output[1] else []
    if not isinstance(source, Runtime):
        return [np.asarray(source).reshape(shape), *mask]
    return [lw.alias(node.output[0], source, shape), *mask]


# elementwise


def binary(lw: Lowering, kind: str, a: Value, b: Value, name: str) -> Runtime:
    compare = kind in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor")
    shape = np.broadcast_shapes(shape_of(a), shape_of(b))
    out = lw.arena(name, "bool" if compare else dtype_of(a), shape)
    lw.emit("Binary", [a, b], [out], [BINARY[kind]])
    return out


SHIFTS = {"BitShiftLeft", "BitShiftRight"}


@emitter(*[k for k in BINARY if k not in SHIFTS and k != "Fmod"])
def emit_binary(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    a, b = inputs
    if node.op_type == "Pow" and dtype_of(b) != dtype_of(a) and not isinstance(b, Runtime):
        b = np.asarray(b).astype(dtype_of(a))
    if len(inputs) != 2:
        raise unsupported(node, "variadic form")
    kind = "Fmod" if node.op_type == "Mod" and attributes(node).get("fmod", 0) else node.op_type
    if kind == "Add" and (fused := _fuse_bias(lw, node, a, b)) is not None:
        return [fused]
    if kind in ("Mul", "Add") and (fused := _fuse_affine(lw, node, a, b)) is not None:
        return [fused]
    return [binary(lw, kind, a, b, node.output[0])]


@emitter("BitShift")
def emit_bit_shift(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    kind = "BitShiftLeft" if attributes(node)["direction"] == "LEFT" else "BitShiftRight"
    return [binary(lw, kind, inputs[0], inputs[1], node.output[0])]


@emitter("Sum", "Mean")
def emit_variadic(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    kind = {"Sum": "Add", "Mean": "Add"}[node.op_type]
    result = inputs[0]
    for k, value in enumerate(inputs[1:]):
        last = k == len(inputs) - 2 and node.op_type != "Mean"
        result = binary(lw, kind, result, value, node.output[0] if last else f"{node.output[0]}/{k}")
    if node.op_type == "Mean":
        scale = np.array(1.0 / len(inputs), dtype=dtype_of(result))
        result = binary(lw, "Mul", result, scale, node.output[0])
    elif len(inputs) == 1:
        result = lw.alias(node.output[0], result, shape_of(result)) if isinstance(result, Runtime) else result
    return [result]


@emitter("Max", "Min")
def emit_extreme(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    result = inputs[0]
    for k, value in enumerate(inputs[1:]):
        last = k == len(inputs) - 2
        result = binary(lw, node.op_type, result, value, node.output[0] if last else f"{node.output[0]}/{k}")
    if len(inputs) == 1:
        result = lw.alias(node.output[0], result, shape_of(result))
    return [result]


def unary_params(node: onnx.NodeProto, inputs: list[Any], opset: int) -> tuple[str, float, float]:
    """The plan's unary kind and its two float parameters for this node."""
    attrs = attributes(node)
    op = node.op_type
    if op == "Clip":
        if opset < 11:
            return "Clip", attrs.get("min", -FLOAT_MAX), attrs.get("max", FLOAT_MAX)
        low = constant(node, inputs[1] if len(inputs) > 1 else None, "min")
        high = constant(node, inputs[2] if len(inputs) > 2 else None, "max")
        return "Clip", -FLOAT_MAX if low is None else float(low), FLOAT_MAX if high is None else float(high)
    if op == "Gelu":
        return ("GeluTanh" if attrs.get("approximate", "none") == "tanh" else "Gelu"), 0.0, 0.0
    (a, a_default), (b, b_default) = UNARY_ATTRIBUTES.get(op, (("alpha", 0.0), ("beta", 0.0)))
    return op, float(attrs.get(a, a_default)), float(attrs.get(b, b_default))


UNARY_ATTRIBUTES = {
    "LeakyRelu": (("alpha", 0.01), ("beta", 0.0)), "HardSigmoid": (("alpha", 0.2), ("beta", 0.5)),
    "Elu": (("alpha", 1.0), ("beta", 0.0)), "Celu": (("alpha", 1.0), ("beta", 0.0)),
    "ThresholdedRelu": (("alpha", 1.0), ("beta", 0.0)),
    "Selu": (("alpha", 1.67326319217681884765625), ("gamma", 1.05070102214813232421875)),
    "Shrink": (("lambd", 0.5), ("bias", 0.0)), "IsInf": (("detect_positive", 1), ("detect_negative", 1)),
}
"""The attributes a unary kind takes as its parameters a and b, with their defaults."""


FUSABLE = {"Relu", "Clip", "HardSigmoid", "LeakyRelu", "HardSwish", "Sigmoid", "Swish"}


@emitter(*[k for k in UNARY if k != "GeluTanh"])
def emit_unary(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    kind, a, b = unary_params(node, inputs, lw.opset)
    source = inputs[0]
    if kind in FUSABLE and _fuse(lw, source, node, kind, a, b):
        return [Runtime(source.index, source.dtype, source.shape)]
    dtype = "bool" if kind in ("IsNaN", "IsInf") else dtype_of(source)
    out = lw.arena(node.output[0], dtype, shape_of(source))
    lw.emit("Unary", [source], [out], [UNARY[kind], F32(a), F32(b)])
    return [out]


ACTIVATION_PARAM = {"Conv": 12, "ConvTranspose": 12, "Gemm": 4, "PackedMatMul": 1, "Int8MatMul": 1,
                    "RoundTripMatMul": 0}
"""The ops with a fused activation, and where it sits in their parameters (then its a and b)."""


def _fusing_producer(lw: Lowering, source: Value, kinds: Iterable[str] = ACTIVATION_PARAM) -> epk.Op | None:
    """The op of one of `kinds` (by default the Conv, Gemm, PackedMatMul or Int8MatMul) that wrote `source`, when
    `source` is its only output, read only once (by the node being lowered, so no op between them reads it) and no
    graph output."""
    if not isinstance(source, Runtime):
        return None
    producer = lw.writer(source.index)
    name = lw.tensors[source.index].name
    if producer is None or producer.kind not in kinds or producer.outputs != [source.index]:
        return None
    if lw.uses.get(name, 0) != 1 or name in lw.graph_outputs:
        return None
    return producer


def _fuse(lw: Lowering, source: Value, node: onnx.NodeProto, kind: str, a: float, b: float) -> bool:
    """Folds the activation into the Conv, Gemm, PackedMatMul or Int8MatMul that wrote `source` when it is that op's
    only reader."""
    producer = _fusing_producer(lw, source)
    if producer is None or not _set_activation(producer, kind, a, b):
        return False
    lw.tensors[source.index].name = node.output[0]
    return True


def _set_activation(producer: epk.Op, kind: str, a: float, b: float) -> bool:
    """Sets the fused activation of `producer` (a Conv, Gemm or product) to `kind` with a and b, where it has none
    yet; False where it has one."""
    act = ACTIVATION_PARAM[producer.kind]
    if producer.params[act] != ACTIVATIONS["None"]:
        return False
    producer.params[act:act + 3] = [ACTIVATIONS[kind], F32(a), F32(b)]
    return True


BIAS_INPUT = {"PackedMatMul": 2, "Int8MatMul": 6}
"""The products by a constant weight that take a bias per column, and its input."""
BIAS_AFTER_ROUND_TRIP_INPUT = 7
"""Int8MatMul's input of a bias per column added after its activation, where that is its output's round trip."""
ROUND_TRIPS = (ACTIVATIONS["RoundTripU8"], ACTIVATIONS["RoundTripI8"])


def _round_tripped_int8_matmul(lw: Lowering, source: Value) -> epk.Op | None:
    """The Int8MatMul whose output's round trip (folded into it as its activation, its own op left a Copy sharing
    the buffer) gives `source`, when each of the two is the other's only reader (`_fusing_producer`, both ways)."""
    copy = _fusing_producer(lw, source, ("Copy",))
    if copy is None or lw.aliases.get(source.index) != copy.inputs[0]:
        return None
    held = lw.tensors[copy.inputs[0]]
    product = _fusing_producer(lw, Runtime(copy.inputs[0], held.dtype, held.shape), ("Int8MatMul",))
    return product if product is not None and product.params[1] in ROUND_TRIPS else None


def _fuse_bias(lw: Lowering, node: onnx.NodeProto, a: Value, b: Value) -> Runtime | None:
    """x + bias, bias a float32 constant row of x's N columns, where x is the output of a PackedMatMul or Int8MatMul
    without a bias or activation yet (a Linear layer exported as MatMul and Add), or the round trip of an
    Int8MatMul's output (a QDQ Linear's bias, added after QuantizeLinear and DequantizeLinear): the bias goes into the
    product's epilogue, before or after its activation; None where it does not apply."""
    source, value = (a, b) if isinstance(a, Runtime) else (b, a)
    if isinstance(value, Runtime):
        return None
    producer = _fusing_producer(lw, source)
    if producer is not None and producer.kind in BIAS_INPUT and \
            producer.params[ACTIVATION_PARAM[producer.kind]] == ACTIVATIONS["None"]:
        slot = BIAS_INPUT[producer.kind]
    elif (producer := _round_tripped_int8_matmul(lw, source)) is not None:
        slot = BIAS_AFTER_ROUND_TRIP_INPUT
    else:
        return None
    value, n = np.asarray(value), shape_of(source)[-1]
    if value.dtype != np.float32 or value.size != n or value.shape[-1:] != (n,) or \
            value.ndim > len(shape_of(source)):
        return None
    if len(producer.inputs) > slot and producer.inputs[slot] is not None:
        return None
    producer.inputs += [None] * (slot + 1 - len(producer.inputs))
    producer.inputs[slot] = lw.tensor(value.reshape(n), f"{node.output[0]}/bias")
    lw.tensors[source.index].name = node.output[0]
    return Runtime(source.index, source.dtype, source.shape)


def _fuse_affine(lw: Lowering, node: onnx.NodeProto, a: Value, b: Value) -> Runtime | None:
    """x * c or x + c, c a float32 constant of one element, where x is a HardSwish fused into the op that wrote x
    (PP-LCNetV3's learnable affine block): folded into that op's activation, HardSwishAffine (scale * HardSwish(x) +
    shift); None where it does not apply."""
    source, value = (a, b) if isinstance(a, Runtime) else (b, a)
    producer = _fusing_producer(lw, source)
    if producer is None or isinstance(value, Runtime) or dtype_of(source) != "float32":
        return None
    value = np.asarray(value)
    if value.dtype != np.float32 or value.size != 1 or value.ndim > len(shape_of(source)):
        return None
    act = ACTIVATION_PARAM[producer.kind]
    kind, scale, shift = producer.params[act:act + 3]
    if kind == ACTIVATIONS["HardSwish"]:
        scale, shift = 1.0, 0.0
    elif kind != ACTIVATIONS["HardSwishAffine"]:
        return None
    c = float(value.reshape(()))
    scale, shift = (scale * c, shift * c) if node.op_type == "Mul" else (scale, shift + c)
    producer.params[act:act + 3] = [ACTIVATIONS["HardSwishAffine"], F32(scale), F32(shift)]
    lw.tensors[source.index].name = node.output[0]
    return Runtime(source.index, source.dtype, source.shape)


@emitter("Where")
def emit_where(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    out, = lw.outputs(node, inputs)
    lw.emit("Where", inputs, [out])
    return [out]


@emitter("Expand")
def emit_expand(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    out, = lw.outputs(node, inputs)
    lw.emit("Expand", inputs[:1], [out])
    return [out]


@emitter("Cast", "CastLike")
def emit_cast(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """Cast; the kernel saturates float8 unless the node says `saturate = 0`, the one parameter it then gets. A
    CastLike of a constant (whose other input gives only a dtype) is folded."""
    if not isinstance(inputs[0], Runtime):
        (dtype, _), = lw.infer(node, inputs)
        return [np.asarray(inputs[0]).astype(epk.numpy_dtype(dtype))]
    out, = lw.outputs(node, inputs)
    lw.emit("Cast", inputs[:1], [out], [0] if attributes(node).get("saturate", 1) == 0 else [])
    return [out]


# convolution and products


@emitter("BitCast")
def emit_bit_cast(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    out, = lw.outputs(node, inputs)
    lw.emit("BitCast", inputs[:1], [out])
    return [out]


@emitter("Transpose")
def emit_transpose(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    x = inputs[0]
    rank = len(shape_of(x))
    perm = list(attributes(node).get("perm", list(range(rank))[::-1]))
    out = lw.arena(node.output[0], dtype_of(x), [shape_of(x)[p] for p in perm])
    lw.emit("Transpose", [x], [out], perm)
    return [out]


@emitter("Concat")
def emit_concat(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    out, = lw.outputs(node, inputs)
    axis = attributes(node)["axis"] % len(out.shape)
    lw.emit("Concat", [v for v in inputs if v is not None], [out], [axis])
    return [out]


@emitter("Split")
def emit_split(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    outs = lw.outputs(node, inputs)
    axis = attributes(node).get("axis", 0) % len(shape_of(inputs[0]))
    lw.emit("Split", inputs[:1], outs, [axis])
    return outs


@emitter("Slice")
def emit_slice(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    x = inputs[0]
    shape = shape_of(x)
    rank = len(shape)
    if lw.opset < 10:
        attrs = attributes(node)
        starts, ends = attrs["starts"], attrs["ends"]
        axes, steps = attrs.get("axes", list(range(len(starts)))), [1] * len(starts)
    else:
        starts = constant(node, inputs[1], "starts").tolist()
        ends = constant(node, inputs[2], "ends").tolist()
        axes = constant(node, inputs[3], "axes").tolist() if len(inputs) > 3 and inputs[3] is not None \
            else list(range(len(starts)))
        steps = constant(node, inputs[4], "steps").tolist() if len(inputs) > 4 and inputs[4] is not None \
            else [1] * len(starts)
    params = [0, 1] * rank
    out_shape = list(shape)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis %= rank
        picked = range(*slice(start, end, step).indices(shape[axis]))
        out_shape[axis] = len(picked)
        params[2 * axis:2 * axis + 2] = [picked[0] if len(picked) else 0, step]
    out = lw.arena(node.output[0], dtype_of(x), out_shape)
    lw.emit("Slice", [x], [out], params)
    return [out]


@emitter("Gather", "GatherElements")
def emit_gather(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """Gather and GatherElements: the plan op of the same name, with the axis normalized."""
    out, = lw.outputs(node, inputs)
    axis = attributes(node).get("axis", 0) % len(shape_of(inputs[0]))
    lw.emit(node.op_type, inputs, [out], [axis])
    return [out]


PAD_MODES = {"constant": 0, "reflect": 1, "edge": 2, "wrap": 3}


@emitter("Pad")
def emit_pad(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    x = inputs[0]
    attrs = attributes(node)
    rank = len(shape_of(x))
    if lw.opset < 11:
        pads, value, axes = list(attrs["pads"]), attrs.get("value", 0.0), list(range(rank))
    else:
        pads = constant(node, inputs[1], "pads").tolist()
        fill = constant(node, inputs[2] if len(inputs) > 2 else None, "constant value")
        value = 0.0 if fill is None or fill.size == 0 else float(fill.reshape(-1)[0])
        axes = constant(node, inputs[3], "axes").tolist() if len(inputs) > 3 and inputs[3] is not None \
            else list(range(rank))
    before = [0] * rank
    for i, axis in enumerate(axes):
        before[axis % rank] = pads[i]
    out, = lw.outputs(node, inputs)
    lw.emit("Pad", [x], [out], [PAD_MODES[attrs.get("mode", "constant")], F32(value), *before])
    return [out]


# recurrent
