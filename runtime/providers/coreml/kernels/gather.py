"""MIL `gather` (negative indices, batch_dims) and `gather_along_axis`."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import kernel


@kernel("gather")
def gather(args: dict[str, Any]) -> np.ndarray:
    x, indices = np.asarray(args["x"]), np.asarray(args["indices"]).astype(np.int64)
    axis = int(args.get("axis", 0)) % x.ndim
    batch_dims = int(args.get("batch_dims", 0) or 0)
    if batch_dims == 0:
        return np.take(x, indices, axis=axis)
    batch = x.shape[:batch_dims]
    flat_x = x.reshape(-1, *x.shape[batch_dims:])
    flat_i = indices.reshape(-1, *indices.shape[batch_dims:])
    parts = [np.take(flat_x[b], flat_i[b], axis=axis - batch_dims) for b in range(flat_x.shape[0])]
    return np.stack(parts).reshape(*batch, *parts[0].shape)


@kernel("gather_along_axis")
def gather_along_axis(args: dict[str, Any]) -> np.ndarray:
    x, indices = np.asarray(args["x"]), np.asarray(args["indices"]).astype(np.int64)
    axis = int(args.get("axis", 0)) % x.ndim
    return np.take_along_axis(x, np.where(indices < 0, indices + x.shape[axis], indices), axis=axis)
