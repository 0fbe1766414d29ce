"""The `wasm` provider: the same C core built for wasm32 with SIMD128 (clang, no emscripten), run here in node
through a small JS glue (`runtime/native/wasm/ep_run.mjs`)."""

from __future__ import annotations

import shutil

import onnx

from ..capability import Capability
from ..native.build import WASM_CC, WASM_GLUE, wasm_core
from ..native.emulated import EmulatedSession
from ..native.partition import PlannedPartition
from . import Options, Provider, register
from .cpu_claims import CLAIMS


def compile_partition(model: onnx.ModelProto, options: Options) -> PlannedPartition:
    command = [str(shutil.which("node")), str(WASM_GLUE), str(wasm_core())]
    return PlannedPartition(model, lambda plan, source: EmulatedSession(plan, source, command))


def _missing() -> str | None:
    if not shutil.which(WASM_CC) or not shutil.which("wasm-ld") or not shutil.which("node"):
        return "clang, lld and node are needed for the wasm runtime core (apt-get install clang lld nodejs)"
    return None


PROVIDER = register(Provider("wasm", "the C runtime core as wasm32 + SIMD128 (run in node here)",
                             Capability(CLAIMS), compile_partition, missing=_missing))
