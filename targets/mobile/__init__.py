"""The mobile targets: iOS (a Swift package with CoreML partitions and the NEON C core for the rest)."""

from . import ios  # noqa: F401  (registration)
