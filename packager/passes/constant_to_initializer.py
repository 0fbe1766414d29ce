"""Turns Constant nodes into initializers of their own graph (subgraphs included)."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from ..graphs import iter_graphs
from . import register
from ._rewrite import is_op

_SCALARS = {
    "value_float": np.float32,
    "value_floats": np.float32,
    "value_int": np.int64,
    "value_ints": np.int64,
}


def _tensor(node: ir.Node) -> ir.TensorProtocol | None:
    if len(node.attributes) != 1:
        return None
    name, attr = next(iter(node.attributes.items()))
    if attr.is_ref():
        return None
    if name == "value":
        return attr.as_tensor()
    if name in _SCALARS:
        return ir.tensor(np.array(attr.value, dtype=_SCALARS[name]))
    return None


def _lift(node: ir.Node) -> None:
    out = node.outputs[0]
    tensor = _tensor(node)
    graph = node.graph
    if tensor is None or graph is None or not out.name or out.is_graph_output():
        return
    value = ir.Value(name=out.name, type=ir.TensorType(tensor.dtype), shape=ir.Shape(tensor.shape), const_value=tensor)
    out.replace_all_uses_with(value)
    graph.remove(node, safe=True)
    graph.register_initializer(value)


@register("constant-to-initializer", "Constant nodes become initializers of the graph they sit in")
def apply(model: ir.Model) -> ir.Model:
    if model.ir_version < 4:  # initializers must double as graph inputs before IR 4
        return model
    for graph in list(iter_graphs(model.graph)):
        for node in list(graph):
            if is_op(node, "Constant"):
                _lift(node)
    return model
