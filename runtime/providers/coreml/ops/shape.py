"""Shape and ConstantOfShape, folded at conversion (CoreML programs have static shapes), and the helpers the
shape-manipulation converters share: reading constant inputs, and folding a node whose inputs are all constants
in numpy (shape arithmetic such as Shape -> Gather -> Concat -> Reshape never reaches the program)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import numpy_helper

from ....capability import Values, attribute
from ..context import Context, Value
from . import converts

DATA_TYPES = frozenset({"float32", "float16", "int32"})
"""What a data-movement op may take and give when not a constant: MIL's float types and int32 (CoreML has no
int64; a bool would have to be made inside the partition, and a model input cannot be bool)."""
SHAPE_TYPES = DATA_TYPES | {"int64"}
"""Shape's int64 output, folded at conversion."""


def constant_inputs(ctx: Context, node: onnx.NodeProto) -> list[np.ndarray | None] | None:
    """Every input as a numpy array (None where absent), or None when one is a value computed by the program."""
    arrays: list[np.ndarray | None] = []
    for index, name in enumerate(node.input):
        if not name:
            arrays.append(None)
            continue
        value = ctx.input(node, index)
        if not isinstance(value, np.ndarray):
            return None
        arrays.append(value)
    return arrays


def fold(ctx: Context, node: onnx.NodeProto, compute: Callable[..., object]) -> bool:
    """When every input is a constant, record `compute(*inputs)` (an array or a tuple of arrays) as the node's
    outputs and return True."""
    arrays = constant_inputs(ctx, node)
    if arrays is None:
        return False
    results = compute(*arrays)
    results = results if isinstance(results, tuple) else (results,)
    ctx.set(node, *[np.asarray(r) for r in results])
    return True


def ints_of(ctx: Context, node: onnx.NodeProto, index: int) -> list[int] | None:
    """A constant int-list input (axes, sizes, pads), or None when absent."""
    value = ctx.constant(node, index)
    return None if value is None else [int(v) for v in np.atleast_1d(value)]


def constant(values: Values, node: onnx.NodeProto, *indexes: int) -> str | None:
    """A limit's refusal when one of these inputs is present and not a constant."""
    for index in indexes:
        if index < len(node.input) and node.input[index] and node.input[index] not in values.constants:
            return f"input {index} ({node.input[index]!r}) must be a constant"
    return None


def constant_input_1(node: onnx.NodeProto, values: Values) -> str | None:
    """The limit of ops whose input 1 (shape, axes, indices, split sizes, repeats) must be a constant, with an
    output CoreML can hold."""
    return constant(values, node, 1) or no_empty_output(node, values)


def static_shape(values: Values, name: str) -> list[int] | None:
    shape = values.shapes.get(name)
    return None if shape is None or any(d is None for d in shape) else [int(d) for d in shape]


MAX_RANK = 5


def no_empty_output(node: onnx.NodeProto, values: Values) -> str | None:
    """CoreML tensors have no zero-sized dims and rank 5 at most (folded constants aside)."""
    for name in node.output:
        if not name or name in values.constants:
            continue
        shape = values.shapes.get(name)
        if shape is not None and 0 in shape:
            return f"output {name!r} would be empty (CoreML has no zero-sized tensors)"
        if shape is not None and len(shape) > MAX_RANK:
            return f"output {name!r} has rank {len(shape)}; CoreML's tensors have rank {MAX_RANK} at most"
    return None


def shape_of(value: Value) -> list[int]:
    return [int(d) for d in (value.shape if isinstance(value, np.ndarray) else Context.shape(value))]


def _shape_limit(node: onnx.NodeProto, values: Values) -> str | None:
    if node.input[0] not in values.constants and values.types.get(node.input[0]) not in DATA_TYPES:
        return f"the input is {values.types.get(node.input[0])}, which CoreML does not hold"
    return None if static_shape(values, node.input[0]) is not None else "the input's shape must be static"


def _slice_bounds(node: onnx.NodeProto) -> slice:
    start = int(attribute(node, "start", 0))
    end = attribute(node, "end")
    return slice(start, None if end is None else int(end))


@converts("Shape", limit=_shape_limit, types=SHAPE_TYPES)
def shape(ctx: Context, node: onnx.NodeProto) -> None:
    dims = shape_of(ctx.input(node, 0))
    ctx.set(node, np.asarray(dims, dtype=np.int64)[_slice_bounds(node)])


@converts("Size", limit=_shape_limit, types=SHAPE_TYPES)
def size(ctx: Context, node: onnx.NodeProto) -> None:
    ctx.set(node, np.asarray(int(np.prod(shape_of(ctx.input(node, 0)))), dtype=np.int64))


def _constant_of_shape_limit(node: onnx.NodeProto, values: Values) -> str | None:
    return constant(values, node, 0) or no_empty_output(node, values)


@converts("ConstantOfShape", limit=_constant_of_shape_limit, types=SHAPE_TYPES)
def constant_of_shape(ctx: Context, node: onnx.NodeProto) -> None:
    value = ctx.attr(node, "value")
    fill = numpy_helper.to_array(value).reshape(()) if value is not None else np.float32(0)
    ctx.set(node, np.full([int(d) for d in ctx.constant(node, 0)], fill, dtype=fill.dtype))
