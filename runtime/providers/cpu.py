"""The `cpu` provider: the compact C core built for this host, run through ctypes. A partition is lowered to an
`.epk` plan per input-shape signature (the first run at new shapes lowers and opens a plan; later runs reuse it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import onnx

from ..capability import PlanCapability
from ..native.binding import NativeSession
from ..native.plan_compiler import planned
from . import CompiledPartition, Options, Provider, register, thread_count
from .cpu_claims import CLAIMS


def compile_partition(model: onnx.ModelProto, options: Options) -> CompiledPartition:
    threads = thread_count(options, "cpu")
    return planned(model, lambda plan, _: NativeSession(plan, threads=threads))


def load_plan(path: Path, options: Options) -> NativeSession:
    """An `.epk` plan file (a C library bundle's partition), run as it is, at the shapes it was lowered for."""
    return NativeSession(path.read_bytes(), threads=thread_count(options, "cpu"))


def _missing() -> str | None:
    if not (shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")):
        return "no C compiler is installed to build the runtime core (apt-get install gcc)"
    return None


PROVIDER = register(Provider("cpu", "the compact C runtime core built for this host (ctypes)",
                             PlanCapability(CLAIMS), compile_partition, load=load_plan, missing=_missing,
                             thread_option="threads"))
