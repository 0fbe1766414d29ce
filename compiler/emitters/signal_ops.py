"""Emitters of the audio front end: DFT and STFT (plan ops), window functions and MelWeightMatrix (folded)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from ..values import attributes
from . import constant, emitter, shape_of, unsupported

if TYPE_CHECKING:
    from ..lower import Lowering

INT32_MAX = 2**31 - 1


def known_scalar(node: onnx.NodeProto, value: Any, what: str) -> int | None:
    """The integer value of an optional scalar input known when the plan is lowered, or None when it is absent."""
    known = constant(node, value, what)
    return None if known is None else int(np.asarray(known).reshape(-1)[0])


def length_in_range(node: onnx.NodeProto, length: int | None, what: str) -> int:
    """The length, when it is given and in [1, INT32_MAX] (a plan parameter)."""
    if length is None or not 1 <= length <= INT32_MAX:
        raise unsupported(node, f"{what} {length} is outside [1, {INT32_MAX}]")
    return length


@emitter("DFT")
def emit_dft(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """DFT: the axis (opset 20's input or opset 17's attribute), the dft length (default: the axis length, or
    2*(length-1) for an inverse one-sided transform), inverse and onesided as parameters."""
    attrs = attributes(node)
    shape = shape_of(inputs[0])
    axis = known_scalar(node, inputs[2] if len(inputs) > 2 else None, "axis")
    if axis is None:
        axis = int(attrs.get("axis", 1 if lw.opsets.get("", 1) < 20 else -2))
    if not -len(shape) <= axis < len(shape) or axis % len(shape) == len(shape) - 1:
        raise unsupported(node, f"axis {axis} is not a signal axis")
    axis %= len(shape)
    inverse, onesided = int(attrs.get("inverse", 0)), int(attrs.get("onesided", 0))
    length = known_scalar(node, inputs[1] if len(inputs) > 1 else None, "dft_length")
    if length is None:
        length = 2 * (shape[axis] - 1) if inverse and onesided else shape[axis]
    length = length_in_range(node, length, "dft length")
    out_shape = list(shape)
    out_shape[axis] = length // 2 + 1 if onesided and not inverse else length
    out_shape[-1] = 1 if inverse and onesided else 2
    out = lw.arena(node.output[0], "float32", out_shape)
    lw.emit("DFT", inputs[:1], [out], [axis, length, inverse, onesided], scratch=32 * length)
    return [out]


@emitter("STFT")
def emit_stft(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """STFT: frame step and frame length (the window's length when not given) as parameters, the window as input."""
    signal, step_value = inputs[:2]
    window = inputs[2] if len(inputs) > 2 else None
    shape = shape_of(signal)
    if len(shape) != 3:
        raise unsupported(node, "a signal of shape [batch, length, 1 or 2] only")
    step = length_in_range(node, known_scalar(node, step_value, "frame_step"), "frame step")
    length = known_scalar(node, inputs[3] if len(inputs) > 3 else None, "frame_length")
    if window is not None:
        window_shape = shape_of(window)
        if len(window_shape) != 1 or length not in (None, window_shape[0]):
            raise unsupported(node, "the window must be 1-D, of the frame length")
        length = window_shape[0]
    length = length_in_range(node, length, "frame length (or the window's length)")
    if length > shape[1]:
        raise unsupported(node, "the frame is longer than the signal")
    onesided = int(attributes(node).get("onesided", 1))
    frames = 1 + (shape[1] - length) // step
    out = lw.arena(node.output[0], "float32", [shape[0], frames, length // 2 + 1 if onesided else length, 2])
    lw.emit("STFT", [signal] if window is None else [signal, window], [out], [step, length, onesided],
            scratch=32 * length)
    return [out]


@emitter("MelWeightMatrix", "HannWindow", "HammingWindow", "BlackmanWindow")
def emit_known_signal_constant(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """Window functions and MelWeightMatrix, which read only their scalar inputs: folded once those are known (a
    model input's value, for which the plan is lowered and guarded)."""
    return lw.fold(node, [constant(node, value, f"input {k}") for k, value in enumerate(inputs)])
