"""The mobile targets: iOS (a Swift package with CoreML partitions and the NEON C core for the rest) and Android (a
Gradle library module and an AAR over the NEON C core)."""

from . import android, ios  # noqa: F401  (registration)
