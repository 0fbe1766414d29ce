"""An Android device (or a board running adbd) reached with `adb[:serial]`: files go with `adb push`/`adb pull`,
commands with `adb shell`, in a folder under /data/local/tmp removed afterwards."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from edgepack.runtime.errors import EdgepackError

from . import Device, DeviceFacts, command_failed

FACTS = "uname -m; uname -sr; getprop ro.product.model; (nproc || getconf _NPROCESSORS_ONLN)"


class AdbDevice(Device):
    def __init__(self, serial: str | None) -> None:
        if not shutil.which("adb"):
            raise EdgepackError("adb is not installed", where="--device adb",
                                fix="install Android's platform tools (apt-get install adb) and connect a device")
        self.serial = serial
        self.spec = f"adb:{serial}" if serial else "adb"
        devices = subprocess.run(["adb", "devices"], capture_output=True, text=True).stdout.splitlines()[1:]
        attached = [line.split()[0] for line in devices if line.strip().endswith("device")]
        if not attached or (serial and serial not in attached):
            raise EdgepackError(f"no adb device {serial or ''} is attached".replace("  ", " "), where=self.spec,
                                fix="connect one with USB debugging on (`adb devices` lists it)")

    def _adb(self, *args: str, timeout_s: float | None = 600) -> subprocess.CompletedProcess[str]:
        serial = ["-s", self.serial] if self.serial else []
        return subprocess.run(["adb", *serial, *args], capture_output=True, text=True, timeout=timeout_s)

    def facts(self) -> DeviceFacts:
        lines = self._adb("shell", FACTS).stdout.splitlines() + ["", "", "", ""]
        cores = int(lines[3]) if lines[3].strip().isdigit() else 1
        return DeviceFacts(lines[0].strip(), lines[2].strip() or "unknown", cores, lines[1].strip(), emulated=False)

    @contextmanager
    def workspace(self) -> Iterator[str]:
        folder = self._adb("shell", "mktemp -d /data/local/tmp/edgepack-XXXXXX").stdout.strip()
        try:
            yield folder
        finally:
            self._adb("shell", f"rm -rf {shlex.quote(folder)}")

    def push(self, local: Path, remote: str) -> None:
        proc = self._adb("push", str(local), remote)
        if proc.returncode != 0:
            raise command_failed(self, ["adb", "push", str(local)], proc)

    def pull(self, remote: str, local: Path) -> None:
        proc = self._adb("pull", remote, str(local))
        if proc.returncode != 0:
            raise command_failed(self, ["adb", "pull", remote], proc)

    def run(self, command: list[str], timeout_s: float | None = None) -> subprocess.CompletedProcess[str]:
        return self._adb("shell", shlex.join(command), timeout_s=timeout_s)
