"""Dynamic int8 for MatMul and Gemm with int8 weights: the activation is quantized at run time
(DynamicQuantizeLinear), multiplied in integers (MatMulInteger) and rescaled by activation scale x weight scale.
No calibration is needed; Conv stays float (ConvInteger is slower than float Conv on the CPU runtimes)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgepack.runtime.capability import attribute

from . import QuantizeResult
from .int8_weights import Int8Weight, int8_weight, without_dead_code

INTEGER_OPS = frozenset({"MatMul", "Gemm"})
"""The op types dynamic int8 multiplies in integers."""


def dynamic_matmul(model: onnx.ModelProto, keep: frozenset[str]) -> QuantizeResult:
    graph = model.graph
    producers = {out: node for node in graph.node for out in node.output}
    initializers = {t.name: t for t in graph.initializer}
    nodes, quantized = [], []
    for node in graph.node:
        weight = int8_weight(node, producers, initializers) if node.op_type in INTEGER_OPS else None
        if node.name in keep or weight is None or not _plain(node, weight):
            nodes.append(node)
            continue
        nodes.extend(_integer_matmul(graph, node, weight))
        quantized.append(node.name)
    del graph.node[:]
    graph.node.extend(nodes)
    return QuantizeResult(without_dead_code(model), quantized, len(quantized))


def _plain(node: onnx.NodeProto, weight: Int8Weight) -> bool:
    """MatMul with a 2-D weight, or Gemm without transA, alpha or beta; weight scales along the output axis."""
    if weight.values.ndim != 2:
        return False
    output_axis = 0 if node.op_type == "Gemm" and attribute(node, "transB", 0) else 1
    if node.op_type == "Gemm" and (attribute(node, "transA", 0) or attribute(node, "alpha", 1.0) != 1.0
                                   or attribute(node, "beta", 1.0) != 1.0):
        return False
    return weight.axis == output_axis and weight.scale.ndim == 1


def _integer_matmul(graph: onnx.GraphProto, node: onnx.NodeProto, weight: Int8Weight) -> list[onnx.NodeProto]:
    name = node.name
    values = weight.values.T if weight.axis == 0 else weight.values
    graph.initializer.extend([numpy_helper.from_array(np.ascontiguousarray(values), f"{name}__weight_int8"),
                              numpy_helper.from_array(weight.scale.astype(np.float32), f"{name}__weight_scale")])
    product = f"{name}__product" if node.op_type == "Gemm" and len(node.input) > 2 and node.input[2] else \
        node.output[0]
    nodes = [
        helper.make_node("DynamicQuantizeLinear", [node.input[0]],
                         [f"{name}__x_uint8", f"{name}__x_scale", f"{name}__x_zero"], f"{name}__quantize_x"),
        helper.make_node("MatMulInteger", [f"{name}__x_uint8", f"{name}__weight_int8", f"{name}__x_zero"],
                         [f"{name}__int32"], f"{name}__matmul_integer"),
        helper.make_node("Cast", [f"{name}__int32"], [f"{name}__float"], f"{name}__to_float",
                         to=onnx.TensorProto.FLOAT),
        helper.make_node("Mul", [f"{name}__x_scale", f"{name}__weight_scale"], [f"{name}__scale"],
                         f"{name}__scales"),
        helper.make_node("Mul", [f"{name}__float", f"{name}__scale"], [product], name),
    ]
    if product != node.output[0]:
        nodes.append(helper.make_node("Add", [product, node.input[2]], [node.output[0]], f"{name}__bias"))
    return nodes
