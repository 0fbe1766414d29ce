"""A QDQ MatMul of two run-time values (attention's Q by K transposed, and its probabilities by V), each the output
of a per-tensor round trip the lowering emitted, as RoundTripMatMul: it takes both round trips' inputs, scales and
zero points, and quantizes both itself (on AVX2 the product then runs in int32); a round trip no op reads any more
is dropped from the plan (`without_unread_round_trips`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from edgepack.runtime.native.epk import ACTIVATIONS, F32

from ..values import Runtime
from .int8_matmul import plain_round_trip

if TYPE_CHECKING:
    from ..lower import Lowering


def lower_round_trip_matmul(lw: Lowering, a: Any, b: Any, out: Runtime) -> bool:
    """Emits the MatMul of `a` by `b` as RoundTripMatMul where both are round trips' outputs of rank 2 or more (the
    round trips stay for their other readers); whether it did. The caller leaves products of few rows to MatMul."""
    if not lw.packed_weights or not isinstance(a, Runtime) or not isinstance(b, Runtime) or \
            len(a.shape) < 2 or len(b.shape) < 2:
        return False
    trips = [lw.writer(a.index), lw.writer(b.index)]
    if not all(plain_round_trip(trip) for trip in trips):
        return False
    (a_source, a_scale, a_zero), (b_source, b_scale, b_zero) = (
        [Runtime(i, lw.tensors[i].dtype, lw.tensors[i].shape) for i in trip.inputs] for trip in trips)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    scratch = (m * k + k * n) * 4 + lw.gemm_scratch(k, n)
    lw.emit("RoundTripMatMul", [a_source, b_source, a_scale, a_zero, b_scale, b_zero], [out],
            [ACTIVATIONS["None"], F32(0.0), F32(0.0)], scratch)
    return True
