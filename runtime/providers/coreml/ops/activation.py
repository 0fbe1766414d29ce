"""Elementwise ops with one input: activations and math functions."""

from __future__ import annotations

import numpy as np
import onnx

from ....capability import Values, attribute
from ..context import Context
from . import converts

SAME_NAME = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Sqrt": "sqrt", "Erf": "erf",
             "Abs": "abs", "Floor": "floor", "Ceil": "ceil", "Round": "round", "Sign": "sign", "Softsign": "softsign",
             "Softplus": "softplus", "Sin": "sin", "Cos": "cos"}


def scalar(ctx: Context, value: float, like: object) -> np.ndarray:
    """An attribute as a scalar of the data's float type (MIL's alpha and beta take x's type)."""
    return ctx.like(np.float32(value), like)


@converts(*SAME_NAME)
def same_name(ctx: Context, node: onnx.NodeProto) -> None:
    ctx.set(node, getattr(ctx.mb, SAME_NAME[node.op_type])(x=ctx.input(node, 0), name=ctx.name(node)))


@converts("Log")
def log(ctx: Context, node: onnx.NodeProto) -> None:
    ctx.set(node, ctx.mb.log(x=ctx.input(node, 0), epsilon=0.0, name=ctx.name(node)))


@converts("Neg")
def neg(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    ctx.set(node, ctx.mb.mul(x=x, y=ctx.like(np.float32(-1), x), name=ctx.name(node)))


@converts("Reciprocal")
def reciprocal(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    ctx.set(node, ctx.mb.real_div(x=ctx.like(np.float32(1), x), y=x, name=ctx.name(node)))


@converts("LeakyRelu")
def leaky_relu(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    ctx.set(node, ctx.mb.leaky_relu(x=x, alpha=scalar(ctx, ctx.attr(node, "alpha", 0.01), x), name=ctx.name(node)))


@converts("Elu")
def elu(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    ctx.set(node, ctx.mb.elu(x=x, alpha=scalar(ctx, ctx.attr(node, "alpha", 1.0), x), name=ctx.name(node)))


@converts("ThresholdedRelu")
def thresholded_relu(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    ctx.set(node, ctx.mb.thresholded_relu(x=x, alpha=scalar(ctx, ctx.attr(node, "alpha", 1.0), x),
                                          name=ctx.name(node)))


@converts("HardSigmoid")
def hard_sigmoid(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    ctx.set(node, ctx.mb.sigmoid_hard(x=x, alpha=scalar(ctx, ctx.attr(node, "alpha", 0.2), x),
                                      beta=scalar(ctx, ctx.attr(node, "beta", 0.5), x), name=ctx.name(node)))


@converts("HardSwish")
def hard_swish(ctx: Context, node: onnx.NodeProto) -> None:
    x, name = ctx.input(node, 0), ctx.name(node)
    gate = ctx.mb.sigmoid_hard(x=x, alpha=scalar(ctx, 1 / 6, x), beta=scalar(ctx, 0.5, x),
                               name=ctx.unique(f"{name}_gate"))
    ctx.set(node, ctx.mb.mul(x=x, y=gate, name=name))


def _gelu_limit(node: onnx.NodeProto, values: Values) -> str | None:
    return None if attribute(node, "approximate", "none") in ("none", "tanh") else "approximate must be none or tanh"


@converts("Gelu", limit=_gelu_limit)
def gelu(ctx: Context, node: onnx.NodeProto) -> None:
    mode = "TANH_APPROXIMATION" if ctx.attr(node, "approximate", "none") == "tanh" else "EXACT"
    ctx.set(node, ctx.mb.gelu(x=ctx.input(node, 0), mode=mode, name=ctx.name(node)))


def _clip_limit(node: onnx.NodeProto, values: Values) -> str | None:
    bounds = [name for name in node.input[1:3] if name]
    return "min and max must be constants" if any(name not in values.constants for name in bounds) else None


@converts("Clip", limit=_clip_limit)
def clip(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    if ctx.opset < 11:
        low, high = ctx.attr(node, "min"), ctx.attr(node, "max")
    else:
        low, high = ctx.constant(node, 1), ctx.constant(node, 2)
    low = None if low is None else float(low)
    high = None if high is None else float(high)
    if low is not None and high is not None:
        ctx.set(node, ctx.mb.clip(x=x, alpha=scalar(ctx, low, x), beta=scalar(ctx, high, x), name=ctx.name(node)))
    elif low is not None:
        ctx.set(node, ctx.mb.maximum(x=x, y=ctx.like(np.float32(low), x), name=ctx.name(node)))
    elif high is not None:
        ctx.set(node, ctx.mb.minimum(x=x, y=ctx.like(np.float32(high), x), name=ctx.name(node)))
    else:
        ctx.set(node, ctx.mb.identity(x=x, name=ctx.name(node)))
