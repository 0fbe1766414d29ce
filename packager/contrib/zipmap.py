"""`ai.onnx.ml` ZipMap at a graph output -> Identity of its input. ZipMap turns a classifier's [N, classes]
probabilities into a sequence of maps from class label to probability, a type no bundle carries across to an app
(nor onnxruntime-web, CoreML or a C API); the bundle's output keeps ZipMap's name and is the float tensor, one column
per class in the order of the classifier's labels (`classlabels_*` of the ZipMap). skl2onnx writes the same with
`zipmap=False`."""

from __future__ import annotations

import onnx
from onnx import helper


def zipmap(node: onnx.NodeProto, initializers: dict[str, onnx.TensorProto],
           dims: dict[str, list[int | None]]) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    return [helper.make_node("Identity", [node.input[0]], [node.output[0]], name=node.name or "zipmap")], []
