"""MIL `max_pool` and `avg_pool`: pads from pad_type as for `conv`; with ceil_mode a partial last window (PyTorch's
rule: dropped when it would start past the input and its begin pad), whose part past the padded input counts for
nothing, not in a maximum and not in an average's divisor."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from edgepack.runtime.sliding_windows import windows

from . import ints, kernel
from .conv import pad_amounts


def _pooled(args: dict[str, Any], fill: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The windows of x padded with `fill`, of a mask of the input, and of a mask of the padded input."""
    x = np.asarray(args["x"], np.float32)
    spatial = x.ndim - 2
    kernel_sizes = tuple(ints(args["kernel_sizes"], []))
    strides = ints(args.get("strides"), [1] * spatial)
    pads = pad_amounts(args.get("pad_type", "valid"), args.get("pad"), x.shape[2:], kernel_sizes, strides,
                       [1] * spatial)
    extra = []
    for size, k, s, (begin, end) in zip(x.shape[2:], kernel_sizes, strides, pads):
        span = size + begin + end - k
        count = (math.ceil(span / s) if args.get("ceil_mode") else span // s) + 1
        if args.get("ceil_mode") and (count - 1) * s >= size + begin and begin + end > 0:
            count -= 1
        extra.append(max((count - 1) * s + k - (size + begin + end), 0))
    inside = np.ones((1, 1, *x.shape[2:]), np.float32)
    padded_x = np.pad(x, [(0, 0), (0, 0), *pads], constant_values=fill)
    padded_inside = np.pad(inside, [(0, 0), (0, 0), *pads])
    padded_area = np.pad(inside, [(0, 0), (0, 0), *pads], constant_values=1)
    tail = [(0, 0), (0, 0), *[(0, e) for e in extra]]
    padded_x = np.pad(padded_x, tail, constant_values=fill)
    padded_inside, padded_area = np.pad(padded_inside, tail), np.pad(padded_area, tail)
    ones = [1] * spatial
    return (windows(padded_x, kernel_sizes, strides, ones), windows(padded_inside, kernel_sizes, strides, ones),
            windows(padded_area, kernel_sizes, strides, ones))


def _window_axes(view: np.ndarray) -> tuple[int, ...]:
    spatial = (view.ndim - 2) // 2
    return tuple(range(2 + spatial, view.ndim))


@kernel("max_pool")
def max_pool(args: dict[str, Any]) -> np.ndarray:
    view, _, _ = _pooled(args, -np.inf)
    return view.max(axis=_window_axes(view))


@kernel("avg_pool")
def avg_pool(args: dict[str, Any]) -> np.ndarray:
    view, inside, area = _pooled(args, 0.0)
    axes = _window_axes(view)
    divisor = inside.sum(axis=axes) if args.get("exclude_padding_from_average") else area.sum(axis=axes)
    return view.sum(axis=axes) / divisor
