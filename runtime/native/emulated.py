"""Runs plans with an `ep_run` that lives outside this process (the ARM64 build under qemu-aarch64 for `neon`, the
wasm32 build in node for `wasm`): inputs and outputs go through .npy files in a temporary folder."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from edgepack.runtime.errors import EdgepackError

from .epk import port_names


class EmulatedSession:
    """One plan run by `command` (emulator + runner binary) per call."""

    def __init__(self, plan: bytes, command: list[str]) -> None:
        self.folder = tempfile.TemporaryDirectory(prefix="edgepack-plan-")
        self.plan_path = Path(self.folder.name) / "plan.epk"
        self.plan_path.write_bytes(plan)
        self.command = command
        self.input_names, self.output_names = port_names(plan)

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        with tempfile.TemporaryDirectory(dir=self.folder.name) as run_folder:
            folder = Path(run_folder)
            inputs = []
            for index, name in enumerate(self.input_names):
                inputs.append(folder / f"in{index}.npy")
                np.save(inputs[-1], np.ascontiguousarray(feeds[name]))
            proc = subprocess.run([*self.command, str(self.plan_path), str(folder), *map(str, inputs)],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise EdgepackError(f"the runtime core failed: {proc.stderr.strip()[:1000]}",
                                    where=" ".join(self.command), fix="check the emulator and the cross build")
            return {name: np.load(folder / f"{i}.npy") for i, name in enumerate(self.output_names)}


def qemu() -> str | None:
    return shutil.which("qemu-aarch64")
