"""edgepack: take one ONNX model to browsers, phones and edge boards.

The names below are imported on first use (PEP 562), so `import edgepack` and `from edgepack.runtime import
Session` load no packager, target or build code until it is asked for."""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from edgepack.runtime.version import __version__

if TYPE_CHECKING:
    from edgepack.build import BuildResult, build
    from edgepack.packager.profile import Profile
    from edgepack.profile import load_profile
    from edgepack.runtime.errors import EdgepackError

LAZY = {
    "BuildResult": "edgepack.build",
    "build": "edgepack.build",
    "EdgepackError": "edgepack.runtime.errors",
    "Profile": "edgepack.packager.profile",
    "load_profile": "edgepack.profile",
}

__all__ = ["EdgepackError", "Profile", "load_profile", "BuildResult", "build", "__version__"]


def __getattr__(name: str) -> Any:
    if name not in LAZY:
        raise AttributeError(f"module 'edgepack' has no attribute {name!r}")
    return getattr(importlib.import_module(LAZY[name]), name)


class _Package(types.ModuleType):
    """`edgepack.build` is the function, also once the submodule of the same name is imported (the import system
    then sets the package's attribute to the submodule)."""

    @property
    def build(self) -> Any:
        return importlib.import_module("edgepack.build").build

    @build.setter
    def build(self, value: Any) -> None:
        if not isinstance(value, types.ModuleType):
            raise AttributeError("edgepack.build is the build function")


sys.modules[__name__].__class__ = _Package
