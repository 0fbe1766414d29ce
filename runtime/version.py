"""edgepack's version: the installed distribution's, or `0.0.0+source` in a source tree that is not installed."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("edgepack")
except PackageNotFoundError:
    __version__ = "0.0.0+source"
