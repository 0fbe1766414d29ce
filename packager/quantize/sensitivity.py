"""Which quantized nodes hurt fidelity most: run the float and the quantized model side by side with every top-level
float value exposed, and rank each candidate node by how much relative error it adds over its inputs' error."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from . import Run

FLOATS = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE}


def rank_nodes(source: onnx.ModelProto, quantized: onnx.ModelProto, candidates: Sequence[str],
               samples: Sequence[dict[str, np.ndarray]], run: Run) -> list[str]:
    """`candidates` (top-level node names of `quantized`), the one adding the most error (averaged over `samples`)
    first."""
    source_values, quantized_values = float_values(source), float_values(quantized)
    exposed = {name: info for name, info in source_values.items() if name in quantized_values}
    probes = with_outputs(source, exposed), with_outputs(quantized, exposed)
    error: dict[str, float] = {}
    for feeds in samples:
        expected, actual = (run(probe, feeds) for probe in probes)
        for name in exposed.keys() & expected.keys() & actual.keys():
            error[name] = error.get(name, 0.0) + _relative_error(expected[name], actual[name]) / len(samples)
    nodes = {node.name: node for node in quantized.graph.node}

    def added_error(name: str) -> float:
        node = nodes[name]
        produced = max((error.get(out, 0.0) for out in node.output), default=0.0)
        inherited = max((error.get(value, 0.0) for value in node.input), default=0.0)
        return produced - inherited

    return sorted(candidates, key=added_error, reverse=True)


def float_values(model: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
    """Top-level node outputs with a float element type after shape inference, with their types."""
    inferred = onnx.shape_inference.infer_shapes(model)
    infos = {v.name: v for v in [*inferred.graph.value_info, *inferred.graph.output]}
    produced = [out for node in model.graph.node for out in node.output if out in infos]
    return {name: infos[name] for name in produced if infos[name].type.tensor_type.elem_type in FLOATS}


def with_outputs(model: onnx.ModelProto, values: dict[str, onnx.ValueInfoProto]) -> onnx.ModelProto:
    """A copy of `model` that also outputs `values` (name -> type), so one run shows them."""
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    present = {output.name for output in exposed.graph.output}
    exposed.graph.output.extend(info for name, info in values.items() if name not in present)
    return exposed


def _relative_error(expected: np.ndarray, actual: np.ndarray) -> float:
    a = np.asarray(expected, dtype=np.float64).ravel()
    b = np.asarray(actual, dtype=np.float64).ravel()
    if a.shape != b.shape:
        return float("inf")
    finite = np.isfinite(a) & np.isfinite(b)
    scale = float(np.linalg.norm(a[finite]))
    return float(np.linalg.norm(a[finite] - b[finite]) / scale) if scale > 0 else 0.0
