"""The runtime: `Session` runs bundles and models on execution providers (this version: `reference`)."""

from .session import Session, TensorSpec

__all__ = ["Session", "TensorSpec"]
