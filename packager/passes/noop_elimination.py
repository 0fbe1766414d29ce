"""Removes nodes whose output equals an input: Identity, inference Dropout, same-type Cast, no-op reshapes, x+0, x*1."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import onnx_ir as ir

from ..graphs import iter_graphs
from . import register
from ._rewrite import (
    ONNX_DOMAINS,
    attr_int,
    attr_ints,
    can_replace,
    const_array,
    dims,
    fill_missing_shapes,
    opset,
    remove_node,
    replace,
)

_UNBOUNDED = 2**31 - 1
"""A Slice end at or past this reaches the end of any axis."""

Rule = Callable[[ir.Node, int], ir.Value | None]


def _input(node: ir.Node, index: int) -> ir.Value | None:
    return node.inputs[index] if index < len(node.inputs) else None


def _ints(node: ir.Node, index: int, attr: str) -> list[int] | None:
    """An int list given as input `index` (newer opsets) or attribute `attr` (older); None if unknown."""
    if len(node.inputs) > index:
        values = const_array(node.inputs[index])
        return None if values is None else [int(v) for v in values.reshape(-1)]
    return attr_ints(node, attr)


def _has_operand(node: ir.Node, index: int, attr: str) -> bool:
    return _input(node, index) is not None or attr in node.attributes


def _same_static_shape(a: ir.Value | None, b: ir.Value) -> bool:
    da, db = dims(a), dims(b)
    return da is not None and None not in da and da == db


def _identity(node: ir.Node, _: int) -> ir.Value | None:
    return _input(node, 0)


def _dropout(node: ir.Node, version: int) -> ir.Value | None:
    if version < 7 and attr_int(node, "is_test", 0) != 1:
        return None
    training = _input(node, 2)
    if training is not None:
        flag = const_array(training)
        if flag is None or bool(flag.reshape(-1)[0]):
            return None
    return _input(node, 0)


def _cast(node: ir.Node, _: int) -> ir.Value | None:
    data, to = _input(node, 0), attr_int(node, "to", 0)
    if data is None or data.dtype is None or to is None:
        return None
    return data if data.dtype == ir.DataType(to) else None


def _cast_like(node: ir.Node, _: int) -> ir.Value | None:
    data, like = _input(node, 0), _input(node, 1)
    if data is None or like is None or data.dtype is None:
        return None
    return data if data.dtype == like.dtype else None


def _reshape(node: ir.Node, _: int) -> ir.Value | None:
    data = _input(node, 0)
    if _same_static_shape(data, node.outputs[0]):
        return data
    target, shape, allowzero = _ints(node, 1, "shape"), dims(data), attr_int(node, "allowzero", 0)
    if target is None or shape is None or len(target) != len(shape) or allowzero is None:
        return None
    free = [i for i, t in enumerate(target) if t == -1]
    for i, (t, d) in enumerate(zip(target, shape)):
        copied = t == 0 and not allowzero
        if not (copied or t == d or (t == -1 and free == [i])):
            return None
    if free and 0 in shape:
        return None
    return data


def _expand(node: ir.Node, _: int) -> ir.Value | None:
    data = _input(node, 0)
    if _same_static_shape(data, node.outputs[0]):
        return data
    target, shape = _ints(node, 1, "shape"), dims(data)
    if target is None or shape is None or len(target) > len(shape):
        return None
    tail = shape[len(shape) - len(target) :]
    return data if all(t == 1 or t == d for t, d in zip(target, tail)) else None


def _flatten(node: ir.Node, _: int) -> ir.Value | None:
    data = _input(node, 0)
    if _same_static_shape(data, node.outputs[0]):
        return data
    shape, axis = dims(data), attr_int(node, "axis", 1)
    if shape is None or axis is None or len(shape) != 2:
        return None
    axis = axis + 2 if axis < 0 else axis
    if axis == 1:
        return data
    if None in shape:
        return None
    return data if [math.prod(shape[:axis]), math.prod(shape[axis:])] == shape else None


def _transpose(node: ir.Node, _: int) -> ir.Value | None:
    data, perm = _input(node, 0), attr_ints(node, "perm")
    if perm is None:
        shape = dims(data)
        return data if "perm" not in node.attributes and shape is not None and len(shape) <= 1 else None
    return data if perm == list(range(len(perm))) else None


def _squeeze(node: ir.Node, _: int) -> ir.Value | None:
    data = _input(node, 0)
    axes = _ints(node, 1, "axes") if _has_operand(node, 1, "axes") else []
    shape = dims(data)
    if axes != [] or shape is None:
        return None
    return data if all(d is not None and d != 1 for d in shape) else None


def _unsqueeze(node: ir.Node, _: int) -> ir.Value | None:
    return _input(node, 0) if _ints(node, 1, "axes") == [] else None


def _pad(node: ir.Node, version: int) -> ir.Value | None:
    pads = _ints(node, 1, "pads" if version > 1 else "paddings")
    return _input(node, 0) if pads is not None and not any(pads) else None


def _slice(node: ir.Node, _: int) -> ir.Value | None:
    data = _input(node, 0)
    starts, ends = _ints(node, 1, "starts"), _ints(node, 2, "ends")
    if starts is None or ends is None or len(starts) != len(ends):
        return None
    axes = _ints(node, 3, "axes") if _has_operand(node, 3, "axes") else list(range(len(starts)))
    steps = _ints(node, 4, "steps") if _input(node, 4) is not None else [1] * len(starts)
    if axes is None or steps is None or not len(starts) == len(axes) == len(steps):
        return None
    shape = dims(data)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        size = shape[axis] if shape is not None and -len(shape) <= axis < len(shape) else None
        whole_start = start == 0 or (size is not None and start <= -size)
        whole_end = end >= _UNBOUNDED or (size is not None and end >= size)
        if step != 1 or not (whole_start and whole_end):
            return None
    return data


def _concat(node: ir.Node, _: int) -> ir.Value | None:
    return node.inputs[0] if len(node.inputs) == 1 else None


def _keeps_shape(data: ir.Value, const: np.ndarray) -> bool:
    """Whether broadcasting `data` against `const` leaves its shape as it is."""
    if const.ndim == 0:
        return True
    shape = dims(data)
    if shape is None or const.ndim > len(shape):
        return False
    return all(c == 1 or c == d for c, d in zip(const.shape, shape[len(shape) - const.ndim :]))


def _neutral(element: int, commutative: bool) -> Rule:
    """x op c == x when c is all `element` and broadcasting keeps x's shape."""

    def rule(node: ir.Node, _: int) -> ir.Value | None:
        if len(node.inputs) != 2:
            return None
        dtype = node.outputs[0].dtype
        pairs = [(0, 1), (1, 0)] if commutative else [(0, 1)]
        for data_index, const_index in pairs:
            data, const = node.inputs[data_index], const_array(node.inputs[const_index])
            if data is None or const is None or const.size == 0 or not np.all(const == element):
                continue
            if dtype is not None and data.dtype == dtype and _keeps_shape(data, const):
                return data
        return None

    return rule


RULES: dict[str, Rule] = {
    "Identity": _identity,
    "Dropout": _dropout,
    "Cast": _cast,
    "CastLike": _cast_like,
    "Reshape": _reshape,
    "Expand": _expand,
    "Flatten": _flatten,
    "Transpose": _transpose,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Pad": _pad,
    "Slice": _slice,
    "Concat": _concat,
    "Add": _neutral(0, commutative=True),
    "Sub": _neutral(0, commutative=False),
    "Mul": _neutral(1, commutative=True),
    "Div": _neutral(1, commutative=False),
}


def _eliminate(node: ir.Node, version: int) -> None:
    rule = RULES.get(node.op_type) if node.domain in ONNX_DOMAINS else None
    source = rule(node, version) if rule is not None else None
    out = node.outputs[0] if node.outputs else None
    if source is None or out is None or not can_replace(out, source):
        return
    if any(extra.uses() or extra.is_graph_output() for extra in node.outputs[1:]):
        return
    replace(out, source)
    remove_node(node)


@register("noop-elimination", "removes Identity, inference Dropout, same-type Cast and other nodes that change nothing")
def apply(model: ir.Model) -> ir.Model:
    fill_missing_shapes(model)
    version = opset(model)
    for graph in list(iter_graphs(model.graph)):
        for node in list(graph):
            _eliminate(node, version)
    return model
