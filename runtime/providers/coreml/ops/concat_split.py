"""Concat (MIL `concat`, constant operands in the others' float type) and Split (MIL `split` with explicit
split_sizes: from the attribute before opset 13, the constant input after, or num_outputs from opset 18)."""

from __future__ import annotations

import numpy as np
import onnx

from ....capability import Values
from ..context import Context
from . import converts
from .shape import DATA_TYPES, constant_input_1, fold, no_empty_output, shape_of


def _concat_limit(node: onnx.NodeProto, values: Values) -> str | None:
    return no_empty_output(node, values)


@converts("Concat", limit=_concat_limit, types=DATA_TYPES)
def concat(ctx: Context, node: onnx.NodeProto) -> None:
    axis = int(ctx.attr(node, "axis", 0))
    if fold(ctx, node, lambda *arrays: np.concatenate([a for a in arrays if a is not None and a.size], axis=axis)):
        return
    parts = [ctx.input(node, i) for i in range(len(node.input))]
    parts = [p for p in parts if p is not None and int(np.prod(shape_of(p))) > 0]
    like = next(p for p in parts if not isinstance(p, np.ndarray))
    parts = [ctx.like(p, like) if isinstance(p, np.ndarray) else p for p in parts]
    if len(parts) == 1:
        ctx.set(node, ctx.mb.identity(x=parts[0], name=ctx.name(node)))
        return
    ctx.set(node, ctx.mb.concat(values=parts, axis=axis % len(shape_of(like)), name=ctx.name(node)))


def split_sizes(ctx: Context, node: onnx.NodeProto, length: int) -> list[int]:
    """Each output's length along the axis."""
    sizes = ctx.attr(node, "split") if ctx.opset < 13 else ctx.constant(node, 1)
    if sizes is not None:
        return [int(s) for s in np.atleast_1d(sizes)]
    count = int(ctx.attr(node, "num_outputs", len(node.output)))
    chunk = -(-length // count)
    return [chunk] * (count - 1) + [length - chunk * (count - 1)]


@converts("Split", limit=constant_input_1, types=DATA_TYPES)
def split(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    dims = shape_of(x)
    axis = int(ctx.attr(node, "axis", 0)) % len(dims)
    sizes = split_sizes(ctx, node, dims[axis])
    if fold(ctx, node, lambda data, *_: tuple(np.split(data, np.cumsum(sizes)[:-1], axis=axis))):
        return
    if len(sizes) == 1:
        ctx.set(node, ctx.mb.identity(x=x, name=ctx.name(node)))
        return
    ctx.set(node, *ctx.mb.split(x=x, split_sizes=np.asarray(sizes, np.int32), axis=axis, name=ctx.name(node)))
