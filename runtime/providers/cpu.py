"""The `cpu` provider: the compact C core built for this host, run through ctypes. A partition is lowered to an
`.epk` plan per input-shape signature (the first run at new shapes lowers and opens a plan; later runs reuse it)."""

from __future__ import annotations

import shutil

import onnx

from ..capability import Capability
from ..native.binding import NativeSession
from ..native.partition import PlannedPartition
from . import Options, Provider, register
from .cpu_claims import CLAIMS


def compile_partition(model: onnx.ModelProto, options: Options) -> PlannedPartition:
    return PlannedPartition(model, lambda plan, _: NativeSession(plan))


def _missing() -> str | None:
    if not (shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")):
        return "no C compiler is installed to build the runtime core (apt-get install gcc)"
    return None


PROVIDER = register(Provider("cpu", "the compact C runtime core built for this host (ctypes)",
                             Capability(CLAIMS), compile_partition, missing=_missing))
