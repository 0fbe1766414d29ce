"""MIL `upsample_nearest_neighbor` (each pixel repeated; the converter emits whole scale factors only) and
`resize_bilinear` (source coordinates per sampling_mode, as MIL's documentation gives them, clamped to the input)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import kernel


@kernel("upsample_nearest_neighbor")
def upsample_nearest_neighbor(args: dict[str, Any]) -> np.ndarray:
    x = np.asarray(args["x"], np.float32)
    result = x
    for axis, key in ((-2, "scale_factor_height"), (-1, "scale_factor_width")):
        scale = float(args.get(key, 1))
        size = x.shape[axis]
        source = np.floor(np.arange(int(np.floor(size * scale))) / scale).astype(np.intp)
        result = np.take(result, np.minimum(source, size - 1), axis=axis)
    return result


def _grid(size: int, out: int, mode: str) -> np.ndarray:
    i = np.arange(out, dtype=np.float64)
    if mode in ("STRICT_ALIGN_CORNERS", "ALIGN_CORNERS"):
        points = i * ((size - 1) / (out - 1)) if out > 1 else np.full(out, (size - 1) / 2 if mode == "ALIGN_CORNERS"
                                                                       else 0.0)
    elif mode == "DEFAULT":
        points = i * ((size - size / out) / (out - 1)) if out > 1 else np.zeros(out)
    elif mode == "OFFSET_CORNERS":
        delta = max(1, size - 1) / out
        points = 0.5 * delta + i * delta
    elif mode == "UNALIGN_CORNERS":
        points = (i + 0.5) * (size / out) - 0.5
    else:
        raise ValueError(f"resize_bilinear sampling_mode {mode!r}")
    return np.clip(points, 0, size - 1)


def _interpolate(x: np.ndarray, axis: int, points: np.ndarray) -> np.ndarray:
    low = np.floor(points).astype(np.intp)
    high = np.minimum(low + 1, x.shape[axis] - 1)
    weight = (points - low).astype(np.float32)
    shape = [1] * x.ndim
    shape[axis] = -1
    weight = weight.reshape(shape)
    return np.take(x, low, axis=axis) * (1 - weight) + np.take(x, high, axis=axis) * weight


@kernel("resize_bilinear")
def resize_bilinear(args: dict[str, Any]) -> np.ndarray:
    x = np.asarray(args["x"], np.float32)
    mode = str(args.get("sampling_mode", "DEFAULT"))
    height, width = int(args.get("target_size_height", 1)), int(args.get("target_size_width", 1))
    x = _interpolate(x, x.ndim - 2, _grid(x.shape[-2], height, mode))
    return _interpolate(x, x.ndim - 1, _grid(x.shape[-1], width, mode))
