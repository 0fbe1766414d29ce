"""Devices a bundle is benchmarked on, behind one interface: a working folder on the device, push and pull files,
run a command there, and the device's facts. `open_device` reads a device spec: `host`, `qemu-arm64`,
`ssh://[user@]host[:port]` or `adb[:serial]`."""

from __future__ import annotations

import subprocess
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from edgepack.runtime.errors import EdgepackError


@dataclass(frozen=True)
class DeviceFacts:
    arch: str
    """`uname -m`: x86_64, aarch64, ..."""
    cpu: str
    cores: int
    os: str
    emulated: bool
    """The timings are an emulator's, not the device's."""

    def as_dict(self) -> dict:
        return vars(self).copy()


class Device(ABC):
    """Where a benchmark runs. Paths on the device are strings; commands are argument lists."""

    spec: str

    @abstractmethod
    def facts(self) -> DeviceFacts: ...

    @abstractmethod
    @contextmanager
    def workspace(self) -> Iterator[str]:
        """A new folder on the device, removed afterwards."""

    @abstractmethod
    def push(self, local: Path, remote: str) -> None: ...

    @abstractmethod
    def pull(self, remote: str, local: Path) -> None: ...

    @abstractmethod
    def run(self, command: list[str], timeout_s: float | None = None) -> subprocess.CompletedProcess[str]:
        """Runs `command` on the device (its first word a file pushed there or a program it has)."""


DEVICE_SPECS = "host, qemu-arm64, ssh://[user@]host[:port] or adb[:serial]"


def open_device(spec: str, identity: Path | None = None) -> Device:
    """The device `spec` names; `identity` is the private key for ssh:// (else ssh's own configuration)."""
    from .adb import AdbDevice
    from .local import HostDevice, QemuDevice
    from .ssh import SshDevice

    if spec == "host":
        return HostDevice()
    if spec == "qemu-arm64":
        return QemuDevice()
    if spec.startswith("ssh://"):
        return SshDevice.from_url(spec, identity)
    if spec == "adb" or spec.startswith("adb:"):
        return AdbDevice(spec.partition(":")[2] or None)
    raise EdgepackError(f"unknown device {spec!r}", where="--device", fix=f"use one of {DEVICE_SPECS}")


def command_failed(device: Device, command: list[str], proc: subprocess.CompletedProcess[str]) -> EdgepackError:
    printed = (proc.stderr or proc.stdout).strip()[:800]
    return EdgepackError(f"{' '.join(command[:3])} failed on {device.spec}: {printed}", where=device.spec,
                         fix="check the device and the bundle")
