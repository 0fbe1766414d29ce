"""What `edgepack inspect` shows: a model's structure, or a bundle's manifest."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from edgepack.runtime.bundle_format import MANIFEST, describe_values, read_manifest, real_inputs
from edgepack.runtime.graph_protos import iter_graph_protos
from edgepack.runtime.model_file import load_model

CONTROL_FLOW = ("If", "Loop", "Scan")


def describe(path: str | Path) -> dict[str, Any]:
    """A bundle folder (one holding manifest.json) or a model file/folder."""
    path = Path(path)
    if path.is_dir() and (path / MANIFEST).is_file():
        return describe_bundle(path)
    return describe_model(path)


def describe_model(path: str | Path) -> dict[str, Any]:
    source = load_model(path)
    model = source.model
    ops: Counter[str] = Counter()
    domains: set[str] = set()
    tensors: list[onnx.TensorProto] = []
    for graph in iter_graph_protos(model.graph):
        tensors.extend(graph.initializer)
        for node in graph.node:
            ops[node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"] += 1
            if node.domain not in ("", "ai.onnx", "ai.onnx.ml"):
                domains.add(node.domain)
            if node.op_type == "Constant":
                tensors.extend(a.t for a in node.attribute if a.type == onnx.AttributeProto.TENSOR)
    arrays = [numpy_helper.to_array(t) for t in tensors]
    return {
        "kind": "model",
        "path": str(source.path),
        "bytes": source.bytes,
        "sha256": source.sha256,
        "ir_version": model.ir_version,
        "producer": f"{model.producer_name} {model.producer_version}".strip(),
        "opsets": {o.domain or "ai.onnx": o.version for o in model.opset_import},
        "inputs": describe_values(real_inputs(model.graph)),
        "outputs": describe_values(model.graph.output),
        "nodes": sum(ops.values()),
        "subgraphs": sum(1 for _ in iter_graph_protos(model.graph)) - 1,
        "ops": dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
        "parameters": int(sum(int(np.prod(a.shape)) for a in arrays)),
        "parameter_bytes": int(sum(a.nbytes for a in arrays)),
        "control_flow": {op: ops[op] for op in CONTROL_FLOW if ops[op]},
        "custom_domains": sorted(domains),
        "functions": [f"{f.domain}::{f.name}" for f in model.functions],
    }


def describe_bundle(path: Path) -> dict[str, Any]:
    manifest = read_manifest(path)
    return {"kind": "bundle", "path": str(path), "manifest": manifest, "placement": placement(manifest["partitions"])}


def placement(partitions: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per provider, in first-use order: its nodes, their share of all nodes and its partition count."""
    total = sum(p["nodes"] for p in partitions) or 1
    found: dict[str, dict[str, float]] = {}
    for part in partitions:
        entry = found.setdefault(part["provider"], {"nodes": 0, "share": 0.0, "partitions": 0})
        entry["nodes"] += part["nodes"]
        entry["partitions"] += 1
        entry["share"] = entry["nodes"] / total
    return found
