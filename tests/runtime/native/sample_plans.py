"""Sample models as the product sees them (loaded, checked, slimmed), their feeds, and their `.epk` plans."""

from __future__ import annotations

import subprocess
from functools import cache
from pathlib import Path

import numpy as np
import onnx

from edgepack import samples
from edgepack.compiler.lower import lower
from edgepack.model_check import check_model
from edgepack.packager.slim import slim
from edgepack.runtime.model_file import load_model
from edgepack.runtime.native.build import runner
from tests.output_error import relative_error  # noqa: F401  (re-exported to the tests here)
from tests.small_feeds import small_feeds

TOLERANCE = 1e-4
"""Max abs diff allowed against `reference`, relative to the output's scale (max(1, max |reference|))."""


@cache
def slimmed(name: str) -> onnx.ModelProto:
    model = load_model(samples.path(name)).model
    check_model(model, name)
    return slim(model)[0]


def feeds(name: str, seed: int = 0, emulated: bool = False) -> dict[str, np.ndarray]:
    """The sample's feeds; `emulated` (under qemu-aarch64): at the size tests run them (`tests/small_feeds.py`)."""
    return small_feeds(name, seed) if emulated else samples.feeds(name, seed)


@cache
def plan(name: str) -> bytes:
    return lower(slimmed(name), {k: v.shape for k, v in feeds(name).items()})


@cache
def reference_outputs(name: str, seed: int = 0, emulated: bool = False) -> dict[str, np.ndarray]:
    from edgepack.runtime.providers import PROVIDERS

    return PROVIDERS["reference"].compile(slimmed(name), {}).run(feeds(name, seed, emulated))


def sanitized_output(model: onnx.ModelProto, x: np.ndarray, folder: Path) -> np.ndarray:
    """`model`'s output for its input `x` through the sanitized runner (AddressSanitizer and
    UndefinedBehaviorSanitizer, 8-lane vectors, no AVX), after asserting that it reported nothing."""
    folder.mkdir()
    (folder / "plan.epk").write_bytes(lower(model, {"x": x.shape}))
    np.save(folder / "x.npy", x)
    proc = subprocess.run([str(runner(sanitized=True)), str(folder / "plan.epk"), str(folder), str(folder / "x.npy")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "runtime error" not in proc.stderr, proc.stderr
    return np.load(folder / "0.npy")
