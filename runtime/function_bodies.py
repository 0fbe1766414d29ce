"""ONNX function bodies: many ops (Attention, RMSNormalization, Mish, the losses, ...) are defined by onnx as a graph
of simpler ops, fixed or built for the node's attributes and input types. `function_nodes` gives that graph for one
node, inlined (attributes bound, names made unique to the node), so an engine that lacks the op can run its body."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import onnx
import onnx.inliner

FUNCTION_DOMAIN = "edgepack.function"


def _opset(node: onnx.NodeProto, opsets: Mapping[str, int]) -> int:
    """The model's opset of the node's domain."""
    return opsets.get("" if node.domain in ("", "ai.onnx") else node.domain, 1)


def _schema(node: onnx.NodeProto, opset: int) -> onnx.defs.OpSchema | None:
    try:
        return onnx.defs.get_schema(node.op_type, opset, node.domain)
    except onnx.defs.SchemaError:
        return None


def defines_body(node: onnx.NodeProto, opsets: Mapping[str, int]) -> bool:
    """Whether onnx defines a function body for `node`'s op (cheap: no body is built)."""
    schema = _schema(node, _opset(node, opsets))
    return schema is not None and (schema.has_function or schema.has_context_dependent_function)


def _body(node: onnx.NodeProto, schema: onnx.defs.OpSchema, opset: int, input_types: Sequence[onnx.TypeProto | None]
          ) -> onnx.FunctionProto | None:
    data = None
    fixed = [v for v in schema.function_opset_versions if v <= opset] if schema.has_function else []
    built = [v for v in schema.context_dependent_function_opset_versions if v <= opset] \
        if schema.has_context_dependent_function else []
    if fixed:
        data = schema.get_function_with_opset_version(max(fixed))
    elif built and all(input_types):
        data = schema.get_context_dependent_function_with_opset_version(
            max(built), node.SerializeToString(), [t.SerializeToString() for t in input_types])
    if not data:
        return None
    body = onnx.FunctionProto()
    body.ParseFromString(data)
    return body if body.node else None


def function_nodes(node: onnx.NodeProto, opsets: Mapping[str, int],
                   input_types: Sequence[onnx.TypeProto | None]) -> list[onnx.NodeProto] | None:
    """The nodes of `node`'s ONNX function body (the newest defined at or below the model's opset), reading and
    writing the node's own value names; None when onnx defines no body for it (or needs unknown input types)."""
    opset = _opset(node, opsets)
    schema = _schema(node, opset)
    body = _body(node, schema, opset, input_types) if schema is not None else None
    if body is None:
        return None
    body.domain, body.name = FUNCTION_DOMAIN, f"{node.op_type}_body"
    call = onnx.NodeProto()
    call.CopyFrom(node)
    call.domain, call.op_type = FUNCTION_DOMAIN, body.name
    call.attribute.extend(_defaults(node, schema))
    names = [name for name in [*node.input, *node.output] if name]
    graph = onnx.helper.make_graph([call], "call", [onnx.helper.make_value_info(n, onnx.TypeProto()) for n in
                                                    dict.fromkeys(i for i in node.input if i)],
                                   [onnx.helper.make_value_info(n, onnx.TypeProto()) for n in node.output if n])
    imports = {**{d: v for d, v in opsets.items()}, **{o.domain: o.version for o in body.opset_import},
               FUNCTION_DOMAIN: 1}
    model = onnx.helper.make_model(graph, functions=[body],
                                   opset_imports=[onnx.helper.make_opsetid(d, v) for d, v in imports.items()])
    inlined = onnx.inliner.inline_local_functions(model, convert_version=True).graph.node
    prefix = f"{node.name or node.output[0]}/{node.op_type}/"
    return [_renamed(n, set(names), prefix) for n in inlined]


def _defaults(node: onnx.NodeProto, schema: onnx.defs.OpSchema) -> list[onnx.AttributeProto]:
    """The schema's default values of the attributes `node` leaves out (a body refers to them by name)."""
    given = {attr.name for attr in node.attribute}
    return [attr.default_value for name, attr in schema.attributes.items()
            if name not in given and attr.default_value.name]


def _renamed(node: onnx.NodeProto, keep: set[str], prefix: str) -> onnx.NodeProto:
    """`node` with every value name it reads or writes, other than `keep`, given `prefix` (subgraphs too)."""
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    rename = {name: name if not name or name in keep else prefix + name for name in [*node.input, *node.output]}
    copy.input[:] = [rename[n] for n in node.input]
    copy.output[:] = [rename[n] for n in node.output]
    copy.name = prefix + node.name if node.name else ""
    for attr in copy.attribute:
        for graph in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs):
            _rename_outer_reads(graph, keep, prefix)
    return copy


def _rename_outer_reads(graph: onnx.GraphProto, keep: set[str], prefix: str) -> None:
    """Renames, inside a subgraph, the names it reads from the function body (its own names stay)."""
    own = {v.name for v in graph.input} | {t.name for t in graph.initializer} | \
        {o for n in graph.node for o in n.output}
    for node in graph.node:
        node.input[:] = [n if not n or n in own or n in keep else prefix + n for n in node.input]
        for attr in node.attribute:
            for sub in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs):
                _rename_outer_reads(sub, keep | own, prefix)
    for value in graph.output:
        if value.name not in own and value.name not in keep:
            value.name = prefix + value.name
