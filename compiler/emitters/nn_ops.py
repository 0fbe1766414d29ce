"""Emitters of convolutions, matrix products, normalization and reductions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from edgepack.runtime.native.epk import ACTIVATIONS, F32, REDUCE
from edgepack.runtime.native.kernel_choice import winograd_channels, winograd_may_run
from edgepack.runtime.sliding_windows import same_pads

from ..quantized import Quantized, in_panels
from ..values import PANEL_COLUMNS, Runtime, attributes
from . import constant, dtype_of, emitter, shape_of, unsupported
from .int8_matmul import lower_int8_matmul
from .round_trip_matmul import lower_round_trip_matmul

if TYPE_CHECKING:
    from ..lower import Lowering


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


def _padded_extent(out: int, stride: int, kernel: int, dilation: int, begin: int, size: int) -> int:
    """conv.h's padded_extent: the rows (or columns) of a zero-padded input that `out` outputs read."""
    return max((out - 1) * stride + (kernel - 1) * dilation + 1, begin + size)


DEPTHWISE_BAND_FLOATS = 16 * 1024
"""depthwise.c's DW_BAND_FLOATS: the scratch a band of a depthwise plane aims for."""
DEPTHWISE_NARROW_COLUMNS = 16
"""depthwise.c's DW_NARROW_COLUMNS: planes narrower than this may run a block of channels at a time."""


def depthwise_scratch(size: Sequence[int], out: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                      begin: Sequence[int], dilations: Sequence[int]) -> int:
    """depthwise.c's scratch for a depthwise conv, with 16-lane vectors (the widest build) and at least what a
    narrower build takes: a band of the plane's zero-padded input rows (split into column phases), under a vector
    of output columns its output rows, and its taps' offsets (int64); for a narrow plane run a block of channels at
    a time, the padded planes, taps and outputs of 16 channels interleaved."""
    lanes = PANEL_COLUMNS // 2
    cols = max(out[1], lanes)
    phase = max(cols + (kernel[1] - 1) * dilations[1] // strides[1], -(-(begin[1] + size[1]) // strides[1]))
    row = strides[1] * -(-phase // lanes) * lanes
    outputs = cols if out[1] < lanes else 0

    def band(rows: int) -> int:
        return ((rows - 1) * strides[0] + (kernel[0] - 1) * dilations[0] + 1) * row + rows * outputs

    floats = max(min(DEPTHWISE_BAND_FLOATS, band(out[0])), band(1)) + 2 * kernel[0] * kernel[1]
    if out[1] < DEPTHWISE_NARROW_COLUMNS:
        blocked_rows = _padded_extent(out[0], strides[0], kernel[0], dilations[0], begin[0], size[0])
        blocked_cols = _padded_extent(out[1], strides[1], kernel[1], dilations[1], begin[1], size[1])
        floats = max(floats, lanes * (blocked_rows * blocked_cols + kernel[0] * kernel[1] + out[0] * out[1]))
    return 4 * floats


PADDED_CONV_FLOATS = 4 << 20
"""conv.c's limit on a padded conv's zero-padded input (or its phases) and output grid (the NR terms left out): a
stride-2 conv past it runs in bands of output rows that fit."""
PACKED_PHASE_TAPS, PACKED_PHASE_OUTPUTS = 256, 32
"""conv.c's: a stride-2 conv of more taps and at least that many output channels copies each panel out of its phases
into the scratch."""


def padded_conv_scratch(channels: int, outputs: int, size: Sequence[int], out: Sequence[int], kernel: Sequence[int],
                        strides: Sequence[int], begin: Sequence[int], dilations: Sequence[int]) -> int:
    """conv.c's scratch for a stride-1 conv (not 1x1 nor 1-D) run on its input zero-padded, or a stride-2 one
    without dilation on the four phases of that input (padded_conv_of; in bands of output rows past the limit), with
    the widest panel; 0 where the conv runs otherwise. `channels` and `outputs` are per group."""
    stride = strides[0]
    if strides[1] != stride or kernel[0] * kernel[1] == 1 or stride not in (1, 2) or 1 in out[:2] or \
            (stride == 2 and list(dilations) != [1, 1]):
        return 0
    rows = _padded_extent(out[0], stride, kernel[0], dilations[0], begin[0], size[0])
    cols = _padded_extent(out[1], stride, kernel[1], dilations[1], begin[1], size[1])
    width, band = -(-cols // stride), out[0]
    plane = -(-rows // stride) * width
    planes = channels * stride * stride
    if planes * plane + outputs * out[0] * width > PADDED_CONV_FLOATS:
        lead = (kernel[0] + 1) // 2 - 1
        band = min(out[0], (PADDED_CONV_FLOATS - planes * lead * width) // ((planes + outputs) * width))
        if stride != 2 or band < 1:
            return 0
        plane = (band + lead) * width
    grid = -(-band * width // PANEL_COLUMNS) * PANEL_COLUMNS
    padded_input = planes * plane + (kernel[1] - 1) * dilations[1] // stride + PANEL_COLUMNS
    taps = channels * kernel[0] * kernel[1]
    floats = padded_input + outputs * grid + taps
    if stride == 2 and taps > PACKED_PHASE_TAPS and outputs >= PACKED_PHASE_OUTPUTS:
        floats = -(-floats // 16) * 16 + taps * PANEL_COLUMNS
    return 4 * floats


NARROW_POSITIONS = 10
"""conv.h's EP_CONV_NARROW_POSITIONS: convs with more output positions never run as dot products."""

WINOGRAD_MAX_WEIGHT_FLOATS = 1 << 20
WINOGRAD_TILES = 64
WINOGRAD_SKEW = 16
"""conv.h's EP_WINOGRAD_MAX_WEIGHT_FLOATS, winograd.c's WINOGRAD_TILES and SKEW."""


def winograd_scratch(channels: int, outputs: int, group: int, out: Sequence[int], kernel: Sequence[int],
                     strides: Sequence[int], dilations: Sequence[int]) -> int:
    """winograd.c's scratch for a 3x3 stride-1 conv the core compiled for some CPU kind runs that way
    (ep_winograd_applies, with that kind's kernel selection table), else 0: the 16 transformed filters, a block's
    transformed input and products (each of the 16 matrices SKEW floats past the last), and the zero-padded input
    split by column parity."""
    if list(kernel) != [3, 3] or list(strides) != [1, 1] or list(dilations) != [1, 1] or group != 1 or \
            16 * outputs * channels > WINOGRAD_MAX_WEIGHT_FLOATS:
        return 0
    tile_rows, tile_cols = (out[0] + 1) // 2, (out[1] + 1) // 2
    if not winograd_may_run(winograd_channels(channels, outputs), tile_rows * tile_cols):
        return 0
    padded = channels * (2 * tile_rows + 2) * 2 * (tile_cols + 1)
    return 4 * (16 * (outputs * channels + (channels + outputs) * WINOGRAD_TILES + 3 * WINOGRAD_SKEW) + padded)


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
    narrow = n < PANEL_COLUMNS and n <= NARROW_POSITIONS and out.shape[1] // group >= 2 * PANEL_COLUMNS
    spatial = [1, 1, *shape_of(x)[2:]][-2:], [1, 1, *out.shape[2:]][-2:]
    if depthwise:
        scratch = depthwise_scratch(*spatial, _kernel2d(kernel), strides, begin, dilations)
    else:
        # a conv narrow for the widest panel may not be for a narrower one, which then runs it padded
        groups = (shape_of(x)[1] // group, out.shape[1] // group)
        # native builds run a conv Winograd takes that way, the wasm core directly
        scratch = max(lw.gemm_scratch(k, n) + (4 * k * n if narrow else 0),
                      padded_conv_scratch(*groups, *spatial, _kernel2d(kernel), strides, begin, dilations),
                      winograd_scratch(*groups, group, spatial[1], _kernel2d(kernel), strides, dilations))
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


PREPACKED_COLUMNS = 32
"""gemm.h's EP_PREPACKED_COLUMNS: the column panels of a weight packed at plan time."""
GEMV_ROWS = 4
"""gemm.h's EP_GEMV_ROWS: products with at most this many rows read B's rows in place (ep_gemv)."""


def packed_panels(weight: np.ndarray) -> np.ndarray:
    """A K x N weight as PackedMatMul takes it: [ceil(N / 32), K, 32], its columns in panels, zero past N."""
    k, n = weight.shape
    panels = -(-n // PREPACKED_COLUMNS)
    padded = np.zeros((k, panels * PREPACKED_COLUMNS), weight.dtype)
    padded[:, :n] = weight
    return np.ascontiguousarray(padded.reshape(k, panels, PREPACKED_COLUMNS).transpose(1, 0, 2))


def _packed_weight(lw: Lowering, weight: Any, transposed: bool) -> np.ndarray | Quantized | None:
    """A constant 2-D weight (N x K when `transposed`) packed for PackedMatMul, float32 or quantized (shared by the
    nodes that share the weight); None where it is not constant or its scales do not fit the panels."""
    form = "packed transposed" if transposed else "packed"
    if isinstance(weight, Quantized) and len(weight.shape) == 2:
        return lw.reshaped_weight(weight, form, lambda w: in_panels(w, transposed, packed_panels))
    if isinstance(weight, np.ndarray) and weight.ndim == 2:
        return lw.reshaped_weight(weight, form,
                                  lambda w: packed_panels(np.ascontiguousarray(w.T) if transposed else w))
    return None


@emitter("MatMul")
def emit_matmul(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    if dtype_of(inputs[0]) != "float32":
        raise unsupported(node, "float32 only")
    out, = lw.outputs(node, inputs)
    a, b = shape_of(inputs[0]), shape_of(inputs[1])
    k = a[-1]
    n = b[-1] if len(b) > 1 else 1
    over_gemv_rows = n > 0 and int(np.prod(a[:-1])) > GEMV_ROWS
    if over_gemv_rows and lower_int8_matmul(lw, inputs[0], inputs[1], out):
        return [out]
    if len(a) > 1 and a[-2] > GEMV_ROWS and lower_round_trip_matmul(lw, inputs[0], inputs[1], out):
        return [out]
    if lw.packed_weights and over_gemv_rows and (packed := _packed_weight(lw, inputs[1], False)) is not None:
        lw.emit("PackedMatMul", [inputs[0], packed], [out], [n, ACTIVATIONS["None"], F32(0.0), F32(0.0)])
        return [out]
    lw.emit("MatMul", inputs, [out], [], lw.gemm_scratch(k, n))
    return [out]


def _packed_gemm(lw: Lowering, inputs: list[Any], attrs: dict[str, Any], out: Runtime) -> bool:
    """Emits Gemm as PackedMatMul where it is one: a constant B (either layout), no transA, alpha 1, A of over 4
    rows, and C absent or a constant row of N (beta 1); whether it did."""
    a = inputs[0]
    c = inputs[2] if len(inputs) > 2 else None
    n = out.shape[1]
    if not lw.packed_weights or attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 or \
            shape_of(a)[0] <= GEMV_ROWS or n == 0:
        return False
    if c is not None and (isinstance(c, Runtime) or attrs.get("beta", 1.0) != 1.0 or
                          np.shape(c) not in ((n,), (1, n))):
        return False
    packed = _packed_weight(lw, inputs[1], bool(attrs.get("transB", 0)))
    if packed is None:
        return False
    bias = None if c is None else np.asarray(c, np.float32).reshape(n)
    lw.emit("PackedMatMul", [a, packed, bias], [out], [n, ACTIVATIONS["None"], F32(0.0), F32(0.0)])
    return True


@emitter("Gemm")
def emit_gemm(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    if dtype_of(inputs[0]) != "float32":
        raise unsupported(node, "float32 only")
    attrs = attributes(node)
    out, = lw.outputs(node, inputs)
    if _packed_gemm(lw, inputs, attrs, out):
        return [out]
    a = shape_of(inputs[0])
    k = a[0] if attrs.get("transA", 0) else a[1]
    trans_b = attrs.get("transB", 0)
    if trans_b and isinstance(inputs[1], np.ndarray):  # stored K x N: the kernel copies its rows, not gathers columns
        inputs = [inputs[0], lw.reshaped_weight(inputs[1], "transposed", lambda w: np.ascontiguousarray(w.T)),
                  *inputs[2:]]
        trans_b = 0
    params = [attrs.get("transA", 0), trans_b, F32(attrs.get("alpha", 1.0)),
              F32(attrs.get("beta", 1.0)), ACTIVATIONS["None"], F32(0.0), F32(0.0)]
    lw.emit("Gemm", inputs[:3], [out], params, lw.gemm_scratch(k, out.shape[1]))
    return [out]


# normalization


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
