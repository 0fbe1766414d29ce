"""Transpose: MIL `transpose` (perm defaults to the reversed axes); a constant input folds in numpy."""

from __future__ import annotations

import numpy as np
import onnx

from ..context import Context
from . import converts
from .shape import DATA_TYPES, fold, no_empty_output, shape_of


@converts("Transpose", limit=no_empty_output, types=DATA_TYPES)
def transpose(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    rank = len(shape_of(x))
    perm = [int(p) % rank for p in ctx.attr(node, "perm", list(range(rank))[::-1])]
    if fold(ctx, node, lambda data: np.transpose(data, perm)):
        return
    if perm == list(range(rank)):
        ctx.set(node, ctx.mb.identity(x=x, name=ctx.name(node)))
        return
    ctx.set(node, ctx.mb.transpose(x=x, perm=perm, name=ctx.name(node)))
