"""Emitters: one function per ONNX op type that turns a node (at concrete shapes) into plan ops. Registered in
`EMITTERS`; an op missing here is reported by the lowering with its node name."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx

from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.sliding_windows import same_pads

from .epk import ACTIVATIONS, BINARY, F32, REDUCE, UNARY
from .lower import PANEL_COLUMNS, Lowering, Runtime, Value, attributes

Emitter = Callable[[Lowering, onnx.NodeProto, list[Any]], list[Any]]
EMITTERS: dict[str, Emitter] = {}
FLOAT_MAX = 3.4028234663852886e38


def emitter(*op_types: str) -> Callable[[Emitter], Emitter]:
    def register(function: Emitter) -> Emitter:
        for op_type in op_types:
            EMITTERS[op_type] = function
        return function

    return register


class Unsupported(EdgepackError):
    """A node whose attributes or inputs the core does not cover."""


def unsupported(node: onnx.NodeProto, why: str) -> Unsupported:
    return Unsupported(f"{node.op_type} node {node.name!r}: {why}", where=node.name or node.output[0],
                       fix="run this node on another provider, or change it to a form the cpu core covers")


def constant(node: onnx.NodeProto, value: Value | None, what: str) -> np.ndarray | None:
    if value is None:
        return None
    if isinstance(value, Runtime):
        raise unsupported(node, f"its {what} must be a constant once input shapes are fixed")
    return np.asarray(value)


def dtype_of(value: Value) -> str:
    return value.dtype if isinstance(value, Runtime) else np.asarray(value).dtype.name


def shape_of(value: Value) -> tuple[int, ...]:
    return value.shape if isinstance(value, Runtime) else tuple(np.asarray(value).shape)


# the reshape family: outputs share their input's buffer


@emitter("Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Dropout")
def emit_reshape(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    if node.op_type == "Dropout" and len([o for o in node.output if o]) > 1:
        raise unsupported(node, "the mask output is not supported")
    (dtype, shape), *_ = lw.infer(node, inputs)
    source = inputs[0]
    if not isinstance(source, Runtime):
        return [np.asarray(source).reshape(shape)]
    return [lw.alias(node.output[0], source, shape)]


# elementwise


def binary(lw: Lowering, kind: str, a: Value, b: Value, name: str) -> Runtime:
    compare = kind in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor")
    shape = np.broadcast_shapes(shape_of(a), shape_of(b))
    out = lw.arena(name, "bool" if compare else dtype_of(a), shape)
    lw.emit("Binary", [a, b], [out], [BINARY[kind]])
    return out


@emitter(*[k for k in BINARY if k != "Mod"], "Mod")
def emit_binary(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    a, b = inputs
    if node.op_type == "Pow" and dtype_of(b) != dtype_of(a):
        b = constant(node, b, "exponent").astype(dtype_of(a))
    if node.op_type == "Mod":
        fmod = attributes(node).get("fmod", 0)
        if (dtype_of(a) == "float32") != bool(fmod):
            raise unsupported(node, "fmod must be 1 for floats and 0 for integers")
    if len(inputs) != 2:
        raise unsupported(node, "variadic form")
    return [binary(lw, node.op_type, a, b, node.output[0])]


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
    defaults = {"LeakyRelu": (0.01, 0.0), "HardSigmoid": (0.2, 0.5), "Elu": (1.0, 0.0), "Celu": (1.0, 0.0),
                "ThresholdedRelu": (1.0, 0.0), "Selu": (1.67326319217681884765625, 1.05070102214813232421875)}
    a, b = defaults.get(op, (0.0, 0.0))
    if op == "Selu":
        return op, attrs.get("alpha", a), attrs.get("gamma", b)
    return op, attrs.get("alpha", a), attrs.get("beta", b)


FUSABLE = {"Relu", "Clip", "HardSigmoid", "LeakyRelu", "HardSwish", "Sigmoid"}


@emitter(*[k for k in UNARY if k != "GeluTanh"])
def emit_unary(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    kind, a, b = unary_params(node, inputs, lw.opset)
    source = inputs[0]
    if kind in FUSABLE and _fuse(lw, source, node, kind, a, b):
        return [Runtime(source.index, source.dtype, source.shape)]
    out = lw.arena(node.output[0], dtype_of(source), shape_of(source))
    lw.emit("Unary", [source], [out], [UNARY[kind], F32(a), F32(b)])
    return [out]


def _fuse(lw: Lowering, source: Value, node: onnx.NodeProto, kind: str, a: float, b: float) -> bool:
    """Folds the activation into the Conv or Gemm just emitted when it is that op's only reader."""
    if not isinstance(source, Runtime) or not lw.ops:
        return False
    producer = lw.ops[-1]
    name = lw.tensors[source.index].name
    if producer.kind not in ("Conv", "Gemm", "ConvTranspose") or producer.outputs != [source.index]:
        return False
    if lw.uses.get(name, 0) != 1 or name in lw.graph_outputs:
        return False
    act = 4 if producer.kind == "Gemm" else 12  # where the activation sits in the op's parameters
    if producer.params[act] != ACTIVATIONS["None"]:
        return False
    producer.params[act:act + 3] = [ACTIVATIONS[kind], F32(a), F32(b)]
    lw.tensors[source.index].name = node.output[0]
    return True


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
    out, = lw.outputs(node, inputs)
    lw.emit("Cast", inputs[:1], [out])
    return [out]


# convolution and products


def _spatial_params(node: onnx.NodeProto, in_spatial: Sequence[int], kernel: Sequence[int],
                    out_spatial: Sequence[int] | None = None) -> tuple[list[int], list[int], list[int], list[int]]:
    """strides, pads begin, pads end and dilations, in 2-D form (a 1-D op gets a unit height)."""
    attrs = attributes(node)
    rank = len(kernel)
    if rank not in (1, 2):
        raise unsupported(node, f"{rank}-D kernels are not supported (1-D and 2-D only)")
    strides = list(attrs.get("strides", [1] * rank))
    dilations = list(attrs.get("dilations", [1] * rank))
    pads = list(attrs.get("pads", [0] * 2 * rank))
    auto_pad = attrs.get("auto_pad", "NOTSET")
    begin, end = pads[:rank], pads[rank:]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        amounts = same_pads(in_spatial, kernel, strides, dilations, upper=auto_pad == "SAME_UPPER")
        begin, end = [b for b, _ in amounts], [e for _, e in amounts]
    elif auto_pad == "VALID":
        begin, end = [0] * rank, [0] * rank
    if rank == 1:
        return [1, *strides], [0, *begin], [0, *end], [1, *dilations]
    return strides, begin, end, dilations


def _kernel2d(kernel: Sequence[int]) -> list[int]:
    return [1, *kernel] if len(kernel) == 1 else list(kernel)


@emitter("Conv")
def emit_conv(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    x, w = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    if dtype_of(x) != "float32":
        raise unsupported(node, "float32 only")
    kernel = list(shape_of(w)[2:])
    strides, begin, end, dilations = _spatial_params(node, shape_of(x)[2:], kernel)
    out, = lw.outputs(node, inputs)
    group = attributes(node).get("group", 1)
    params = [len(kernel), group, *_kernel2d(kernel), *strides, *begin, *end, *dilations, ACTIVATIONS["None"],
              F32(0.0), F32(0.0)]
    k = shape_of(x)[1] // group * int(np.prod(kernel))
    n = int(np.prod(out.shape[2:]))
    depthwise = shape_of(x)[1] == group and out.shape[1] == group
    narrow = n < PANEL_COLUMNS and out.shape[1] // group >= 2 * PANEL_COLUMNS
    scratch = 0 if depthwise else lw.gemm_scratch(k, n) + (4 * k * n if narrow else 0)
    lw.emit("Conv", [x, w, bias], [out], params, scratch)
    return [out]


@emitter("ConvTranspose")
def emit_conv_transpose(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    x, w = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    if dtype_of(x) != "float32":
        raise unsupported(node, "float32 only")
    attrs = attributes(node)
    kernel = list(shape_of(w)[2:])
    rank = len(kernel)
    if rank not in (1, 2):
        raise unsupported(node, "1-D and 2-D only")
    out, = lw.outputs(node, inputs)
    strides = list(attrs.get("strides", [1] * rank))
    dilations = list(attrs.get("dilations", [1] * rank))
    pads = list(attrs.get("pads", [0] * 2 * rank))
    in_spatial, out_spatial = shape_of(x)[2:], out.shape[2:]
    begin, end, extra = [], [], []
    for i in range(rank):
        full = strides[i] * (in_spatial[i] - 1) + (kernel[i] - 1) * dilations[i] + 1
        if "output_shape" in attrs or attrs.get("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER"):
            output_padding = list(attrs.get("output_padding", [0] * rank))[i]
            total = max(0, full + output_padding - out_spatial[i])
            first = total // 2 if attrs.get("auto_pad", "NOTSET") == "SAME_UPPER" else total - total // 2
            begin.append(first)
            end.append(total - first)
        elif attrs.get("auto_pad", "NOTSET") == "VALID":
            begin.append(0)
            end.append(0)
        else:
            begin.append(pads[i])
            end.append(pads[rank + i])
        extra.append(out_spatial[i] - (full - begin[i] - end[i]))
        if extra[-1] < 0:
            raise unsupported(node, "the output shape is smaller than its padding allows")
    if rank == 1:
        strides, begin, end, dilations, extra = [1, *strides], [0, *begin], [0, *end], [1, *dilations], [0, *extra]
    group = attrs.get("group", 1)
    params = [rank, group, *_kernel2d(kernel), *strides, *begin, *end, *dilations, ACTIVATIONS["None"], F32(0.0),
              F32(0.0), *extra]
    cg = shape_of(x)[1] // group
    rows = out.shape[1] // group * int(np.prod(kernel))
    lw.emit("ConvTranspose", [x, w, bias], [out], params, lw.gemm_scratch(cg + rows, int(np.prod(in_spatial))))
    return [out]


@emitter("MatMul")
def emit_matmul(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    if dtype_of(inputs[0]) != "float32":
        raise unsupported(node, "float32 only")
    out, = lw.outputs(node, inputs)
    a, b = shape_of(inputs[0]), shape_of(inputs[1])
    k = a[-1]
    n = b[-1] if len(b) > 1 else 1
    lw.emit("MatMul", inputs, [out], [], lw.gemm_scratch(k, n))
    return [out]


@emitter("Gemm")
def emit_gemm(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    if dtype_of(inputs[0]) != "float32":
        raise unsupported(node, "float32 only")
    attrs = attributes(node)
    out, = lw.outputs(node, inputs)
    a = shape_of(inputs[0])
    k = a[0] if attrs.get("transA", 0) else a[1]
    params = [attrs.get("transA", 0), attrs.get("transB", 0), F32(attrs.get("alpha", 1.0)),
              F32(attrs.get("beta", 1.0)), ACTIVATIONS["None"], F32(0.0), F32(0.0)]
    lw.emit("Gemm", inputs[:3], [out], params, lw.gemm_scratch(k, out.shape[1]))
    return [out]


# pools and normalization


@emitter("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool")
def emit_pool(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    x = inputs[0]
    if dtype_of(x) != "float32":
        raise unsupported(node, "float32 only")
    if len([o for o in node.output if o]) > 1:
        raise unsupported(node, "the Indices output is not supported")
    attrs = attributes(node)
    spatial = shape_of(x)[2:]
    kernel = list(spatial) if node.op_type.startswith("Global") else list(attrs["kernel_shape"])
    strides, begin, end, dilations = _spatial_params(node, spatial, kernel)
    out, = lw.outputs(node, inputs[:1])
    is_max = node.op_type in ("MaxPool", "GlobalMaxPool")
    params = [0 if is_max else 1, attrs.get("count_include_pad", 0), *_kernel2d(kernel), *strides, *begin, *end,
              *dilations]
    lw.emit("Pool", [x], [out], params)
    return [out]


@emitter("Softmax", "LogSoftmax")
def emit_softmax(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    x = inputs[0]
    if dtype_of(x) != "float32":
        raise unsupported(node, "float32 only")
    rank = len(shape_of(x))
    legacy = lw.opset < 13
    axis = attributes(node).get("axis", 1 if legacy else -1) % max(rank, 1)
    out = lw.arena(node.output[0], "float32", shape_of(x))
    lw.emit("Softmax", [x], [out], [axis, int(legacy), int(node.op_type == "LogSoftmax")])
    return [out]


@emitter("BatchNormalization")
def emit_batch_norm(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    attrs = attributes(node)
    if attrs.get("training_mode", 0) or len([o for o in node.output if o]) > 1:
        raise unsupported(node, "training mode is not supported")
    x = inputs[0]
    scale, bias, mean, var = (constant(node, v, "statistics").astype(np.float64) for v in inputs[1:5])
    factor = scale / np.sqrt(var + attrs.get("epsilon", 1e-5))
    out = lw.arena(node.output[0], "float32", shape_of(x))
    lw.emit("ChannelAffine", [x, factor.astype(np.float32), (bias - mean * factor).astype(np.float32)], [out])
    return [out]


@emitter("LayerNormalization")
def emit_layer_norm(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    if len([o for o in node.output if o]) > 1:
        raise unsupported(node, "the Mean and InvStdDev outputs are not supported")
    attrs = attributes(node)
    x = inputs[0]
    rank = len(shape_of(x))
    axis = attrs.get("axis", -1) % rank
    normalized = shape_of(x)[axis:]
    params = []
    for value in inputs[1:3]:
        if value is None or isinstance(value, Runtime):
            params.append(value)
        else:
            params.append(np.ascontiguousarray(np.broadcast_to(np.asarray(value), normalized)))
    if len(params) < 2:
        params.append(None)
    out = lw.arena(node.output[0], "float32", shape_of(x))
    lw.emit("LayerNorm", [x, *params], [out], [axis, F32(attrs.get("epsilon", 1e-5))])
    return [out]


@emitter(*REDUCE)
def emit_reduce(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    x = inputs[0]
    if dtype_of(x) != "float32":
        raise unsupported(node, "float32 only")
    attrs = attributes(node)
    rank = len(shape_of(x))
    axes = attrs.get("axes")
    if len(inputs) > 1 and inputs[1] is not None:
        axes = constant(node, inputs[1], "axes").tolist()
    if not axes:
        axes = [] if attrs.get("noop_with_empty_axes", 0) else list(range(rank))
    flags = [0] * rank
    for axis in axes:
        flags[axis % rank] = 1
    out, = lw.outputs(node, inputs)
    lw.emit("Reduce", [x], [out], [REDUCE[node.op_type], *flags])
    return [out]


@emitter("ArgMax", "ArgMin")
def emit_arg_extreme(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    if dtype_of(inputs[0]) != "float32":
        raise unsupported(node, "float32 only")
    attrs = attributes(node)
    out, = lw.outputs(node, inputs)
    axis = attrs.get("axis", 0) % len(shape_of(inputs[0]))
    lw.emit("ArgExtreme", inputs[:1], [out], [axis, int(node.op_type == "ArgMax"), attrs.get("select_last_index", 0)])
    return [out]


# data movement


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


@emitter("Gather")
def emit_gather(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    out, = lw.outputs(node, inputs)
    axis = attributes(node).get("axis", 0) % len(shape_of(inputs[0]))
    lw.emit("Gather", inputs, [out], [axis])
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


COORDINATES = {"half_pixel": 0, "asymmetric": 1, "align_corners": 2, "pytorch_half_pixel": 3,
               "tf_half_pixel_for_nearest": 4}
NEAREST = {"round_prefer_floor": 0, "round_prefer_ceil": 1, "floor": 2, "ceil": 3}


@emitter("Resize")
def emit_resize(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    x = inputs[0]
    attrs = attributes(node)
    mode = attrs.get("mode", "nearest")
    transform = attrs.get("coordinate_transformation_mode", "half_pixel" if lw.opset >= 11 else "asymmetric")
    if mode not in ("nearest", "linear") or transform not in COORDINATES or attrs.get("antialias", 0) \
            or attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch" or "axes" in attrs:
        raise unsupported(node, "only nearest and linear modes with the common coordinate transforms are supported")
    out, = lw.outputs(node, inputs)
    shape = shape_of(x)
    scales_at = 1 if lw.opset < 11 else 2
    scales = constant(node, inputs[scales_at] if len(inputs) > scales_at else None, "scales")
    if scales is None or scales.size == 0:
        scales = np.array(out.shape, dtype=np.float64) / np.maximum(np.array(shape, dtype=np.float64), 1)
    params = [int(mode == "linear"), COORDINATES[transform], NEAREST[attrs.get("nearest_mode", "round_prefer_floor")],
              *[F32(float(s)) for s in scales]]
    lw.emit("Resize", [x], [out], params, 3 * 4 * out.shape[-1])
    return [out]


# recurrent


@emitter("LSTM")
def emit_lstm(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    attrs = attributes(node)
    if attrs.get("layout", 0) or attrs.get("input_forget", 0) or "clip" in attrs:
        raise unsupported(node, "layout 1, input_forget and clip are not supported")
    if [a.decode() if isinstance(a, bytes) else a for a in attrs.get("activations", [])] not in (
            [], ["Sigmoid", "Tanh", "Tanh"], ["Sigmoid", "Tanh", "Tanh"] * 2):
        raise unsupported(node, "only the default activations are supported")
    inputs = list(inputs) + [None] * (8 - len(inputs))
    if inputs[7] is not None:
        raise unsupported(node, "peepholes are not supported")
    x = inputs[0]
    seq, batch, _ = shape_of(x)
    lengths = constant(node, inputs[4], "sequence_lens")
    if lengths is not None and not np.all(lengths == seq):
        raise unsupported(node, "sequence_lens shorter than the sequence are not supported")
    hidden = attrs["hidden_size"]
    direction = {"forward": 0, "reverse": 1, "bidirectional": 2}[attrs.get("direction", "forward")]
    dirs = 2 if direction == 2 else 1
    names = list(node.output) + [""] * (3 - len(node.output))
    shapes = [(seq, dirs, batch, hidden), (dirs, batch, hidden), (dirs, batch, hidden)]
    outs = [lw.arena(name or f"{node.name or node.output[0]}/unused{k}", "float32", shape)
            for k, (name, shape) in enumerate(zip(names, shapes))]
    lw.emit("LSTM", [x, inputs[1], inputs[2], inputs[3], inputs[5], inputs[6]], outs, [hidden, direction],
            4 * hidden * 4)
    return outs[:len(node.output)]
