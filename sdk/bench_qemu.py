"""`edgepack bench BUNDLE --device qemu-arm64`: cross-compiles a C library bundle's example, runs it under
qemu-aarch64, and checks its outputs against the `reference` provider on the bundle's own graph. Emulated timings
are reported, but they are not the speed of any device."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgepack.runtime.errors import EdgepackError

from .input_files import check_names
from .sample_inputs import dims_of, sample_feeds

DEVICES = ("qemu-arm64",)
TOLERANCE = 1e-4
"""Largest allowed max abs diff from `reference`, relative to the output's scale (its largest magnitude, at least
1)."""
NOTE = ("Emulated under qemu-aarch64: these timings are not the speed of an ARM64 device (emulation is several "
        "times slower than a board and does not show NEON's gain); the run checks correctness only.")


@dataclass(frozen=True)
class OutputCheck:
    name: str
    shape: list[int]
    max_abs_diff: float
    scale: float
    """max(1, largest magnitude of the reference output): the diff is judged relative to it."""
    passed: bool


@dataclass(frozen=True)
class DeviceBenchReport:
    bundle: str
    device: str
    runs: int
    inputs: list[dict[str, Any]]
    emulated_median_ms: float
    outputs: list[OutputCheck]
    tolerance: float

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.outputs)

    def as_dict(self) -> dict[str, Any]:
        return {"bundle": self.bundle, "device": self.device, "runs": self.runs, "inputs": self.inputs,
                "emulated_median_ms": self.emulated_median_ms, "outputs": [asdict(o) for o in self.outputs],
                "tolerance": self.tolerance, "passed": self.passed, "note": NOTE}


def check_output(name: str, expected: np.ndarray, actual: np.ndarray) -> OutputCheck:
    """`actual` against `expected`: max abs diff over the output's scale, within TOLERANCE."""
    if expected.shape != actual.shape:
        return OutputCheck(name, list(actual.shape), float("inf"), 1.0, False)
    a, b = np.asarray(expected, np.float64), np.asarray(actual, np.float64)
    diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    scale = max(1.0, float(np.max(np.abs(a)))) if a.size else 1.0
    return OutputCheck(name, list(actual.shape), diff, scale, bool(diff <= TOLERANCE * scale))


def bench_on_device(bundle: str | Path, device: str, runs: int = 10, feeds: Mapping[str, np.ndarray] | None = None,
                    dims: Mapping[str, int] | None = None, seed: int = 0) -> DeviceBenchReport:
    """Runs the bundle's C example `runs` times under emulation on `feeds` (missing inputs generated) and compares
    the outputs with the `reference` provider's on the bundle's graph."""
    from edgepack.runtime import Session
    from edgepack.targets.embedded.example_run import build_example, read_library, run_example

    if device not in DEVICES:
        raise EdgepackError(f"unknown device {device!r}", fix=f"use one of: {', '.join(DEVICES)}")
    library = read_library(bundle)
    oracle = Session(library.folder, providers=["reference"])
    given = dict(feeds or {})
    check_names(given, [s.name for s in oracle.inputs], require_all=False)
    generated = sample_feeds([s for s in oracle.inputs if s.name not in given], seed,
                             {**dims_of(oracle.inputs, given), **(dims or {})})
    chosen = {s.name: given.get(s.name, generated.get(s.name)) for s in oracle.inputs}
    try:
        expected = oracle.run(chosen)
    except EdgepackError:
        raise
    except Exception as error:  # noqa: BLE001  (the model itself rejects these inputs)
        raise EdgepackError(f"the bundle's graph fails on these inputs on reference: {type(error).__name__}: "
                            f"{error}", where=str(bundle),
                            fix="give real inputs with --input NAME=FILE.npy (silero-vad's sr must be 8000 or 16000)"
                            ) from error
    with tempfile.TemporaryDirectory(prefix="edgepack-bench-") as tmp:
        binary = build_example(library, Path(tmp))
        result = run_example(library, binary, chosen, repeat=runs)
    median = result.median_ms if result.median_ms is not None else float("nan")
    inputs = [{"name": n, "dtype": v.dtype.name, "shape": list(v.shape), "from": "file" if n in given else
               "generated"} for n, v in chosen.items()]
    checks = [check_output(name, np.asarray(value), result.outputs[name]) for name, value in expected.items()]
    return DeviceBenchReport(str(bundle), device, runs, inputs, median, checks, TOLERANCE)


def summary_lines(report: DeviceBenchReport) -> list[str]:
    """The report as plain lines: inputs, one line per output, the verdict and the emulation note."""
    lines = [f"bench {report.bundle} on {report.device}: {report.runs} runs of the C example",
             "inputs: " + ", ".join(f"{i['name']} {i['dtype']}{i['shape']} ({i['from']})" for i in report.inputs)]
    for check in report.outputs:
        lines.append(f"output {check.name} {check.shape}: max abs diff {check.max_abs_diff:.3g} from reference "
                     f"(scale {check.scale:.3g}): {'ok' if check.passed else 'FAIL'}")
    verdict = "PASS" if report.passed else "FAIL"
    lines.append(f"correctness: {verdict} (max abs diff within {report.tolerance:g} of each output's scale)")
    lines.append(f"emulated median: {report.emulated_median_ms:.3f} ms (not device speed)")
    lines.append(NOTE)
    return lines
