"""One-node ONNX models for the CoreML converter's tests: the MIL ops a converter emits (with their constant
arguments), and its outputs evaluated against the `reference` provider."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgepack.runtime.providers import PROVIDERS
from edgepack.runtime.providers.coreml.convert import to_program
from tests.output_error import relative_error

FP32_TOLERANCE = 1e-5
FP16_TOLERANCE = 2e-2
"""Relative to max(1, |reference|): float16 storage between ops keeps about 3 significant digits."""


def one_node(node: onnx.NodeProto, inputs: dict[str, np.ndarray], weights: dict[str, np.ndarray] | None = None,
             opset: int = 17) -> onnx.ModelProto:
    """A model of `node` with `inputs` as graph inputs (their shapes and types) and `weights` as initializers."""
    weights = weights or {}
    graph = helper.make_graph(
        [node], "case",
        [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for name, a in inputs.items()],
        [helper.make_empty_tensor_value_info(name) for name in node.output if name],
        [numpy_helper.from_array(np.asarray(a), name) for name, a in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    del model.graph.output[:]
    model.graph.output.extend(inferred.graph.output)
    return model


def mil_ops(model: onnx.ModelProto) -> list[tuple[str, dict[str, Any]]]:
    """(MIL op type, its constant arguments) for each op of the converted program, in order, consts left out."""
    function = to_program(model).program.functions["main"]
    ops = []
    for op in function.operations:
        if op.op_type == "const":
            continue
        known = {key: _plain(var.val) for key, var in op.inputs.items()
                 if not isinstance(var, (tuple, list)) and var.val is not None}
        ops.append((op.op_type, known))
    return ops


def _plain(value: Any) -> Any:
    array = np.asarray(value)
    if array.dtype.kind in "iub" and array.size <= 16:
        return array.tolist()
    if array.dtype.kind in "U" or isinstance(value, str):
        return str(value)
    if array.dtype.kind == "f" and array.size == 1:
        return float(array)
    return array


def op_types(model: onnx.ModelProto) -> list[str]:
    return [op for op, _ in mil_ops(model)]


def coreml_error(model: onnx.ModelProto, feeds: dict[str, np.ndarray], precision: str = "fp32") -> float:
    """Max relative error of the converted model (saved, reloaded and evaluated) against `reference`."""
    expected = PROVIDERS["reference"].compile(model, {}).run(feeds)
    actual = PROVIDERS["coreml"].compile(model, {"compute_precision": precision}).run(feeds)
    assert set(actual) == set(expected)
    return max(relative_error(expected[name], actual[name]) for name in expected)
