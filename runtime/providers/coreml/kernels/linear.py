"""MIL `matmul` (numpy semantics, with transpose flags on the last two axes) and `linear` (x @ weight.T + bias)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import kernel


def _transposed(value: np.ndarray, flag: Any) -> np.ndarray:
    return np.swapaxes(value, -1, -2) if flag and value.ndim >= 2 else value


@kernel("matmul")
def matmul(args: dict[str, Any]) -> np.ndarray:
    x = _transposed(np.asarray(args["x"], np.float32), args.get("transpose_x"))
    y = _transposed(np.asarray(args["y"], np.float32), args.get("transpose_y"))
    return np.matmul(x, y)


@kernel("linear")
def linear(args: dict[str, Any]) -> np.ndarray:
    x, weight = np.asarray(args["x"], np.float32), np.asarray(args["weight"], np.float32)
    result = x @ weight.T
    if args.get("bias") is not None:
        result = result + np.asarray(args["bias"], np.float32)
    return result
