"""MIL `softmax` along one axis."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import kernel


@kernel("softmax")
def softmax(args: dict[str, Any]) -> np.ndarray:
    x = np.asarray(args["x"], np.float32)
    axis = int(args.get("axis", -1))
    exp = np.exp(x - x.max(axis=axis, keepdims=True))
    return exp / exp.sum(axis=axis, keepdims=True)
