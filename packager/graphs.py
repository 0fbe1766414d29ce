"""Walking graphs and their If/Loop/Scan bodies."""

from __future__ import annotations

from collections.abc import Iterator

import onnx
import onnx_ir as ir

from edgepack.runtime.graph_protos import iter_graph_protos


def subgraphs(node: ir.Node) -> Iterator[ir.Graph]:
    """The graphs held directly in `node`'s attributes (If branches, Loop/Scan bodies)."""
    for attr in node.attributes.values():
        if attr.type == ir.AttributeType.GRAPH:
            yield attr.as_graph()
        elif attr.type == ir.AttributeType.GRAPHS:
            yield from attr.as_graphs()


def iter_graphs(graph: ir.Graph) -> Iterator[ir.Graph]:
    """Yield `graph` and every subgraph nested in its nodes' attributes, outermost first."""
    yield graph
    for node in list(graph):
        for sub in subgraphs(node):
            yield from iter_graphs(sub)


def count_nodes(model: onnx.ModelProto | ir.Model) -> int:
    """Nodes in the main graph and all subgraphs, Constant nodes included."""
    if isinstance(model, ir.Model):
        return sum(len(g) for g in iter_graphs(model.graph))
    return sum(len(g.node) for g in iter_graph_protos(model.graph))
