"""Embedded bundles: the C library target (`c_library`) for boards such as the Raspberry Pi."""

from . import c_library  # noqa: F401  (registration)
