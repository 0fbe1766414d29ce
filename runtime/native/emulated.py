"""Runs plans with an `ep_run` that lives outside this process (the ARM64 build under qemu-aarch64 for `neon`, the
wasm32 build in node for `wasm`): inputs and outputs go through .npy files in a temporary folder, as their plan bytes
(1-D uint8) for the dtypes numpy has no code for."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from edgepack.runtime.errors import EdgepackError

from .epk import PortInfo, from_plan_bytes, plan_bytes, ports

NPY_CODES = {"float32", "uint8", "int8", "uint16", "int16", "int32", "int64", "bool", "float16", "float64", "uint32",
             "uint64"}
"""The dtypes .npy files spell (cli/npy.c and wasm/ep_run.mjs read and write the same)."""


class EmulationTimeout(EdgepackError):
    """A run under emulation took longer than its session allows."""


class EmulatedSession:
    """One plan run by `command` (emulator + runner binary) per call, each call stopped after `timeout_s` seconds
    (None: no limit)."""

    def __init__(self, plan: bytes, command: list[str], timeout_s: float | None = None) -> None:
        self.folder = tempfile.TemporaryDirectory(prefix="edgepack-plan-")
        self.plan_path = Path(self.folder.name) / "plan.epk"
        self.plan_path.write_bytes(plan)
        self.command = command
        self.timeout_s = timeout_s
        self.inputs, self.outputs = ports(plan)

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        with tempfile.TemporaryDirectory(dir=self.folder.name) as run_folder:
            folder = Path(run_folder)
            inputs = save_inputs(folder, self.inputs, feeds)
            try:
                proc = subprocess.run([*self.command, str(self.plan_path), str(folder), *map(str, inputs)],
                                      capture_output=True, text=True, timeout=self.timeout_s)
            except subprocess.TimeoutExpired as error:
                raise EmulationTimeout(f"the run under emulation did not finish in {self.timeout_s:g} s",
                                       where=" ".join(self.command),
                                       fix="run it without a time limit") from error
            if proc.returncode != 0:
                raise EdgepackError(f"the runtime core failed: {proc.stderr.strip()[:1000]}",
                                    where=" ".join(self.command), fix="check the emulator and the cross build")
            return {port.name: self._read(folder / f"{i}.npy", port) for i, port in enumerate(self.outputs)}

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
