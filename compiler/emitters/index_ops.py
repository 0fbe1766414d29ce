"""Emitters of indexed reads and writes (GatherElements, GatherND, ScatterElements, Scatter, ScatterND) and of ops
that fill an output from a pattern of their input (Trilu, CumSum, CumProd, Tile, OneHot, EyeLike), TopK, and the
selections whose output shape is their input's values (Compress, NonZero, Unique), lowered for those values."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from edgepack.runtime.native import epk

from ..values import attributes
from . import constant, dtype_of, emitter, shape_of, unsupported

if TYPE_CHECKING:
    from ..lower import Lowering

REDUCTIONS = {"none": 0, "add": 1, "mul": 2, "max": 3, "min": 4}
INT32_MAX = 2**31 - 1


def reduction(node: onnx.NodeProto) -> int:
    """The plan's reduction code of a Scatter node."""
    name = attributes(node).get("reduction", "none")
    if name not in REDUCTIONS:
        raise unsupported(node, f"reduction {name!r} is not supported")
    return REDUCTIONS[name]


@emitter("GatherND")
def emit_gather_nd(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """GatherND: batch_dims as its parameter."""
    out, = lw.outputs(node, inputs)
    lw.emit("GatherND", inputs, [out], [attributes(node).get("batch_dims", 0)])
    return [out]


@emitter("ScatterElements", "Scatter")
def emit_scatter_elements(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """ScatterElements, and opset 10's Scatter (no reduction): one plan op."""
    out, = lw.outputs(node, inputs)
    axis = attributes(node).get("axis", 0) % len(shape_of(inputs[0]))
    lw.emit("ScatterElements", inputs, [out], [axis, reduction(node)])
    return [out]


@emitter("ScatterND")
def emit_scatter_nd(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """ScatterND with its reduction."""
    out, = lw.outputs(node, inputs)
    lw.emit("ScatterND", inputs, [out], [reduction(node)])
    return [out]


@emitter("Trilu")
def emit_trilu(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """Trilu: k (a constant) clamped to the matrix, so that it fits a parameter word."""
    out, = lw.outputs(node, inputs)
    k = constant(node, inputs[1] if len(inputs) > 1 else None, "k")
    rows, cols = out.shape[-2:]
    k = 0 if k is None else int(np.clip(int(k.reshape(-1)[0]), -rows, cols))
    lw.emit("Trilu", inputs[:1], [out], [int(attributes(node).get("upper", 1)), k])
    return [out]


@emitter("CumSum", "CumProd")
def emit_cumsum(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """CumSum and CumProd: the axis (a constant) normalized, with exclusive and reverse (and product for CumProd)."""
    out, = lw.outputs(node, inputs)
    axis = int(constant(node, inputs[1], "axis").reshape(-1)[0]) % len(out.shape)
    attrs = attributes(node)
    params = [axis, int(attrs.get("exclusive", 0)), int(attrs.get("reverse", 0))]
    lw.emit("CumSum", inputs[:1], [out], params + [1] if node.op_type == "CumProd" else params)
    return [out]


@emitter("Tile")
def emit_tile(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """Tile: the repeats (a constant) as parameters."""
    repeats = [int(r) for r in constant(node, inputs[1], "repeats").reshape(-1)]
    if any(r > INT32_MAX for r in repeats):
        raise unsupported(node, "repeats beyond int32")
    out, = lw.outputs(node, inputs)
    lw.emit("Tile", inputs[:1], [out], repeats)
    return [out]


@emitter("OneHot")
def emit_one_hot(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """OneHot: depth (a constant) as a parameter; indices and [off, on] values as inputs."""
    indices, depth, values = inputs
    depth = int(constant(node, depth, "depth").reshape(-1)[0])
    if not 0 < depth <= INT32_MAX:
        raise unsupported(node, f"depth {depth} is not a positive int32")
    out, = lw.outputs(node, inputs)
    axis = attributes(node).get("axis", -1) % len(out.shape)
    lw.emit("OneHot", [indices, values], [out], [axis, depth])
    return [out]


@emitter("TopK")
def emit_top_k(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """TopK: k (a constant input, or opset 1's attribute) and the normalized axis as parameters; always sorted."""
    if dtype_of(inputs[0]) not in ("float32", "int32", "int64"):
        raise unsupported(node, "float32, int32 or int64 only")
    attrs = attributes(node)
    k = constant(node, inputs[1] if len(inputs) > 1 else None, "k")
    k = int(attrs.get("k", -1)) if k is None else int(k.reshape(-1)[0])
    shape = shape_of(inputs[0])
    axis = int(attrs.get("axis", -1)) % len(shape)
    if not 0 <= k <= shape[axis]:
        raise unsupported(node, f"k {k} is outside [0, {shape[axis]}]")
    values, indices = lw.outputs(node, inputs)
    params = [axis, k, int(attrs.get("largest", 1)), int(attrs.get("sorted", 1))]
    lw.emit("TopK", inputs[:1], [values, indices], params, scratch=k * 8)
    return [values, indices]


@emitter("Compress")
def emit_compress(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """Compress: a Gather of the positions the condition (known when the plan is lowered) selects, on the flattened
    data when the node has no axis. (With the data known too, the lowering folds the node instead.)"""
    data, condition = inputs
    selected = np.flatnonzero(constant(node, condition, "condition")).astype(np.int64)
    axis = attributes(node).get("axis")
    if axis is None:
        data = lw.alias(f"{node.output[0]}/flat", data, (int(np.prod(shape_of(data))),))
        axis = 0
    shape = list(shape_of(data))
    axis %= len(shape)
    if len(selected) and selected[-1] >= shape[axis]:
        raise unsupported(node, "the condition is longer than the axis")
    out = lw.arena(node.output[0], dtype_of(data), [*shape[:axis], len(selected), *shape[axis + 1:]])
    lw.emit("Gather", [data, selected], [out], [axis])
    return [out]


@emitter("NonZero", "Unique")
def emit_known_selection(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """NonZero and Unique, whose outputs' shapes are their input's values: folded once the input is known (a model
    input's value, for which the plan is lowered and guarded)."""
    return lw.fold(node, [constant(node, value, f"input {k}") for k, value in enumerate(inputs)])


@emitter("EyeLike")
def emit_eye_like(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """EyeLike: a constant of the input's shape (only its shape is read)."""
    rows, columns = shape_of(inputs[0])
    (dtype, _), = lw.infer(node, inputs)
    return [np.eye(rows, columns, int(attributes(node).get("k", 0)), dtype=epk.numpy_dtype(dtype))]
