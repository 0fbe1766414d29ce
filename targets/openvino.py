"""The openvino target: OpenVINO IR partitions (fp16 weights unless the profile keeps fp32) plus ONNX partitions
for what OpenVINO does not take, run by the fallback provider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgepack.runtime.providers.openvino import to_ir

from . import WEIGHT_ONLY, BundleInput, register, write_onnx_partition


@register("openvino", "OpenVINO IR partitions plus ONNX fallback partitions", precisions=WEIGHT_ONLY)
def write(bundle: BundleInput, staging: Path) -> list[dict[str, Any]]:
    precision = bundle.profile["precision"]
    entries = []
    for part in bundle.partitions:
        if part.provider != "openvino":
            entries.append(write_onnx_partition(part, staging))
            continue
        artifact = f"{part.id}.xml"
        to_ir(part.model, staging / artifact)
        entries.append({"id": part.id, "provider": part.provider, "artifact": artifact, "inputs": part.inputs,
                        "outputs": part.outputs, "nodes": part.nodes, "ops": part.ops,
                        "options": {"inference_precision": precision["activations"]}})
    return entries
