"""MaxPool and AveragePool (1-D, 2-D and 3-D windows, pads, strides, auto_pad, count_include_pad) as MIL `max_pool`
and `avg_pool`; GlobalAveragePool and GlobalMaxPool as `reduce_mean` / `reduce_max` over the spatial axes.

ceil_mode is passed on only where it changes the output size and MIL takes it (1-D or 2-D, symmetric pads), and for
an average only where padding is excluded from the count: what CoreML divides a partial window past the padded
input by is not documented. MIL pools have no dilations, and MaxPool's Indices output has no MIL op."""

from __future__ import annotations

import onnx

from ....capability import Values, attribute
from ..context import Context
from . import converts
from .conv import AUTO_PAD, padding


def _window_counts(node: onnx.NodeProto, sizes: list[int]) -> tuple[list[int], list[int], list[int]]:
    """Output sizes per axis: with floor, with ONNX's ceil_mode (a last window starting past the input and its begin
    pad is dropped) and with MIL's (dropped only where there are pads)."""
    spatial = len(sizes)
    kernel = list(attribute(node, "kernel_shape", []))
    strides = list(attribute(node, "strides", [1] * spatial))
    pads = list(attribute(node, "pads", [0] * 2 * spatial))
    floor, onnx_ceil, mil_ceil = [], [], []
    for i in range(spatial):
        span = sizes[i] + pads[i] + pads[i + spatial] - kernel[i]
        count = -(-span // strides[i]) + 1
        past = (count - 1) * strides[i] >= sizes[i] + pads[i]
        floor.append(span // strides[i] + 1)
        onnx_ceil.append(count - 1 if past else count)
        mil_ceil.append(count - 1 if past and pads[i] + pads[i + spatial] > 0 else count)
    return floor, onnx_ceil, mil_ceil


def _ceil_changes_size(node: onnx.NodeProto, sizes: list[int]) -> bool:
    floor, onnx_ceil, _ = _window_counts(node, sizes)
    return floor != onnx_ceil


def _limit(node: onnx.NodeProto, values: Values) -> str | None:
    shape = values.shapes.get(node.input[0])
    if shape is None or len(shape) not in (3, 4, 5) or any(d is None for d in shape[2:]):
        return "1-D, 2-D and 3-D windows only (rank 3 to 5, spatial dims known)"
    spatial = len(shape) - 2
    if any(d != 1 for d in attribute(node, "dilations", [1] * spatial)):
        return "MIL pools have no dilations"
    if len(node.output) > 1 and node.output[1]:
        return "MIL max_pool has no Indices output"
    auto_pad = attribute(node, "auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", *AUTO_PAD):
        return f"auto_pad {auto_pad}"
    if attribute(node, "ceil_mode", 0) and auto_pad != "NOTSET":
        return "ceil_mode with auto_pad"
    if attribute(node, "ceil_mode", 0) and _ceil_changes_size(node, list(shape[2:])):
        pads = list(attribute(node, "pads", [0] * 2 * spatial))
        if spatial > 2:
            return "ceil_mode on a 3-D window"
        if pads[:spatial] != pads[spatial:]:
            return "ceil_mode with asymmetric pads"
        _, onnx_ceil, mil_ceil = _window_counts(node, list(shape[2:]))
        if onnx_ceil != mil_ceil:
            return "ceil_mode where a last window starts past the input: ONNX drops it, MIL keeps it without pads"
        if node.op_type == "AveragePool" and attribute(node, "count_include_pad", 0):
            return "ceil_mode with count_include_pad: CoreML's divisor of a partial window is not documented"
    return None


@converts("MaxPool", "AveragePool", limit=_limit)
def pool(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    sizes = list(ctx.shape(x)[2:])
    spatial = len(sizes)
    arguments = {"x": x, "kernel_sizes": list(ctx.attr(node, "kernel_shape")),
                 "strides": list(ctx.attr(node, "strides", [1] * spatial)), **padding(ctx, node, spatial),
                 "ceil_mode": bool(ctx.attr(node, "ceil_mode", 0)) and _ceil_changes_size(node, sizes),
                 "name": ctx.name(node)}
    if node.op_type == "MaxPool":
        ctx.set(node, ctx.mb.max_pool(**arguments))
    else:
        exclude = not ctx.attr(node, "count_include_pad", 0)
        ctx.set(node, ctx.mb.avg_pool(**arguments, exclude_padding_from_average=exclude))


def _global_limit(node: onnx.NodeProto, values: Values) -> str | None:
    shape = values.shapes.get(node.input[0])
    return "inputs of known rank 3 or more only" if shape is None or len(shape) < 3 else None


@converts("GlobalAveragePool", "GlobalMaxPool", limit=_global_limit)
def global_pool(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    reduce = ctx.mb.reduce_mean if node.op_type == "GlobalAveragePool" else ctx.mb.reduce_max
    ctx.set(node, reduce(x=x, axes=list(range(2, len(x.shape))), keep_dims=True, name=ctx.name(node)))

