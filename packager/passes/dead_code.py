"""Removes nodes nothing reads, unused initializers and unused opset imports, in subgraphs too."""

from __future__ import annotations

import onnx_ir as ir
from onnx_ir.passes.common import RemoveUnusedOpsetsPass

from ..graphs import subgraphs
from . import register


def _detach(node: ir.Node) -> None:
    """Make the nodes of `node`'s subgraphs stop reading values, so outer producers can go too."""
    for graph in subgraphs(node):
        for inner in graph:
            _detach(inner)
            for i in range(len(inner.inputs)):
                inner.replace_input_with(i, None)


def _sweep(graph: ir.Graph) -> None:
    """Remove dead nodes last to first, so a node read only by dead nodes (here or in a subgraph) goes too."""
    outputs = set(graph.outputs)
    for node in reversed(list(graph)):
        if any(out in outputs or out.uses() for out in node.outputs):
            for sub in subgraphs(node):
                _sweep(sub)
        else:
            _detach(node)
            graph.remove(node, safe=True)
    for value in list(graph.initializers.values()):
        if not (value.uses() or value.is_graph_input() or value.is_graph_output()):
            graph.initializers.pop(value.name)


@register("dead-code", "removes unread nodes, initializers and opset imports, respecting subgraph reads")
def apply(model: ir.Model) -> ir.Model:
    _sweep(model.graph)
    RemoveUnusedOpsetsPass()(model)
    return model
