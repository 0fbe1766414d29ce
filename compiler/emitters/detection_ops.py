"""Emitters of the detection ops: RoiAlign and MaxUnpool as plan ops, NonMaxSuppression computed for known inputs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import onnx

from edgepack.runtime.native.epk import F32

from ..values import attributes
from . import constant, dtype_of, emitter, shape_of, unsupported

if TYPE_CHECKING:
    from ..lower import Lowering

ROI_MODES = {"avg": 0, "max": 1}
ROI_TRANSFORMS = {"half_pixel": 1, "output_half_pixel": 0}


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@emitter("RoiAlign")
def emit_roi_align(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """RoiAlign: mode, the half-pixel flag (opset 10 has no attribute and behaves as output_half_pixel),
    sampling_ratio and spatial_scale as parameters; the output's shape carries output_height and output_width."""
    attrs = attributes(node)
    mode = text(attrs.get("mode", "avg"))
    transform = text(attrs.get("coordinate_transformation_mode", "half_pixel" if lw.opset >= 16 else
                               "output_half_pixel"))
    if mode not in ROI_MODES or transform not in ROI_TRANSFORMS:
        raise unsupported(node, f"mode {mode!r} with coordinate transformation {transform!r} is not supported")
    x, rois, batch_indices = inputs
    shape = (shape_of(rois)[0], shape_of(x)[1], int(attrs.get("output_height", 1)), int(attrs.get("output_width", 1)))
    out = lw.arena(node.output[0], dtype_of(x), shape)
    params = [ROI_MODES[mode], ROI_TRANSFORMS[transform], int(attrs.get("sampling_ratio", 0)),
              F32(attrs.get("spatial_scale", 1.0))]
    lw.emit("RoiAlign", [x, rois, batch_indices], [out], params)
    return [out]


def pooled_dims(node: onnx.NodeProto, spatial: tuple[int, ...]) -> list[int]:
    """The spatial dims MaxPool would have pooled X from: (in - 1) * stride - pads + kernel."""
    attrs = attributes(node)
    kernel = [int(k) for k in attrs["kernel_shape"]]
    strides = [int(s) for s in attrs.get("strides", [1] * len(kernel))]
    pads = [int(p) for p in attrs.get("pads", [0] * 2 * len(kernel))]
    if not len(kernel) == len(strides) == len(spatial) or len(pads) != 2 * len(kernel):
        raise unsupported(node, "kernel_shape, strides and pads must cover every spatial axis")
    return [(d - 1) * s - (pads[k] + pads[k + len(kernel)]) + kernel[k]
            for k, (d, s) in enumerate(zip(spatial, strides))]


@emitter("MaxUnpool")
def emit_max_unpool(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """MaxUnpool: the pooled dims as parameters; the output is output_shape (a constant, at least the pooled shape)
    or the pooled shape."""
    x, indices = inputs[:2]
    shape = list(shape_of(x))
    pooled = pooled_dims(node, tuple(shape[2:]))
    given = constant(node, inputs[2] if len(inputs) > 2 else None, "output_shape")
    out_shape = [*shape[:2], *pooled] if given is None else [int(d) for d in given.reshape(-1)]
    if len(out_shape) != len(shape) or out_shape[:2] != shape[:2] or \
            any(not 1 <= p <= d for p, d in zip(pooled, out_shape[2:])):
        raise unsupported(node, f"output_shape {out_shape} does not hold the pooled shape {[*shape[:2], *pooled]}")
    out = lw.arena(node.output[0], dtype_of(x), out_shape)
    lw.emit("MaxUnpool", [x, indices], [out], pooled)
    return [out]


@emitter("NonMaxSuppression")
def emit_non_max_suppression(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """NonMaxSuppression, whose output's length is the data's: computed once every input is known (model inputs'
    values, for which the plan is lowered and guarded), like NonZero. (Known inputs are folded before any emitter;
    this asks for the values of model inputs.)"""
    return lw.fold(node, [constant(node, value, f"input {k}") for k, value in enumerate(inputs)])
