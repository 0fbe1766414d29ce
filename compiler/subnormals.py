"""Subnormal float32 weights of the matrix products flushed to zero in the plan. An x86 core takes a microcode
assist for every multiply with a subnormal operand: PP-OCRv3's recognizer folds its batch norms into 3x3 convs
whose weights are two thirds subnormal, and those convs ran 16 to 23 times slower on an Intel Xeon (AVX-512) than
with zeros there (the whole model 2.1 times). A dropped term is under 1.2e-38 times its activation."""

from __future__ import annotations

from typing import Any

import numpy as np

PRODUCTS = frozenset({"Conv", "ConvTranspose", "MatMul", "PackedMatMul", "Gemm"})
"""The plan ops whose float32 constant inputs are flushed."""


def has_subnormal_weight(kind: str, value: Any) -> bool:
    """Whether `value`, an input of a `kind` op, is a float32 constant holding a subnormal value."""
    if kind not in PRODUCTS or not isinstance(value, np.ndarray) or value.dtype != np.float32:
        return False
    return bool(np.any((np.abs(value) < np.finfo(np.float32).tiny) & (value != 0)))


def without_subnormals(weight: np.ndarray) -> np.ndarray:
    """A copy of the float32 `weight` with its subnormal values set to zero (signed zero kept)."""
    return np.where(np.abs(weight) < np.finfo(np.float32).tiny, np.copysign(np.float32(0), weight), weight)
