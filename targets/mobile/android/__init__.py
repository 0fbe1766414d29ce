"""The android target: a Gradle library module and an AAR over the NEON C core."""

from . import bundle  # noqa: F401  (registration)
