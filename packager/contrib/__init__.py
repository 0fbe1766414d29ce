"""Ops a bundle cannot carry, rewritten when the model is loaded: onnxruntime's contrib ops (domain
`com.microsoft`) that exporters and `quantize_dynamic` leave in models, into standard ONNX, and `ai.onnx.ml` ZipMap
at a graph output, whose sequence of maps becomes the probabilities tensor it was made from. One op a module,
registered in `DECOMPOSITIONS`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import onnx

from .dynamic_quantize_lstm import dynamic_quantize_lstm
from .linear_classifier import linear_classifier
from .normalizer import normalizer
from .zipmap import zipmap

Decomposition = Callable[[onnx.NodeProto, dict[str, onnx.TensorProto], dict[str, list[int | None]]],
                         tuple[list[onnx.NodeProto], list[onnx.TensorProto]]]
"""A node, the graph's initializers and the declared dims of its inputs and values (None: unknown) -> the standard
nodes and the new initializers that replace it."""

FIRST_IR_WITH_FREE_INITIALIZERS = 4
"""IR 3 lists every initializer as a graph input too; the rewrites add weights that are not inputs."""
STANDARD_OPSET = 18
"""The standard opset imported for the ops a rewrite writes, in a model that imports only `ai.onnx.ml` (18: the
Reduce ops take their axes as an input)."""

DECOMPOSITIONS: dict[tuple[str, str], Decomposition] = {
    ("com.microsoft", "DynamicQuantizeLSTM"): dynamic_quantize_lstm,
    ("ai.onnx.ml", "LinearClassifier"): linear_classifier,
    ("ai.onnx.ml", "Normalizer"): normalizer,
    ("ai.onnx.ml", "ZipMap"): zipmap,
}


def decompose_contrib_ops(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list[str]]:
    """The model with the main graph's contrib nodes that have a decomposition rewritten (a copy; the model itself
    when there is none), and what was done, one phrase per op type (`1 DynamicQuantizeLSTM (com.microsoft)`)."""
    if not any(_rewritten(node, model.graph) for node in model.graph.node):
        return model, []
    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(model)
    graph = rewritten.graph
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    dims = {info.name: [d.dim_value if d.HasField("dim_value") else None for d in info.type.tensor_type.shape.dim]
            for info in (*graph.input, *graph.value_info) if info.type.HasField("tensor_type")}
    nodes: list[onnx.NodeProto] = []
    done: Counter[str] = Counter()
    for node in graph.node:
        decomposition = DECOMPOSITIONS.get((node.domain, node.op_type)) if _rewritten(node, graph) else None
        if decomposition is None:
            nodes.append(node)
            continue
        replacement, tensors = decomposition(node, initializers, dims)
        nodes += replacement
        graph.initializer.extend(tensors)
        done[f"{node.op_type} ({node.domain})"] += 1
    del graph.node[:]
    graph.node.extend(nodes)
    _retype_outputs(graph, {node.output[0]: _class_count(node) for node in model.graph.node
                             if node.op_type == "ZipMap"})
    rewritten.ir_version = max(rewritten.ir_version, FIRST_IR_WITH_FREE_INITIALIZERS)
    if not any(opset.domain in ("", "ai.onnx") for opset in rewritten.opset_import):
        rewritten.opset_import.append(onnx.helper.make_opsetid("", STANDARD_OPSET))
    return rewritten, [f"{count} {name}" for name, count in done.items()]


def _rewritten(node: onnx.NodeProto, graph: onnx.GraphProto) -> bool:
    """Whether `node` has a decomposition here: a ZipMap only where its output is a graph output that no node reads
    (elsewhere its maps feed ops a bundle cannot run anyway)."""
    if (node.domain, node.op_type) not in DECOMPOSITIONS:
        return False
    if node.op_type != "ZipMap":
        return True
    read = {name for other in graph.node for name in other.input}
    return node.output[0] in {o.name for o in graph.output} and node.output[0] not in read


def _class_count(zipmap: onnx.NodeProto) -> int | None:
    for attribute in zipmap.attribute:
        if attribute.name in ("classlabels_int64s", "classlabels_strings"):
            return len(attribute.ints) or len(attribute.strings)
    return None


def _retype_outputs(graph: onnx.GraphProto, classes: dict[str, int | None]) -> None:
    """The graph outputs a ZipMap made, declared as float tensors [N, classes]."""
    for output in graph.output:
        if output.name in classes:
            output.type.CopyFrom(onnx.helper.make_tensor_type_proto(onnx.TensorProto.FLOAT,
                                                                    [None, classes[output.name]]))
