"""Ops whose kernels take float32 only, lowered for float64, float16 and bfloat16 values (claims marked `via_float32`
in ops.toml): on float32 copies of those inputs, with the outputs cast back, at float32's precision."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from edgepack.runtime.native import epk
from edgepack.runtime.native.op_contract import contract

from .emitters import EMITTERS, dtype_of
from .values import Runtime

if TYPE_CHECKING:
    from .lower import Lowering

VIA_FLOAT32 = contract().via_float32
NARROWED = contract().dtype_sets["wide_floats"] - {"float32"}
"""The float dtypes `via_float32` ops take through float32 copies."""


def takes_float32_copies(node: onnx.NodeProto, inputs: list[Any]) -> bool:
    return node.op_type in VIA_FLOAT32 and any(dtype_of(v) in NARROWED for v in inputs if v is not None)


def lower_in_float32(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """The node through its emitter on float32 copies of its narrowed inputs; outputs cast back to their dtypes."""
    narrowed = []
    for k, value in enumerate(inputs):
        if value is not None and dtype_of(value) in NARROWED:
            if isinstance(value, Runtime):
                copy = lw.arena(f"{node.output[0]}/input{k}/float32", "float32", value.shape)
                lw.emit("Cast", [value], [copy])
                value = copy
            else:
                value = np.asarray(value).astype(np.float32)
        narrowed.append(value)
    inner = onnx.NodeProto()
    inner.CopyFrom(node)
    inner.output[:] = [f"{name}/float32" if name else name for name in node.output]
    results = EMITTERS[node.op_type](lw, inner, narrowed)
    outputs = []
    for name, (dtype, _), value in zip(node.output, lw.infer(node, inputs), results):
        if dtype_of(value) == dtype:
            outputs.append(value)
        elif isinstance(value, Runtime):
            outputs.append(lw.arena(name, dtype, value.shape))
            lw.emit("Cast", [value], [outputs[-1]])
        else:
            outputs.append(np.asarray(value).astype(epk.numpy_dtype(dtype)))
    return outputs
