"""A machine reached with the system's OpenSSH client (`ssh://[user@]host[:port]`): files go with scp, commands
with ssh, in a folder made with mktemp and removed afterwards. Batch mode: a key, never a password prompt."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from edgepack.runtime.errors import EdgepackError

from . import Device, DeviceFacts, command_failed

CONNECT_TIMEOUT_S = 10
FACTS = ("uname -m; uname -sr; (nproc || getconf _NPROCESSORS_ONLN); "
         "(grep -m1 -E '^(model name|Model|Hardware)' /proc/cpuinfo | cut -d: -f2- || true)")


class SshDevice(Device):
    def __init__(self, host: str, user: str | None = None, port: int | None = None, identity: Path | None = None,
                 known_hosts: Path | None = None) -> None:
        self.host, self.user, self.port, self.identity, self.known_hosts = host, user, port, identity, known_hosts
        self.spec = f"ssh://{user + '@' if user else ''}{host}{f':{port}' if port else ''}"
        self._facts: DeviceFacts | None = None

    @classmethod
    def from_url(cls, url: str, identity: Path | None = None) -> SshDevice:
        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            port = -1
        if not parts.hostname or port == -1 or parts.path not in ("", "/") or parts.query:
            raise EdgepackError(f"{url!r} is not an ssh device", where="--device",
                                fix="write it as ssh://[user@]host[:port]")
        return cls(parts.hostname, parts.username, port, identity)

    def _options(self) -> list[str]:
        options = ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}", "-o", "LogLevel=ERROR",
                   "-o", "StrictHostKeyChecking=accept-new"]
        if self.identity:
            options += ["-i", str(self.identity), "-o", "IdentitiesOnly=yes"]
        if self.known_hosts:
            options += ["-o", f"UserKnownHostsFile={self.known_hosts}"]
        return options

    @property
    def _target(self) -> str:
        return f"{self.user}@{self.host}" if self.user else self.host

    def _ssh(self, remote_command: str, timeout_s: float | None = None) -> subprocess.CompletedProcess[str]:
        port = ["-p", str(self.port)] if self.port else []
        try:
            return subprocess.run(["ssh", *self._options(), *port, self._target, remote_command],
                                  capture_output=True, text=True, timeout=timeout_s)
        except FileNotFoundError as error:
            raise EdgepackError("the ssh client is not installed", where=self.spec,
                                fix="apt-get install openssh-client") from error

    def _checked(self, remote_command: str, timeout_s: float | None = 60) -> str:
        proc = self._ssh(remote_command, timeout_s)
        if proc.returncode != 0:
            raise EdgepackError(f"ssh to {self.spec} failed: {(proc.stderr or proc.stdout).strip()[:800]}",
                                where=self.spec, fix="check that `ssh` reaches the host with a key (no password), "
                                                     "and pass the key with --identity")
        return proc.stdout

    def facts(self) -> DeviceFacts:
        if self._facts is None:
            lines = self._checked(FACTS).splitlines() + ["", "", "", ""]
            cores = int(lines[2]) if lines[2].strip().isdigit() else 1
            self._facts = DeviceFacts(lines[0].strip(), lines[3].strip() or "unknown", cores, lines[1].strip(),
                                      emulated=False)
        return self._facts

    @contextmanager
    def workspace(self) -> Iterator[str]:
        folder = self._checked("mktemp -d /tmp/edgepack-XXXXXX").strip()
        try:
            yield folder
        finally:
            self._ssh(f"rm -rf {shlex.quote(folder)}", 60)

    def _scp(self, source: str, target: str) -> None:
        port = ["-P", str(self.port)] if self.port else []
        command = ["scp", "-q", *self._options(), *port, source, target]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise command_failed(self, command, proc)

    def push(self, local: Path, remote: str) -> None:
        self._scp(str(local), f"{self._target}:{remote}")

    def pull(self, remote: str, local: Path) -> None:
        self._scp(f"{self._target}:{remote}", str(local))

    def run(self, command: list[str], timeout_s: float | None = None) -> subprocess.CompletedProcess[str]:
        return self._ssh(shlex.join(command), timeout_s)
