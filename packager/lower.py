"""The lower stage: each partition becomes the artefact its target ships for its provider, made once per build and
reused by the target (which lays it out) and by verify (which loads the written bundle): an ONNX subgraph, an
`.epk` plan (`edgepack.compiler`), OpenVINO IR or a CoreML `.mlpackage`. The partitioner's compile check of a
CoreML piece is that piece's conversion, kept for this stage."""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx

from edgepack.compiler.lower import MissingKernels, lower_to_plan
from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.native.epk import WEIGHT, Plan

from .partition import Partition, provider_compiles
from .profile import Profile

FIXED_SHAPE_FORMS = ("plan", "mlpackage")
"""Forms made at concrete input shapes."""


@dataclass
class Lowered:
    partition: Partition
    form: str
    plan: Plan | None = None
    """The `.epk` plan (form `plan`)."""
    files: Path | None = None
    """The artefact on disk (form `ir`: the `.xml` beside its `.bin`; form `mlpackage`: the package folder)."""
    options: dict[str, Any] = field(default_factory=dict)
    """The manifest entry's options: how the artefact was converted (CoreML features, OpenVINO precision)."""
    note: str = ""
    """What the build should warn about this artefact (a plan whose weights stay quantized while it runs)."""


def pinned_shapes(model: onnx.ModelProto, product: str) -> dict[str, tuple[int, ...]]:
    """Each input's concrete shape; a symbolic or unknown dim is an error that says how to pin it."""
    initializers = {t.name for t in model.graph.initializer}
    shapes: dict[str, tuple[int, ...]] = {}
    loose: dict[str, str] = {}
    for value in model.graph.input:
        tensor_type = value.type.tensor_type
        if value.name in initializers:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tensor_type.shape.dim]
        if not tensor_type.HasField("shape"):
            loose[value.name] = "(no shape)"
        elif any(isinstance(d, str) for d in dims):
            loose[value.name] = str(dims)
        else:
            shapes[value.name] = tuple(dims)
    if loose:
        described = ", ".join(f"{name} {dims}" for name, dims in loose.items())
        raise EdgepackError(f"{product} runs at fixed input shapes, and {described} still "
                            f"{'has' if len(loose) == 1 else 'have'} dynamic dims", where=product,
                            fix=f"pass the sizes it will run at: {pin_flags(model, set(loose))} (SIZE a positive "
                                "integer), or pin the dims in the profile's [shapes] table")
    return shapes


def pin_flags(model: onnx.ModelProto, names: set[str]) -> str:
    """The build flags that would fix the dynamic dims of the inputs `names`: `--dim` for a named dim, else
    `--input-shape` with the input's fixed dims kept."""
    flags: list[str] = []
    for value in model.graph.input:
        if value.name not in names:
            continue
        dims = value.type.tensor_type.shape.dim
        if not value.type.tensor_type.HasField("shape"):
            flags.append(f"--input-shape {value.name}=D1,D2,...")
        elif all(d.dim_value > 0 or pinnable_name(d.dim_param) for d in dims):
            flags += [f"--dim {d.dim_param}=SIZE" for d in dims if not d.dim_value > 0 and
                      f"--dim {d.dim_param}=SIZE" not in flags]
        else:
            shape = ",".join(str(d.dim_value) if d.dim_value > 0 else "SIZE" for d in dims)
            flags.append(f"--input-shape {value.name}={shape}")
    return " ".join(flags)


def pinnable_name(dim_param: str) -> bool:
    """Whether `--dim NAME=SIZE` can pin a dim of this name: exporters write `?` (or nothing) for a dim they did not
    name, and one such name stands for unrelated dims."""
    return dim_param not in ("", "?")


MEGABYTE = 1 << 20


def session_bytes(plan: Plan) -> int:
    """The memory a session of `plan` holds while it runs, but for its tables: its weights, arena and scratch."""
    return sum(t.nbytes for t in plan.tensors if t.location == WEIGHT) + plan.arena_bytes + plan.scratch_bytes


def plan_of(model: onnx.ModelProto, product: str, packed_weights: bool = True,
            peak_memory_mb: float | None = None) -> tuple[Plan, str]:
    """The plan at the pinned input shapes (`packed_weights`: see lower_to_plan), and a note for the build when
    its quantized weights stay quantized while it runs: they are expanded to float32 once, when a session opens,
    unless that takes a session over `peak_memory_mb`. When the core has no kernel for some nodes, the build fails
    listing them and their ops."""
    try:
        shapes = pinned_shapes(model, product)
        plan = lower_to_plan(model, shapes, packed_weights=packed_weights)
        expanded_bytes = session_bytes(plan)
        if peak_memory_mb is None or not plan.open_ops or expanded_bytes <= peak_memory_mb * MEGABYTE:
            return plan, ""
        note = (f"{product}: its quantized weights, expanded to float32 when a session opens, would take a session "
                f"to {expanded_bytes / MEGABYTE:.0f} MB, over the profile's peak_memory_mb of {peak_memory_mb:g}; "
                "each run dequantizes them instead, which is slower")
        return lower_to_plan(model, shapes, packed_weights=packed_weights, expand_weights=False), note
    except MissingKernels as error:
        ops = sorted({label.split(" (")[0] for label in error.nodes})
        raise EdgepackError(f"{product} cannot be built: the C core has no kernel for {', '.join(ops)}, used by "
                            f"{len(error.nodes)} node(s): {', '.join(error.nodes)}", where=model.graph.name or "model",
                            fix="replace these nodes with ops the core has (runtime/native/EPK.md lists them), or "
                                "build with a profile whose providers run them") from error
    except EdgepackError as error:
        raise EdgepackError(f"{product} cannot be built: {error.what}", where=error.where, fix=error.fix) from error


def coreml_options(profile: Profile) -> dict[str, str]:
    """How the profile asks CoreML partitions to be converted."""
    return {"deployment_target": profile.deployment_target, "compute_precision": profile.activations,
            "weights": profile.weights}


class Lowerer:
    """Lowers partitions for one build, into a folder that lives as long as the build. CoreML conversions are kept
    by the digest of the partition model, so that the partitioner's check and this stage convert a graph once."""

    def __init__(self, profile: Profile, forms: Mapping[str, str], product: str) -> None:
        self.profile, self.forms, self.product = profile, forms, product
        self._folder = tempfile.TemporaryDirectory(prefix="edgepack-lower-")
        self.conversions: dict[str, tuple[Path, dict[str, Any]]] = {}

    def close(self) -> None:
        self._folder.cleanup()

    def compiles(self, provider: str, model: onnx.ModelProto) -> bool:
        """The partitioner's check: does `provider` take this piece? A CoreML piece is converted, and kept."""
        if self.forms.get(provider) != "mlpackage":
            return provider_compiles(provider, model)
        try:
            self._mlpackage(model)
        except Exception:  # noqa: BLE001  (any refusal by the converter means: not this piece)
            return False
        return True

    def lower(self, model: onnx.ModelProto, partitions: list[Partition]) -> list[Lowered]:
        """Each partition of `model` in its target form; a form that runs at fixed shapes first checks that the
        whole model's inputs are pinned (an error about the model's inputs, not a partition's)."""
        if any(self.forms.get(part.provider) in FIXED_SHAPE_FORMS for part in partitions):
            pinned_shapes(model, self.product)
        return [self._lower(part) for part in partitions]

    def _lower(self, part: Partition) -> Lowered:
        form = self.forms.get(part.provider, "onnx")
        if form == "plan":
            plan, note = plan_of(part.model, self.product, part.provider != "webgpu", self.profile.peak_memory_mb)
            return Lowered(part, form, plan=plan, note=note)
        if form == "mlpackage":
            path, options = self._mlpackage(part.model)
            return Lowered(part, form, files=path, options=options)
        if form == "ir":
            from edgepack.runtime.providers.openvino import to_ir

            xml = Path(self._folder.name) / f"{part.id}-{_digest(part.model)}.xml"
            to_ir(part.model, xml)
            return Lowered(part, form, files=xml, options={"inference_precision": self.profile.activations})
        return Lowered(part, "onnx")

    def _mlpackage(self, model: onnx.ModelProto) -> tuple[Path, dict[str, Any]]:
        from edgepack.runtime.providers.coreml.convert import to_mlpackage

        digest = _digest(model)
        if digest not in self.conversions:
            path = Path(self._folder.name) / f"{digest}.mlpackage"
            options = coreml_options(self.profile)
            conversion = to_mlpackage(model, path, options)
            features = {"inputs": conversion.inputs, "outputs": conversion.outputs, "dtypes": conversion.dtypes}
            self.conversions[digest] = (path, {**options, "features": features})
        return self.conversions[digest]


def _digest(model: onnx.ModelProto) -> str:
    return hashlib.sha256(model.SerializeToString(deterministic=True)).hexdigest()[:16]
