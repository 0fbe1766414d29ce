"""The runtime: `Session` runs bundles and models on execution providers (`edgepack.runtime.providers`: reference,
cpu, neon, wasm, webgpu, openvino, coreml). It is a leaf: it imports nothing from the packager, the targets or the
SDK, and `Session` is imported on first use (PEP 562)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .session import Session, TensorSpec

__all__ = ["Session", "TensorSpec"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'edgepack.runtime' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.session"), name)
