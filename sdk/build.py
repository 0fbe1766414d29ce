"""`edgepack.build`: load+check -> slim -> quantize -> partition -> bundle -> report."""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from edgepack.packager.graphs import count_nodes
from edgepack.packager.partition import Partition, partition, whole
from edgepack.packager.quantize import COMPENSATED_WEIGHTS, REQUIRED_OPSET, Calibration, QuantizeResult, quantize
from edgepack.packager.quantize.never_slower import WORTH_IT
from edgepack.packager.quantize.ranges import CALIBRATION_METHODS
from edgepack.packager.slim import slim
from edgepack.runtime.providers import PROVIDERS
from edgepack.targets import TARGETS, BundleInput

from .bundle_writer import refuse_existing, staged_bundle
from .calibration_inputs import CalibrationSource, load_calibration
from .errors import EdgepackError
from .input_shapes import pin_shapes
from .loader import SourceModel, check_model, infer_shapes, load_model, resolve_model_path
from .manifest import (
    FORMAT,
    FORMAT_VERSION,
    artifacts_of,
    describe_values,
    real_inputs,
    rounding_phrase,
    write_manifest,
)
from .mixed_precision import keep_sensitive_in_float
from .opset import convert_opset
from .profile import ACTIVATION_PRECISIONS, WEIGHT_PRECISIONS, Profile, load_profile
from .report import BuildReport, Reporter, SilentReporter, StageRecord
from .sample_inputs import sample_feeds
from .tune import SpeedChoice, choose_int8_compute
from .verify import SampleInputs, fidelity_summary, measure, model_inputs, profile_runner, run_oracle

VERIFY_CALIBRATION_SAMPLES = 4
"""Without --sample-inputs, a calibrated build is verified on this many of its calibration samples (real data the
user gave) rather than on random inputs, which int8 ranges were not measured on."""


@dataclass(frozen=True)
class BuildResult:
    bundle_dir: Path
    manifest: dict[str, Any]
    report: BuildReport


def target_available(profile: Profile) -> str | None:
    """None when this version can build `profile`, else the reason it cannot."""
    if profile.target not in TARGETS:
        return f"the {profile.target!r} target is not built in this version"
    missing = [p for p in profile.providers if p not in PROVIDERS]
    if missing:
        return f"the {', '.join(map(repr, missing))} provider is not built in this version"
    for name in profile.providers:
        if reason := PROVIDERS[name].missing():
            return f"{name}: {reason}"
    if (profile.weights, profile.activations) not in TARGETS[profile.target].precisions:
        return (f"weights {profile.weights} with activations {profile.activations} is not built for the "
                f"{profile.target!r} target in this version")
    return None


def with_precision(profile: Profile, weights: str | None, activations: str | None) -> Profile:
    """`profile` with its precision overridden (from the command line)."""
    for value, allowed, option in ((weights, WEIGHT_PRECISIONS, "--weights"),
                                   (activations, ACTIVATION_PRECISIONS, "--activations")):
        if value is not None and value not in allowed:
            raise EdgepackError(f"{option} {value!r} is not a precision", where=option,
                                fix=f"use one of {', '.join(allowed)}")
    return replace(profile, weights=weights or profile.weights, activations=activations or profile.activations)


def _opset_range(profile: Profile) -> tuple[int, int]:
    """The profile's opset range, raised to what its weight precision needs (int4 needs opset 21)."""
    needed = REQUIRED_OPSET.get(profile.weights, profile.opset_min)
    if needed > profile.opset_max:
        raise EdgepackError(f"{profile.weights} weights need opset {needed}, and profile {profile.name!r} allows "
                            f"opset {profile.opset_max} at most", where=profile.source,
                            fix="choose int8 or fp16 weights, or a profile whose [opset] max is 21 or more")
    return max(profile.opset_min, needed), profile.opset_max


def excluded_nodes(model: onnx.ModelProto, op_types: Sequence[str], names: Sequence[str]) -> frozenset[str]:
    """Top-level nodes of `op_types` and those named in `names` (each must exist)."""
    present = {node.name for node in model.graph.node}
    unknown = [name for name in names if name not in present]
    if unknown:
        raise EdgepackError(f"--exclude-node names no node of the slimmed model: {', '.join(unknown)}",
                            where="--exclude-node",
                            fix="check the spelling: names are those of the slimmed graph, as in the model.onnx of "
                                "a --profile generic build (unnamed nodes are called <OpType>_<index>)")
    return frozenset(node.name for node in model.graph.node if node.op_type in op_types or node.name in names)


def bundle_name(model_path: Path, profile: Profile) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", model_path.stem).strip("-.") or "model"
    return f"{stem}-{profile.name}"


def build(
    model: str | Path,
    profile: str | Path | Profile = "generic",
    output_dir: str | Path = "dist",
    input_shapes: dict[str, tuple[int, ...]] | None = None,
    force: bool = False,
    reporter: Reporter | None = None,
    sample_inputs: SampleInputs = None,
    accept_fidelity_loss: bool = False,
    weights: str | None = None,
    activations: str | None = None,
    exclude_ops: Sequence[str] = (),
    exclude_nodes: Sequence[str] = (),
    calibration: CalibrationSource | None = None,
    calibration_method: str = "minmax",
    tune: bool = False,
) -> BuildResult:
    """Build a bundle of `model` for `profile` into `output_dir/<model>-<profile>`. `weights` and `activations`
    override the profile's precision; `exclude_ops` (op types) and `exclude_nodes` (node names) stay in fp32.
    `calibration` (a folder of .npz/.npy samples, or feeds dicts) makes int8 activations static. `tune` times int8
    against fp32 per op class on the target's runtime instead of reading the measured table."""
    profile = profile if isinstance(profile, Profile) else load_profile(profile)
    profile = with_precision(profile, weights, activations)
    _check_calibration_options(profile, calibration, calibration_method)
    reason = target_available(profile)
    if reason:
        raise EdgepackError(f"profile {profile.name!r} cannot be built: {reason}", where=profile.source,
                            fix="`edgepack profiles` lists the profiles this version can build; "
                                "--profile generic gives a slimmed ONNX bundle")
    model_path = resolve_model_path(model)
    final = Path(output_dir) / bundle_name(model_path, profile)
    refuse_existing(final, force)
    report = BuildReport(str(model_path), profile.name, profile.target, str(final))
    progress = reporter or SilentReporter()

    with _stage(report, progress, "load") as note:
        source = load_model(model_path)
        checked = check_model(source.model, model_path.name)
        shapes = {**profile.input_shapes, **(input_shapes or {})}
        pins = pin_shapes(checked, shapes, profile.dims)
        if pins:
            checked = infer_shapes(checked, model_path.name)
        checked, conversion = convert_opset(checked, *_opset_range(profile))
        report.source_nodes, report.source_bytes = count_nodes(source.model), source.bytes
        samples = None if calibration is None else load_calibration(calibration, model_inputs(checked))
        note(f"{report.source_nodes} nodes" + (f", pinned {' '.join(pins)}" if pins else "")
             + (f", {conversion}" if conversion else ""))

    with _stage(report, progress, "slim") as note:
        slimmed, report.passes = slim(checked, on_pass=progress.update)
        report.slim_nodes = count_nodes(slimmed)
        skipped = [p.name for p in report.passes if p.status != "ok"]
        note(f"{report.source_nodes} -> {report.slim_nodes} nodes"
             + (f" (skipped {', '.join(skipped)})" if skipped else ""))

    with _stage(report, progress, "quantize") as note:
        measured = None if samples is None else Calibration(samples, profile_runner(profile), calibration_method)

        compute = profile.activations
        in_target = TARGETS[profile.target].applies_precision

        def lower(keep: frozenset[str]) -> QuantizeResult:
            if in_target:
                return quantize(slimmed, "fp32", keep, "fp32", measured)
            return quantize(slimmed, profile.weights, keep, compute, measured)

        quantized = lower(frozenset())
        excluded = excluded_nodes(quantized.model, exclude_ops, exclude_nodes) & set(quantized.nodes)
        speed = SpeedChoice(frozenset(), None, None, None)
        if profile.activations == "int8":
            progress.update("timing int8 against fp32" + (" per op class (--tune)" if tune else ""))
            feeds = samples[0] if samples else sample_feeds(model_inputs(checked), dims=profile.dims)
            form = "dynamic" if samples is None else "static"
            speed = choose_int8_compute(slimmed, quantized, lower, excluded, profile.target, form, feeds, tune)
            if speed.fp32_compute:
                compute = "fp32"
                quantized = lower(frozenset())
        slower = speed.slower if compute == "int8" else frozenset()
        if excluded or slower:
            quantized = lower(excluded | slower)
        rounding = _weight_rounding(profile, samples, in_target)
        note(_quantize_summary(quantized, profile, in_target) + (f", {len(excluded)} excluded" if excluded else "")
             + (f", {rounding_phrase(rounding)}" if rounding else "")
             + (f", {len(slower)} kept fp32 where int8 is slower" if slower else "")
             + (f", {_slower_compute(speed)}: fp32 compute" if compute != profile.activations else ""))

    with _stage(report, progress, "oracle") as note:
        if sample_inputs is None and samples is not None:
            oracle = run_oracle(checked, samples[:VERIFY_CALIBRATION_SAMPLES], profile.dims,
                                origin=f"the first {min(len(samples), VERIFY_CALIBRATION_SAMPLES)} calibration "
                                       "samples")
        else:
            oracle = run_oracle(checked, sample_inputs, profile.dims)
        note(f"the fp32 source on reference, {len(oracle.samples)} sample(s): {oracle.origin}")
    with staged_bundle(final, force) as staging:
        with _stage(report, progress, "partition") as note:
            partitions = _partition(quantized.model, profile)
            note(", ".join(f"{p.id} {p.provider} ({p.nodes} nodes)" for p in partitions))

        with _stage(report, progress, "bundle") as note:
            manifest = _write_bundle(final.name, quantized, partitions, profile, source, report, pins, conversion,
                                     staging, oracle.samples[0], oracle.expected[0])
            note(f"{len(manifest['artifacts'])} artefacts, {report.bundle_bytes:,} bytes")

        with _stage(report, progress, "verify") as note:
            fidelity = measure(staging, oracle, profile, TARGETS[profile.target].runtime)
            note(fidelity_summary(fidelity))

        if not fidelity["passed"] and quantized.nodes and not accept_fidelity_loss:
            with _stage(report, progress, "mixed precision") as note:
                def attempt(keep: list[str]) -> dict[str, Any]:
                    nonlocal manifest
                    lowered = lower(excluded | slower | frozenset(keep))
                    manifest = _write_bundle(final.name, lowered, _partition(lowered.model, profile), profile,
                                             source, report, pins, conversion, staging, oracle.samples[0],
                                             oracle.expected[0], keep)
                    return measure(staging, oracle, profile, TARGETS[profile.target].runtime)

                kept, fidelity = keep_sensitive_in_float(slimmed, quantized, oracle, profile, attempt)
                note(f"kept {len(kept)} of {len(quantized.nodes)} nodes in fp32: {fidelity_summary(fidelity)}")

        fidelity["accepted_loss"] = bool(accept_fidelity_loss and not fidelity["passed"])
        manifest["fidelity"] = report.fidelity = fidelity
        manifest["quantization"]["excluded"] = sorted(excluded)
        manifest["quantization"]["kept_for_speed"] = sorted(slower)
        manifest["quantization"]["tuned"] = speed.tuned
        manifest["quantization"]["int8_over_fp32"] = speed.int8_over_fp32
        manifest["quantization"]["activation_form"] = _activation_form(profile, samples, calibration_method, speed,
                                                                       compute)
        manifest["quantization"]["weight_rounding"] = rounding
        write_manifest(staging, manifest)
        if not fidelity["passed"] and not accept_fidelity_loss:
            raise EdgepackError(f"the bundle does not reach the profile's fidelity: {fidelity_summary(fidelity)}",
                                where=f"verify stage, outputs {', '.join(fidelity['failed_outputs'])}",
                                fix="pass --accept-fidelity-loss to keep it anyway, or use a profile with "
                                    "higher precision")
    return BuildResult(final, manifest, report)


def _partition(model: onnx.ModelProto, profile: Profile) -> list[Partition]:
    """The partitioner's plan for the profile's providers; the last one is the fallback."""
    providers = list(profile.providers)
    try:
        return partition(model, providers, fallback=providers[-1])
    except ValueError:  # a value crossing partitions has no known type: keep the model whole on the fallback
        return [whole(model, providers[-1])]


def _check_calibration_options(profile: Profile, calibration: CalibrationSource | None, method: str) -> None:
    if method not in CALIBRATION_METHODS:
        raise EdgepackError(f"--calibration-method {method!r} is not a calibration method",
                            where="--calibration-method", fix=f"use one of {', '.join(CALIBRATION_METHODS)}")
    if calibration is not None and TARGETS[profile.target].applies_precision:
        raise EdgepackError(f"--calibration is given, but the {profile.target} target lowers precision with its "
                            "vendor's own tools, which take no calibration samples", where="--calibration",
                            fix="leave out --calibration, or build a profile of another target")
    if calibration is not None and profile.activations != "int8" and profile.weights not in COMPENSATED_WEIGHTS:
        raise EdgepackError(f"--calibration is given, but weights are {profile.weights} and activations "
                            f"{profile.activations}: calibration measures int8 activation ranges and rounds int8/int4 "
                            "weights", where="--calibration",
                            fix="add --weights int8 (and --activations int8 for int8 compute), or leave out "
                                "--calibration")
    if profile.activations == "int8" and profile.weights != "int8":
        raise EdgepackError(f"int8 activations need int8 weights, and the weights are {profile.weights}",
                            where="--activations", fix="add --weights int8")


def _activation_form(profile: Profile, samples: list[dict[str, Any]] | None, method: str, speed: SpeedChoice,
                     compute: str) -> str | None:
    """How activations were lowered, for the manifest."""
    if profile.activations == "int8" and compute == "fp32":
        return f"fp32 compute on int8 weights: {_slower_compute(speed)}, so it was left out"
    if profile.activations == "fp16":
        return "fp16 compute, fp32 inputs and outputs"
    if profile.activations == "int8":
        if samples is None:
            return "dynamic int8 for MatMul/Gemm (no calibration), Conv in float"
        return f"static int8 QDQ, {method} ranges from {len(samples)} calibration samples"
    return None


def _weight_rounding(profile: Profile, samples: list[dict[str, Any]] | None, in_target: bool) -> str | None:
    """How integer weights were rounded, for the manifest."""
    if in_target or profile.weights not in COMPENSATED_WEIGHTS:
        return None
    if samples is None:
        return "nearest (give --calibration for error-compensated rounding)"
    return f"error-compensated on {len(samples)} calibration samples (Conv/MatMul/Gemm), nearest elsewhere"


def _slower_compute(speed: SpeedChoice) -> str:
    """Why int8 compute was left out."""
    where = f"on {speed.runtime}" if speed.runtime else "in the measured table"
    if speed.int8_over_fp32 is not None and speed.int8_over_fp32 > WORTH_IT:
        return f"int8 compute ran {speed.int8_over_fp32:.2f}x fp32's latency {where} (it must be {WORTH_IT}x or less)"
    if not speed.slower:
        return "this model has no op that the int8 form computes in int8"
    return f"no op class computed in int8 at {WORTH_IT}x fp32's latency or less {where}"


def _quantize_summary(quantized: QuantizeResult, profile: Profile, in_target: bool) -> str:
    if profile.weights == "fp32" and profile.activations == "fp32":
        return "fp32: nothing to quantize"
    text = f"weights {profile.weights}"
    if profile.activations != "fp32":
        text += f", activations {profile.activations}"
    if in_target:
        return f"{text}: applied by the {profile.target} target's own tools, the graph stays fp32"
    return f"{text}: {len(quantized.nodes)} nodes lowered"


def _write_bundle(name: str, quantized: QuantizeResult, partitions: list[Partition], profile: Profile,
                  source: SourceModel, report: BuildReport, pins: list[str], conversion: str | None, staging: Path,
                  example: dict[str, np.ndarray], expected: dict[str, np.ndarray], kept: Sequence[str] = ()
                  ) -> dict[str, Any]:
    """Write the target's artefacts and the manifest into `staging`, replacing what an earlier attempt wrote."""
    for leftover in staging.iterdir():
        shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
    bundle_input = BundleInput(quantized.model, name, profile.as_dict(), partitions, example, expected)
    report.partitions = TARGETS[profile.target].write(bundle_input, staging)
    manifest = _manifest(profile, source, quantized, report, pins, conversion, staging, kept)
    write_manifest(staging, manifest)
    report.bundle_bytes = sum(p.stat().st_size for p in staging.rglob("*") if p.is_file())
    return manifest


@contextmanager
def _stage(report: BuildReport, progress: Reporter, name: str) -> Iterator[Any]:
    summary: list[str] = []
    progress.start(name)
    start = time.perf_counter()
    try:
        yield summary.append
    except BaseException:
        progress.fail(name)
        raise
    seconds = time.perf_counter() - start
    report.stages.append(StageRecord(name, seconds, summary[-1] if summary else ""))
    progress.finish(name, seconds, summary[-1] if summary else "")


def _manifest(profile: Profile, source: SourceModel, quantized: QuantizeResult, report: BuildReport, pins: list[str],
              conversion: str | None, staging: Path, kept: Sequence[str]) -> dict[str, Any]:
    from edgepack import __version__

    graph = quantized.model.graph
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "edgepack_version": __version__,
        "profile": profile.as_dict(),
        "target": profile.target,
        "inputs": describe_values(real_inputs(graph)),
        "outputs": describe_values(graph.output),
        "partitions": report.partitions,
        "artifacts": artifacts_of(staging),
        "source": {
            "file": source.path.name,
            "sha256": source.sha256,
            "bytes": source.bytes,
            "ir_version": source.model.ir_version,
            "opset": {o.domain or "ai.onnx": o.version for o in source.model.opset_import},
            "nodes": report.source_nodes,
        },
        "shape_pins": pins,
        "opset_conversion": conversion,
        "passes": [p.as_manifest() for p in report.passes],
        "quantization": {"weights": profile.weights, "activations": profile.activations,
                         "quantized_nodes": len(quantized.nodes), "quantized_tensors": quantized.tensors,
                         "kept_in_float": list(kept)},
        "fidelity": None,
    }
