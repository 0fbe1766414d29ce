"""Where a value's readers saturate: the interval outside which a change in the value changes none of their
outputs. A quantization range clipped to it loses nothing and spends its 256 levels where they count, as for a
Convolution whose output only a HardSwish (x * clip(x + 3, 0, 6) / 6, constant below -3) or a HardSigmoid
(clip(alpha * x + beta, 0, 1)) reads."""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import numpy_helper

from edgepack.runtime.capability import attribute

UNBOUNDED = (-math.inf, math.inf)


def useful_interval(value: str, readers: list[onnx.NodeProto], readers_of: dict[str, list[onnx.NodeProto]],
                    initializers: dict[str, onnx.TensorProto]) -> tuple[float, float]:
    """The hull of the intervals in which `value` matters to each of its `readers`; UNBOUNDED where one of them
    uses all of it (or `value` is read by nothing)."""
    if not readers:
        return UNBOUNDED
    if _is_decomposed_hardswish(value, readers, readers_of, initializers):
        return -3.0, math.inf
    intervals = [_reader_interval(reader, value, initializers) for reader in readers]
    return min(low for low, _ in intervals), max(high for _, high in intervals)


def _reader_interval(reader: onnx.NodeProto, value: str, initializers: dict[str, onnx.TensorProto]
                     ) -> tuple[float, float]:
    if not reader.input or reader.input[0] != value or value in reader.input[1:]:
        return UNBOUNDED
    if reader.op_type == "Relu":
        return 0.0, math.inf
    if reader.op_type == "HardSwish":
        return -3.0, math.inf
    if reader.op_type == "HardSigmoid":
        alpha, beta = float(attribute(reader, "alpha", 0.2)), float(attribute(reader, "beta", 0.5))
        if alpha <= 0.0:
            return UNBOUNDED
        return -beta / alpha, (1.0 - beta) / alpha
    if reader.op_type == "Clip":
        return _clip_bounds(reader, initializers) or UNBOUNDED
    return UNBOUNDED


def _clip_bounds(clip: onnx.NodeProto, initializers: dict[str, onnx.TensorProto]) -> tuple[float, float] | None:
    """A Clip's (min, max) when both are constant or absent (opset 11+ inputs, or older attributes)."""
    bounds = []
    for index, (name, default) in enumerate((("min", -math.inf), ("max", math.inf)), start=1):
        if len(clip.input) > index and clip.input[index]:
            constant = _scalar(clip.input[index], initializers)
            if constant is None:
                return None
            bounds.append(constant)
        else:
            bounds.append(float(attribute(clip, name, default)))
    return bounds[0], bounds[1]


def _is_decomposed_hardswish(value: str, readers: list[onnx.NodeProto],
                             readers_of: dict[str, list[onnx.NodeProto]],
                             initializers: dict[str, onnx.TensorProto]) -> bool:
    """`value` is read only by Add(value, 3) -> Clip(0, 6) -> Mul(value, ·): HardSwish before its division by 6, as
    exporters write it (paddle2onnx, older torch); the product is 0 wherever value < -3."""
    adds = [n for n in readers if n.op_type == "Add"]
    muls = [n for n in readers if n.op_type == "Mul"]
    if len(readers) != 2 or len(adds) != 1 or len(muls) != 1:
        return False
    add, mul = adds[0], muls[0]
    offset = [name for name in add.input if name != value]
    if len(offset) != 1 or _scalar(offset[0], initializers) != 3.0:
        return False
    clips = readers_of.get(add.output[0], [])
    if len(clips) != 1 or clips[0].op_type != "Clip" or _clip_bounds(clips[0], initializers) != (0.0, 6.0):
        return False
    return sorted(mul.input) == sorted([value, clips[0].output[0]])


def _scalar(name: str, initializers: dict[str, onnx.TensorProto]) -> float | None:
    """The value of a one-element initializer, else None."""
    tensor = initializers.get(name)
    if tensor is None:
        return None
    array = numpy_helper.to_array(tensor)
    return float(array.reshape(-1)[0]) if array.size == 1 and np.issubdtype(array.dtype, np.number) else None
