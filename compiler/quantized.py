"""Quantized weights in the lowering: a constant DequantizeLinear of int8 or int4 values (and the Reshape and Cast
the int4 form adds), or a Cast of a float16 constant to float32, stays quantized until a weight slot of Conv,
ConvTranspose, MatMul, Gemm or LSTM reads it; the plan then stores the integers and scales (or the float16 values),
and the op dequantizes per call. Any other reader gets the float array."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from edgepack.runtime.native.op_contract import contract

SLOTS = {op.name: (op.weight_slots.own_inputs, list(op.weight_slots.slots)) for op in contract().ops
         if op.weight_slots}
"""Plan op -> (its own input count, the inputs that are weight slots), from ops.toml."""
SCRATCH_ALIGN = 16


@dataclass(eq=False)
class Quantized:
    """int8 or int4 `values` in the float weight's shape with their `scale`: per axis (1-D, `block` 0), or in blocks
    of `block` along the flattened [outer, length, inner] view of the values (scale [outer, blocks, inner]); or
    float16 `values` with no scale (a float16 weight behind a Cast to float32)."""

    values: np.ndarray
    scale: np.ndarray | None
    axis: int
    block: int
    dtype: str
    cached: np.ndarray | None = field(default=None, repr=False)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """DequantizeLinear's result (computed in the scale's type), then the Cast this value went through."""
        if self.cached is None and self.scale is None:
            self.cached = self.values.astype(self.dtype)
        if self.cached is None:
            values = self.values.astype(np.float32)
            if self.block:
                outer, blocks, inner = self.scale.shape
                steps = np.repeat(self.scale.astype(np.float32), self.block, axis=1)
                flat = values.reshape(outer, -1, inner)
                values = (flat * steps[:, :flat.shape[1]]).reshape(self.shape)
            else:
                values = values * self.scale.astype(np.float32).reshape(
                    [-1 if a == self.axis else 1 for a in range(values.ndim)])
            self.cached = values.astype(self.scale.dtype).astype(self.dtype)
        return self.cached if dtype is None else self.cached.astype(dtype)


def _attribute(node: onnx.NodeProto, name: str, default: int) -> int:
    return next((a.i for a in node.attribute if a.name == name), default)


def from_dequantize(node: onnx.NodeProto, inputs: Sequence[Any]) -> Quantized | None:
    """The quantized value of a DequantizeLinear whose inputs are constants, or None when the core does not keep
    that form quantized (it is then folded to floats)."""
    if any(not isinstance(v, np.ndarray) for v in inputs[:2]) or \
            (len(inputs) > 2 and inputs[2] is not None and not isinstance(inputs[2], np.ndarray)):
        return None
    values, scale = inputs[0], inputs[1]
    zero = inputs[2] if len(inputs) > 2 else None
    if values.dtype.name not in ("int8", "int4") or scale.dtype.name not in ("float32", "float16") or values.ndim == 0:
        return None
    if zero is not None and (zero.dtype != values.dtype or np.any(zero.astype(np.int8) != 0)):
        return None
    if _attribute(node, "output_dtype", 0) not in (0, onnx.helper.np_dtype_to_tensor_dtype(scale.dtype)):
        return None
    axis = _attribute(node, "axis", 1) % values.ndim
    block = _attribute(node, "block_size", 0)
    if scale.size == 1 and block == 0:
        return Quantized(values, np.full(values.shape[0], scale.reshape(-1)[0]), 0, 0, scale.dtype.name)
    if block == 0:
        return Quantized(values, scale, axis, 0, scale.dtype.name) if scale.ndim == 1 else None
    outer = int(np.prod(values.shape[:axis], dtype=np.int64))
    inner = int(np.prod(values.shape[axis + 1:], dtype=np.int64))
    blocks = -(-values.shape[axis] // block)
    if scale.shape != tuple(blocks if a == axis else d for a, d in enumerate(values.shape)):
        return None
    return Quantized(values, scale.reshape(outer, blocks, inner), axis, block, scale.dtype.name)


def from_half_cast(node: onnx.NodeProto, inputs: Sequence[Any]) -> Quantized | None:
    """A Cast to float32 of a constant float16 weight, kept in float16 for a weight slot (None: not that form)."""
    value = inputs[0]
    if not isinstance(value, np.ndarray) or value.dtype != np.float16 or value.ndim == 0 or \
            _attribute(node, "to", 0) != onnx.TensorProto.FLOAT:
        return None
    return Quantized(value, None, 0, 0, "float32")


def follow(node: onnx.NodeProto, value: Quantized, shape: Sequence[int], dtype: str) -> Quantized | None:
    """A Reshape or Cast to float32 of a quantized value, kept quantized (None: the form does not allow it)."""
    if node.op_type == "Cast":
        return Quantized(value.values, value.scale, value.axis, value.block, dtype) if dtype == "float32" else None
    if value.scale is None:
        return Quantized(value.values.reshape(shape), None, 0, 0, value.dtype)
    if not value.block:
        return None
    outer = value.scale.shape[0]
    for axis in range(len(shape)):
        if int(np.prod(shape[:axis], dtype=np.int64)) == outer:
            return Quantized(value.values.reshape(shape), value.scale, axis, value.block, value.dtype)
    return None


def scratch_bytes(value: Quantized, kind: str) -> int:
    """The scratch op `kind` takes for this weight dequantized: PackedMatMul one panel of its [P, K, 32] B, any other
    op the whole weight (quant.c keeps each one 64-byte aligned)."""
    if kind == "PackedMatMul":
        return int(value.shape[1] * value.shape[2] * 4)
    count = int(np.prod(value.shape, dtype=np.int64))
    return (count + SCRATCH_ALIGN - 1) // SCRATCH_ALIGN * SCRATCH_ALIGN * 4


def scales_per_column(value: Quantized, transposed: bool = False) -> np.ndarray | None:
    """The N scales of a quantized K x N weight (N x K when `transposed`) whose scales do not vary along K: one per
    column, or one for the whole weight repeated; None where they vary along K or come in blocks."""
    if value.scale is None or value.block:
        return None
    if value.axis != (1 if transposed else 0):
        return value.scale
    n = value.shape[0 if transposed else 1]
    return np.full(n, value.scale[0], value.scale.dtype) if np.all(value.scale == value.scale[0]) else None


def in_panels(value: Quantized, transposed: bool, pack: Callable[[np.ndarray], np.ndarray]) -> Quantized | None:
    """A quantized K x N weight (N x K when `transposed`) as PackedMatMul's B: its values in panels (`pack`), and its
    scales per column, blocked along K, in the same panels ([P, blocks, 32], axis 1); None where the scales differ
    along K without blocks, or run in blocks along N."""
    values = value.values.T if transposed else value.values
    if value.scale is None:
        return Quantized(pack(values), None, 0, 0, value.dtype)
    k, n = values.shape
    k_axis = 1 if transposed else 0
    if (columns := scales_per_column(value, transposed)) is not None:
        steps, block = columns.reshape(1, n), k
    elif value.block and value.axis == k_axis and \
            value.scale.shape == ((n, -(-k // value.block), 1) if transposed else (1, -(-k // value.block), n)):
        steps, block = (value.scale[:, :, 0].T if transposed else value.scale[0]), value.block
    else:
        return None
    return Quantized(pack(values), pack(steps), 1, block, value.dtype)
