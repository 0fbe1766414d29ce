"""The `cpu` provider: the compact C core built for this host, run through ctypes. A partition is lowered to an
`.epk` plan per input-shape signature (the first run at new shapes lowers and opens a plan; later runs reuse it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import onnx

from ..capability import PlanCapability
from ..errors import EdgepackError
from ..native.binding import NativeSession
from ..native.plan_compiler import planned
from . import CompiledPartition, Options, Provider, register
from .cpu_claims import CLAIMS


def _threads(options: Options) -> int:
    """The session's `threads` (1 when not given): its convs and products then run on a pool of that many."""
    threads = options.get("threads")
    threads = 1 if threads is None else int(threads)
    if threads < 1:
        raise EdgepackError(f"threads must be 1 or more, not {threads}", where="the cpu provider's options",
                            fix="pass threads=1 (one thread) or more")
    return threads


def compile_partition(model: onnx.ModelProto, options: Options) -> CompiledPartition:
    threads = _threads(options)
    return planned(model, lambda plan, _: NativeSession(plan, threads=threads))


def load_plan(path: Path, options: Options) -> NativeSession:
    """An `.epk` plan file (a C library bundle's partition), run as it is, at the shapes it was lowered for."""
    return NativeSession(path.read_bytes(), threads=_threads(options))


def _missing() -> str | None:
    if not (shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")):
        return "no C compiler is installed to build the runtime core (apt-get install gcc)"
    return None


PROVIDER = register(Provider("cpu", "the compact C runtime core built for this host (ctypes)",
                             PlanCapability(CLAIMS), compile_partition, load=load_plan, missing=_missing,
                             thread_option="threads"))
