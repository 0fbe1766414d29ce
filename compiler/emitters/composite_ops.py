"""Emitters of ops the core runs as a few plan ops: LpNormalization (a Reduce, a Div and a Where for zero norms) and
Hardmax (ArgExtreme, then OneHot over the same axis)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from edgepack.runtime.native.epk import REDUCE

from ..values import attributes
from . import dtype_of, emitter, shape_of, unsupported
from .tensor_ops import binary

if TYPE_CHECKING:
    from ..lower import Lowering


@emitter("LpNormalization")
def emit_lp_normalization(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """x / ||x||_p along the axis, and 0 where the norm is 0 (as ONNX's reference gives)."""
    x = inputs[0]
    attrs = attributes(node)
    p = attrs.get("p", 2)
    if dtype_of(x) != "float32" or p not in (1, 2):
        raise unsupported(node, "float32 with p 1 or 2 only")
    shape = shape_of(x)
    axis = attrs.get("axis", -1) % len(shape)
    norm = lw.arena(f"{node.output[0]}/norm", "float32", [1 if d == axis else n for d, n in enumerate(shape)])
    lw.emit("Reduce", [x], [norm], [REDUCE[f"ReduceL{p}"], *(int(d == axis) for d in range(len(shape)))])
    zero = np.zeros((), np.float32)
    is_zero = binary(lw, "Equal", norm, zero, f"{node.output[0]}/zero_norm")
    scaled = binary(lw, "Div", x, norm, f"{node.output[0]}/scaled")
    out = lw.arena(node.output[0], "float32", shape)
    lw.emit("Where", [is_zero, zero, scaled], [out])
    return [out]


@emitter("Hardmax")
def emit_hardmax(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """1 at the first maximum along the axis, 0 elsewhere; before opset 13 over the input seen as 2-D."""
    x = inputs[0]
    if dtype_of(x) != "float32":
        raise unsupported(node, "float32 only")
    shape = shape_of(x)
    axis = attributes(node).get("axis", -1 if lw.opset >= 13 else 1) % len(shape)
    source = x
    if lw.opset < 13:
        rows = int(np.prod(shape[:axis], dtype=np.int64))
        source = lw.alias(f"{node.output[0]}/2d", x, (rows, int(np.prod(shape[axis:], dtype=np.int64))))
        axis = 1
    seen = shape_of(source)
    index = lw.arena(f"{node.output[0]}/argmax", "int64", [n for d, n in enumerate(seen) if d != axis])
    lw.emit("ArgExtreme", [source], [index], [axis, 1, 0])
    hard = lw.arena(node.output[0] if source is x else f"{node.output[0]}/onehot", "float32", seen)
    lw.emit("OneHot", [index, np.array([0.0, 1.0], np.float32)], [hard], [axis, seen[axis]])
    return [hard if source is x else lw.alias(node.output[0], hard, shape)]
