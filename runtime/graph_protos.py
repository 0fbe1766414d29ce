"""Walking a protobuf graph and the graphs nested in its nodes (If branches, Loop/Scan bodies)."""

from __future__ import annotations

from collections.abc import Iterator

import onnx


def iter_graph_protos(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """Yield `graph` and every nested subgraph of a protobuf graph."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from iter_graph_protos(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    yield from iter_graph_protos(sub)
