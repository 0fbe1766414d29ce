"""Expand (constant shape: MIL `tile` of the input brought to the output's rank) and Tile (constant repeats:
MIL `tile`)."""

from __future__ import annotations

import numpy as np
import onnx

from ..context import Context
from . import converts
from .shape import DATA_TYPES, constant_input_1, fold, ints_of, shape_of


@converts("Expand", limit=constant_input_1, types=DATA_TYPES)
def expand(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    target = ints_of(ctx, node, 1)
    out = list(np.broadcast_shapes(tuple(shape_of(x)), tuple(target)))
    if fold(ctx, node, lambda data, _: np.broadcast_to(data, out).copy()):
        return
    name = ctx.name(node)
    dims = shape_of(x)
    if len(dims) < len(out):
        x = ctx.mb.expand_dims(x=x, axes=list(range(len(out) - len(dims))),
                               name=ctx.unique(f"{name}_ranked"))
        dims = [1] * (len(out) - len(dims)) + dims
    reps = [o // d for o, d in zip(out, dims)]
    if reps == [1] * len(out):
        ctx.set(node, ctx.mb.identity(x=x, name=name))
        return
    ctx.set(node, ctx.mb.tile(x=x, reps=np.asarray(reps, np.int32), name=name))


@converts("Tile", limit=constant_input_1, types=DATA_TYPES)
def tile(ctx: Context, node: onnx.NodeProto) -> None:
    reps = ints_of(ctx, node, 1)
    if fold(ctx, node, lambda data, _: np.tile(data, reps)):
        return
    x = ctx.input(node, 0)
    if reps == [1] * len(reps):
        ctx.set(node, ctx.mb.identity(x=x, name=ctx.name(node)))
        return
    ctx.set(node, ctx.mb.tile(x=x, reps=np.asarray(reps, np.int32), name=ctx.name(node)))
