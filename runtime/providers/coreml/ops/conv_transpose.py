"""ConvTranspose (1-D and 2-D, groups, strides, dilations, pads, output_padding, auto_pad and output_shape) as MIL
`conv_transpose` with explicit (custom) padding. ONNX's weight layout (C_in, C_out / groups, *K) is MIL's. ONNX's
pads and output_shape are resolved to begin/end pads as onnx's reference does; output_padding (extra rows at the end)
is taken off the end pad, so it must not exceed it: beyond the end pad the rows would need a pad op after."""

from __future__ import annotations

import onnx

from ....capability import Values, attribute
from ..context import Context
from . import converts


def resolved_pads(node: onnx.NodeProto, sizes: list[int], kernel: list[int]) -> tuple[list[int], list[int]] | str:
    """(begin pads, end pads) per spatial axis with output_padding taken off the end pads, or why it cannot be."""
    spatial = len(sizes)
    strides = list(attribute(node, "strides", [1] * spatial))
    dilations = list(attribute(node, "dilations", [1] * spatial))
    extra = list(attribute(node, "output_padding", [0] * spatial))
    auto_pad = attribute(node, "auto_pad", "NOTSET")
    output_shape = attribute(node, "output_shape", None)
    full = [strides[i] * (sizes[i] - 1) + extra[i] + (kernel[i] - 1) * dilations[i] + 1 for i in range(spatial)]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER") and attribute(node, "pads", None) is None:
        wanted = list(output_shape)[-spatial:] if output_shape is not None else [s * st for s, st in
                                                                                 zip(sizes, strides)]
        total = [f - w for f, w in zip(full, wanted)]
        small = [t // 2 for t in total]
        large = [t - s for t, s in zip(total, small)]
        begin, end = (small, large) if auto_pad == "SAME_UPPER" else (large, small)
    elif auto_pad in ("NOTSET", "VALID"):
        pads = [0] * 2 * spatial if auto_pad == "VALID" else list(attribute(node, "pads", [0] * 2 * spatial))
        begin, end = pads[:spatial], pads[spatial:]
        if output_shape is not None and list(output_shape)[-spatial:] != [f - b - e for f, b, e in
                                                                          zip(full, begin, end)]:
            return "output_shape other than the one pads give"
    else:
        return f"auto_pad {auto_pad}"
    if any(p < 0 for p in begin + end):
        return "output larger than the full transposed convolution"
    if any(e < x for e, x in zip(end, extra)):
        return "output_padding larger than the end pad"
    return begin, [e - x for e, x in zip(end, extra)]


def _limit(node: onnx.NodeProto, values: Values) -> str | None:
    shape, weight = values.shapes.get(node.input[0]), values.shapes.get(node.input[1])
    if shape is None or len(shape) not in (3, 4) or any(d is None for d in shape[2:]):
        return "1-D and 2-D inputs only (rank 3 or 4, spatial dims known)"
    if any(name and name not in values.constants for name in node.input[1:3]) or weight is None:
        return "the weight and bias must be constants"
    kernel = list(attribute(node, "kernel_shape", weight[2:]))
    if kernel != list(weight[2:]):
        return "kernel_shape other than the weight's"
    pads = resolved_pads(node, list(shape[2:]), kernel)
    return pads if isinstance(pads, str) else None


@converts("ConvTranspose", limit=_limit)
def conv_transpose(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    weight = ctx.constant(node, 1)
    spatial = len(x.shape) - 2
    begin, end = resolved_pads(node, list(ctx.shape(x)[2:]), list(weight.shape[2:]))
    bias = ctx.constant(node, 2)
    extra = {} if bias is None else {"bias": ctx.like(bias, x)}
    ctx.set(node, ctx.mb.conv_transpose(
        x=x, weight=ctx.like(weight, x), groups=int(ctx.attr(node, "group", 1)),
        strides=list(ctx.attr(node, "strides", [1] * spatial)),
        dilations=list(ctx.attr(node, "dilations", [1] * spatial)),
        pad_type="custom", pad=[p for axis in range(spatial) for p in (begin[axis], end[axis])], **extra,
        name=ctx.name(node)))
