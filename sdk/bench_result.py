"""The bench result, schema edgepack-bench/1 (docs/bench.schema.json): the figures of one engine on one device, built
from its timed runs, output checks and per-op times, and the same as plain lines."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgepack.runtime.bundle_format import read_manifest, sha256_file

from .devices import DeviceFacts
from .op_profile import OpProfile

SCHEMA = "edgepack-bench/1"
TOLERANCE = 1e-4
"""Largest allowed max abs diff from `reference`, relative to the output's scale (its largest magnitude, at least
1)."""
TRIM = 0.1
"""The share of runs cut from each end for the trimmed mean."""
EMULATED_NOTE = ("emulated under qemu-aarch64: these timings are not the speed of an ARM64 device (emulation is "
                 "several times slower than a board and does not show NEON's gain)")


@dataclass(frozen=True)
class OutputCheck:
    name: str
    shape: list[int]
    max_abs_diff: float
    scale: float
    """max(1, largest magnitude of the reference output): the diff is judged relative to it."""
    cosine: float
    passed: bool


def check_output(name: str, expected: np.ndarray, actual: np.ndarray, min_cosine: float | None = None
                 ) -> OutputCheck:
    """`actual` against `expected`: max abs diff within TOLERANCE of the output's scale, or, given `min_cosine` (a
    bundle whose weights differ from the fp32 source by design), a cosine of at least that; a NaN or Inf where the
    reference has none fails."""
    if expected.shape != actual.shape:
        return OutputCheck(name, list(actual.shape), float("inf"), 1.0, 0.0, False)
    a, b = np.asarray(expected, np.float64), np.asarray(actual, np.float64)
    diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    scale = max(1.0, float(np.max(np.abs(a)))) if a.size else 1.0
    similarity = cosine(a, b) if a.size else 1.0
    passed = diff <= TOLERANCE * scale if min_cosine is None else similarity >= min_cosine
    return OutputCheck(name, list(actual.shape), diff, scale, similarity,
                       bool(passed and np.array_equal(np.isfinite(a), np.isfinite(b))))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    x, y = a.ravel(), b.ravel()
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    if norm == 0.0:
        return 1.0 if not np.any(x - y) else 0.0
    return float(np.dot(x, y) / norm)


@dataclass(frozen=True)
class LatencyFigures:
    p50: float
    p90: float
    p99: float
    mean: float
    std: float
    trimmed_mean: float

    @classmethod
    def of(cls, times_ms: list[float]) -> LatencyFigures:
        ordered = sorted(times_ms)
        cut = int(len(ordered) * TRIM)
        kept = ordered[cut:len(ordered) - cut] or ordered
        return cls(*(float(np.percentile(ordered, q)) for q in (50, 90, 99)), statistics.fmean(ordered),
                   statistics.pstdev(ordered), statistics.fmean(kept))


def thread_count(threads: int) -> str:
    """"1 thread", "4 threads": as engine names say it."""
    return f"{threads} thread{'s' if threads > 1 else ''}"


def result_dict(engine: str, spec: str, facts: DeviceFacts, bundle: Path, load_ms: float, times: list[float],
                warmup: int, peak_rss_mb: float | None, inputs: list[dict[str, Any]], checks: list[Any],
                ops: OpProfile | None = None, against: str = "reference", first_run_ms: float | None = None,
                fidelity_rule: str | None = None, device_details: dict[str, Any] | None = None,
                note: str = "") -> dict[str, Any]:
    """One engine's figures in the bench result schema. `times` are all its runs: the first (unless `first_run_ms`
    gives it apart), then the runs after `warmup` are the timed ones."""
    manifest = read_manifest(bundle)
    first = times[0] if first_run_ms is None else first_run_ms
    timed = times[warmup:] if len(times) > warmup else times
    latency = LatencyFigures.of(timed)
    fidelity = {"against": against, "tolerance": TOLERANCE, "outputs": [vars(check) for check in checks],
                "passed": all(c.passed for c in checks)}
    if fidelity_rule:
        fidelity["rule"] = fidelity_rule
    return {
        "schema": SCHEMA,
        "engine": engine,
        "device": {"spec": spec, **facts.as_dict(), **(device_details or {})},
        "bundle": {"path": str(bundle), "profile": manifest["profile"]["name"], "target": manifest["target"],
                   "precision": {key: manifest["profile"]["precision"][key] for key in ("weights", "activations")},
                   "manifest_sha256": sha256_file(bundle / "manifest.json")},
        "inputs": inputs,
        "load_ms": load_ms,
        "first_run_ms": first,
        "warmup": warmup,
        "runs": len(timed),
        "latency_ms": vars(latency),
        "times_ms": timed,
        "runs_per_s": 1000.0 / latency.p50 if latency.p50 > 0 else None,
        "memory": {"peak_rss_mb": peak_rss_mb},
        "fidelity": fidelity,
        "ops": ops.as_dict() if ops else None,
        "emulated": facts.emulated,
        "note": " ".join(part for part in (EMULATED_NOTE if facts.emulated else "", note) if part),
    }


def summary_lines(result: dict[str, Any]) -> list[str]:
    """A bench result as plain lines: device, inputs, latency, memory, one line per output and the verdict."""
    device, latency = result["device"], result["latency_ms"]
    label = " (emulated)" if result["emulated"] else ""
    lines = [f"bench {result['engine']} ({result['bundle']['profile']} bundle {result['bundle']['path']}) on "
             f"{device['spec']}{label}: {device['cpu']}, {device['cores']} cores, {device['os']}, {device['arch']}",
             "inputs: " + ", ".join(f"{i['name']} {i['dtype']}{i['shape']} ({i['from']})" for i in result["inputs"]),
             f"load {result['load_ms']:.3f} ms, first run {result['first_run_ms']:.3f} ms{label}",
             f"{result['runs']} runs after {result['warmup']} warm-up{label}: p50 {latency['p50']:.3f} ms, "
             f"p90 {latency['p90']:.3f}, p99 {latency['p99']:.3f}, mean {latency['mean']:.3f} "
             f"(std {latency['std']:.3f}, trimmed {latency['trimmed_mean']:.3f})"]
    if result.get("ops"):
        lines.append(ops_line(result["ops"]) + label)
    if result["memory"]["peak_rss_mb"] is not None:
        lines.append(f"peak resident memory: {result['memory']['peak_rss_mb']:.1f} MB")
    fidelity = result["fidelity"]
    for check in fidelity["outputs"]:
        lines.append(f"output {check['name']} {check['shape']}: max abs diff {check['max_abs_diff']:.3g} from "
                     f"reference (scale {check['scale']:.3g}): {'ok' if check['passed'] else 'FAIL'}")
    lines.append(f"correctness: {'PASS' if fidelity['passed'] else 'FAIL'} (max abs diff within "
                 f"{fidelity['tolerance']:g} of each output's scale)")
    if result["note"]:
        lines.append(result["note"])
    return lines


def ops_line(ops: dict[str, Any], kinds: int = 5) -> str:
    """The op kinds that take longest, with their share of the profiled run."""
    by_kind = ops["by_kind"]
    total = ops["run_ms"] or 1.0
    top = ", ".join(f"{kind} {ms:.3g} ms ({ms / total:.0%})" for kind, ms in list(by_kind.items())[:kinds])
    return (f"per op ({ops['runs']} profiled runs, {len(ops['ops'])} ops, their sum {ops['ops_ms']:.3g} ms of "
            f"{ops['run_ms']:.3g} ms a run): {top}")

