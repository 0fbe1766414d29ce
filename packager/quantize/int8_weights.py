"""The int8 weights the weight mode left in front of an op (the DequantizeLinear feeding a weight slot), and the
clean-up after an activation mode has rewired them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
import onnx_ir as ir
from onnx import numpy_helper

from edgepack.runtime.capability import attribute

from ..passes import dead_code

WEIGHT_INPUT = {"Conv": 1, "MatMul": 1, "Gemm": 1}
"""Op type -> the input that holds its weight."""


@dataclass(frozen=True)
class Int8Weight:
    dequantize: onnx.NodeProto
    values: np.ndarray
    """int8, as stored."""
    scale: np.ndarray
    """One per output channel, along `axis` of `values`."""
    axis: int


def int8_weight(node: onnx.NodeProto, producers: dict[str, onnx.NodeProto],
                initializers: dict[str, onnx.TensorProto]) -> Int8Weight | None:
    """The int8 per-channel weight `node` reads through a DequantizeLinear, or None."""
    index = WEIGHT_INPUT.get(node.op_type)
    if index is None or node.domain not in ("", "ai.onnx") or len(node.input) <= index:
        return None
    dequantize = producers.get(node.input[index])
    if dequantize is None or dequantize.op_type != "DequantizeLinear" or len(dequantize.input) > 2:
        return None
    values, scale = (initializers.get(name) for name in dequantize.input[:2])
    if values is None or scale is None or values.data_type != onnx.TensorProto.INT8:
        return None
    return Int8Weight(dequantize, numpy_helper.to_array(values), numpy_helper.to_array(scale),
                      int(attribute(dequantize, "axis", 1)))



def without_dead_code(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` without the nodes and initializers a rewrite left unread (reads inside subgraphs count)."""
    return ir.to_proto(dead_code.apply(ir.from_proto(model)))
