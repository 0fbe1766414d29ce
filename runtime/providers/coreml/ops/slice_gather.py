"""Slice (MIL `slice_by_index` with begin, end and stride resolved against the static shape, ONNX's clamping
included) and Gather (MIL `gather` with constant, non-negative indices; a scalar index drops the axis)."""

from __future__ import annotations

import numpy as np
import onnx

from ....capability import Values
from ..context import Context
from . import converts
from .shape import DATA_TYPES, constant, constant_input_1, fold, no_empty_output, shape_of

INT32_MAX = 2**31 - 1


def _slice_params(ctx: Context, node: onnx.NodeProto) -> tuple[list[int], list[int], list[int] | None, list[int]]:
    if ctx.opset < 10:
        starts, ends = list(ctx.attr(node, "starts")), list(ctx.attr(node, "ends"))
        axes = ctx.attr(node, "axes")
        return starts, ends, None if axes is None else list(axes), [1] * len(starts)
    starts, ends = ctx.constant(node, 1), ctx.constant(node, 2)
    axes, steps = ctx.constant(node, 3), ctx.constant(node, 4)
    starts, ends = [int(v) for v in starts], [int(v) for v in ends]
    return (starts, ends, None if axes is None else [int(v) for v in axes],
            [1] * len(starts) if steps is None else [int(v) for v in steps])


def slice_indexes(dims: list[int], starts: list[int], ends: list[int], axes: list[int] | None,
                  steps: list[int]) -> tuple[list[int], list[int], list[int], list[bool]]:
    """Per axis (begin, end, stride, end_mask) for `slice_by_index`, all within the dim: ONNX's clamping is
    Python's slice.indices, and an end before index 0 (negative step) becomes an end mask."""
    rank = len(dims)
    begin, end, stride, end_mask = [0] * rank, list(dims), [1] * rank, [False] * rank
    for start, stop, axis, step in zip(starts, ends, axes if axes is not None else range(len(starts)), steps):
        axis %= rank
        start, stop = max(min(start, INT32_MAX), -INT32_MAX), max(min(stop, INT32_MAX), -INT32_MAX)
        first, last, step = slice(start, stop, step).indices(dims[axis])
        begin[axis], end[axis], stride[axis] = first, last, step
        if last < 0:
            end[axis], end_mask[axis] = 0, True
    return begin, end, stride, end_mask


def _slice_limit(node: onnx.NodeProto, values: Values) -> str | None:
    return constant(values, node, 1, 2, 3, 4) or no_empty_output(node, values)


@converts("Slice", limit=_slice_limit, types=DATA_TYPES)
def slice_(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    dims = shape_of(x)
    begin, end, stride, end_mask = slice_indexes(dims, *_slice_params(ctx, node))
    index = tuple(slice(b, None if m else e, s) for b, e, s, m in zip(begin, end, stride, end_mask))
    if fold(ctx, node, lambda data, *_: data[index]):
        return
    if begin == [0] * len(dims) and end == dims and stride == [1] * len(dims):
        ctx.set(node, ctx.mb.identity(x=x, name=ctx.name(node)))
        return
    extra = {"end_mask": end_mask} if any(end_mask) else {}
    ctx.set(node, ctx.mb.slice_by_index(x=x, begin=np.asarray(begin, np.int32), end=np.asarray(end, np.int32),
                                        stride=np.asarray(stride, np.int32), **extra, name=ctx.name(node)))


@converts("Gather", limit=constant_input_1, types=DATA_TYPES)
def gather(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    dims = shape_of(x)
    axis = int(ctx.attr(node, "axis", 0)) % len(dims)
    indices = np.asarray(ctx.constant(node, 1)).astype(np.int64)
    indices = np.where(indices < 0, indices + dims[axis], indices)
    if fold(ctx, node, lambda data, _: np.take(data, indices, axis=axis)):
        return
    name = ctx.name(node)
    if indices.ndim == 0:
        index = int(indices)
        begin = [0] * len(dims)
        begin[axis] = index
        end = list(dims)
        end[axis] = index + 1
        squeeze = [a == axis for a in range(len(dims))]
        ctx.set(node, ctx.mb.slice_by_index(x=x, begin=np.asarray(begin, np.int32), end=np.asarray(end, np.int32),
                                            squeeze_mask=squeeze, name=name))
        return
    ctx.set(node, ctx.mb.gather(x=x, indices=indices.astype(np.int32), axis=axis, name=name))
