"""Softmax and LogSoftmax. From opset 13 they normalize along one axis; before, over the input flattened to 2-D at
`axis` (every axis from `axis` on), which is one axis only when `axis` is the last. One axis of Softmax is MIL's
`softmax`; several, and LogSoftmax, are written out with the maximum taken off first:
x - max, exp, reduce_sum, then real_div (Softmax) or log and sub (LogSoftmax)."""

from __future__ import annotations

import onnx

from ....capability import Values
from ..context import Context
from . import converts


def _limit(node: onnx.NodeProto, values: Values) -> str | None:
    shape = values.shapes.get(node.input[0])
    return "the input's rank must be known" if shape is None or not shape else None


@converts("Softmax", "LogSoftmax", limit=_limit)
def softmax(ctx: Context, node: onnx.NodeProto) -> None:
    x, name = ctx.input(node, 0), ctx.name(node)
    rank = len(x.shape)
    axis = int(ctx.attr(node, "axis", -1 if ctx.opset >= 13 else 1)) % rank
    axes = [axis] if ctx.opset >= 13 else list(range(axis, rank))
    if node.op_type == "Softmax" and len(axes) == 1:
        ctx.set(node, ctx.mb.softmax(x=x, axis=axes[0], name=name))
        return
    peak = ctx.mb.reduce_max(x=x, axes=axes, keep_dims=True, name=ctx.unique(f"{name}_max"))
    shifted = ctx.mb.sub(x=x, y=peak, name=ctx.unique(f"{name}_shifted"))
    exp = ctx.mb.exp(x=shifted, name=ctx.unique(f"{name}_exp"))
    total = ctx.mb.reduce_sum(x=exp, axes=axes, keep_dims=True, name=ctx.unique(f"{name}_sum"))
    if node.op_type == "Softmax":
        ctx.set(node, ctx.mb.real_div(x=exp, y=total, name=name))
        return
    log = ctx.mb.log(x=total, epsilon=0.0, name=ctx.unique(f"{name}_log"))
    ctx.set(node, ctx.mb.sub(x=shifted, y=log, name=name))
