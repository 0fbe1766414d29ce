"""BatchNormalization (inference), InstanceNormalization and LayerNormalization (first output only) as MIL
`batch_norm`, `instance_norm` and `layer_norm`, with their statistics, scales and biases constant. Where MIL's op
takes no such rank (BatchNormalization of rank 2 or over 5) the normalization is a `mul` and an `add` of folded
constants."""

from __future__ import annotations

import numpy as np
import onnx

from ....capability import Values, attribute
from ..context import Context
from . import converts


def _constant_inputs(node: onnx.NodeProto, values: Values) -> str | None:
    if any(name and name not in values.constants for name in node.input[1:]):
        return "its scale, bias (and statistics) must be constants"
    if any(name for name in node.output[1:]):
        return "only the first output (the normalized tensor)"
    shape = values.shapes.get(node.input[0])
    if shape is None or any(d is None for d in shape):
        return "the input's shape must be known"
    return None


def _batch_limit(node: onnx.NodeProto, values: Values) -> str | None:
    if attribute(node, "training_mode", 0):
        return "training mode"
    if not attribute(node, "spatial", 1):
        return "spatial=0 (statistics per element)"
    shape = values.shapes.get(node.input[0])
    if shape is not None and len(shape) < 2:
        return "inputs of rank 2 or more only"
    return _constant_inputs(node, values)


@converts("BatchNormalization", limit=_batch_limit)
def batch_norm(ctx: Context, node: onnx.NodeProto) -> None:
    x, name = ctx.input(node, 0), ctx.name(node)
    scale, bias, mean, variance = (np.asarray(ctx.constant(node, i), np.float32) for i in range(1, 5))
    epsilon = float(ctx.attr(node, "epsilon", 1e-5))
    rank = len(x.shape)
    if 3 <= rank <= 5:
        ctx.set(node, ctx.mb.batch_norm(x=x, mean=ctx.like(mean, x), variance=ctx.like(variance, x),
                                        gamma=ctx.like(scale, x), beta=ctx.like(bias, x), epsilon=epsilon, name=name))
        return
    factor = scale / np.sqrt(variance + np.float32(epsilon))
    shift = bias - mean * factor
    trailing = (-1,) + (1,) * (rank - 2)
    scaled = ctx.mb.mul(x=x, y=ctx.like(factor.reshape(trailing), x), name=ctx.unique(f"{name}_scaled"))
    ctx.set(node, ctx.mb.add(x=scaled, y=ctx.like(shift.reshape(trailing), x), name=name))


def _instance_limit(node: onnx.NodeProto, values: Values) -> str | None:
    shape = values.shapes.get(node.input[0])
    if shape is None or len(shape) not in (3, 4):
        return "MIL instance_norm takes rank 3 or 4"
    return _constant_inputs(node, values)


@converts("InstanceNormalization", limit=_instance_limit)
def instance_norm(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    ctx.set(node, ctx.mb.instance_norm(x=x, gamma=ctx.like(ctx.constant(node, 1), x),
                                       beta=ctx.like(ctx.constant(node, 2), x),
                                       epsilon=float(ctx.attr(node, "epsilon", 1e-5)), name=ctx.name(node)))


def _layer_limit(node: onnx.NodeProto, values: Values) -> str | None:
    if attribute(node, "stash_type", 1) != 1:
        return "stash_type other than float32"
    return _constant_inputs(node, values)


@converts("LayerNormalization", limit=_layer_limit)
def layer_norm(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    shape = ctx.shape(x)
    axis = int(ctx.attr(node, "axis", -1)) % len(shape)
    normalized = shape[axis:]
    extra = {}
    if ctx.input(node, 2) is not None:
        extra["beta"] = ctx.like(np.ascontiguousarray(np.broadcast_to(ctx.constant(node, 2), normalized)), x)
    gamma = np.ascontiguousarray(np.broadcast_to(ctx.constant(node, 1), normalized))
    ctx.set(node, ctx.mb.layer_norm(x=x, axes=list(range(axis, len(shape))), gamma=ctx.like(gamma, x),
                                    epsilon=float(ctx.attr(node, "epsilon", 1e-5)), **extra, name=ctx.name(node)))
