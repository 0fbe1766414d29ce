"""Conv (1-D and 2-D, groups, dilations, every auto_pad) as MIL `conv` with constant weights."""

from __future__ import annotations

import onnx

from ....capability import Values
from ..context import Context
from . import converts

AUTO_PAD = {"SAME_UPPER": "same", "SAME_LOWER": "same_lower", "VALID": "valid"}


def spatial_limit(node: onnx.NodeProto, values: Values) -> str | None:
    """1-D or 2-D data of known rank and a constant weight (and bias)."""
    shape = values.shapes.get(node.input[0])
    if shape is None or len(shape) not in (3, 4):
        return "1-D and 2-D inputs only (rank 3 or 4, known)"
    if any(name and name not in values.constants for name in node.input[1:3]):
        return "the weight and bias must be constants"
    return None


def padding(ctx: Context, node: onnx.NodeProto, spatial: int) -> dict[str, object]:
    """MIL's pad_type and pad (begin, end per spatial dim) from ONNX's auto_pad and pads (begins, then ends)."""
    auto_pad = ctx.attr(node, "auto_pad", "NOTSET")
    if auto_pad in AUTO_PAD:
        return {"pad_type": AUTO_PAD[auto_pad]}
    pads = list(ctx.attr(node, "pads", [0] * 2 * spatial))
    return {"pad_type": "custom", "pad": [p for axis in range(spatial) for p in (pads[axis], pads[axis + spatial])]}


def window(ctx: Context, node: onnx.NodeProto, spatial: int) -> dict[str, object]:
    """Strides and dilations, defaulting to 1 on every spatial dim."""
    return {"strides": list(ctx.attr(node, "strides", [1] * spatial)),
            "dilations": list(ctx.attr(node, "dilations", [1] * spatial))}


@converts("Conv", limit=spatial_limit)
def conv(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    spatial = len(x.shape) - 2
    weight = ctx.like(ctx.constant(node, 1), x)
    bias = ctx.constant(node, 2)
    extra = {} if bias is None else {"bias": ctx.like(bias, x)}
    ctx.set(node, ctx.mb.conv(x=x, weight=weight, groups=int(ctx.attr(node, "group", 1)),
                              **window(ctx, node, spatial), **padding(ctx, node, spatial), **extra,
                              name=ctx.name(node)))
