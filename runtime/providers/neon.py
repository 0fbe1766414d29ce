"""The `neon` provider: the same C core cross-compiled for ARM64 (its vector code becomes NEON), run here under
qemu-aarch64, one qemu serving the runs of a process (`ep_run --serve`) unless option `timeout_s` limits each run.
For correctness only: emulated timings say nothing about speed on a device."""

from __future__ import annotations

import shutil
from pathlib import Path

import onnx

from ..capability import PlanCapability
from ..native.build import AARCH64_CC, aarch64_runner
from ..native.emulated import EmulatedSession, qemu
from ..native.plan_compiler import planned
from . import CompiledPartition, Options, Provider, register
from .cpu_claims import CLAIMS


def _command() -> list[str]:
    return [str(qemu()), str(aarch64_runner())]


def compile_partition(model: onnx.ModelProto, options: Options) -> CompiledPartition:
    command = _command()
    return planned(model, lambda plan, source: EmulatedSession(plan, command, options.get("timeout_s"), served=True))


def load_plan(path: Path, options: Options) -> EmulatedSession:
    """An `.epk` plan file (an iOS bundle's fallback partition), run as it is, at the shapes it was lowered for.
    Option `timeout_s`: the longest one run may take under emulation."""
    return EmulatedSession(path.read_bytes(), _command(), options.get("timeout_s"), served=True)


def _missing() -> str | None:
    if not shutil.which(AARCH64_CC) or not qemu():
        return "the aarch64 cross compiler and qemu-aarch64 are not installed " \
               "(apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)"
    return None


PROVIDER = register(Provider("neon", "the C runtime core for ARM64 with NEON (run under qemu-aarch64 here)",
                             PlanCapability(CLAIMS), compile_partition, load=load_plan, missing=_missing,
                             host_stand_in="cpu"))
