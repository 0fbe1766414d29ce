"""MIL's data-movement ops: reshape, squeeze, expand_dims, transpose, concat, split, stack, tile, fill, reverse,
slice_by_index, slice_by_size and pixel_shuffle (coremltools' passes make some of these from others)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import ints, kernel


@kernel("reshape")
def reshape(args: dict[str, Any]) -> np.ndarray:
    x = np.asarray(args["x"])
    shape = ints(args["shape"], [])
    if len(shape) == x.ndim:  # 0 inherits the input's dim only when the ranks match
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return x.reshape(shape)


@kernel("squeeze")
def squeeze(args: dict[str, Any]) -> np.ndarray:
    x = np.asarray(args["x"])
    axes = args.get("axes")
    return np.squeeze(x) if axes is None else np.squeeze(x, axis=tuple(a % x.ndim for a in ints(axes, [])))


@kernel("expand_dims")
def expand_dims(args: dict[str, Any]) -> np.ndarray:
    x = np.asarray(args["x"])
    axes = ints(args["axes"], [])
    rank = x.ndim + len(axes)
    return np.expand_dims(x, tuple(sorted(a % rank for a in axes)))


@kernel("transpose")
def transpose(args: dict[str, Any]) -> np.ndarray:
    return np.transpose(np.asarray(args["x"]), ints(args["perm"], []))


@kernel("concat")
def concat(args: dict[str, Any]) -> np.ndarray:
    values = [np.asarray(v) for v in args["values"]]
    axis = int(args["axis"]) % values[0].ndim
    if args.get("interleave"):
        # equal shapes; out[..., i * n + k, ...] = values[k][..., i, ...]
        stacked = np.stack(values, axis=axis + 1)
        shape = list(values[0].shape)
        shape[axis] *= len(values)
        return stacked.reshape(shape)
    return np.concatenate(values, axis=axis)


@kernel("split")
def split(args: dict[str, Any]) -> tuple[np.ndarray, ...]:
    x = np.asarray(args["x"])
    axis = int(args["axis"]) % x.ndim
    sizes = args.get("split_sizes")
    if sizes is None:
        count = int(args["num_splits"])
        sizes = [x.shape[axis] // count] * count
    return tuple(np.split(x, np.cumsum(ints(sizes, []))[:-1], axis=axis))


@kernel("stack")
def stack(args: dict[str, Any]) -> np.ndarray:
    values = [np.asarray(v) for v in args["values"]]
    return np.stack(values, axis=int(args["axis"]) % (values[0].ndim + 1))


@kernel("tile")
def tile(args: dict[str, Any]) -> np.ndarray:
    return np.tile(np.asarray(args["x"]), ints(args["reps"], []))


@kernel("fill")
def fill(args: dict[str, Any]) -> np.ndarray:
    return np.full(ints(args["shape"], []), args.get("value", 0.0), dtype=np.float32)


@kernel("reverse")
def reverse(args: dict[str, Any]) -> np.ndarray:
    x = np.asarray(args["x"])
    axes = args.get("axes")
    return np.flip(x, axis=None if axes is None else tuple(ints(axes, [])))


def _masked(values: Any, rank: int) -> list[bool]:
    return [False] * rank if values is None else [bool(v) for v in np.atleast_1d(values)]


@kernel("slice_by_index")
def slice_by_index(args: dict[str, Any]) -> np.ndarray:
    """numpy basic indexing per axis; a mask drops begin or end; squeeze_mask indexes (and drops) the axis."""
    x = np.asarray(args["x"])
    rank = x.ndim
    begin, end = ints(args["begin"], []), ints(args["end"], [])
    stride = ints(args.get("stride"), [1] * rank)
    begin_mask, end_mask = _masked(args.get("begin_mask"), rank), _masked(args.get("end_mask"), rank)
    squeeze_mask = _masked(args.get("squeeze_mask"), rank)
    index: list[Any] = []
    for axis in range(rank):
        if squeeze_mask[axis]:
            index.append(begin[axis])
            continue
        index.append(slice(None if begin_mask[axis] else begin[axis], None if end_mask[axis] else end[axis],
                           stride[axis]))
    return np.asarray(x[tuple(index)])


@kernel("slice_by_size")
def slice_by_size(args: dict[str, Any]) -> np.ndarray:
    x = np.asarray(args["x"])
    begin, size = ints(args["begin"], []), ints(args["size"], [])
    index = tuple(slice(b % d if d else 0, None if s == -1 else b % d + s) for b, s, d in zip(begin, size, x.shape))
    return x[index]


@kernel("pixel_shuffle")
def pixel_shuffle(args: dict[str, Any]) -> np.ndarray:
    """(N, C * r * r, H, W) -> (N, C, H * r, W * r), as torch's PixelShuffle."""
    x = np.asarray(args["x"])
    r = int(args["upscale_factor"])
    n, c, h, w = x.shape
    return x.reshape(n, c // (r * r), r, r, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(n, c // (r * r), h * r, w * r)


@kernel("pixel_unshuffle")
def pixel_unshuffle(args: dict[str, Any]) -> np.ndarray:
    """(N, C, H * r, W * r) -> (N, C * r * r, H, W), the inverse of pixel_shuffle."""
    x = np.asarray(args["x"])
    r = int(np.atleast_1d(args["downscale_factor"])[0])
    n, c, h, w = x.shape
    return x.reshape(n, c, h // r, r, w // r, r).transpose(0, 1, 3, 5, 2, 4).reshape(n, c * r * r, h // r, w // r)
