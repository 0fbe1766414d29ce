"""Pad with constant pads: MIL `pad` over the trailing axes that are padded, modes constant, reflect and edge
(MIL's replicate)."""

from __future__ import annotations

import numpy as np
import onnx

from ....capability import Values, attribute
from ..context import Context
from . import converts
from .shape import DATA_TYPES, constant, fold, shape_of

MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate"}
FLOATS = frozenset({"float32", "float16"})


def _pads(ctx: Context, node: onnx.NodeProto, rank: int) -> list[int]:
    """ONNX's pads (all begins, then all ends, over `axes`) as (begin, end) per axis of the input."""
    pads = ctx.attr(node, "pads" if ctx.opset >= 2 else "paddings") if ctx.opset < 11 else ctx.constant(node, 1)
    pads = [int(p) for p in pads]
    axes = ctx.constant(node, 3) if ctx.opset >= 18 else None
    axes = list(range(rank)) if axes is None else [int(a) % rank for a in axes]
    amounts = [(0, 0)] * rank
    for i, axis in enumerate(axes):
        amounts[axis] = (pads[i], pads[i + len(axes)])
    return amounts


def _pad_limit(node: onnx.NodeProto, values: Values) -> str | None:
    reason = constant(values, node, 1, 2, 3)
    if reason:
        return reason
    mode = attribute(node, "mode", "constant")
    if mode not in MODES:
        return f"mode {mode} is not supported (constant, reflect, edge)"
    if node.input[0] not in values.constants and values.types.get(node.input[0]) not in FLOATS:
        return "MIL pads float tensors only"
    return None


@converts("Pad", limit=_pad_limit, types=DATA_TYPES)
def pad(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    rank = len(shape_of(x))
    amounts = _pads(ctx, node, rank)
    mode = ctx.attr(node, "mode", "constant")
    value = ctx.attr(node, "value", 0.0) if ctx.opset < 11 else ctx.constant(node, 2)
    value = 0.0 if value is None else float(np.asarray(value).reshape(-1)[0]) if np.size(value) else 0.0
    numpy_mode = "edge" if mode == "edge" else mode
    extra = {"constant_values": value} if mode == "constant" else {}
    growth = [(max(b, 0), max(e, 0)) for b, e in amounts]
    crop = tuple(slice(max(-b, 0), d + max(b, 0) + min(e, 0) if e < 0 else None)
                 for (b, e), d in zip(amounts, shape_of(x)))
    if fold(ctx, node, lambda data, *_: np.pad(data, growth, mode=numpy_mode, **extra)[crop]):
        return
    name = ctx.name(node)
    result = x
    first = next((axis for axis, (b, e) in enumerate(growth) if b or e), rank)
    cropped = any(b < 0 or e < 0 for b, e in amounts)
    if first < rank:
        flat = np.asarray([p for b, e in growth[first:] for p in (b, e)], np.int32)
        extra = {"constant_val": ctx.like(np.float32(value), x)} if mode == "constant" else {}
        result = ctx.mb.pad(x=x, pad=flat, mode=MODES[mode], **extra,
                            name=ctx.unique(f"{name}_grown") if cropped else name)
    if cropped:
        dims = shape_of(result)
        begin = [c.start for c in crop]
        end = [d if c.stop is None else c.stop for c, d in zip(crop, dims)]
        result = ctx.mb.slice_by_index(x=result, begin=np.asarray(begin, np.int32), end=np.asarray(end, np.int32),
                                       name=name)
    if result is x:
        result = ctx.mb.identity(x=x, name=name)
    ctx.set(node, result)
