"""Where: MIL `select` (numpy broadcasting), constant branches in the other branch's float type."""

from __future__ import annotations

import numpy as np
import onnx

from ....capability import Values
from ..context import Context
from . import converts
from .shape import DATA_TYPES, fold


def _where_limit(node: onnx.NodeProto, values: Values) -> str | None:
    if node.input[0] not in values.constants:
        # A bool computed inside the partition would do, but the claim cannot tell it from a bool model input,
        # which CoreML cannot take.
        return "the condition must be a constant (CoreML takes no bool inputs)"
    return None


@converts("Where", limit=_where_limit, types=DATA_TYPES | {"bool"})
def where(ctx: Context, node: onnx.NodeProto) -> None:
    if fold(ctx, node, np.where):
        return
    cond, a, b = ctx.input(node, 0), ctx.input(node, 1), ctx.input(node, 2)
    if isinstance(a, np.ndarray):
        a = ctx.like(a, b)
    if isinstance(b, np.ndarray):
        b = ctx.like(b, a)
    if isinstance(cond, np.ndarray):
        cond = cond.astype(bool)
    ctx.set(node, ctx.mb.select(cond=cond, a=a, b=b, name=ctx.name(node)))
