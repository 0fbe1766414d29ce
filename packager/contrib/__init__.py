"""onnxruntime's contrib ops (domain `com.microsoft`) that exporters and `quantize_dynamic` leave in models,
rewritten into standard ONNX when the model is loaded: one op a module, registered in `DECOMPOSITIONS`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import onnx

from .dynamic_quantize_lstm import dynamic_quantize_lstm

Decomposition = Callable[[onnx.NodeProto, dict[str, onnx.TensorProto]], tuple[list[onnx.NodeProto],
                                                                                 list[onnx.TensorProto]]]
"""A contrib node and the graph's initializers -> the standard nodes and the new initializers that replace it."""

DECOMPOSITIONS: dict[tuple[str, str], Decomposition] = {
    ("com.microsoft", "DynamicQuantizeLSTM"): dynamic_quantize_lstm,
}


def decompose_contrib_ops(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list[str]]:
    """The model with the main graph's contrib nodes that have a decomposition rewritten (a copy; the model itself
    when there is none), and what was done, one phrase per op type (`1 DynamicQuantizeLSTM (com.microsoft)`)."""
    if not any((node.domain, node.op_type) in DECOMPOSITIONS for node in model.graph.node):
        return model, []
    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(model)
    graph = rewritten.graph
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    nodes: list[onnx.NodeProto] = []
    done: Counter[str] = Counter()
    for node in graph.node:
        decomposition = DECOMPOSITIONS.get((node.domain, node.op_type))
        if decomposition is None:
            nodes.append(node)
            continue
        replacement, tensors = decomposition(node, initializers)
        nodes += replacement
        graph.initializer.extend(tensors)
        done[f"{node.op_type} ({node.domain})"] += 1
    del graph.node[:]
    graph.node.extend(nodes)
    return rewritten, [f"{count} {name}" for name, count in done.items()]
