"""Floating-point work of a graph, estimated from its shapes: the share of it each partition takes is the portability
report's placement by FLOPs. Products (Conv, MatMul, Gemm, recurrent cells) count a multiply and an add per term;
every other op counts one operation per output element."""

from __future__ import annotations

import math

import onnx
from onnx import shape_inference

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def shapes_of(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    """The static shapes shape inference finds for the graph's values (dynamic ones are left out)."""
    try:
        inferred = shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:  # noqa: BLE001  (inference refuses some graphs; their values then have no known shape)
        inferred = model
    graph = inferred.graph
    shapes: dict[str, tuple[int, ...]] = {}
    for value in [*graph.input, *graph.value_info, *graph.output]:
        dims = value.type.tensor_type.shape.dim
        if value.type.tensor_type.HasField("shape") and all(d.dim_value > 0 for d in dims):
            shapes[value.name] = tuple(d.dim_value for d in dims)
    for tensor in graph.initializer:
        shapes[tensor.name] = tuple(tensor.dims)
    return shapes


def node_flops(node: onnx.NodeProto, shapes: dict[str, tuple[int, ...]]) -> int | None:
    """The node's operations, or None where a shape it needs is unknown."""
    out = shapes.get(node.output[0]) if node.output else None
    if node.op_type in ("Conv", "ConvInteger", "QLinearConv"):
        weight = shapes.get(node.input[3 if node.op_type == "QLinearConv" else 1])
        return None if out is None or weight is None else 2 * math.prod(out) * math.prod(weight[1:])
    if node.op_type == "ConvTranspose":
        source, weight = shapes.get(node.input[0]), shapes.get(node.input[1])
        return None if source is None or weight is None else 2 * math.prod(source) * math.prod(weight[1:])
    if node.op_type in ("MatMul", "MatMulInteger", "Gemm", "QLinearMatMul"):
        a = shapes.get(node.input[0])
        if out is None or a is None or not a:
            return None
        transposed = node.op_type == "Gemm" and any(attr.name == "transA" and attr.i for attr in node.attribute)
        inner = a[0] if transposed else a[-1]
        return 2 * math.prod(out) * inner
    if node.op_type in GATES:
        x, w = shapes.get(node.input[0]), shapes.get(node.input[1])
        if x is None or w is None:
            return None
        hidden = w[1] // GATES[node.op_type]
        return 2 * x[0] * x[1] * w[0] * GATES[node.op_type] * hidden * (x[2] + hidden)
    return None if out is None else math.prod(out)


def model_flops(model: onnx.ModelProto) -> tuple[int, int]:
    """The graph's estimated operations and the number of nodes whose shapes were unknown (not counted)."""
    shapes = shapes_of(model)
    total = unknown = 0
    for node in model.graph.node:
        flops = node_flops(node, shapes)
        if flops is None:
            unknown += 1
        else:
            total += flops
    return total, unknown
