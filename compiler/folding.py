"""Values the lowering computes itself: what Shape and Size give at fixed shapes, and nodes whose inputs are all
known, computed with the reference provider's evaluator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx

from .values import attributes


def shape_value(node: onnx.NodeProto, shape: tuple[int, ...]) -> np.ndarray:
    """What a Shape or Size node gives for a value of `shape`."""
    if node.op_type == "Size":
        return np.array(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)
    attrs = attributes(node)
    rank = len(shape)
    start, end = attrs.get("start", 0), attrs.get("end", rank)
    return np.array(shape[slice(start, end)], dtype=np.int64)


def fold_node(node: onnx.NodeProto, inputs: Sequence[Any], model: onnx.ModelProto) -> list[np.ndarray]:
    """Computes a node whose inputs are all constants with the reference provider's evaluator."""
    from onnx.reference import ReferenceEvaluator

    from edgepack.runtime.providers.reference import FIXES

    names = [name for name in node.input if name]
    feeds = {name: np.asarray(value) for name, value in zip(node.input, inputs) if name}
    graph = onnx.helper.make_graph(
        [node], "fold", [onnx.helper.make_tensor_value_info(n, onnx.helper.np_dtype_to_tensor_dtype(feeds[n].dtype),
                                                              feeds[n].shape) for n in dict.fromkeys(names)],
        [onnx.helper.make_value_info(o, onnx.TypeProto()) for o in node.output if o])
    single = onnx.helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    results = ReferenceEvaluator(single, new_ops=FIXES).run(None, {n: feeds[n] for n in dict.fromkeys(names)})
    values = iter(results)
    return [np.asarray(next(values)) if name else None for name in node.output]
