"""The Reduce ops as MIL's `reduce_*` of the same meaning. Axes come from the attribute (before opset 18, before 13
for ReduceSum) or from a constant input; no axes reduce every axis, unless noop_with_empty_axes makes the op an
identity."""

from __future__ import annotations

import onnx

from ....capability import Values
from ..context import Context
from . import converts

REDUCE = {"ReduceMean": "reduce_mean", "ReduceSum": "reduce_sum", "ReduceMax": "reduce_max",
          "ReduceMin": "reduce_min", "ReduceProd": "reduce_prod", "ReduceL1": "reduce_l1_norm",
          "ReduceL2": "reduce_l2_norm", "ReduceSumSquare": "reduce_sum_square", "ReduceLogSum": "reduce_log_sum",
          "ReduceLogSumExp": "reduce_log_sum_exp"}


def _limit(node: onnx.NodeProto, values: Values) -> str | None:
    if len(node.input) > 1 and node.input[1] and node.input[1] not in values.constants:
        return "axes must be a constant"
    shape = values.shapes.get(node.input[0])
    if shape is None:
        return "the input's rank must be known"
    if any(d == 0 for d in shape):
        return "CoreML has no empty tensors"
    return None


def _axes(ctx: Context, node: onnx.NodeProto) -> list[int] | None:
    if len(node.input) > 1 and node.input[1]:
        return [int(a) for a in ctx.constant(node, 1).reshape(-1)]
    axes = ctx.attr(node, "axes", None)
    return None if axes is None else [int(a) for a in axes]


@converts(*REDUCE, limit=_limit)
def reduce(ctx: Context, node: onnx.NodeProto) -> None:
    x, axes = ctx.input(node, 0), _axes(ctx, node)
    if not axes:
        if ctx.attr(node, "noop_with_empty_axes", 0):
            ctx.set(node, ctx.mb.identity(x=x, name=ctx.name(node)))
            return
        axes = list(range(len(x.shape)))
    keep = bool(ctx.attr(node, "keepdims", 1))
    ctx.set(node, getattr(ctx.mb, REDUCE[node.op_type])(x=x, axes=axes, keep_dims=keep, name=ctx.name(node)))
