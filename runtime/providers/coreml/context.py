"""What an op converter sees: the ONNX values converted so far (MIL vars, or numpy arrays for constants) and how to
name and record what it emits."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import onnx

from edgepack.runtime.errors import EdgepackError

from ...capability import attribute
from .mil import coremltools

Value = Any
"""A MIL `Var`, or a numpy array for a value known at conversion time (weights, folded shapes)."""


def mil_name(onnx_name: str) -> str:
    """An ONNX value name as a MIL identifier (CoreML feature names follow the same rule)."""
    name = re.sub(r"\W", "_", onnx_name)
    return name if name and not name[0].isdigit() else f"_{name}"


class Context:
    def __init__(self, values: dict[str, Value], opset: int) -> None:
        self.values = values
        self.opset = opset
        self.used_names: set[str] = set()
        ct = coremltools()
        from coremltools.converters.mil import Builder
        from coremltools.converters.mil.mil import types

        self.ct, self.mb, self.types = ct, Builder, types

    def get(self, name: str) -> Value:
        if name not in self.values:
            raise EdgepackError(f"value {name!r} is used before it is computed", where="CoreML conversion",
                                fix="the graph must be topologically sorted (onnx.checker checks this)")
        return self.values[name]

    def input(self, node: onnx.NodeProto, index: int) -> Value | None:
        """Input `index` of `node`, or None when it is absent or empty."""
        if index >= len(node.input) or not node.input[index]:
            return None
        return self.get(node.input[index])

    def constant(self, node: onnx.NodeProto, index: int) -> np.ndarray | None:
        """Input `index` as a numpy array when it is known at conversion time, else None."""
        value = self.input(node, index)
        if isinstance(value, np.ndarray):
            return value
        if value is not None and getattr(value, "val", None) is not None:
            return np.asarray(value.val)
        return None

    def attr(self, node: onnx.NodeProto, name: str, default: object = None) -> Any:
        return attribute(node, name, default)

    def is_half(self, value: Value) -> bool:
        return not isinstance(value, np.ndarray) and value.dtype == self.types.fp16

    def like(self, constant: np.ndarray, value: Value) -> np.ndarray:
        """A float constant in the float type of `value` (MIL ops take operands of one type)."""
        if isinstance(value, np.ndarray) or not np.issubdtype(np.asarray(constant).dtype, np.floating):
            return mil_constant(constant)
        return np.asarray(constant, dtype=np.float16 if self.is_half(value) else np.float32)

    def name(self, node: onnx.NodeProto, index: int = 0) -> str:
        """The MIL name for output `index` of `node`: its ONNX name as an identifier, made unique."""
        return self.unique(mil_name(node.output[index] if index < len(node.output) and node.output[index]
                                    else node.op_type))

    def unique(self, base: str) -> str:
        """`base`, or `base_2`, `base_3`, ... when it is taken."""
        name, suffix = base, 1
        while name in self.used_names:
            suffix += 1
            name = f"{base}_{suffix}"
        self.used_names.add(name)
        return name

    def set(self, node: onnx.NodeProto, *results: Value) -> None:
        """Record the results as the node's outputs, in order (empty output names are skipped)."""
        for output, result in zip(node.output, results):
            if output:
                self.values[output] = result

    @staticmethod
    def shape(value: Value) -> tuple[int, ...]:
        return tuple(int(d) for d in value.shape)


def mil_constant(array: np.ndarray | float | int) -> np.ndarray:
    """A numpy constant in a type MIL holds: int64 as int32, float64 as float32."""
    array = np.asarray(array)
    if array.dtype == np.int64 or array.dtype == np.uint64:
        return array.astype(np.int32)
    if array.dtype == np.float64:
        return array.astype(np.float32)
    return array
