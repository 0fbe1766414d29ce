"""This machine as a device, directly (`host`) or with every command under qemu-aarch64 (`qemu-arm64`: emulated
ARM64, so its timings are not a device's)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from edgepack.runtime.errors import EdgepackError

from . import Device, DeviceFacts


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (the processor field elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


class HostDevice(Device):
    spec = "host"
    prefix: list[str] = []

    def facts(self) -> DeviceFacts:
        return DeviceFacts(platform.machine(), cpu_model(), os.cpu_count() or 1, f"{platform.system()} "
                           f"{platform.release()}", emulated=False)

    @contextmanager
    def workspace(self) -> Iterator[str]:
        with tempfile.TemporaryDirectory(prefix="edgepack-device-") as folder:
            yield folder

    def push(self, local: Path, remote: str) -> None:
        shutil.copyfile(local, remote)
        shutil.copymode(local, remote)

    def pull(self, remote: str, local: Path) -> None:
        shutil.copyfile(remote, local)

    def run(self, command: list[str], timeout_s: float | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.prefix, *command], capture_output=True, text=True, timeout=timeout_s)


class QemuDevice(HostDevice):
    spec = "qemu-arm64"

    def __init__(self) -> None:
        emulator = shutil.which("qemu-aarch64")
        if not emulator:
            raise EdgepackError("qemu-aarch64 is not installed", where="--device qemu-arm64",
                                fix="apt-get install qemu-user")
        self.prefix = [emulator]

    def facts(self) -> DeviceFacts:
        host = super().facts()
        return DeviceFacts("aarch64", f"qemu-aarch64 on {host.cpu}", host.cores, host.os, emulated=True)
