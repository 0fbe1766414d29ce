"""The registry of execution providers. A provider is a module that calls `register`; adding one is adding a file."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import onnx

from ..capability import Capability


class CompiledPartition(Protocol):
    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]: ...


Options = Mapping[str, Any]


@dataclass(frozen=True)
class Provider:
    name: str
    summary: str
    capability: Capability
    compile: Callable[[onnx.ModelProto, Options], CompiledPartition]
    """Compiles an ONNX partition."""
    load: Callable[[Path, Options], CompiledPartition] | None = None
    """Loads an artefact in the provider's own format (None: the provider only takes ONNX)."""
    missing: Callable[[], str | None] = lambda: None
    """Why the provider cannot run on this machine (a package not installed), or None."""


PROVIDERS: dict[str, Provider] = {}


def register(provider: Provider) -> Provider:
    if provider.name in PROVIDERS:
        raise ValueError(f"provider {provider.name!r} registered twice")
    PROVIDERS[provider.name] = provider
    return provider


from . import coreml, cpu, neon, openvino, reference, wasm, webgpu  # noqa: E402,F401  (registration)
