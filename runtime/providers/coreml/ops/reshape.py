"""Reshape, Flatten, Squeeze and Unsqueeze: MIL `reshape`, `squeeze` and `expand_dims` with the output shape
resolved at conversion (ONNX's 0 and -1 in Reshape's shape become explicit dims). Constant inputs fold in numpy."""

from __future__ import annotations

import numpy as np
import onnx

from ..context import Context
from . import converts
from .shape import DATA_TYPES, constant_input_1, fold, ints_of, no_empty_output, shape_of


def reshaped(dims: list[int], shape: list[int], allowzero: bool) -> list[int]:
    """ONNX Reshape's output shape: 0 copies the input dim (unless allowzero), -1 takes what is left."""
    out = [dims[i] if d == 0 and not allowzero else d for i, d in enumerate(shape)]
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1]))
        out[out.index(-1)] = int(np.prod(dims)) // known if known else 0
    return out


@converts("Reshape", limit=constant_input_1, types=DATA_TYPES)
def reshape(ctx: Context, node: onnx.NodeProto) -> None:
    allowzero = bool(ctx.attr(node, "allowzero", 0))
    x = ctx.input(node, 0)
    target = ints_of(ctx, node, 1) if ctx.opset >= 5 else list(ctx.attr(node, "shape"))
    out = reshaped(shape_of(x), target, allowzero)
    if not fold(ctx, node, lambda data, *_: data.reshape(out)):
        ctx.set(node, ctx.mb.reshape(x=x, shape=np.asarray(out, np.int32), name=ctx.name(node)))


@converts("Flatten", limit=no_empty_output, types=DATA_TYPES)
def flatten(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    dims = shape_of(x)
    axis = int(ctx.attr(node, "axis", 1))
    axis += len(dims) if axis < 0 else 0
    out = [int(np.prod(dims[:axis])), int(np.prod(dims[axis:]))]
    if not fold(ctx, node, lambda data: data.reshape(out)):
        ctx.set(node, ctx.mb.reshape(x=x, shape=np.asarray(out, np.int32), name=ctx.name(node)))


def _axes(ctx: Context, node: onnx.NodeProto) -> list[int] | None:
    """The axes attribute (before opset 13) or constant input 1 (from opset 13)."""
    if ctx.opset < 13:
        axes = ctx.attr(node, "axes")
        return None if axes is None else [int(a) for a in axes]
    return ints_of(ctx, node, 1)


@converts("Squeeze", limit=constant_input_1, types=DATA_TYPES)
def squeeze(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    dims = shape_of(x)
    axes = _axes(ctx, node)
    axes = [i for i, d in enumerate(dims) if d == 1] if axes is None else sorted(a % len(dims) for a in axes)
    if fold(ctx, node, lambda data, *_: np.squeeze(data, axis=tuple(axes))):
        return
    if not axes:
        ctx.set(node, ctx.mb.identity(x=x, name=ctx.name(node)))
        return
    ctx.set(node, ctx.mb.squeeze(x=x, axes=axes, name=ctx.name(node)))


@converts("Unsqueeze", limit=constant_input_1, types=DATA_TYPES)
def unsqueeze(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    axes = _axes(ctx, node) or []
    rank = len(shape_of(x)) + len(axes)
    axes = sorted(a % rank for a in axes)
    if not fold(ctx, node, lambda data, *_: np.expand_dims(data, tuple(axes))):
        ctx.set(node, ctx.mb.expand_dims(x=x, axes=axes, name=ctx.name(node)))

