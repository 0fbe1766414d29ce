"""The bundle's `manifest.json`, assembled once from the build state when the stages are done, and the quantize
stage's summary line."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from edgepack.packager.quantize import COMPENSATED_WEIGHTS
from edgepack.packager.quantize.never_slower import WORTH_IT
from edgepack.runtime.bundle_format import FORMAT, FORMAT_VERSION, describe_values, real_inputs
from edgepack.runtime.version import __version__

from .manifest import artifacts_of, rounding_phrase
from .tune import SpeedChoice

if TYPE_CHECKING:
    from .build import BuildState


def assemble_manifest(state: BuildState) -> dict[str, Any]:
    """The manifest of the bundle in the state's staging folder."""
    profile, source, report = state.profile, state.source, state.report
    fidelity = state.fidelity
    if fidelity is not None:
        fidelity["accepted_loss"] = bool(state.options.accept_fidelity_loss and not fidelity["passed"])
    report.fidelity = fidelity
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "edgepack_version": __version__,
        "profile": profile.as_dict(),
        "target": profile.target,
        **bundle_ports(state),
        "artifacts": artifacts_of(state.staging),
        "source": {
            "file": source.path.name,
            "sha256": source.sha256,
            "bytes": source.bytes,
            "ir_version": source.model.ir_version,
            "opset": {o.domain or "ai.onnx": o.version for o in source.model.opset_import},
            "nodes": report.source_nodes,
        },
        "shape_pins": state.pins,
        "opset_conversion": state.conversion,
        "passes": [p.as_manifest() for p in report.passes],
        "quantization": _quantization(state),
        "fidelity": fidelity,
    }


def bundle_ports(state: BuildState) -> dict[str, Any]:
    """The manifest's `inputs`, `outputs` and `partitions`: what a session needs to run the written bundle (verify
    runs it before the manifest is assembled)."""
    graph = state.quantized.model.graph
    return {"inputs": describe_values(real_inputs(graph)), "outputs": describe_values(graph.output),
            "partitions": state.report.partitions}


def _quantization(state: BuildState) -> dict[str, Any]:
    profile, speed = state.profile, state.speed
    return {"weights": profile.weights, "activations": profile.activations,
            "quantized_nodes": len(state.quantized.nodes), "quantized_tensors": state.quantized.tensors,
            "kept_in_float": list(state.kept), "excluded": sorted(state.excluded),
            "kept_for_speed": sorted(speed.slower if state.compute == "int8" else frozenset()),
            "tuned": speed.tuned, "int8_over_fp32": speed.int8_over_fp32,
            "activation_form": _activation_form(state), "weight_rounding": weight_rounding(state)}


def _activation_form(state: BuildState) -> str | None:
    """How activations were quantized, for the manifest."""
    profile, samples = state.profile, state.samples
    if profile.activations == "int8" and state.compute == "fp32":
        return f"fp32 compute on int8 weights: {slower_compute(state.speed)}, so it was left out"
    if profile.activations == "fp16":
        return "fp16 compute, fp32 inputs and outputs"
    if profile.activations == "int8":
        if samples is None:
            return "dynamic int8 for MatMul/Gemm (no calibration), Conv in float"
        return (f"static int8 QDQ, {state.options.calibration_method} ranges from {len(samples)} calibration "
                "samples")
    return None


def weight_rounding(state: BuildState) -> str | None:
    """How integer weights were rounded, for the manifest."""
    if state.target.applies_precision or state.profile.weights not in COMPENSATED_WEIGHTS:
        return None
    if state.samples is None:
        return "nearest (give --calibration for error-compensated rounding)"
    return f"error-compensated on {len(state.samples)} calibration samples (Conv/MatMul/Gemm), nearest elsewhere"


def slower_compute(speed: SpeedChoice) -> str:
    """Why int8 compute was left out."""
    where = f"on {speed.runtime}" if speed.runtime else "in the measured table"
    if speed.int8_over_fp32 is not None and speed.int8_over_fp32 > WORTH_IT:
        return f"int8 compute ran {speed.int8_over_fp32:.2f}x fp32's latency {where} (it must be {WORTH_IT}x or less)"
    if not speed.slower:
        return "this model has no op that the int8 form computes in int8"
    return f"no op class computed in int8 at {WORTH_IT}x fp32's latency or less {where}"


def quantize_summary(state: BuildState) -> str:
    """The quantize stage's line: the precision, and how many nodes were quantized or by whom."""
    profile = state.profile
    if profile.weights == "fp32" and profile.activations == "fp32":
        return "fp32: nothing to quantize"
    text = f"weights {profile.weights}"
    if profile.activations != "fp32":
        text += f", activations {profile.activations}"
    if state.target.applies_precision:
        return f"{text}: applied by the {profile.target} target's own tools, the graph stays fp32"
    rounding = weight_rounding(state)
    return f"{text}: {len(state.quantized.nodes)} nodes quantized" + (f", {rounding_phrase(rounding)}" if rounding
                                                                       else "")
