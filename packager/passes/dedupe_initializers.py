"""Merges initializers with the same dtype, shape and bytes; a subgraph's copy of an outer one reads the outer one."""

from __future__ import annotations

import hashlib
from collections.abc import Hashable

import onnx_ir as ir

from ..graphs import subgraphs
from . import register


def _payload(tensor: ir.TensorProtocol) -> bytes:
    if tensor.dtype == ir.DataType.STRING:
        return b"".join(len(s).to_bytes(8, "little") + s for s in tensor.string_data())
    return tensor.tobytes()


def _dedupe(graph: ir.Graph, outer: dict[Hashable, ir.Value]) -> None:
    """Dedupe `graph`'s initializers against each other and against `outer`, the enclosing graphs' ones."""
    seen = dict(outer)
    for value in list(graph.initializers.values()):
        tensor = value.const_value
        if tensor is None or value.is_graph_input() or value.is_graph_output():
            continue
        payload = _payload(tensor)
        key = (tensor.dtype, tuple(tensor.shape), hashlib.sha256(payload).digest())
        kept = seen.setdefault(key, value)
        if kept is value or kept.const_value is None or _payload(kept.const_value) != payload:
            continue
        value.replace_all_uses_with(kept)
        graph.initializers.pop(value.name)
    for node in graph:
        for sub in subgraphs(node):
            _dedupe(sub, seen)


@register("dedupe-initializers", "initializers with equal dtype, shape and bytes share one copy")
def apply(model: ir.Model) -> ir.Model:
    _dedupe(model.graph, {})
    return model
