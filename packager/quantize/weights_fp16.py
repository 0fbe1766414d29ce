"""fp16 weight storage: each fp32 initializer becomes an fp16 initializer and a Cast back to fp32, so the graph
computes exactly as before on weights rounded to fp16. OpenVINO keeps such weights fp16 in IR (half the bytes) and
decompresses them at load."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgepack.runtime.graph_protos import iter_graph_protos

from . import MIN_ELEMENTS, Calibration, QuantizeResult, readers, register_weights


@register_weights("fp16")
def fp16_weights(model: onnx.ModelProto, keep: frozenset[str], _calibration: Calibration | None,
                 _integer_ops: frozenset[str]) -> QuantizeResult:
    readers_of = readers(model)
    quantized_for: set[str] = set()
    tensors = 0
    for graph in iter_graph_protos(model.graph):
        overridable = {value.name for value in graph.input}
        casts, kept_initializers = [], []
        for tensor in graph.initializer:
            users = readers_of.get(tensor.name, set())
            if (tensor.data_type != onnx.TensorProto.FLOAT or tensor.name in overridable or users & keep
                    or int(np.prod(tensor.dims)) < MIN_ELEMENTS):
                kept_initializers.append(tensor)
                continue
            stored = numpy_helper.from_array(numpy_helper.to_array(tensor).astype(np.float16), f"{tensor.name}__fp16")
            kept_initializers.append(stored)
            casts.append(helper.make_node("Cast", [stored.name], [tensor.name], f"{tensor.name}__to_fp32",
                                          to=onnx.TensorProto.FLOAT))
            quantized_for |= users
            tensors += 1
        del graph.initializer[:]
        graph.initializer.extend(kept_initializers)
        nodes = [*casts, *graph.node]
        del graph.node[:]
        graph.node.extend(nodes)
    order = [node.name for node in model.graph.node if node.name in quantized_for]
    return QuantizeResult(model, order, tensors)
