"""The generic target: the slimmed model as one plain ONNX partition, runnable by any ONNX runtime."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgepack.packager.graphs import count_nodes

from . import LOWERED_COMPUTE, WEIGHT_ONLY, BundleInput, register

ARTIFACT = "model.onnx"


@register("generic", "slimmed ONNX model and manifest", precisions=WEIGHT_ONLY | LOWERED_COMPUTE)
def write(bundle: BundleInput, staging: Path) -> list[dict[str, Any]]:
    (staging / ARTIFACT).write_bytes(bundle.model.SerializeToString(deterministic=True))
    graph = bundle.model.graph
    initializers = {t.name for t in graph.initializer}
    return [{
        "id": "p0",
        "provider": "onnx",
        "artifact": ARTIFACT,
        "inputs": [i.name for i in graph.input if i.name not in initializers],
        "outputs": [o.name for o in graph.output],
        "nodes": count_nodes(bundle.model),
        "ops": sorted({node.op_type for node in graph.node}),
    }]
