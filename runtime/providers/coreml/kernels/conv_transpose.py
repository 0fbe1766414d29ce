"""MIL `conv_transpose`: every input pixel scatters its weighted kernel into the full output (one strided add per
kernel position), which is then cropped by the pads (or to `output_shape`, taken from the begin pads)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from . import ints, kernel


@kernel("conv_transpose")
def conv_transpose(args: dict[str, Any]) -> np.ndarray:
    x, weight = np.asarray(args["x"], np.float32), np.asarray(args["weight"], np.float32)
    spatial = x.ndim - 2
    strides = ints(args.get("strides"), [1] * spatial)
    dilations = ints(args.get("dilations"), [1] * spatial)
    groups = int(args.get("groups", 1))
    sizes, kernel_sizes = x.shape[2:], weight.shape[2:]
    n, channels = x.shape[:2]
    per_group_in, per_group_out = channels // groups, weight.shape[1]
    full = [s * (d - 1) + (k - 1) * dl + 1 for d, k, s, dl in zip(sizes, kernel_sizes, strides, dilations)]
    out = np.zeros((n, per_group_out * groups, *full), np.float32)
    for g in range(groups):
        xg = x[:, g * per_group_in:(g + 1) * per_group_in]
        wg = weight[g * per_group_in:(g + 1) * per_group_in]
        for position in itertools.product(*[range(k) for k in kernel_sizes]):
            contribution = np.einsum("nc...,co->no...", xg, wg[(slice(None), slice(None), *position)])
            index = tuple(slice(p * dl, p * dl + (d - 1) * s + 1, s)
                          for p, d, s, dl in zip(position, sizes, strides, dilations))
            out[(slice(None), slice(g * per_group_out, (g + 1) * per_group_out), *index)] += contribution
    pad_type = args.get("pad_type", "valid")
    if pad_type == "custom":
        pad = ints(args.get("pad"), [0] * 2 * spatial)
        begin, end = pad[0::2], pad[1::2]
    elif pad_type == "same":
        total = [max(f - d * s, 0) for f, d, s in zip(full, sizes, strides)]
        begin, end = [t // 2 for t in total], [t - t // 2 for t in total]
    else:
        begin, end = [0] * spatial, [0] * spatial
    wanted = [f - b - e for f, b, e in zip(full, begin, end)]
    if args.get("output_shape") is not None:
        wanted = ints(args["output_shape"], [])[2:]
    result = np.zeros((n, out.shape[1], *wanted), np.float32)
    kept = tuple(slice(0, min(w, f - b)) for w, f, b in zip(wanted, full, begin))
    result[(slice(None), slice(None), *kept)] = out[(slice(None), slice(None),
                                                     *[slice(b, b + k.stop) for b, k in zip(begin, kept)])]
    if args.get("bias") is not None:
        result = result + np.asarray(args["bias"], np.float32).reshape(-1, *[1] * spatial)
    return result
