"""coremltools, imported quietly: on Linux it logs that its native CoreML bindings are missing (prediction needs
macOS, which `edgepack` says itself where it matters) and that scikit-learn is newer than its converter knows."""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import warnings
from collections.abc import Iterator
from types import ModuleType


def coremltools() -> ModuleType:
    if "coremltools" not in sys.modules:
        logging.getLogger("coremltools").setLevel(logging.ERROR)
        with quiet():
            import coremltools  # noqa: F401
    return sys.modules["coremltools"]


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """coremltools' own progress bars and notices (its MIL pass pipelines print to stderr, and it warns of the
    names it changes, which edgepack follows) are left out."""
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def missing() -> str | None:
    try:
        coremltools()
    except ImportError:
        return "coremltools is not installed (pip install 'edgepack[coreml]')"
    return None
