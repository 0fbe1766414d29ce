"""int8 compute for the ops whose weights the int8 weight mode quantized: static QDQ when calibration samples are
given (activation ranges measured on them), else dynamic int8 for MatMul and Gemm (ranges measured per run)."""

from __future__ import annotations

import onnx

from . import Calibration, QuantizeResult, register_activations
from .dynamic_matmul import INTEGER_OPS, dynamic_matmul
from .int8_weights import WEIGHT_INPUT
from .qdq_static import static_qdq


def integer_op_types(activations: str, calibration: Calibration | None) -> frozenset[str]:
    """The op types `activations` multiplies in integers: static int8 every op with an int8 weight slot (Conv,
    MatMul, Gemm), dynamic int8 MatMul and Gemm, other modes none."""
    if activations != "int8":
        return frozenset()
    return frozenset(WEIGHT_INPUT) if calibration is not None else INTEGER_OPS


@register_activations("int8")
def int8_activations(model: onnx.ModelProto, keep: frozenset[str], calibration: Calibration | None
                     ) -> QuantizeResult:
    if calibration is None:
        return dynamic_matmul(model, keep)
    return static_qdq(model, keep, calibration)
