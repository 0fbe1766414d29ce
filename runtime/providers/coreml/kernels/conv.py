"""MIL `conv`: 1-D and 2-D, groups, dilations, every pad_type; im2col and one matmul per group."""

from __future__ import annotations

from typing import Any

import numpy as np

from edgepack.runtime.sliding_windows import same_pads, windows

from . import ints, kernel


def pad_amounts(pad_type: str, pad: Any, sizes: tuple[int, ...], kernel_sizes: tuple[int, ...],
                strides: list[int], dilations: list[int]) -> list[tuple[int, int]]:
    """(begin, end) padding per spatial dim for MIL's pad_type."""
    if pad_type == "custom":
        values = ints(pad, [0] * 2 * len(sizes))
        return [(values[2 * i], values[2 * i + 1]) for i in range(len(sizes))]
    if pad_type == "valid":
        return [(0, 0)] * len(sizes)
    return same_pads(sizes, kernel_sizes, strides, dilations, upper=pad_type != "same_lower")


@kernel("conv")
def conv(args: dict[str, Any]) -> np.ndarray:
    x, weight = np.asarray(args["x"], np.float32), np.asarray(args["weight"], np.float32)
    spatial = x.ndim - 2
    strides = ints(args.get("strides"), [1] * spatial)
    dilations = ints(args.get("dilations"), [1] * spatial)
    groups = int(args.get("groups", 1))
    kernel_sizes = weight.shape[2:]
    pads = pad_amounts(args.get("pad_type", "valid"), args.get("pad"), x.shape[2:], kernel_sizes, strides, dilations)
    x = np.pad(x, [(0, 0), (0, 0), *pads])
    patches = windows(x, kernel_sizes, strides, dilations)
    n, channels = x.shape[:2]
    out_sizes = patches.shape[2:2 + spatial]
    per_group_in, per_group_out = channels // groups, weight.shape[0] // groups
    outputs = []
    for g in range(groups):
        block = patches[:, g * per_group_in:(g + 1) * per_group_in]
        # (N, *out, C_g * K) @ (C_g * K, M_g)
        columns = np.moveaxis(block, 1, 1 + spatial).reshape(n, *out_sizes, -1)
        w = weight[g * per_group_out:(g + 1) * per_group_out].reshape(per_group_out, -1)
        outputs.append(columns @ w.T)
    result = np.moveaxis(np.concatenate(outputs, axis=-1), -1, 1)
    if args.get("bias") is not None:
        result = result + np.asarray(args["bias"], np.float32).reshape(-1, *[1] * spatial)
    return result
