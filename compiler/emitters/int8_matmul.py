"""A QDQ MatMul as Int8MatMul: X through QuantizeLinear and DequantizeLinear (a round trip the lowering emitted) by
a constant int8 weight with one scale per column. The op takes X before its round trip, the weight in panels of 32
columns with 4 rows of K side by side (the groups 8-bit dot-product instructions read), the weight's column sums (for
X's zero point) and both scales; a round trip no op reads any more is then dropped from the plan."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from edgepack.runtime.native.epk import ACTIVATIONS, F32, Op

from ..quantized import Quantized, scales_per_column
from ..values import PANEL_COLUMNS, ROUND_TRIP, Runtime

if TYPE_CHECKING:
    from ..lower import Lowering

GROUP = 4
"""Rows of K an 8-bit dot-product instruction sums per 32-bit lane (int8_matmul.c's GROUP)."""


def int8_panels(values: np.ndarray) -> np.ndarray:
    """A K x N int8 weight as Int8MatMul takes it: [ceil(N / 32), ceil(K / 4), 32, 4], zero past K and N."""
    k, n = values.shape
    groups, panels = -(-k // GROUP), -(-n // PANEL_COLUMNS)
    padded = np.zeros((groups * GROUP, panels * PANEL_COLUMNS), np.int8)
    padded[:k, :n] = values
    return np.ascontiguousarray(padded.reshape(groups, GROUP, panels, PANEL_COLUMNS).transpose(2, 0, 3, 1))


def column_scales(weight: Quantized) -> np.ndarray | None:
    """One float32 scale per column of a K x N int8 weight; None for other forms (scales that differ along K, blocks,
    int4, float16)."""
    if len(weight.shape) != 2 or weight.values.dtype != np.int8 or weight.scale is None or \
            weight.scale.dtype != np.float32:
        return None
    return scales_per_column(weight)


def plain_round_trip(op: Op | None) -> bool:
    """Whether `op` is a round trip (Quantize mode ROUND_TRIP) with no activation folded in: an op that reads its
    input in its place would skip such an activation."""
    return op is not None and op.kind == "Quantize" and op.params[0] == ROUND_TRIP and len(op.params) == 3


def lower_int8_matmul(lw: Lowering, x: Any, weight: Any, out: Runtime) -> bool:
    """Emits the MatMul of `x` by `weight` as Int8MatMul where `x` is a round trip's output (the round trip stays
    for its other readers; `without_unread_round_trips` drops it when none is left); whether it did."""
    if not lw.packed_weights or not isinstance(x, Runtime) or not isinstance(weight, Quantized) or \
            weight.dtype != "float32" or (scales := column_scales(weight)) is None:
        return False
    round_trip = lw.writer(x.index)
    if not plain_round_trip(round_trip):
        return False
    source, x_scale, x_zero = (Runtime(i, lw.tensors[i].dtype, lw.tensors[i].shape) for i in round_trip.inputs)
    packed = lw.reshaped_weight(weight, "int8 panels", lambda w: int8_panels(w.values))
    sums = lw.reshaped_weight(weight, "column sums", lambda w: w.values.astype(np.int32).sum(axis=0, dtype=np.int32))
    n = weight.shape[1]
    rows, padded = int(np.prod(x.shape[:-1])), packed.shape[1] * GROUP
    lw.emit("Int8MatMul", [source, packed, scales, sums, x_scale, x_zero], [out],
            [n, ACTIVATIONS["None"], F32(0.0), F32(0.0)], (rows * padded + padded * PANEL_COLUMNS) * 4)
    return True


def without_unread_round_trips(ops: list[Op], outputs: list[int]) -> list[Op]:
    """`ops` less the round trips (Quantize mode ROUND_TRIP) whose output no op and no model output reads: every
    reader became an Int8MatMul, which takes the round trip's input."""
    read = set(outputs) | {i for op in ops for i in op.inputs if i is not None}
    return [op for op in ops
            if not (op.kind == "Quantize" and op.params[0] == ROUND_TRIP and op.outputs[0] not in read)]
