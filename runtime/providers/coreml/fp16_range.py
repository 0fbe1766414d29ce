"""Constants brought into float16's range before a CoreML program is computed in fp16: exporters write float32's
extremes (-3.4e38 for masked attention scores) and tiny epsilons (1e-10 before a Log), which fp16 rounds to -inf
(then -inf * 0 = NaN) and to 0 (then log(0) = -inf)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

FP16_MAX = float(np.finfo(np.float16).max)
FP16_TINY = float(np.finfo(np.float16).smallest_subnormal)


def clamp_to_fp16(values: np.ndarray) -> np.ndarray:
    """Finite values beyond fp16's largest become it (sign kept); non-zero ones below its smallest subnormal become
    that."""
    clamped = np.clip(values, -FP16_MAX, FP16_MAX)
    tiny = (clamped != 0) & (np.abs(clamped) < FP16_TINY)
    return np.where(tiny, np.sign(clamped) * FP16_TINY, clamped).astype(values.dtype)


def float_constants(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    """The main graph's float32 initializers and Constant node values."""
    values = [a.t for node in model.graph.node if node.op_type == "Constant" for a in node.attribute
              if a.name == "value"]
    return [t for t in [*model.graph.initializer, *values] if t.data_type == onnx.TensorProto.FLOAT]


def with_fp16_safe_constants(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` with its float32 constants clamped (`clamp_to_fp16`); the model itself when none needs
    it."""
    if all(np.array_equal(clamp_to_fp16(a), a) for a in map(numpy_helper.to_array, float_constants(model))):
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for tensor in float_constants(copy):
        tensor.CopyFrom(numpy_helper.from_array(clamp_to_fp16(numpy_helper.to_array(tensor)), tensor.name))
    return copy
