"""fp16 compute: every fp32 value of the graph and its If/Loop/Scan bodies becomes fp16, while the model's inputs
and outputs stay fp32 (a Cast at each end).

The op schemas decide where fp16 cannot go: an input slot whose type constraint has no float16 (Resize scales,
DequantizeLinear scales before opset 19) reads an fp32 Cast of the value, and an output that the schema fixes to
float is cast to fp16 under its old name. Attributes that name a float type (Cast `to`, ConstantOfShape `value`,
Constant values, random and EyeLike `dtype`) are rewritten. Nodes in `keep` compute in fp32 between Casts."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache

import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgepack.runtime.graph_protos import iter_graph_protos

from . import Calibration, QuantizeResult, register_activations

FLOAT, HALF = onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16
FP16_MAX = float(np.finfo(np.float16).max)
FP16_TINY = float(np.finfo(np.float16).smallest_subnormal)
DTYPE_ATTRIBUTES = {"Cast": "to", "EyeLike": "dtype", "RandomNormal": "dtype", "RandomNormalLike": "dtype",
                    "RandomUniform": "dtype", "RandomUniformLike": "dtype", "Multinomial": "dtype"}
"""Ops whose output type is named by an attribute."""


def to_fp16(array: np.ndarray) -> np.ndarray:
    """`array` in fp16, with magnitudes beyond fp16's range clamped to its largest and smallest finite values."""
    finite = np.isfinite(array)
    clamped = np.where(finite, np.clip(array, -FP16_MAX, FP16_MAX), array)
    tiny = finite & (clamped != 0) & (np.abs(clamped) < FP16_TINY)
    return np.where(tiny, np.copysign(FP16_TINY, clamped), clamped).astype(np.float16)


@register_activations("fp16")
def fp16_activations(model: onnx.ModelProto, keep: frozenset[str], _calibration: Calibration | None = None
                     ) -> QuantizeResult:
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    floats = _float_values(model)
    top = model.graph
    fp32_values = {v.name for v in top.input if v.name in floats}
    for graph in iter_graph_protos(top):
        reads_fp16 = set()
        for node in graph.node:
            if node.name not in keep or graph is not top:
                reads_fp16 |= {name for index, name in enumerate(node.input)
                               if name in floats and _slot_takes_fp16(node, index, opset, "input")}
        for tensor in graph.initializer:
            if tensor.name in floats and tensor.name not in reads_fp16:
                fp32_values.add(tensor.name)
    in_fp16 = []
    for graph in iter_graph_protos(top):
        in_fp16 += _rewrite(graph, floats, fp32_values, keep if graph is top else frozenset(), opset)
        _retype_boundary(graph, floats, fp32_values, is_top=graph is top)
    _cast_outputs(top, floats)
    order = [node.name for node in top.node if node.name in set(in_fp16)]
    return QuantizeResult(model, order, 0)


def _float_values(model: onnx.ModelProto) -> set[str]:
    """Names of every fp32 tensor value in the model and its subgraphs."""
    typed = onnx.shape_inference.infer_shapes(model)
    floats = set()
    for graph in iter_graph_protos(typed.graph):
        for value in [*graph.input, *graph.output, *graph.value_info]:
            if value.type.HasField("tensor_type") and value.type.tensor_type.elem_type == FLOAT:
                floats.add(value.name)
        floats |= {t.name for t in graph.initializer if t.data_type == FLOAT}
        for node in graph.node:
            if node.op_type == "Constant" and _constant_is_float(node):
                floats.update(node.output)
    return floats


def _constant_is_float(node: onnx.NodeProto) -> bool:
    return any((a.name == "value" and a.t.data_type == FLOAT) or a.name in ("value_float", "value_floats")
               for a in node.attribute)


def _slot_takes_fp16(node: onnx.NodeProto, index: int, opset: int, kind: str) -> bool:
    """Whether the schema lets input (or output) `index` of `node` be float16."""
    return _formal_takes_fp16(node.op_type, node.domain, opset, index, kind)


@cache
def _formal_takes_fp16(op_type: str, domain: str, opset: int, index: int, kind: str) -> bool:
    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return False
    formals = schema.inputs if kind == "input" else schema.outputs
    if not formals:
        return False
    formal = formals[min(index, len(formals) - 1)]
    allowed = next((c.allowed_type_strs for c in schema.type_constraints if c.type_param_str == formal.type_str),
                   [formal.type_str])
    return any(t in ("tensor(float16)", "seq(tensor(float16))", "optional(tensor(float16))") for t in allowed)


def _rewrite(graph: onnx.GraphProto, floats: set[str], fp32_values: set[str], keep: frozenset[str],
             opset: int) -> list[str]:
    """Rewrite one graph's nodes and initializers to fp16; return the nodes that now compute in fp16."""
    for tensor in graph.initializer:
        if tensor.name in floats and tensor.name not in fp32_values:
            tensor.CopyFrom(numpy_helper.from_array(to_fp16(numpy_helper.to_array(tensor)), tensor.name))
    nodes: list[onnx.NodeProto] = []
    casts: dict[tuple[str, int], str] = {}
    in_fp16 = []

    def cast(name: str, to: int) -> str:
        """`name` cast to `to`, made once per graph."""
        if (name, to) not in casts:
            casts[name, to] = f"{name}__{'fp16' if to == HALF else 'fp32'}"
            nodes.append(helper.make_node("Cast", [name], [casts[name, to]], f"{casts[name, to]}__cast", to=to))
        return casts[name, to]

    for node in graph.node:
        in_fp32 = node.name in keep
        for index, name in enumerate(node.input):
            if name not in floats:
                continue
            wants_fp16 = not in_fp32 and _slot_takes_fp16(node, index, opset, "input")
            if wants_fp16 and name in fp32_values:
                node.input[index] = cast(name, HALF)
            elif not wants_fp16 and name not in fp32_values:
                node.input[index] = cast(name, FLOAT)
        if not in_fp32:
            _retype_attributes(node)
        fixed_fp32 = []
        for index, name in enumerate(node.output):
            if name in floats and (in_fp32 or not _slot_takes_fp16(node, index, opset, "output")
                                   or _dtype_stays_float(node)):
                node.output[index] = f"{name}__fp32"
                fixed_fp32.append(name)
        nodes.append(node)
        for name in fixed_fp32:
            nodes.append(helper.make_node("Cast", [f"{name}__fp32"], [name], f"{name}__to_fp16", to=HALF))
        if not in_fp32 and any(n in floats for n in [*node.input, *node.output]):
            in_fp16.append(node.name)
    del graph.node[:]
    graph.node.extend(nodes)
    return in_fp16


def _dtype_stays_float(node: onnx.NodeProto) -> bool:
    """Whether an op that names its output type still names float after `_retype_attributes`."""
    name = DTYPE_ATTRIBUTES.get(node.op_type)
    return any(a.name == name and a.i == FLOAT for a in node.attribute)


def _retype_attributes(node: onnx.NodeProto) -> None:
    """Float types and float tensors held in attributes become fp16."""
    dtype_attribute = DTYPE_ATTRIBUTES.get(node.op_type)
    for attr in node.attribute:
        if attr.name == dtype_attribute and attr.i == FLOAT:
            attr.i = HALF
        elif attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type == FLOAT:
            attr.t.CopyFrom(numpy_helper.from_array(to_fp16(numpy_helper.to_array(attr.t)), attr.t.name))
    if node.op_type == "Constant":
        for attr in list(node.attribute):
            if attr.name in ("value_float", "value_floats"):
                values = np.array(attr.f if attr.name == "value_float" else list(attr.floats), np.float32)
                node.attribute.remove(attr)
                node.attribute.append(helper.make_attribute("value", numpy_helper.from_array(to_fp16(values))))


def _retype_boundary(graph: onnx.GraphProto, floats: set[str], fp32_values: set[str], is_top: bool) -> None:
    """Subgraph inputs and outputs that were fp32 are declared fp16; stale value_info is dropped."""
    del graph.value_info[:]
    if is_top:
        return
    for value in [*graph.input, *graph.output]:
        if value.name in floats and value.name not in fp32_values and value.type.HasField("tensor_type"):
            value.type.tensor_type.elem_type = HALF


def _cast_outputs(graph: onnx.GraphProto, floats: set[str]) -> None:
    """The model's fp32 outputs: computed in fp16 under `<name>__fp16`, then cast to fp32 under their own name."""
    inputs = {v.name for v in graph.input}
    for output in graph.output:
        if output.name not in floats or output.name in inputs:
            continue
        producer = next((n for n in graph.node if output.name in n.output), None)
        read = any(output.name in n.input for n in _all_nodes(graph))
        if producer is not None and producer.name == f"{output.name}__to_fp16" and not read:
            graph.node.remove(producer)
            _rename(graph, producer.input[0], output.name)
            continue
        internal = f"{output.name}__fp16"
        _rename(graph, output.name, internal)
        graph.node.append(helper.make_node("Cast", [internal], [output.name], f"{output.name}__to_fp32", to=FLOAT))


def _rename(graph: onnx.GraphProto, old: str, new: str) -> None:
    """Every use and definition of value `old` in `graph` and its subgraphs is renamed `new`."""
    for node in _all_nodes(graph):
        node.input[:] = [new if n == old else n for n in node.input]
        node.output[:] = [new if n == old else n for n in node.output]


def _all_nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    for sub in iter_graph_protos(graph):
        yield from sub.node
