"""`edgepack.build`: load+check -> slim -> quantize -> partition -> bundle -> report."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx

from edgepack.packager.graphs import count_nodes
from edgepack.packager.slim import slim
from edgepack.targets import TARGETS, BundleInput

from .bundle_writer import refuse_existing, staged_bundle
from .errors import EdgepackError
from .input_shapes import pin_shapes
from .loader import SourceModel, check_model, infer_shapes, load_model, resolve_model_path
from .manifest import FORMAT, FORMAT_VERSION, artifacts_of, describe_values, real_inputs, write_manifest
from .opset import convert_opset
from .profile import Profile, load_profile
from .report import BuildReport, Reporter, SilentReporter, StageRecord


@dataclass(frozen=True)
class BuildResult:
    bundle_dir: Path
    manifest: dict[str, Any]
    report: BuildReport


def target_available(profile: Profile) -> str | None:
    """None when this version can build `profile`, else the reason it cannot."""
    if profile.target not in TARGETS:
        return f"the {profile.target!r} target is not built in this version"
    if (profile.weights, profile.activations) != ("fp32", "fp32"):
        return (f"quantization (weights {profile.weights}, activations {profile.activations}) is not built in "
                "this version")
    return None


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
) -> BuildResult:
    """Build a bundle of `model` for `profile` into `output_dir/<model>-<profile>`."""
    profile = profile if isinstance(profile, Profile) else load_profile(profile)
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
        checked, conversion = convert_opset(checked, profile.opset_min, profile.opset_max)
        report.source_nodes, report.source_bytes = count_nodes(source.model), source.bytes
        note(f"{report.source_nodes} nodes" + (f", pinned {' '.join(pins)}" if pins else "")
             + (f", {conversion}" if conversion else ""))

    with _stage(report, progress, "slim") as note:
        slimmed, report.passes = slim(checked, on_pass=progress.update)
        report.slim_nodes = count_nodes(slimmed)
        skipped = [p.name for p in report.passes if p.status != "ok"]
        note(f"{report.source_nodes} -> {report.slim_nodes} nodes"
             + (f" (skipped {', '.join(skipped)})" if skipped else ""))

    with _stage(report, progress, "quantize") as note:
        note(f"weights {profile.weights}, activations {profile.activations}: nothing to quantize")

    with _stage(report, progress, "bundle") as note:
        with staged_bundle(final, force) as staging:
            bundle_input = BundleInput(slimmed, final.name, profile.as_dict())
            report.partitions = TARGETS[profile.target].write(bundle_input, staging)
            manifest = _manifest(profile, source, slimmed, report, pins, conversion, staging)
            write_manifest(staging, manifest)
        report.bundle_bytes = sum(p.stat().st_size for p in final.rglob("*") if p.is_file())
        note(f"{len(manifest['artifacts'])} artefacts, {report.bundle_bytes:,} bytes in {final}")

    with _stage(report, progress, "verify") as note:
        note("not run: this version has no runtime to run the bundle with")
    return BuildResult(final, manifest, report)


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


def _manifest(profile: Profile, source: SourceModel, slimmed: onnx.ModelProto, report: BuildReport, pins: list[str],
              conversion: str | None, staging: Path) -> dict[str, Any]:
    from edgepack import __version__

    graph = slimmed.graph
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
        "quantization": {"weights": profile.weights, "activations": profile.activations, "quantized_nodes": 0},
        "fidelity": None,
    }
