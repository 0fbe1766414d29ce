"""Emitters of sampling ops: Resize (and the deprecated Upsample) and GridSample."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from edgepack.runtime.native.epk import F32

from ..values import attributes
from . import constant, emitter, shape_of

if TYPE_CHECKING:
    from ..lower import Lowering

MODES = {"nearest": 0, "linear": 1, "bilinear": 1, "cubic": 2}
COORDINATES = {"half_pixel": 0, "asymmetric": 1, "align_corners": 2, "pytorch_half_pixel": 3,
               "tf_half_pixel_for_nearest": 4, "half_pixel_symmetric": 5, "tf_crop_and_resize": 6}
NEAREST = {"round_prefer_floor": 0, "round_prefer_ceil": 1, "floor": 2, "ceil": 3}
LEGACY_NEAREST = 4
"""Opset 10 and Upsample, as onnxruntime: the floor along enlarged axes, the ceiling along shrunk ones."""


def given(node: onnx.NodeProto, inputs: list[Any], at: int, what: str) -> np.ndarray | None:
    """Input `at` as a flat float64 array, or None when it is absent or empty."""
    value = constant(node, inputs[at] if len(inputs) > at else None, what)
    return None if value is None or value.size == 0 else value.astype(np.float64).reshape(-1)


def resize_scales(attrs: dict[str, Any], shape: tuple[int, ...], axes: list[int], scales: np.ndarray | None,
                  sizes: np.ndarray | None) -> list[float]:
    """One scale per axis: the given scales, or sizes over input lengths (one common scale under an aspect-ratio
    policy)."""
    full = [1.0] * len(shape)
    if scales is not None:
        picked = [float(s) for s in scales]
    else:
        assert sizes is not None
        picked = [float(size) / max(shape[axis], 1) for size, axis in zip(sizes, axes)]
        policy = attrs.get("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            picked = [min(picked) if policy == "not_larger" else max(picked)] * len(axes)
    for axis, scale in zip(axes, picked):
        full[axis] = scale
    return full


def resize_roi(roi: np.ndarray | None, rank: int, axes: list[int]) -> tuple[list[float], list[float]]:
    starts, ends = [0.0] * rank, [1.0] * rank
    if roi is not None:
        for i, axis in enumerate(axes):
            starts[axis], ends[axis] = float(roi[i]), float(roi[len(axes) + i])
    return starts, ends


def resize_scratch(shape: tuple[int, ...], out_shape: tuple[int, ...], mode: int, antialias: int,
                   scales: list[float]) -> int:
    """The scratch the kernel asks for: its largest tap table and two buffers of its largest intermediate result."""

    def taps(scale: float) -> int:
        if mode == 0:
            return 1
        support, scale = (1.0 if mode == 1 else 2.0), float(np.float32(scale))
        return 2 * math.ceil(support / scale) if antialias and scale < 1.0 else int(2 * support)

    table = max((size * (2 * taps(s) + 1) for size, s in zip(out_shape, scales)), default=0)
    largest = max((math.prod(out_shape[:d + 1]) * math.prod(shape[d + 1:]) for d in range(len(shape))), default=0)
    return 4 * (table + 2 * largest)


@emitter("Resize", "Upsample")
def emit_resize(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """Resize in every mode; Upsample and opset 10 as Resize with asymmetric coordinates."""
    x = inputs[0]
    attrs = attributes(node)
    shape = shape_of(x)
    rank = len(shape)
    legacy = node.op_type == "Upsample" or lw.opset < 11
    axes = [a % rank for a in attrs.get("axes", range(rank))]
    roi = None if legacy else given(node, inputs, 1, "roi")
    if node.op_type == "Upsample" and "scales" in attrs:
        scales: np.ndarray | None = np.asarray(attrs["scales"], np.float64)
    else:
        scales = given(node, inputs, 1 if legacy else 2, "scales")
    sizes = None if legacy or scales is not None else given(node, inputs, 3, "sizes")
    out, = lw.outputs(node, inputs)
    if scales is None and sizes is None:
        sizes = np.array([out.shape[a] for a in axes], np.float64)
    full_scales = resize_scales(attrs, shape, axes, scales, sizes)
    mode = MODES[attrs.get("mode", "nearest")]
    transform = "asymmetric" if legacy else attrs.get("coordinate_transformation_mode", "half_pixel")
    nearest = LEGACY_NEAREST if legacy else NEAREST[attrs.get("nearest_mode", "round_prefer_floor")]
    antialias = int(attrs.get("antialias", 0)) if mode else 0
    starts, ends = resize_roi(roi, rank, axes)
    params = [mode, COORDINATES[transform], nearest, *[F32(s) for s in full_scales], antialias,
              int(attrs.get("exclude_outside", 0)), F32(float(attrs.get("cubic_coeff_a", -0.75))),
              F32(float(attrs.get("extrapolation_value", 0.0))), *[F32(v) for v in starts], *[F32(v) for v in ends]]
    lw.emit("Resize", [x], [out], params, resize_scratch(shape, out.shape, mode, antialias, full_scales))
    return [out]


GRID_MODES = {"bilinear": 0, "linear": 0, "nearest": 1, "bicubic": 2, "cubic": 2}
PADDING = {"zeros": 0, "border": 1, "reflection": 2}


@emitter("GridSample")
def emit_grid_sample(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    attrs = attributes(node)
    mode = attrs.get("mode", "linear" if lw.opset >= 20 else "bilinear")
    out, = lw.outputs(node, inputs)
    params = [GRID_MODES[mode], PADDING[attrs.get("padding_mode", "zeros")], int(attrs.get("align_corners", 0))]
    lw.emit("GridSample", inputs[:2], [out], params)
    return [out]
