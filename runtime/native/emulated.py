"""Runs plans with an `ep_run` that lives outside this process (the ARM64 build under qemu-aarch64 for `neon`, the
wasm32 build in node for `wasm`): inputs and outputs go through .npy files in a temporary folder, as their plan bytes
(1-D uint8) for the dtypes numpy has no code for."""

from __future__ import annotations

import atexit
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import numpy as np

from edgepack.runtime.errors import EdgepackError

from .epk import PortInfo, from_plan_bytes, plan_bytes, ports

NPY_CODES = {"float32", "uint8", "int8", "uint16", "int16", "int32", "int64", "bool", "float16", "float64", "uint32",
             "uint64"}
"""The dtypes .npy files spell (cli/npy.c and wasm/ep_run.mjs read and write the same)."""


class EmulationTimeout(EdgepackError):
    """A run under emulation took longer than its session allows."""


def core_failure(message: str, command: list[str]) -> EdgepackError:
    return EdgepackError(f"the runtime core failed: {message.strip()[:1000]}", where=" ".join(command),
                         fix="check the emulator and the cross build")


class RunnerServer:
    """A runner that stays up between runs, `ep_run --serve` (its start-up, qemu's or node's and the wasm core's
    compilation, 0.05 to 0.3 s, paid once): each run is a line to its stdin, the plan, the output folder and the
    inputs separated by tabs, answered by a line holding the run's exit status, a failure's message on its stderr.
    It ends when its stdin closes; one that died is started again."""

    _shared: dict[tuple[str, ...], RunnerServer] = {}
    _shared_lock = threading.Lock()

    def __init__(self, command: list[str]) -> None:
        self.command = command
        self.lock = threading.Lock()
        self.process: subprocess.Popen[str] | None = None
        self.errors = tempfile.TemporaryFile("w+")

    @classmethod
    def shared(cls, command: list[str]) -> RunnerServer:
        """The one server of `command` in this process."""
        with cls._shared_lock:
            if tuple(command) not in cls._shared:
                cls._shared[tuple(command)] = cls(command)
            return cls._shared[tuple(command)]

    def run(self, request: list[str]) -> None:
        with self.lock:
            if self.process is None or self.process.poll() is not None:
                self.errors.seek(0)
                self.errors.truncate()
                self.process = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                stderr=self.errors, text=True)
            assert self.process.stdin is not None and self.process.stdout is not None
            self.errors.seek(0, 2)
            before = self.errors.tell()
            try:
                self.process.stdin.write("\t".join(request) + "\n")
                self.process.stdin.flush()
            except BrokenPipeError:
                pass
            answer = self.process.stdout.readline()
            if not answer:
                self.process.wait()
                self.errors.seek(before)
                raise core_failure(f"the runner exited ({self.process.returncode}): {self.errors.read()}",
                                   self.command)
            if answer.strip() != "0":
                self.errors.seek(before)
                raise core_failure(self.errors.read(), self.command)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait()


@atexit.register
def _close_servers() -> None:
    for server in RunnerServer._shared.values():
        server.close()


class EmulatedSession:
    """One plan run by `command` (emulator + runner binary) per call, each call stopped after `timeout_s` seconds
    (None: no limit); with `served` (and no time limit), through the RunnerServer of `command --serve`, shared by
    every session of that command (a run whose paths hold a tab or a line break runs a command of its own)."""

    def __init__(self, plan: bytes, command: list[str], timeout_s: float | None = None, served: bool = False) -> None:
        self.folder = tempfile.TemporaryDirectory(prefix="edgepack-plan-")
        self.plan_path = Path(self.folder.name) / "plan.epk"
        self.plan_path.write_bytes(plan)
        self.command = command
        self.timeout_s = timeout_s
        self.server = RunnerServer.shared([*command, "--serve"]) if served and timeout_s is None else None
        self.inputs, self.outputs = ports(plan)

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        with tempfile.TemporaryDirectory(dir=self.folder.name) as run_folder:
            folder = Path(run_folder)
            inputs = save_inputs(folder, self.inputs, feeds)
            request = [str(self.plan_path), str(folder), *map(str, inputs)]
            if self.server is not None and not any("\t" in field or "\n" in field for field in request):
                self.server.run(request)
            else:
                self._run_once(request)
            return {port.name: self._read(folder / f"{i}.npy", port) for i, port in enumerate(self.outputs)}

    def _run_once(self, request: list[str]) -> None:
        try:
            proc = subprocess.run([*self.command, *request], capture_output=True, text=True, timeout=self.timeout_s)
        except subprocess.TimeoutExpired as error:
            raise EmulationTimeout(f"the run under emulation did not finish in {self.timeout_s:g} s",
                                   where=" ".join(self.command), fix="run it without a time limit") from error
        if proc.returncode != 0:
            raise core_failure(proc.stderr, self.command)

    @staticmethod
    def _read(path: Path, port: PortInfo) -> np.ndarray:
        array = np.load(path)
        return array if port.dtype in NPY_CODES else from_plan_bytes(array, port.dtype, port.shape)


def save_inputs(folder: Path, inputs: list[PortInfo], feeds: dict[str, np.ndarray]) -> list[Path]:
    """Writes each input as `folder/in<i>.npy`, as ep_run reads it; returns the files in the plan's input order."""
    paths = []
    for index, port in enumerate(inputs):
        paths.append(folder / f"in{index}.npy")
        value = feeds[port.name]
        np.save(paths[-1], np.require(value, requirements="C") if port.dtype in NPY_CODES else
                np.frombuffer(plan_bytes(value, port.dtype), np.uint8))
    return paths


def qemu() -> str | None:
    return shutil.which("qemu-aarch64")
