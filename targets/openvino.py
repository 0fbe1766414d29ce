"""The openvino target: OpenVINO IR partitions (fp16 weights unless the profile keeps fp32) plus ONNX partitions
for what OpenVINO does not take, run by the fallback provider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import onnx

from edgepack.runtime.providers import PROVIDERS
from edgepack.runtime.providers.openvino import to_ir

from . import WEIGHT_ONLY, BundleInput, Run, ShippedRuntime, register, write_onnx_partition


def openvino_run(model: onnx.ModelProto) -> Run:
    """`model` compiled by OpenVINO on one thread."""
    return PROVIDERS["openvino"].compile(model, {"threads": 1}).run


OPENVINO = ShippedRuntime("openvino", lambda: PROVIDERS["openvino"].missing() is None, openvino_run)


@register("openvino", "OpenVINO IR partitions plus ONNX fallback partitions", precisions=WEIGHT_ONLY,
          runtime=OPENVINO)
def write(bundle: BundleInput, staging: Path) -> list[dict[str, Any]]:
    profile = bundle.profile
    entries = []
    for part in bundle.partitions:
        if part.provider != "openvino":
            entries.append(write_onnx_partition(part, staging))
            continue
        artifact = f"{part.id}.xml"
        to_ir(part.model, staging / artifact)
        entries.append({"id": part.id, "provider": part.provider, "artifact": artifact, "inputs": part.inputs,
                        "outputs": part.outputs, "nodes": part.nodes, "ops": part.ops,
                        "options": {"inference_precision": profile.activations}})
    return entries
