"""How fast a bundle runs on this host, timed where its target's code can run here: the generic bundle on the `cpu`
provider, the OpenVINO bundle on OpenVINO, the web bundle's wasm in headless Chromium, and the plan of a C library or
android bundle on the arm64 C core under qemu-aarch64 (emulated: not a device's speed). CoreML runs only on Apple
systems, so the iOS bundle is not timed."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgepack.runtime.errors import EdgepackError

RUNS = 5
EMULATED_BUDGET_S = 5.0
"""Seconds an emulated timing may take for its first run, and again for the runs after it."""


@dataclass(frozen=True)
class Latency:
    engine: str
    """Where it ran, in words."""
    p50_ms: float | None
    runs: int
    emulated: bool = False
    not_timed: str | None = None
    """Why the bundle was not timed here."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


Feeds = Mapping[str, np.ndarray]


def on_cpu(bundle: Path, source: Path, feeds: Feeds, runs: int) -> Latency:
    from .bench import bench

    report = bench(bundle, provider="cpu", runs=runs, warmup=1, feeds=feeds)
    return Latency("this host, cpu provider (C core)", report.engines[0].p50_ms, runs)


def on_openvino(bundle: Path, source: Path, feeds: Feeds, runs: int) -> Latency:
    from .bench import bench

    report = bench(bundle, runs=runs, warmup=1, feeds=feeds)
    return Latency("this host, OpenVINO", report.engines[0].p50_ms, runs)


def in_chromium(bundle: Path, source: Path, feeds: Feeds, runs: int) -> Latency:
    from edgepack.targets.web.chromium import missing

    from .bench_chromium import bench_in_chromium

    reason = missing()
    if reason:
        return Latency("headless Chromium", None, 0, not_timed=reason)
    report = bench_in_chromium(bundle, provider="wasm", runs=runs, feeds=feeds, source=source)
    return Latency(f"headless {report.browser}, wasm", report.timing.p50_ms, runs)


def plan_under_qemu(bundle: Path, source: Path, feeds: Feeds, runs: int) -> Latency:
    """The bundle's plan on the arm64 C core (the code of the C library and of the android arm64-v8a library) under
    qemu-aarch64: one run first, not timed when it takes over EMULATED_BUDGET_S, and `runs` more only where they
    fit in that budget too (an emulated run of a large model takes tens of seconds, and it is not a device's time
    anyway)."""
    from edgepack.runtime.bundle_format import read_manifest
    from edgepack.runtime.native.emulated import qemu

    from .op_profile import profile_plan

    if qemu() is None:
        return Latency("qemu-aarch64", None, 0, not_timed="qemu-aarch64 is not installed (apt-get install qemu-user)")
    plan = bundle / read_manifest(bundle)["partitions"][0]["artifact"]
    profile = profile_plan(plan, feeds, runs=1, device="qemu-arm64", timeout_s=EMULATED_BUDGET_S)
    timed = 1
    if profile.run_ms * runs / 1000 <= EMULATED_BUDGET_S:
        profile = profile_plan(plan, feeds, runs=runs, device="qemu-arm64")
        timed = runs
    return Latency("qemu-aarch64, the arm64 C core (emulated, not a device's speed)", profile.run_ms, timed,
                   emulated=True)


def not_here(bundle: Path, source: Path, feeds: Feeds, runs: int) -> Latency:
    return Latency("CoreML", None, 0, not_timed="CoreML runs only on macOS and iOS; time it with the Swift package's "
                                                 "tests on a Mac or an iPhone")


def peer_latency(source: Path, feeds: Feeds, runs: int = RUNS) -> Latency:
    """onnxruntime on the source model on this host, one thread, on the same feeds: the peer beside the bundles."""
    from .bench import onnxruntime_figures

    try:
        import onnxruntime
    except ImportError:
        return Latency("onnxruntime", None, 0, not_timed="onnxruntime is not installed (pip install onnxruntime)")
    try:
        figures = onnxruntime_figures(source, feeds, runs)
    except EdgepackError as error:
        return Latency("onnxruntime", None, 0, not_timed=error.paragraph())
    return Latency(f"this host, onnxruntime {onnxruntime.__version__} on the source model, 1 thread", figures.p50_ms,
                   runs)


TIMERS: dict[str, Callable[[Path, Path, Feeds, int], Latency]] = {
    "generic": on_cpu, "openvino": on_openvino, "web": in_chromium, "embedded": plan_under_qemu, "ios": not_here,
    "android": plan_under_qemu}
"""How each target's bundle is timed on this host."""


def host_latency(target: str, bundle: Path, source: Path, feeds: Feeds, runs: int = RUNS) -> Latency:
    """The bundle's median latency on this host over `runs` runs, or why it was not timed."""
    timer = TIMERS.get(target)
    if timer is None:
        return Latency(target, None, 0, not_timed=f"no way to time a {target!r} bundle on this host")
    try:
        return timer(bundle, source, feeds, runs)
    except EdgepackError as error:
        return Latency(timer.__name__.replace("_", " "), None, 0, not_timed=error.paragraph())
