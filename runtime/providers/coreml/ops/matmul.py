"""MatMul (numpy semantics: batches and broadcasting; no 1-D operand) as MIL `matmul`; a constant operand is taken in
the other's float type."""

from __future__ import annotations

import numpy as np
import onnx

from ....capability import Values
from ..context import Context
from . import converts


def _limit(node: onnx.NodeProto, values: Values) -> str | None:
    shapes = [values.shapes.get(name) for name in node.input[:2]]
    if any(shape is None or len(shape) < 2 for shape in shapes):
        return "operands of rank 2 or more (known) only: MIL's matmul mis-infers the shape of a 1-D operand"
    return None


@converts("MatMul", limit=_limit)
def matmul(ctx: Context, node: onnx.NodeProto) -> None:
    x, y = ctx.input(node, 0), ctx.input(node, 1)
    if isinstance(x, np.ndarray):
        x = ctx.like(x, y)
    if isinstance(y, np.ndarray):
        y = ctx.like(y, x)
    ctx.set(node, ctx.mb.matmul(x=x, y=y, name=ctx.name(node)))
