"""Common subexpression elimination: a node computing what an earlier one (here or in an outer scope) did is dropped."""

from __future__ import annotations

from collections.abc import Hashable

import onnx_ir as ir

from ..graphs import subgraphs
from . import register
from ._rewrite import can_replace, remove_node, replace

_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml", "com.microsoft"})
_RANDOM = frozenset({"Bernoulli", "Multinomial"})
_COMMUTATIVE = frozenset({"Add", "Mul", "And", "Or", "Xor", "Equal", "BitwiseAnd", "BitwiseOr", "BitwiseXor"})
_PLAIN = {
    ir.AttributeType.FLOAT,
    ir.AttributeType.INT,
    ir.AttributeType.STRING,
    ir.AttributeType.FLOATS,
    ir.AttributeType.INTS,
    ir.AttributeType.STRINGS,
}


def _tensor_key(tensor: ir.TensorProtocol) -> Hashable:
    payload = tuple(tensor.string_data()) if tensor.dtype == ir.DataType.STRING else tensor.tobytes()
    return tensor.dtype, tuple(tensor.shape), payload


def _attr_key(attr: ir.Attr) -> Hashable | None:
    if attr.is_ref():
        return None
    if attr.type in _PLAIN:
        value = attr.value
        return attr.type, tuple(value) if isinstance(value, list | tuple) else value
    if attr.type == ir.AttributeType.TENSOR:
        return attr.type, _tensor_key(attr.as_tensor())
    if attr.type == ir.AttributeType.TENSORS:
        return attr.type, tuple(_tensor_key(t) for t in attr.as_tensors())
    return None  # subgraphs, sparse tensors, type protos: never merged


def _key(node: ir.Node) -> Hashable | None:
    """What `node` computes, or None for a node that must stay (random, opaque domain, subgraph)."""
    op = node.op_type
    if node.domain not in _DOMAINS or op in _RANDOM or op.startswith("Random") or "Dropout" in op:
        return None
    if not node.outputs:
        return None
    attrs = []
    for name, attr in sorted(node.attributes.items()):
        key = _attr_key(attr)
        if key is None:
            return None
        attrs.append((name, key))
    inputs = list(node.inputs)
    if op in _COMMUTATIVE and len(inputs) == 2:
        inputs.sort(key=id)
    domain = "" if node.domain == "ai.onnx" else node.domain
    return domain, op, node.overload, len(node.outputs), tuple(inputs), tuple(attrs)


def _merge(node: ir.Node, kept: ir.Node) -> bool:
    pairs = list(zip(node.outputs, kept.outputs))
    if not all(can_replace(old, new) for old, new in pairs):
        return False
    for old, new in pairs:
        replace(old, new)
    remove_node(node)
    return True


def _eliminate(graph: ir.Graph, outer: dict[Hashable, ir.Node]) -> None:
    """CSE over `graph`; `outer` maps keys to nodes of enclosing graphs that precede it."""
    seen = dict(outer)
    for node in list(graph):
        for sub in subgraphs(node):
            _eliminate(sub, seen)
        key = _key(node)
        if key is None:
            continue
        kept = seen.get(key)
        if kept is None or not _merge(node, kept):
            seen.setdefault(key, node)


@register("cse", "merges nodes with the same op, attributes and inputs, also inside and across subgraph scopes")
def apply(model: ir.Model) -> ir.Model:
    _eliminate(model.graph, {})
    return model
