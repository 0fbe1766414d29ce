"""Bundle targets: each turns a slimmed model into the artefacts of one platform. One target a module."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

if TYPE_CHECKING:
    from edgepack.packager.lower import Lowered
    from edgepack.packager.partition import Partition
    from edgepack.packager.profile import Profile


@dataclass(frozen=True)
class BundleInput:
    model: onnx.ModelProto
    """The slimmed (and quantized) model."""
    name: str
    """The model's name, for file and package names."""
    profile: Profile
    lowered: list[Lowered]
    """Each partition with the artefact the lower stage made of it (in the form the target named)."""
    example: dict[str, np.ndarray]
    """One of the verify stage's sample inputs, for targets that ship an example run (the web demo)."""
    expected: dict[str, np.ndarray] | None
    """The fp32 source's outputs on `example`, for targets that ship a test against them (the Swift package); None
    where the target asks none (`Target.ships_expected`) and the build is not verified."""
    trial: bool = False
    """A candidate of mixed precision, written only to be verified: the target may leave out what only the bundle
    that ships needs (compiled libraries, archives). The partitions' artefacts must be written."""
    weights: Path | None = None
    """The folder of the data files of the model's external initializers (a `maps_weights` target only)."""


Write = Callable[[BundleInput, Path], list[dict[str, Any]]]
Run = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
RuntimeOpener = Callable[[Path], "tuple[str, Callable[[], Run]] | None"]
"""For a written bundle, the runtime it ships to: that runtime's name and version, and what opens the bundle on it
(raising when the runtime refuses it); None where that runtime is not installed here."""


@dataclass(frozen=True)
class ShippedRuntime:
    """The runtime a target's bundles run on in apps, as far as it is installed on the building machine."""

    name: str
    """Its section in the never-slower table (`int8_speed.toml`)."""
    installed: Callable[[], bool]
    run: Callable[[onnx.ModelProto], Run]
    """A model on it with one thread, as the never-slower and `--tune` timings run it."""
    open_bundle: RuntimeOpener | None = None
    """Where the verify stage also runs the written bundle on it (the generic target: onnxruntime)."""


@dataclass(frozen=True)
class Target:
    name: str
    summary: str
    write: Write
    """Writes the artefacts into the staging folder and returns the partitions for the manifest."""
    precisions: frozenset[tuple[str, str]] = frozenset({("fp32", "fp32")})
    """The (weights, activations) precisions the target builds."""
    applies_precision: bool = False
    """The target lowers precision itself with its vendor's tools (CoreML): the quantize stage keeps fp32."""
    runtime: ShippedRuntime | None = None
    """The runtime its bundles run on in apps, whose speed decides int8 compute."""
    forms: Mapping[str, str] = field(default_factory=dict)
    """Provider -> the form its partitions ship in (`plan`, `ir`, `mlpackage`; `onnx` for a provider not named)."""
    product: str = "the bundle"
    """What the target makes, as its errors name it ("the C library")."""
    ships_expected: bool = False
    """The bundle holds the source's outputs on the example input (the Swift package's XCTest)."""
    missing: Callable[[], str | None] | None = None
    """What this machine lacks to build the target's bundles (a compiler), or None when it has all."""
    maps_weights: bool = False
    """Its bundles keep a model's external weights in a data file of their own, which the build fills by copying
    file ranges: they are mapped where read, never held in memory (the generic ONNX model)."""


TARGETS: dict[str, Target] = {}

WEIGHT_ONLY = frozenset((weights, "fp32") for weights in ("fp32", "fp16", "int8", "int4"))
"""Every weight precision with fp32 activations: weights lowered by the quantize stage, compute in fp32."""
LOWERED_COMPUTE = frozenset({("fp16", "fp16"), ("int8", "int8")})
"""fp16 compute (fp32 inputs and outputs), and int8 compute on int8 weights (static QDQ or dynamic MatMul)."""


def register(name: str, summary: str, precisions: frozenset[tuple[str, str]] = frozenset({("fp32", "fp32")}),
             applies_precision: bool = False, runtime: ShippedRuntime | None = None,
             forms: Mapping[str, str] | None = None, product: str = "the bundle", ships_expected: bool = False,
             missing: Callable[[], str | None] | None = None, maps_weights: bool = False
             ) -> Callable[[Write], Write]:
    def decorate(write: Write) -> Write:
        if name in TARGETS:
            raise ValueError(f"target {name!r} registered twice")
        TARGETS[name] = Target(name, summary, write, precisions, applies_precision, runtime, dict(forms or {}),
                               product, ships_expected, missing, maps_weights)
        return write

    return decorate


def write_file(path: Path, content: str | bytes) -> None:
    """Write text or bytes at `path` inside a staging folder, making its parent folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)


def write_onnx_partition(part: Partition, staging: Path) -> dict[str, Any]:
    """Write a partition as `<id>.onnx` and return its manifest entry."""
    artifact = f"{part.id}.onnx"
    (staging / artifact).write_bytes(part.model.SerializeToString(deterministic=True))
    return {"id": part.id, "provider": part.provider, "artifact": artifact, "inputs": part.inputs,
            "outputs": part.outputs, "nodes": part.nodes, "ops": part.ops}


from . import embedded, generic, mobile, openvino, web  # noqa: E402,F401  (registration)
