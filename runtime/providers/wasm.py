"""The `wasm` provider: the same C core built for wasm32 with SIMD128 (clang, no emscripten), run here in node
through a small JS glue (`runtime/native/wasm/ep_run.mjs`); with `threads` above 1, the threaded core on that many
node threads (the page's Web Workers, in a browser)."""

from __future__ import annotations

import shutil
from pathlib import Path

import onnx

from ..capability import PlanCapability
from ..native.build import WASM_CC, WASM_GLUE, wasm_core
from ..native.emulated import EmulatedSession
from ..native.plan_compiler import planned
from . import CompiledPartition, Options, Provider, register, thread_count
from .cpu_claims import CLAIMS


def session(plan: bytes, threads: int) -> EmulatedSession:
    """`plan` in node: on one thread through the glue's server (one node for every plan of this process), on more
    threads through a node of its own for each run (its workers belong to that run)."""
    node = [str(shutil.which("node")), str(WASM_GLUE)]
    if threads > 1:
        return EmulatedSession(plan, [*node, "--threads", str(threads), str(wasm_core(threads=True))])
    return EmulatedSession(plan, [*node, str(wasm_core())], served=True)


def compile_partition(model: onnx.ModelProto, options: Options) -> CompiledPartition:
    threads = thread_count(options, "wasm")
    return planned(model, lambda plan, source: session(plan, threads))


def load_plan(path: Path, options: Options) -> EmulatedSession:
    """An `.epk` plan file (a web bundle's partition), run as it is, at the shapes it was lowered for."""
    return session(path.read_bytes(), thread_count(options, "wasm"))


def missing() -> str | None:
    if not shutil.which(WASM_CC) or not shutil.which("wasm-ld") or not shutil.which("node"):
        return "clang, lld and node are needed for the wasm runtime core (apt-get install clang lld nodejs)"
    return None


PROVIDER = register(Provider("wasm", "the C runtime core as wasm32 + SIMD128 (run in node here)",
                             PlanCapability(CLAIMS), compile_partition, load=load_plan, missing=missing,
                             thread_option="threads"))
