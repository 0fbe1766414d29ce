"""`ai.onnx.ml` Normalizer -> each row divided by its L1 or L2 norm (at least 1e-30) or, for MAX, by its largest
value, in standard ops. MAX follows the operator's text and onnxruntime (the largest value, sign kept); onnx's
reference evaluator divides by the largest magnitude instead, which differs on rows whose largest value is not their
largest magnitude."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgepack.runtime.errors import EdgepackError

REDUCTIONS = {"L1": "ReduceL1", "L2": "ReduceL2", "MAX": "ReduceMax"}


def normalizer(node: onnx.NodeProto, initializers: dict[str, onnx.TensorProto],
               dims: dict[str, list[int | None]]) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    norm = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "norm"), b"MAX")
    norm = norm.decode() if isinstance(norm, bytes) else norm
    if norm not in REDUCTIONS:
        raise EdgepackError(f"Normalizer node {node.name!r} has norm {norm!r}; the operator defines MAX, L1 and L2",
                            where=f"node {node.name!r}", fix="export the model with one of those norms")
    prefix = f"{node.name or 'normalizer'}__"
    floor = numpy_helper.from_array(np.array(1e-30, np.float32), f"{prefix}floor")
    axes = numpy_helper.from_array(np.array([1], np.int64), f"{prefix}axes")
    x = f"{prefix}x"
    nodes = [helper.make_node("Cast", [node.input[0]], [x], to=onnx.TensorProto.FLOAT)]
    nodes.append(helper.make_node(REDUCTIONS[norm], [x, axes.name], [f"{prefix}norm"], keepdims=1))
    divisor = f"{prefix}norm"
    if norm != "MAX":
        nodes.append(helper.make_node("Max", [divisor, floor.name], [f"{prefix}divisor"]))
        divisor = f"{prefix}divisor"
    nodes.append(helper.make_node("Div", [x, divisor], [node.output[0]]))
    return nodes, [floor, axes]
