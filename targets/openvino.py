"""The openvino target: OpenVINO IR partitions (fp16 weights unless the profile keeps fp32) plus ONNX partitions
for what OpenVINO does not take, run by the fallback provider."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import onnx

from edgepack.runtime.providers import PROVIDERS

from . import WEIGHT_ONLY, BundleInput, Run, ShippedRuntime, register, write_onnx_partition


def openvino_run(model: onnx.ModelProto) -> Run:
    """`model` compiled by OpenVINO on one thread."""
    return PROVIDERS["openvino"].compile(model, {"threads": 1}).run


OPENVINO = ShippedRuntime("openvino", lambda: PROVIDERS["openvino"].missing() is None, openvino_run)


@register("openvino", "OpenVINO IR partitions plus ONNX fallback partitions", precisions=WEIGHT_ONLY,
          runtime=OPENVINO, forms={"openvino": "ir"}, product="the OpenVINO bundle")
def write(bundle: BundleInput, staging: Path) -> list[dict[str, Any]]:
    entries = []
    for lowered in bundle.lowered:
        part = lowered.partition
        if lowered.form != "ir":
            entries.append(write_onnx_partition(part, staging))
            continue
        artifact = f"{part.id}.xml"
        shutil.copyfile(lowered.files, staging / artifact)
        shutil.copyfile(lowered.files.with_suffix(".bin"), staging / artifact.replace(".xml", ".bin"))
        entries.append({"id": part.id, "provider": part.provider, "artifact": artifact, "inputs": part.inputs,
                        "outputs": part.outputs, "nodes": part.nodes, "ops": part.ops, "options": lowered.options})
    return entries
