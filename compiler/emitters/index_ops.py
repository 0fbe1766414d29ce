"""Emitters of indexed reads and writes (GatherElements, GatherND, ScatterElements, Scatter, ScatterND) and of ops
that fill an output from a pattern of their input (Trilu, CumSum, Tile, OneHot), and TopK."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

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


@emitter("CumSum")
def emit_cumsum(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """CumSum: the axis (a constant) normalized, with exclusive and reverse."""
    out, = lw.outputs(node, inputs)
    axis = int(constant(node, inputs[1], "axis").reshape(-1)[0]) % len(out.shape)
    attrs = attributes(node)
    lw.emit("CumSum", inputs[:1], [out], [axis, int(attrs.get("exclusive", 0)), int(attrs.get("reverse", 0))])
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
