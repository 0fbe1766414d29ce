"""The ios target: a Swift package. CoreML partitions become `.mlpackage` resources (converted with coremltools'
MIL builder, compressed as the profile's precision asks); the partitions CoreML cannot run become `.epk` plans for
the NEON C core, which the package compiles as a C target. A typed Swift wrapper runs them in order."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from edgepack.runtime.bundle_format import describe_values, real_inputs
from edgepack.runtime.native.epk import OPS, write

from .. import BundleInput, register, write_file
from ..embedded import core_sources
from . import swift_api, templates
from .templates import render

PRODUCT = "the Swift package"
CORE_PROVIDER = "neon"
WEIGHTS = ("fp32", "fp16", "int8", "palette4", "palette6", "palette8")
PRECISIONS = frozenset({(weights, compute) for weights in WEIGHTS for compute in ("fp16", "fp32")}
                       - {("fp16", "fp32")})
"""Weights as stored in the .mlpackage, and CoreML's compute precision (fp16 weights imply fp16 compute)."""
FIXED_SOURCES = ("EdgepackTensor.swift", "CoreMLStep.swift")


@register("ios", "Swift package: CoreML .mlpackage partitions, NEON C core for the rest, typed async API, XCTest",
          precisions=PRECISIONS, applies_precision=True, forms={"coreml": "mlpackage", CORE_PROVIDER: "plan"},
          product=PRODUCT, ships_expected=True)
def write_bundle(bundle: BundleInput, staging: Path) -> list[dict[str, Any]]:
    from edgepack.runtime.version import __version__

    model = swift_api.type_name(bundle.name.removesuffix(f"-{bundle.profile.name}"))
    inputs = swift_api.swift_ports(_values(real_inputs(bundle.model.graph)))
    outputs = swift_api.swift_ports(_values(bundle.model.graph.output))
    sources = staging / "Sources" / model
    entries, steps, plans = [], [], []
    for lowered in bundle.lowered:
        part = lowered.partition
        artifact = f"Sources/{model}/Resources/{part.id}{'.mlpackage' if lowered.form == 'mlpackage' else '.epk'}"
        entry = {"id": part.id, "provider": part.provider, "artifact": artifact, "inputs": part.inputs,
                 "outputs": part.outputs, "nodes": part.nodes, "ops": part.ops}
        if lowered.form == "mlpackage":
            shutil.copytree(lowered.files, staging / artifact)
            entry["options"] = lowered.options
            features = lowered.options["features"]
            steps.append(swift_api.coreml_step(part.id, _version(staging / artifact), features["inputs"],
                                               features["outputs"]))
        else:
            plans.append(lowered.plan)
            write_file(staging / artifact, write(lowered.plan))
            steps.append(swift_api.core_step(part.id, part.inputs, part.outputs))
        entries.append(entry)

    core = f"{model}Core" if plans else None
    if core:
        selection = core_sources.select(OPS[op.kind] for plan in plans for op in plan.ops)
        core_sources.write_sources(staging / "Sources" / core, selection)
        write_file(sources / "CoreStep.swift", render("CoreStep.swift", CORE=core))
    for name in FIXED_SOURCES:
        write_file(sources / name, (templates.FOLDER / name).read_text())
    description = f"{bundle.name}, built by edgepack {__version__}: {_placement(bundle)}"
    write_file(sources / f"{model}.swift", swift_api.wrapper(model, description, steps, inputs, outputs))
    write_file(staging / "Package.swift", render("Package.swift", MODEL=model, VERSION=__version__,
                                                 PROFILE=bundle.profile.name, TARGETS=_targets(model, core)))
    _write_tests(staging / "Tests" / f"{model}Tests", model, bundle, inputs, outputs)
    _write_readme(staging, model, bundle, inputs, outputs, entries, core, __version__)
    return entries


def _values(values: Any) -> list[tuple[str, str, tuple[int, ...]]]:
    """(name, dtype, shape) of values whose shapes are pinned."""
    return [(v["name"], v["dtype"], tuple(v["shape"])) for v in describe_values(values)]


def _version(package: Path) -> str:
    """A short digest of the package's files, naming its compiled copy on the device."""
    digest = hashlib.sha256()
    for path in sorted(p for p in package.rglob("*") if p.is_file()):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _placement(bundle: BundleInput) -> str:
    parts = [lowered.partition for lowered in bundle.lowered]
    coreml = sum(p.nodes for p in parts if p.provider == "coreml")
    total = sum(p.nodes for p in parts) or 1
    return (f"{coreml} of {total} nodes on CoreML, {total - coreml} on the NEON C core "
            f"({len(parts)} partition{'s' if len(parts) != 1 else ''}).")


def _targets(model: str, core: str | None) -> str:
    lines = []
    if core:
        lines.append(f'        .target(name: "{core}", path: "Sources/{core}"),')
    dependencies = f'dependencies: ["{core}"], ' if core else ""
    lines.append(f'        .target(name: "{model}", {dependencies}path: "Sources/{model}", '
                 'resources: [.copy("Resources")]),')
    lines.append(f'        .testTarget(name: "{model}Tests", dependencies: ["{model}"], path: "Tests/{model}Tests", '
                 'resources: [.copy("Resources")]),')
    return "\n".join(lines)


def _write_tests(folder: Path, model: str, bundle: BundleInput, inputs: list[swift_api.SwiftPort],
                 outputs: list[swift_api.SwiftPort]) -> None:
    for kind, ports, values in (("input", inputs, bundle.example), ("expected", outputs, bundle.expected)):
        for port in ports:
            array = np.ascontiguousarray(values[port.name], dtype=port.dtype)
            write_file(folder / "Resources" / f"{swift_api.stored_name(kind, port)}.bin", array.tobytes())
    cosine = str(bundle.profile.min_cosine)
    write_file(folder / f"{model}Tests.swift", render("Tests.swift", MODEL=model, MIN_COSINE=cosine,
                                                      ARGUMENTS=swift_api.test_arguments(inputs),
                                                      CHECKS=swift_api.test_checks(outputs)))


def _write_readme(staging: Path, model: str, bundle: BundleInput, inputs: list[swift_api.SwiftPort],
                  outputs: list[swift_api.SwiftPort], entries: list[dict[str, Any]], core: str | None,
                  version: str) -> None:
    profile = bundle.profile
    artefacts = "\n".join(f"  - `{Path(e['artifact']).name}`: {e['nodes']} nodes on "
                          f"{'CoreML' if e['provider'] == 'coreml' else 'the NEON C core'}" for e in entries)
    core_note = (f"- `Sources/{core}/`: the edgepack C core, trimmed to the kernels of the `.epk` plans; it runs the "
                 "partitions CoreML cannot (NEON on ARM64 devices).") if core else ""
    write_file(staging / "README.md", render(
        "README.md", MODEL=model, SOURCE=bundle.name.removesuffix(f"-{bundle.profile.name}"), VERSION=version,
        PROFILE=bundle.profile.name, PLACEMENT=_placement(bundle),
        SNIPPET=swift_api.snippet(model, inputs, outputs),
        INPUT_LIST="\n".join(f"- `{p.ident}` (`{p.name}`): {p.describe()}" for p in inputs),
        OUTPUT_LIST="\n".join(f"- `{p.ident}` / `{p.ident}Values` (`{p.name}`): {p.describe()}" for p in outputs),
        ARTEFACTS=artefacts, CORE_NOTE=core_note, MIN_COSINE=str(bundle.profile.min_cosine),
        WEIGHTS=_weights_text(profile.weights), COMPUTE=profile.activations))


def _weights_text(weights: str) -> str:
    return {"fp32": "float32", "fp16": "float16", "int8": "int8, linear symmetric per channel (coremltools)",
            }.get(weights, f"{weights.removeprefix('palette')}-bit palettized (k-means lookup tables, coremltools)")
