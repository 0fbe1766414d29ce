"""Elementwise ops with two inputs and numpy broadcasting: the MIL ops of the same name."""

from __future__ import annotations

import numpy as np
import onnx

from ..context import Context
from . import converts

ARITHMETIC = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "real_div", "Pow": "pow", "Max": "maximum",
              "Min": "minimum"}
COMPARISON = {"Equal": "equal", "Greater": "greater", "Less": "less", "GreaterOrEqual": "greater_equal",
              "LessOrEqual": "less_equal"}


def operands(ctx: Context, node: onnx.NodeProto) -> tuple[object, object]:
    """Both inputs, a constant one in the other's float type."""
    x, y = ctx.input(node, 0), ctx.input(node, 1)
    if isinstance(x, np.ndarray):
        x = ctx.like(x, y)
    if isinstance(y, np.ndarray):
        y = ctx.like(y, x)
    return x, y


@converts(*ARITHMETIC)
def arithmetic(ctx: Context, node: onnx.NodeProto) -> None:
    """Two inputs; Max and Min take one or more, combined pairwise from the left."""
    op, name = getattr(ctx.mb, ARITHMETIC[node.op_type]), ctx.name(node)
    if len(node.input) != 2:
        result = ctx.input(node, 0)
        for index in range(1, len(node.input)):
            y = ctx.input(node, index)
            x, y = (ctx.like(result, y) if isinstance(result, np.ndarray) else result,
                    ctx.like(y, result) if isinstance(y, np.ndarray) else y)
            last = index == len(node.input) - 1
            result = op(x=x, y=y, name=name if last else ctx.unique(f"{name}_{index}"))
        ctx.set(node, result if len(node.input) > 1 else ctx.mb.identity(x=result, name=name))
        return
    x, y = operands(ctx, node)
    ctx.set(node, op(x=x, y=y, name=name))


@converts(*COMPARISON, types=frozenset({"float32", "float16", "bool"}))
def comparison(ctx: Context, node: onnx.NodeProto) -> None:
    x, y = operands(ctx, node)
    ctx.set(node, getattr(ctx.mb, COMPARISON[node.op_type])(x=x, y=y, name=ctx.name(node)))
