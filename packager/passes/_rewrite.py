"""Helpers shared by edgepack's own slim passes: constants, shapes, fresh names and safe rewiring."""

from __future__ import annotations

import numpy as np
import onnx
import onnx_ir as ir

from edgepack.runtime.graph_protos import iter_graph_protos

from ..graphs import iter_graphs

ONNX_DOMAINS = frozenset({"", "ai.onnx"})
FOLDABLE_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})
"""Weights folding may rewrite: float16 rounding would move outputs past the 1e-5 tolerance."""


def is_op(node: ir.Node, *op_types: str) -> bool:
    """Whether `node` is one of the standard ONNX operators `op_types`."""
    return node.domain in ONNX_DOMAINS and node.op_type in op_types


def opset(model: ir.Model) -> int:
    """The model's version of the default ONNX domain."""
    imports = model.graph.opset_imports
    return imports.get("", imports.get("ai.onnx", 1))


def const_array(value: ir.Value | None) -> np.ndarray | None:
    """The constant behind `value` (initializer or Constant output); None when it can change at run time."""
    if value is None or value.is_graph_input():
        return None
    tensor = ir.convenience.get_const_tensor(value)
    return None if tensor is None else tensor.numpy()


def attr_int(node: ir.Node, name: str, default: int) -> int | None:
    """An INT attribute of `node`, `default` when absent, None when it refers to a function attribute."""
    attr = node.attributes.get(name)
    if attr is None:
        return default
    return None if attr.is_ref() else attr.as_int()


def attr_ints(node: ir.Node, name: str) -> list[int] | None:
    """An INTS attribute of `node`, None when absent or a function-attribute reference."""
    attr = node.attributes.get(name)
    if attr is None or attr.is_ref():
        return None
    return list(attr.as_ints())


def dims(value: ir.Value | None) -> list[int | None] | None:
    """The dims of `value` (None for a dim that is not a known integer), or None when its rank is unknown."""
    if value is None or value.shape is None:
        return None
    return [d if isinstance(d, int) else None for d in value.shape]


def sole_producer(value: ir.Value | None, consumer: ir.Node) -> ir.Node | None:
    """The node producing `value` when `consumer`, in the same graph, is its only reader."""
    if value is None or value.is_graph_output():
        return None
    producer = value.producer()
    if producer is None or producer.graph is not consumer.graph:
        return None
    uses = value.uses()
    if len(uses) != 1 or uses[0].node is not consumer:
        return None
    return producer


def can_replace(old: ir.Value, new: ir.Value) -> bool:
    """Whether every reader of node output `old`, graph outputs included, may read `new` instead."""
    if not old.is_graph_output():
        return True
    producer = new.producer()
    return producer is not None and producer.graph is old.graph and not new.is_graph_output()


def replace(old: ir.Value, new: ir.Value, *, rename: bool = False) -> None:
    """Make every reader of `old` read `new`; `new` takes `old`'s name when `old` is a graph output or `rename`."""
    name = old.name
    if old.is_graph_output():
        rename = True
        if old.shape is not None:
            new.shape = old.shape
        if old.type is not None:
            new.type = old.type
        ir.convenience.replace_all_uses_with(old, new, replace_graph_outputs=True)
    else:
        ir.convenience.replace_all_uses_with(old, new)
    if rename:
        old.name = None
        new.name = name


def drop_unused_initializer(value: ir.Value) -> None:
    """Delete `value` from its graph's initializers when nothing reads it any more."""
    graph = value.graph
    if (
        graph is not None
        and value.is_initializer()
        and not value.uses()
        and not value.is_graph_input()
        and not value.is_graph_output()
    ):
        graph.initializers.pop(value.name)


def remove_node(node: ir.Node) -> None:
    """Remove `node`, whose outputs nothing reads any more, and the initializers only it read."""
    graph = node.graph
    if graph is None:
        raise ValueError(f"node {node.name!r} is not in a graph")
    inputs = [value for value in node.inputs if value is not None]
    graph.remove(node, safe=True)
    for value in inputs:
        drop_unused_initializer(value)


class Names:
    """Value names already used anywhere in a model, handing out fresh ones."""

    def __init__(self, model: ir.Model) -> None:
        self.taken: set[str] = set()
        for graph in iter_graphs(model.graph):
            values = [*graph.inputs, *graph.initializers.values(), *(o for n in graph for o in n.outputs)]
            self.taken.update(v.name for v in values if v.name)

    def fresh(self, base: str) -> str:
        name, i = base, 0
        while name in self.taken:
            i += 1
            name = f"{base}_{i}"
        self.taken.add(name)
        return name


def add_initializer(graph: ir.Graph, name: str, array: np.ndarray) -> ir.Value:
    """Register `array` as a new initializer `name` of `graph`."""
    tensor = ir.tensor(array, name=name)
    value = ir.Value(name=name, type=ir.TensorType(tensor.dtype), shape=ir.Shape(array.shape), const_value=tensor)
    graph.register_initializer(value)
    return value


def fill_missing_shapes(model: ir.Model) -> None:
    """Give node outputs without a type or shape the ones onnx shape inference finds; others stay as they are."""
    missing = [
        out
        for graph in iter_graphs(model.graph)
        for node in graph
        for out in node.outputs
        if out.name and (out.shape is None or out.type is None)
    ]
    if not missing:
        return
    try:
        inferred = onnx.shape_inference.infer_shapes(ir.to_proto(model), data_prop=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError, ValueError):
        return
    types = {
        info.name: info.type
        for graph in iter_graph_protos(inferred.graph)
        for info in [*graph.value_info, *graph.output]
        if info.type.HasField("tensor_type")
    }
    for out in missing:
        type_proto = types.get(out.name)
        if type_proto is None:
            continue
        if out.type is None:
            out.type = ir.serde.deserialize_type_proto_for_type(type_proto)
        if out.shape is None:
            out.shape = ir.serde.deserialize_type_proto_for_shape(type_proto)
