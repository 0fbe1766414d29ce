"""Check a loaded model: known ops only, onnx.checker, strict shape inference."""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference

from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.external_weights import weights_as_inputs
from edgepack.runtime.graph_protos import iter_graph_protos

STANDARD_DOMAINS = ("", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training")
SHAPE_FIX = "check --input-shape and the profile's shape pins against the model's inputs (`edgepack inspect MODEL`)"


def check_model(model: onnx.ModelProto, where: str) -> onnx.ModelProto:
    """Something to run, known ops only, onnx.checker (full), then strict shape inference; returns the inferred
    model."""
    _check_not_empty(model, where)
    _check_ops(model, where)
    _forget_negative_dims(model)
    try:
        onnx.checker.check_model(weights_as_inputs(model), full_check=True)
    except shape_inference.InferenceError as exc:
        raise EdgepackError(f"shapes do not fit: {_first_line(exc)}", where=_node_of(exc) or where,
                            fix=SHAPE_FIX) from None
    except onnx.checker.ValidationError as exc:
        raise EdgepackError(f"the model is not valid ONNX: {_first_line(exc)}", where=_node_of(exc) or where,
                            fix="re-export the model with a current exporter (the checker names the field or node "
                                "at fault)") from None
    return infer_shapes(model, where)


def _check_not_empty(model: onnx.ModelProto, where: str) -> None:
    """A graph with no outputs, or no nodes (its outputs would be its inputs or constants), is not a model to ship."""
    graph = model.graph
    if not graph.output:
        raise EdgepackError("the model's graph has no outputs: there is nothing to compute", where=where,
                            fix="export the model with its outputs (a truncated or placeholder export has none)")
    if not graph.node:
        raise EdgepackError(f"the model's graph has no nodes: its outputs ({', '.join(o.name for o in graph.output)}) "
                            "are its inputs or stored constants, so there is nothing to build", where=where,
                            fix="export the model with its computation (a truncated or placeholder export has none)")


def non_finite_weights(model: onnx.ModelProto) -> list[str]:
    """The float weights (initializers and Constant values, subgraphs included) that hold NaN or Inf, each as
    `name (N of M values)`: a model that computes with them is rarely what its exporter meant."""
    found = []
    for graph in iter_graph_protos(model.graph):
        tensors = [*graph.initializer, *(attribute.t for node in graph.node if node.op_type == "Constant"
                                         for attribute in node.attribute if attribute.name == "value")]
        for tensor in tensors:
            if tensor.data_type not in FLOAT_TYPES or tensor.data_location == onnx.TensorProto.EXTERNAL:
                continue
            values = numpy_helper.to_array(tensor)
            bad = int(values.size - np.count_nonzero(np.isfinite(values)))
            if bad:
                found.append(f"{tensor.name or '(a Constant)'} ({bad} of {values.size} values)")
    return found


FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE, onnx.TensorProto.BFLOAT16}


def infer_shapes(model: onnx.ModelProto, where: str) -> onnx.ModelProto:
    """Strict shape inference; a contradiction is the user's shape or a broken model."""
    try:
        return shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except (shape_inference.InferenceError, onnx.checker.ValidationError) as exc:
        raise EdgepackError(f"shapes do not fit: {_first_line(exc)}", where=_node_of(exc) or where,
                            fix=SHAPE_FIX) from None


def _forget_negative_dims(model: onnx.ModelProto) -> None:
    """Exporters (paddle2onnx) write -1 for an unknown size; ONNX means a dimension with no value by that."""
    for graph in iter_graph_protos(model.graph):
        for info in (*graph.input, *graph.output, *graph.value_info):
            for dim in info.type.tensor_type.shape.dim:
                if dim.HasField("dim_value") and dim.dim_value < 0:
                    dim.ClearField("dim_value")


FIRST_IR_WITHOUT_INITIALIZER_INPUTS = 4


def initializers_as_constants(model: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    """The model without the graph inputs that are also initializers, and how many there were. Exporters of IR 3
    list every weight as an input (with a default value): a bundle's weights are its own, so they are constants,
    not inputs an app feeds (and a plan needs the values of those that shape others). IR 3 requires every
    initializer to be an input, so the model moves to IR 4, the first that does not (else onnx's checker refuses it
    and every slim pass with it)."""
    names = {t.name for t in model.graph.initializer}
    kept = [value for value in model.graph.input if value.name not in names]
    if len(kept) == len(model.graph.input):
        return model, 0
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    del copy.graph.input[:]
    copy.graph.input.extend(kept)
    copy.ir_version = max(copy.ir_version, FIRST_IR_WITHOUT_INITIALIZER_INPUTS)
    return copy, len(model.graph.input) - len(kept)


def declared_shapes_contradicted(model: onnx.ModelProto, computed: list[dict]) -> dict[str, tuple[list, list]]:
    """The outputs whose declared shape the computed values contradict (another rank, or another size where a size
    is fixed): name -> (declared dims, computed shape). Slimming trusts declared shapes, so a wrong one changes
    what the slimmed model computes (a CNN+LSTM OCR net declaring [1, seqlen] for a [T, 1, classes] output)."""
    wrong = {}
    for output in model.graph.output:
        tensor_type = output.type.tensor_type
        if not tensor_type.HasField("shape"):
            continue
        declared = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tensor_type.shape.dim]
        for values in computed:
            actual = list(getattr(values.get(output.name), "shape", ()))
            if output.name in values and (len(actual) != len(declared) or any(
                    isinstance(d, int) and d > 0 and d != a for d, a in zip(declared, actual))):
                wrong[output.name] = (declared, actual)
                break
    return wrong


def without_output_shapes(model: onnx.ModelProto, names: Iterable[str]) -> onnx.ModelProto:
    """A copy of `model` whose outputs `names` declare their element type only."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for output in copy.graph.output:
        if output.name in set(names):
            output.type.tensor_type.ClearField("shape")
    return copy


def _check_ops(model: onnx.ModelProto, where: str) -> None:
    local = {(f.domain, f.name) for f in model.functions}
    for graph in iter_graph_protos(model.graph):
        for node in graph.node:
            if (node.domain, node.op_type) in local:
                continue
            domain = "" if node.domain == "ai.onnx" else node.domain
            node_where = f"node {node.name or '(unnamed)'!r}, {where}"
            if domain not in STANDARD_DOMAINS:
                raise EdgepackError(f"op {node.op_type!r} is from the unknown domain {node.domain!r}",
                                    where=node_where,
                                    fix="edgepack runs standard ONNX ops only (domains ai.onnx and ai.onnx.ml); "
                                        "export the model without custom or contrib ops")
            if not onnx.defs.has(node.op_type, domain):
                raise EdgepackError(f"unknown op {node.op_type!r} in domain {domain or 'ai.onnx'!r}",
                                    where=node_where,
                                    fix="use a standard ONNX op (https://onnx.ai/onnx/operators/) or re-export")


def _first_line(exc: Exception) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _node_of(exc: Exception) -> str | None:
    text = str(exc)
    match = re.search(r"node name: ([^)\n]*)\)", text) or re.search(r"Name: ?([^\s]+) OpType", text)
    return f"node {match.group(1).strip()!r}" if match and match.group(1).strip() else None
