"""`ai.onnx.ml` LinearClassifier -> Gemm (scores = X W^T + b), its post transform (Sigmoid or Softmax), and
ArgMax + Gather for the labels: standard ops every provider runs. Binary models that store one class's
coefficients get the two-column scores [-s, s], as the operator defines. Integer class labels only (a string label
tensor has no place in a plan). A model that stores more coefficients than classes x input features (onnxruntime's
own `logreg_iris.onnx`: 12 for 3 classes and 2 features) computes, as onnxruntime does, with the leading ones; fewer
is refused."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgepack.runtime.errors import EdgepackError

POST_TRANSFORMS = {"NONE": None, "LOGISTIC": "Sigmoid", "SOFTMAX": "Softmax"}


def linear_classifier(node: onnx.NodeProto, initializers: dict[str, onnx.TensorProto],
                      dims: dict[str, list[int | None]]) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    where = f"node {node.name!r}"
    if attributes.get("classlabels_strings"):
        raise EdgepackError(f"LinearClassifier node {node.name!r} has string class labels, which a bundle cannot "
                            "output", where=where, fix="export the classifier with integer class labels")
    transform = attributes.get("post_transform", b"NONE")
    transform = transform.decode() if isinstance(transform, bytes) else transform
    if transform not in POST_TRANSFORMS:
        raise EdgepackError(f"LinearClassifier node {node.name!r} has post_transform {transform}, which edgepack "
                            f"does not rewrite (it does {', '.join(POST_TRANSFORMS)})", where=where,
                            fix="export the classifier with one of those post transforms")
    labels = np.array(attributes.get("classlabels_ints", []), np.int64)
    intercepts = np.array(attributes.get("intercepts", []), np.float32)
    classes = max(len(intercepts), 1)
    coefficients = np.array(attributes["coefficients"], np.float32)
    shape = dims.get(node.input[0]) or []
    features = shape[1] if len(shape) == 2 else None
    if features is not None and coefficients.size > classes * features:
        coefficients = coefficients[:classes * features]
    if coefficients.size % classes or (features is not None and coefficients.size != classes * features):
        raise EdgepackError(f"LinearClassifier node {node.name!r} has {coefficients.size} coefficients for "
                            f"{classes} classes" + (f" and {features} input features" if features else "")
                            + f": the operator needs classes x features ({classes * (features or 0) or '?'})",
                            where=where, fix="export the classifier again: its weights do not match its input")
    coefficients = coefficients.reshape(classes, -1)
    prefix = f"{node.name or 'linear_classifier'}__"
    tensors = [numpy_helper.from_array(coefficients, f"{prefix}coefficients"),
               numpy_helper.from_array(intercepts if len(intercepts) else np.zeros(len(coefficients), np.float32),
                                       f"{prefix}intercepts")]
    raw = f"{prefix}raw_scores"
    nodes = [helper.make_node("Cast", [node.input[0]], [f"{prefix}x"], to=onnx.TensorProto.FLOAT),
             helper.make_node("Gemm", [f"{prefix}x", tensors[0].name, tensors[1].name], [raw], transB=1)]
    if len(coefficients) == 1 and len(labels) == 2:
        nodes.append(helper.make_node("Neg", [raw], [f"{prefix}negated"]))
        nodes.append(helper.make_node("Concat", [f"{prefix}negated", raw], [f"{prefix}both"], axis=1))
        raw = f"{prefix}both"
    scores = node.output[1] if len(node.output) > 1 and node.output[1] else f"{prefix}scores"
    op = POST_TRANSFORMS[transform]
    nodes.append(helper.make_node(op, [raw], [scores], **({"axis": 1} if op == "Softmax" else {}))
                 if op else helper.make_node("Identity", [raw], [scores]))
    if node.output[0]:
        index = f"{prefix}index"
        nodes.append(helper.make_node("ArgMax", [scores], [index], axis=1, keepdims=0))
        if len(labels):
            tensors.append(numpy_helper.from_array(labels, f"{prefix}labels"))
            nodes.append(helper.make_node("Gather", [tensors[-1].name, index], [node.output[0]], axis=0))
        else:
            nodes[-1].output[0] = node.output[0]
    return nodes, tensors
