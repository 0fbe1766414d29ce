"""coremltools, imported quietly: on Linux it logs that its native CoreML bindings are missing (prediction needs
macOS, which `edgepack` says itself where it matters) and that scikit-learn is newer than its converter knows."""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import types
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


@contextlib.contextmanager
def without_collection() -> Iterator[None]:
    """coremltools runs `gc.collect()` after every `convert`, to free what its torch and TensorFlow frontends held.
    From a MIL program it frees nothing, and it takes time in proportion to the caller's heap: 0.16 s a call in a
    process that holds onnx's 1,884 node test models, paid per partition the partitioner tries."""
    entry = sys.modules.get("coremltools.converters._converters_entry")
    collector = getattr(entry, "gc", None)
    if collector is None:
        yield
        return
    entry.gc = types.SimpleNamespace(collect=lambda *args: 0)
    try:
        yield
    finally:
        entry.gc = collector
