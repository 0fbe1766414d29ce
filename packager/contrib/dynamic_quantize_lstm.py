"""`com.microsoft` DynamicQuantizeLSTM -> LSTM with its int8 weights dequantized at build time. onnxruntime's
`quantize_dynamic` writes it; its weights are [directions, input, 4*hidden] (transposed against LSTM's) with a
scale and zero point per direction or per direction and gate row, and it quantizes activations as it runs, which
the float LSTM does not (it computes what the int8 kernel approximates)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgepack.runtime.errors import EdgepackError

WEIGHTS = ((1, 8, 9), (2, 10, 11))
"""(weight input, scale input, zero point input) for W and R."""


def dynamic_quantize_lstm(node: onnx.NodeProto, initializers: dict[str, onnx.TensorProto],
                          dims: dict[str, list[int | None]]) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    inputs = list(node.input) + [""] * (12 - len(node.input))
    tensors = []
    for weight, scale, zero_point in WEIGHTS:
        names = [inputs[weight], inputs[scale], inputs[zero_point]]
        missing = [name for name in names if name not in initializers]
        if missing:
            raise EdgepackError(f"{node.op_type} node {node.name!r} has non-constant quantized weights "
                                f"{missing}: edgepack rewrites it into a float LSTM only with constant weights",
                                where=f"node {node.name!r}",
                                fix="export the model without onnxruntime's dynamic quantization "
                                    "(quantize_dynamic), or with constant LSTM weights")
        q, s, z = (numpy_helper.to_array(initializers[name]) for name in names)
        per_row = s.ndim == 2
        s = s.reshape(s.shape[0], 1, -1) if per_row else s.reshape(-1, 1, 1)
        z = z.reshape(z.shape[0], 1, -1) if per_row else z.reshape(-1, 1, 1)
        real = (q.astype(np.float32) - z.astype(np.float32)) * s.astype(np.float32)
        tensors.append(numpy_helper.from_array(np.ascontiguousarray(real.transpose(0, 2, 1)),
                                               f"{inputs[weight]}_dequantized"))
    lstm_inputs = [inputs[0], tensors[0].name, tensors[1].name, *inputs[3:8]]
    while lstm_inputs and not lstm_inputs[-1]:
        lstm_inputs.pop()
    lstm = helper.make_node("LSTM", lstm_inputs, list(node.output), name=node.name)
    lstm.attribute.extend(node.attribute)
    return [lstm], tensors
