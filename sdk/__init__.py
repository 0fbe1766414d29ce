"""edgepack: take one ONNX model to browsers, phones and edge boards."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("edgepack")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+source"

from .build import BuildResult, build
from .errors import EdgepackError
from .profile import Profile, load_profile

__all__ = ["EdgepackError", "Profile", "load_profile", "BuildResult", "build", "__version__"]
