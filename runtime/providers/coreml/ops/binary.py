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
    x, y = operands(ctx, node)
    ctx.set(node, getattr(ctx.mb, ARITHMETIC[node.op_type])(x=x, y=y, name=ctx.name(node)))


@converts(*COMPARISON, types=frozenset({"float32", "float16", "bool"}))
def comparison(ctx: Context, node: onnx.NodeProto) -> None:
    x, y = operands(ctx, node)
    ctx.set(node, getattr(ctx.mb, COMPARISON[node.op_type])(x=x, y=y, name=ctx.name(node)))
