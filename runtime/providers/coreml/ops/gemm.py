"""Gemm (Y = alpha * A' B' + beta * C): MIL `linear` when B (and C, if any) are constants and A is not transposed,
with alpha and beta folded into the weight and bias; otherwise `matmul` with its transpose flags, then `mul` by
alpha and `add` of beta * C."""

from __future__ import annotations

import numpy as np
import onnx

from ..context import Context
from . import converts


@converts("Gemm", opsets=(7, 10_000))
def gemm(ctx: Context, node: onnx.NodeProto) -> None:
    a, name = ctx.input(node, 0), ctx.name(node)
    alpha, beta = float(ctx.attr(node, "alpha", 1.0)), float(ctx.attr(node, "beta", 1.0))
    trans_a, trans_b = bool(ctx.attr(node, "transA", 0)), bool(ctx.attr(node, "transB", 0))
    b, c = ctx.constant(node, 1), ctx.constant(node, 2)
    has_c = ctx.input(node, 2) is not None
    out = ctx.shape(ctx.input(node, 1))[0 if trans_b else 1]
    if not isinstance(a, np.ndarray) and not trans_a and b is not None and (not has_c or c is not None):
        weight = alpha * (b if trans_b else b.T)
        bias = np.zeros(out, np.float32) if not has_c else np.broadcast_to(beta * c, (ctx.shape(a)[0], out))
        if bias.ndim == 1 or (bias == bias[:1]).all():
            bias = bias if bias.ndim == 1 else bias[0]
            ctx.set(node, ctx.mb.linear(x=a, weight=ctx.like(np.ascontiguousarray(weight), a),
                                        bias=ctx.like(np.ascontiguousarray(bias), a), name=name))
            return
    b = ctx.input(node, 1)
    if isinstance(a, np.ndarray):
        a = ctx.like(a, b)
    if isinstance(b, np.ndarray):
        b = ctx.like(b, a)
    scaled = alpha != 1.0 or has_c
    product = ctx.mb.matmul(x=a, y=b, transpose_x=trans_a, transpose_y=trans_b,
                            name=ctx.unique(f"{name}_matmul") if scaled else name)
    if alpha != 1.0:
        product = ctx.mb.mul(x=product, y=ctx.like(np.float32(alpha), product),
                             name=ctx.unique(f"{name}_alpha") if has_c else name)
    if has_c:
        c = ctx.input(node, 2)
        if isinstance(c, np.ndarray):
            c = ctx.like(beta * c, product)
        elif beta != 1.0:
            c = ctx.mb.mul(x=c, y=ctx.like(np.float32(beta), c), name=ctx.unique(f"{name}_beta"))
        product = ctx.mb.add(x=product, y=c, name=name)
    ctx.set(node, product)
