"""Per-op times of a plan on the C core: the profiling build of `ep_run` (the executor times every op it runs) on
this host, or its aarch64 build under qemu-aarch64 (emulated time)."""

from __future__ import annotations

import subprocess
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.native.build import aarch64_runner, runner
from edgepack.runtime.native.emulated import qemu, save_inputs
from edgepack.runtime.native.epk import ports
from edgepack.runtime.native.op_contract import contract

DEVICES = ("host", "qemu-arm64")


@dataclass(frozen=True)
class OpTime:
    index: int
    """The op's position in the plan."""
    kind: str
    """The plan op (Conv, MatMul, ...)."""
    calls: int
    """Times it ran over all runs (an op in a skipped branch runs fewer times)."""
    ms: float
    """Its mean time per run."""


@dataclass(frozen=True)
class OpProfile:
    device: str
    emulated: bool
    runs: int
    run_ms: float
    """The mean time of a whole run, as the runner measured it around `ep_run`."""
    ops: list[OpTime]

    @property
    def ops_ms(self) -> float:
        """The per-op times summed: the part of a run spent inside kernels."""
        return sum(op.ms for op in self.ops)

    def by_kind(self) -> dict[str, float]:
        """Mean time per run of each op kind, largest first."""
        totals: dict[str, float] = defaultdict(float)
        for op in self.ops:
            totals[op.kind] += op.ms
        return dict(sorted(totals.items(), key=lambda item: -item[1]))

    def as_dict(self) -> dict:
        return {"device": self.device, "emulated": self.emulated, "runs": self.runs, "run_ms": self.run_ms,
                "ops_ms": self.ops_ms, "by_kind": self.by_kind(), "ops": [vars(op) for op in self.ops]}


def profile_plan(plan: Path, feeds: dict[str, np.ndarray], runs: int = 10, device: str = "host",
                 timeout_s: float | None = None) -> OpProfile:
    """Runs `plan` `runs` times on `feeds` with the profiling runner of `device` and returns its per-op times; an
    error when it takes over `timeout_s`."""
    if device not in DEVICES:
        raise EdgepackError(f"no per-op profile on device {device!r}", fix=f"use one of {', '.join(DEVICES)}")
    emulated = device == "qemu-arm64"
    command = [str(runner(profile=True))]
    if emulated:
        emulator = qemu()
        if not emulator:
            raise EdgepackError("qemu-aarch64 is not installed", where=device, fix="apt-get install qemu-user")
        command = [emulator, str(aarch64_runner(profile=True))]
    inputs, _ = ports(plan.read_bytes())
    with tempfile.TemporaryDirectory(prefix="edgepack-profile-") as tmp:
        paths = save_inputs(Path(tmp), inputs, feeds)
        try:
            proc = subprocess.run([*command, str(plan), tmp, "--repeat", str(runs), *map(str, paths)],
                                  capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise EdgepackError(f"{runs} run{'s' if runs > 1 else ''} of the plan took over {timeout_s:g} s"
                                f"{' under emulation' if emulated else ''}", where=device,
                                fix="time it on the device itself: edgepack bench BUNDLE --device "
                                    "ssh://user@board (or adb)") from None
    if proc.returncode != 0:
        raise EdgepackError(f"the profiling run failed: {proc.stderr.strip()[:1000]}", where=str(plan),
                            fix="check the plan with `edgepack inspect`")
    return parse(proc.stdout, device, emulated, runs)


def parse(printed: str, device: str, emulated: bool, runs: int) -> OpProfile:
    """The profiling runner's lines (`mean_ms M`, `op INDEX OP_ID CALLS TOTAL_NS`) as an OpProfile."""
    names = {op.id: op.name for op in contract().ops}
    run_ms, ops = 0.0, []
    for line in printed.splitlines():
        words = line.split()
        if words[:1] == ["mean_ms"]:
            run_ms = float(words[1])
        elif words[:1] == ["op"]:
            index, op_id, calls, nanoseconds = map(int, words[1:5])
            ops.append(OpTime(index, names.get(op_id, f"op {op_id}"), calls, nanoseconds / 1e6 / runs))
    return OpProfile(device, emulated, runs, run_ms, ops)
