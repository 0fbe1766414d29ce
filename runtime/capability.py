"""What a provider claims it can run, per op: domain, opset range, element types and attribute limits."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import onnx

from .function_bodies import function_nodes

MAX_OPSET = 10_000
DEFAULT_DOMAIN = ""


def domain_of(name: str) -> str:
    return "" if name in ("", "ai.onnx") else name


def op_label(node: onnx.NodeProto) -> str:
    """`OpType`, or `domain.OpType` outside the default domain."""
    domain = domain_of(node.domain)
    return f"{domain + '.' if domain else ''}{node.op_type}"


@dataclass(frozen=True)
class OpClaim:
    """One op a provider claims. `limit` returns why a node is out of reach (an attribute or an input it cannot
    take), or None when the node is claimed."""

    op_type: str
    domain: str = DEFAULT_DOMAIN
    opsets: tuple[int, int] = (1, MAX_OPSET)
    dtypes: frozenset[str] | None = None
    limit: Callable[[onnx.NodeProto, Values], str | None] | None = None


@dataclass
class Values:
    """What a graph records about its values: element type names, static shapes (None for an unknown dim) and
    which values are constants (weights or Constant outputs)."""

    types: dict[str, str] = field(default_factory=dict)
    shapes: dict[str, list[int | None]] = field(default_factory=dict)
    constants: set[str] = field(default_factory=set)
    known: set[str] = field(default_factory=set)
    """Values known once input shapes are fixed: constants, shapes and sizes, and what is computed from them only."""
    model_inputs: set[str] = field(default_factory=set)
    """The model's own small inputs (of the top graph; at most MAX_VALUE_ELEMENTS, every dim static) and values
    computed from them and known values only: a plan can be lowered for the inputs' values, which makes these known."""


MAX_VALUE_ELEMENTS = 64
"""The most elements a model input may have for a plan to be lowered per value of it."""
RANDOM_OPS = {"RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}
"""Ops whose outputs differ from run to run even on constant inputs."""


def graph_values(graph: onnx.GraphProto, outer: Values | None = None) -> Values:
    """The values of `graph` (inputs, outputs, value_info, weights, Constant outputs) on top of the outer scope's.
    A node without subgraphs whose inputs are all constants (a weight's DequantizeLinear, Reshape and Cast) makes
    constants too; Shape and Size, and nodes reading only known values, make known values."""
    values = Values(dict(outer.types), dict(outer.shapes), set(outer.constants), set(outer.known),
                    set(outer.model_inputs)) if outer else Values(model_inputs={v.name for v in graph.input
                                                                                 if _is_small(v)})
    for value in [*graph.input, *graph.output, *graph.value_info]:
        kind = value.type.WhichOneof("value")
        if kind == "tensor_type" and value.type.tensor_type.elem_type:
            tensor_type = value.type.tensor_type
            values.types[value.name] = onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type).name
            if tensor_type.HasField("shape"):
                values.shapes[value.name] = [d.dim_value if d.HasField("dim_value") else None
                                             for d in tensor_type.shape.dim]
        elif kind:
            values.types[value.name] = kind.removesuffix("_type")
    for tensor in graph.initializer:
        values.types[tensor.name] = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).name
        values.shapes[tensor.name] = list(tensor.dims)
        values.constants.add(tensor.name)
        values.known.add(tensor.name)
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            values.constants.add(node.output[0])
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.TENSOR:
                    values.types[node.output[0]] = onnx.helper.tensor_dtype_to_np_dtype(attr.t.data_type).name
                    values.shapes[node.output[0]] = list(attr.t.dims)
        elif _computes_constants(node, values.constants, subgraphs=False):
            values.constants.update(name for name in node.output if name)
        if node.op_type in ("Shape", "Size") or (node.op_type == "Constant" and node.output) or \
                _computes_constants(node, values.known):
            values.known.update(name for name in node.output if name)
        elif _computes_constants(node, values.known | values.model_inputs):
            values.model_inputs.update(name for name in node.output if name)
    return values


def _is_small(value: onnx.ValueInfoProto) -> bool:
    dims = value.type.tensor_type.shape.dim if value.type.HasField("tensor_type") else None
    return dims is not None and value.type.tensor_type.HasField("shape") and \
        all(d.HasField("dim_value") for d in dims) and int(np.prod([d.dim_value for d in dims])) <= MAX_VALUE_ELEMENTS


def _computes_constants(node: onnx.NodeProto, constants: set[str], subgraphs: bool = True) -> bool:
    """Whether the node computes from `constants` only (what its subgraphs read too; with `subgraphs` False, a node
    with a subgraph never does)."""
    inputs = [name for name in (node.input[:1] if node.op_type == "CastLike" else node.input) if name]
    if not subgraphs and has_subgraph(node):
        return False
    reads = outer_reads(node)
    return bool(inputs) and node.op_type not in RANDOM_OPS and all(name in constants for name in [*inputs, *reads])


def has_subgraph(node: onnx.NodeProto) -> bool:
    return any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute)


def outer_reads(node: onnx.NodeProto) -> set[str]:
    """The names a node's subgraphs read from the scopes around them."""
    names: set[str] = set()
    for attr in node.attribute:
        for body in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs):
            inner = {v.name for v in body.input} | {t.name for t in body.initializer} | \
                {name for n in body.node for name in n.output}
            for n in body.node:
                names |= {name for name in [*n.input, *outer_reads(n)] if name and name not in inner}
            names |= {v.name for v in body.output if v.name not in inner}
    return names


class Capability:
    """A provider's claims, asked node by node: `refusal(node, opsets, types)` is None when claimed."""

    def __init__(self, claims: Iterable[OpClaim]) -> None:
        self.claims = {(claim.domain, claim.op_type): claim for claim in claims}

    def claim_refusal(self, node: onnx.NodeProto, opsets: Mapping[str, int], values: Values) -> str | None:
        """Why the node's own claim (op, opset, dtypes, limits; not its subgraphs) does not hold, or None."""
        domain = domain_of(node.domain)
        claim = self.claims.get((domain, node.op_type))
        label = op_label(node)
        if claim is None:
            return f"{label} is not supported"
        opset = opsets.get(domain, 0)
        if not claim.opsets[0] <= opset <= claim.opsets[1]:
            return f"{label} at opset {opset} is not supported (opsets {claim.opsets[0]}-{claim.opsets[1]})"
        if claim.dtypes is not None:
            used = [values.types.get(name) for name in [*node.input, *node.output] if name]
            if None in used:
                return f"{label} has a value of unknown type"
            outside = sorted(set(used) - claim.dtypes)
            if outside:
                return f"{label} on {', '.join(outside)} is not supported"
        if claim.limit is not None:
            reason = claim.limit(node, values)
            if reason:
                return f"{label}: {reason}"
        return None

    def refusal(self, node: onnx.NodeProto, opsets: Mapping[str, int], values: Values) -> str | None:
        """Why this node (with its subgraphs) is not claimed, or None."""
        reason = self.claim_refusal(node, opsets, values)
        if reason:
            return reason
        for attr in node.attribute:
            for body in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs):
                reason = self.graph_refusal(body, opsets, graph_values(body, values))
                if reason:
                    return f"{op_label(node)} body {body.name or attr.name!r}: {reason}"
        return None

    def graph_refusal(self, graph: onnx.GraphProto, opsets: Mapping[str, int], values: Values) -> str | None:
        """The first refusal among a graph's nodes, or None when every node is claimed."""
        for node in graph.node:
            reason = self.refusal(node, opsets, values)
            if reason:
                return reason
        return None


def model_opsets(model: onnx.ModelProto) -> dict[str, int]:
    return {domain_of(o.domain): o.version for o in model.opset_import}


def attribute(node: onnx.NodeProto, name: str, default: object = None) -> object:
    """The value of attribute `name` of `node` (strings decoded), or `default`."""
    for attr in node.attribute:
        if attr.name == name:
            value = onnx.helper.get_attribute_value(attr)
            return value.decode() if isinstance(value, bytes) else value
    return default


_TENSOR_TYPES = {}
for _code in onnx.TensorProto.DataType.values():
    try:
        _TENSOR_TYPES.setdefault(onnx.helper.tensor_dtype_to_np_dtype(_code).name, _code)
    except (KeyError, TypeError, ValueError):
        pass


def type_proto(values: Values, name: str) -> onnx.TypeProto | None:
    """The tensor type of `name` as far as `values` knows it (an empty type for an absent input; None: unknown)."""
    if not name:
        return onnx.TypeProto()
    code = _TENSOR_TYPES.get(values.types.get(name, ""))
    if code is None:
        return None
    return onnx.helper.make_tensor_type_proto(code, values.shapes.get(name))


class PlanCapability(Capability):
    """The claims of an engine that lowers a model to a plan at fixed input shapes (the C core and its WebGPU
    executor): a node reading only known values is folded when the plan is lowered, and an op it lacks runs as its
    ONNX function body when every node of the body is claimed."""

    def refusal(self, node: onnx.NodeProto, opsets: Mapping[str, int], values: Values) -> str | None:
        if _computes_constants(node, values.known):
            return None
        reason = super().refusal(node, opsets, values)
        if reason is None:
            return None
        body = function_nodes(node, opsets, [type_proto(values, name) for name in node.input])
        if body is None:
            return reason
        graph, inner = _body_graph(node, body, values, opsets)
        body_reason = self.graph_refusal(graph, opsets, inner)
        return None if body_reason is None else f"{reason}, nor its ONNX function body ({body_reason})"


def _body_graph(node: onnx.NodeProto, body: list[onnx.NodeProto], values: Values, opsets: Mapping[str, int]
                ) -> tuple[onnx.GraphProto, Values]:
    """The body as a graph, with the types and shapes onnx's inference gives its values."""
    inputs = [onnx.helper.make_value_info(name, type_proto(values, name) or onnx.TypeProto())
              for name in dict.fromkeys(n for n in node.input if n)]
    outputs = [onnx.helper.make_value_info(name, onnx.TypeProto()) for name in node.output if name]
    model = onnx.helper.make_model(onnx.helper.make_graph(body, "body", inputs, outputs),
                                   opset_imports=[onnx.helper.make_opsetid(d, v) for d, v in opsets.items()])
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except onnx.shape_inference.InferenceError:
        pass
    return model.graph, graph_values(model.graph, values)
