"""Resize (opset 11 on) of the last two axes, with constant scales or sizes.

nearest: MIL `upsample_nearest_neighbor` repeats each pixel an integer number of times, which is ONNX's nearest for
integer scales with asymmetric or tf_half_pixel_for_nn coordinates and floor rounding, and with half_pixel or
pytorch_half_pixel coordinates and round_prefer_floor/ceil (no source coordinate falls on a tie). Other scales and
modes pick other pixels, and MIL does not document where it samples at a fractional scale, so they are refused.

linear: MIL `resize_bilinear` to the output size; its sampling modes are ONNX's coordinate transformations when the
scale is output / input size (sizes given, or scales that give a whole output size): STRICT_ALIGN_CORNERS is
align_corners, DEFAULT is asymmetric, UNALIGN_CORNERS is half_pixel (and pytorch_half_pixel for outputs longer
than 1). Both clamp the source coordinate to the input, as ONNX's edge padding does.

cubic, tf_crop_and_resize, half_pixel_symmetric, antialias, axes and keep_aspect_ratio_policy are refused."""

from __future__ import annotations

import math

import numpy as np
import onnx

from edgepack.runtime.errors import EdgepackError

from ....capability import Values, attribute
from ..context import Context
from . import converts

SAMPLING = {"align_corners": "STRICT_ALIGN_CORNERS", "asymmetric": "DEFAULT", "half_pixel": "UNALIGN_CORNERS",
            "pytorch_half_pixel": "UNALIGN_CORNERS"}
NEAREST = {"asymmetric": {"floor"}, "tf_half_pixel_for_nn": {"floor"},
           "half_pixel": {"round_prefer_floor", "round_prefer_ceil"},
           "pytorch_half_pixel": {"round_prefer_floor", "round_prefer_ceil"}}


def _text(node: onnx.NodeProto, name: str, default: str) -> str:
    value = attribute(node, name, default)
    return value.decode() if isinstance(value, bytes) else str(value)


def _given(node: onnx.NodeProto, index: int, arrays: dict[str, np.ndarray]) -> np.ndarray | None:
    name = node.input[index] if index < len(node.input) else ""
    return arrays.get(name) if name else None


def output_sizes(shape: list[int], scales: np.ndarray | None,
                 sizes: np.ndarray | None) -> tuple[list[int], list[float]]:
    """The output shape, and ONNX's scale per axis (given, or output / input size)."""
    if sizes is not None and sizes.size:
        out = [int(s) for s in sizes]
        return out, [o / i for o, i in zip(out, shape)]
    factors = [float(s) for s in scales]
    return [int(math.floor(i * s)) for i, s in zip(shape, factors)], factors


def plan(node: onnx.NodeProto, shape: list[int], scales: np.ndarray | None, sizes: np.ndarray | None) -> dict | str:
    """The MIL op and its arguments for a Resize of an input of `shape`, or why there is none."""
    mode, transform = _text(node, "mode", "nearest"), _text(node, "coordinate_transformation_mode", "half_pixel")
    if attribute(node, "antialias", 0):
        return "antialias"
    if attribute(node, "axes", None) is not None:
        return "the axes attribute"
    if sizes is not None and sizes.size and _text(node, "keep_aspect_ratio_policy", "stretch") != "stretch":
        return "keep_aspect_ratio_policy other than stretch"
    if (scales is None or not scales.size) and (sizes is None or not sizes.size):
        return "neither scales nor sizes"
    if len(shape) < 3:
        return "inputs of rank 3 or more only (MIL resizes the last two axes)"
    out, factors = output_sizes(shape, scales, sizes)
    if out[:-2] != shape[:-2] or any(f != 1 for f in factors[:-2]):
        return "only the last two axes may be resized"
    if mode == "nearest":
        nearest = _text(node, "nearest_mode", "round_prefer_floor")
        if nearest not in NEAREST.get(transform, set()):
            return f"nearest with {transform} coordinates and {nearest} rounding"
        if any(f != round(f) or f < 1 for f in factors[-2:]) or out[-2:] != [i * round(f) for i, f in
                                                                          zip(shape[-2:], factors[-2:])]:
            return "nearest with scales that are not whole numbers"
        return {"op": "upsample_nearest_neighbor", "scale_factor_height": int(round(factors[-2])),
                "scale_factor_width": int(round(factors[-1]))}
    if mode == "linear":
        if transform not in SAMPLING:
            return f"linear with {transform} coordinates"
        if any(abs(i * f - o) > 1e-5 * max(o, 1) for i, f, o in zip(shape[-2:], factors[-2:], out[-2:])):
            return "linear with scales that do not give a whole output size"
        if transform in ("align_corners", "pytorch_half_pixel") and min(out[-2:]) < 2:
            return f"linear with {transform} coordinates and an output of length 1"
        return {"op": "resize_bilinear", "target_size_height": out[-2], "target_size_width": out[-1],
                "sampling_mode": SAMPLING[transform]}
    return f"mode {mode}"


def _limit(node: onnx.NodeProto, values: Values) -> str | None:
    if any(name and name not in values.constants for name in node.input[1:]):
        return "roi, scales and sizes must be constants"
    shape = values.shapes.get(node.input[0])
    if shape is None or any(d is None for d in shape):
        return "the input's shape must be known"
    known = getattr(values, "arrays", None)
    if known is not None and all(not name or name in known for name in node.input[2:4]):
        result = plan(node, list(shape), _given(node, 2, known), _given(node, 3, known))
        return result if isinstance(result, str) else None
    # Without the constants' values the output shape stands for them. With sizes, ONNX's scale is output / input
    # size; with scales it is that only if the scale is a whole number (what upsampling models use), so only whole
    # ratios are taken then (a scale of k + e with e * input < 1 would still pass: the converter refuses it).
    out = values.shapes.get(node.output[0])
    if out is None or len(out) != len(shape) or any(d is None for d in out):
        return "the output's shape must be known"
    sizes_given = len(node.input) > 3 and node.input[3] and values.shapes.get(node.input[3]) != [0]
    if not sizes_given and any(o % i for o, i in zip(out[-2:], shape[-2:])):
        return "scales other than whole numbers (their values are not known to the claim)"
    result = plan(node, list(shape), None, np.asarray(out, np.int64))
    return result if isinstance(result, str) else None


@converts("Resize", limit=_limit, opsets=(11, 10_000))
def resize(ctx: Context, node: onnx.NodeProto) -> None:
    x = ctx.input(node, 0)
    scales, sizes = ctx.constant(node, 2), ctx.constant(node, 3)
    arguments = plan(node, list(ctx.shape(x)), scales, sizes)
    if isinstance(arguments, str):
        raise EdgepackError(f"CoreML cannot resize as this node asks: {arguments}",
                            where=f"node {node.name or 'Resize'}", fix="leave the node to the fallback provider")
    op = arguments.pop("op")
    ctx.set(node, getattr(ctx.mb, op)(x=x, **arguments, name=ctx.name(node)))
