"""The `neon` provider: the same C core cross-compiled for ARM64 (its vector code becomes NEON), run here under
qemu-aarch64. For correctness only: emulated timings say nothing about speed on a device."""

from __future__ import annotations

import shutil

import onnx

from ..capability import Capability
from ..native.build import AARCH64_CC, aarch64_runner
from ..native.emulated import EmulatedSession, qemu
from ..native.partition import PlannedPartition
from . import Options, Provider, register
from .cpu_claims import CLAIMS


def compile_partition(model: onnx.ModelProto, options: Options) -> PlannedPartition:
    command = [str(qemu()), str(aarch64_runner())]
    return PlannedPartition(model, lambda plan, source: EmulatedSession(plan, command))


def _missing() -> str | None:
    if not shutil.which(AARCH64_CC) or not qemu():
        return "the aarch64 cross compiler and qemu-aarch64 are not installed " \
               "(apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)"
    return None


PROVIDER = register(Provider("neon", "the C runtime core for ARM64 with NEON (run under qemu-aarch64 here)",
                             Capability(CLAIMS), compile_partition, missing=_missing))
