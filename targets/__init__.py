"""Bundle targets: each turns a slimmed model into the artefacts of one platform. One target a module."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx


@dataclass(frozen=True)
class BundleInput:
    model: onnx.ModelProto
    """The slimmed (and quantized) model."""
    name: str
    """The model's name, for file and package names."""
    profile: dict[str, Any]


@dataclass(frozen=True)
class Target:
    name: str
    summary: str
    write: Callable[[BundleInput, Path], list[dict[str, Any]]]
    """Writes the artefacts into the staging folder and returns the partitions for the manifest."""


TARGETS: dict[str, Target] = {}


def register(name: str, summary: str) -> Callable[[Callable[[BundleInput, Path], list[dict[str, Any]]]],
                                                  Callable[[BundleInput, Path], list[dict[str, Any]]]]:
    def decorate(write: Callable[[BundleInput, Path], list[dict[str, Any]]]
                 ) -> Callable[[BundleInput, Path], list[dict[str, Any]]]:
        if name in TARGETS:
            raise ValueError(f"target {name!r} registered twice")
        TARGETS[name] = Target(name, summary, write)
        return write

    return decorate


from . import generic  # noqa: E402,F401  (registration)
