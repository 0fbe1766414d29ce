"""Convolution and pooling geometry in numpy: the padding that `auto_pad` SAME gives, and the strided, dilated
windows of a padded input."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def same_pads(sizes: Sequence[int], kernel_sizes: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
              upper: bool) -> list[tuple[int, int]]:
    """(begin, end) padding per spatial dim that keeps ceil(size / stride) outputs; the odd pixel goes at the end
    when `upper` (ONNX SAME_UPPER, MIL same) and at the beginning otherwise."""
    amounts = []
    for size, k, stride, dilation in zip(sizes, kernel_sizes, strides, dilations):
        out = -(-size // stride)
        total = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
        small, large = total // 2, total - total // 2
        amounts.append((small, large) if upper else (large, small))
    return amounts


def windows(x: np.ndarray, kernel_sizes: Sequence[int], strides: Sequence[int], dilations: Sequence[int]
            ) -> np.ndarray:
    """(N, C, *out, *kernel) view of the padded input's sliding windows."""
    spatial = len(kernel_sizes)
    view = x
    for axis in range(spatial):
        span = (kernel_sizes[axis] - 1) * dilations[axis] + 1
        view = np.lib.stride_tricks.sliding_window_view(view, span, axis=2 + axis)
    index = tuple([slice(None), slice(None)] + [slice(None, None, strides[a]) for a in range(spatial)]
                  + [slice(None, None, dilations[a]) for a in range(spatial)])
    return view[index]
