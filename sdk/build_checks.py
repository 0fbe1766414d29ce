"""What a build checks before any work: the profile can be built here, the precision and calibration options fit
together, the opset range, the excluded nodes exist; and the bundle's folder name."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import onnx

from edgepack.packager.profile import ACTIVATION_PRECISIONS, WEIGHT_PRECISIONS, Profile
from edgepack.packager.quantize import COMPENSATED_WEIGHTS, REQUIRED_OPSET
from edgepack.packager.quantize.ranges import CALIBRATION_METHODS
from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.providers import PROVIDERS
from edgepack.targets import TARGETS

from .calibration_inputs import CalibrationSource


def check_options(profile: Profile, weights: str | None, activations: str | None,
                  calibration: CalibrationSource | None, method: str) -> Profile:
    """`profile` with the command line's precision, once everything asked of it can be built here."""
    profile = with_precision(profile, weights, activations)
    _check_calibration_options(profile, calibration, method)
    reason = target_available(profile)
    if reason:
        raise EdgepackError(f"profile {profile.name!r} cannot be built: {reason}", where=profile.source,
                            fix="`edgepack profiles` lists the profiles this version can build; "
                                "--profile generic gives a slimmed ONNX bundle")
    return profile


def target_available(profile: Profile) -> str | None:
    """None when this version can build `profile`, else the reason it cannot."""
    if profile.target not in TARGETS:
        return (f"the {profile.target!r} target is not built in this version (it builds "
                f"{', '.join(map(repr, TARGETS))})")
    target = TARGETS[profile.target]
    if target.missing and (reason := target.missing()):
        return f"the {profile.target!r} target: {reason}"
    missing = [p for p in profile.providers if p not in PROVIDERS]
    if missing:
        return f"the {', '.join(map(repr, missing))} provider is not built in this version"
    for name in profile.providers:
        if reason := PROVIDERS[name].missing():
            return f"{name}: {reason}"
    if (profile.weights, profile.activations) not in target.precisions:
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


def _check_calibration_options(profile: Profile, calibration: CalibrationSource | None, method: str) -> None:
    if method not in CALIBRATION_METHODS:
        raise EdgepackError(f"--calibration-method {method!r} is not a calibration method",
                            where="--calibration-method", fix=f"use one of {', '.join(CALIBRATION_METHODS)}")
    if calibration is not None and profile.target in TARGETS and TARGETS[profile.target].applies_precision:
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


def opset_range(profile: Profile) -> tuple[int, int]:
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
