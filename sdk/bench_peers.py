"""Peers beside a device bench on this host: onnxruntime or OpenVINO running the bundle's source model in this
process, one thread, on the inputs the bundle ran on, with the same first-run, warm-up and timed runs; each result
follows the bench result schema (edgepack-bench/1) so that it sits beside the bundle's in text, JSON and HTML."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from edgepack.runtime.errors import EdgepackError

from .bench_result import check_output, result_dict, thread_count
from .devices import Device, DeviceFacts
from .peak_rss import PeakRSS

Feeds = Mapping[str, np.ndarray]
Runner = Callable[[Feeds], dict[str, np.ndarray]]


def load_onnxruntime(source: Path, threads: int = 1) -> tuple[str, Runner]:
    """onnxruntime on `source`: all graph optimizations, `threads` intra-op threads."""
    from .bench import import_onnxruntime, onnxruntime_engine

    engine = onnxruntime_engine(source, threads)
    return f"onnxruntime {import_onnxruntime().__version__}", engine.run


def openvino_reason(error: Exception) -> str:
    """The line of an OpenVINO error that says what failed: its last, under the "Exception from src/..." lines of
    the call stack it opens with."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__


def load_openvino(source: Path, threads: int = 1) -> tuple[str, Runner]:
    """OpenVINO on `source` on the CPU: f32 inference (not its bf16 default on AMX), on `threads` threads."""
    try:
        import openvino
    except ImportError:
        raise EdgepackError("--compare openvino needs the openvino package, which is not installed",
                            fix="pip install 'edgepack[openvino]'") from None
    try:
        compiled = openvino.Core().compile_model(str(source), "CPU", {"INFERENCE_PRECISION_HINT": "f32",
                                                                       "INFERENCE_NUM_THREADS": threads})
    except Exception as error:  # noqa: BLE001  (OpenVINO's own error types)
        raise EdgepackError(f"OpenVINO could not compile {source.name}: {openvino_reason(error)}", where=str(source),
                            fix="bench without --compare openvino, or check the model with OpenVINO alone") from None
    request = compiled.create_infer_request()
    names = [output.get_any_name() for output in compiled.outputs]

    def run(feeds: Feeds) -> dict[str, np.ndarray]:
        results = request.infer(dict(feeds))
        return {name: np.array(results[output]) for name, output in zip(names, compiled.outputs)}

    return f"OpenVINO {openvino.__version__.split('-')[0]}", run


PEERS: dict[str, Callable[[Path, int], tuple[str, Runner]]] = {"onnxruntime": load_onnxruntime,
                                                               "openvino": load_openvino}
"""The peers a device bench on this host runs beside the bundle."""


def peer_result(peer: str, source: Path, feeds: Feeds, beside: dict[str, Any], device: Device, facts: DeviceFacts,
                threads: int = 1) -> dict[str, Any]:
    """`peer` on the source model on `threads` threads, on the `feeds` the bundle's result `beside` ran on and with
    its counts: load, then its warm-up and timed runs (the first of them the first run), the outputs checked against
    `reference` on the source model; the result in the bench schema."""
    from edgepack.runtime import Session


    gc.collect()
    with PeakRSS() as rss:
        start = time.perf_counter()
        engine, run = PEERS[peer](source, threads)
        load_ms = (time.perf_counter() - start) * 1000
        times, outputs = [], {}
        for _ in range(beside["warmup"] + beside["runs"]):
            start = time.perf_counter()
            outputs = run(feeds)
            times.append((time.perf_counter() - start) * 1000)
    expected = Session(source, providers=["reference"]).run(dict(feeds))
    checks = [check_output(name, np.asarray(value), np.asarray(outputs[name])) for name, value in expected.items()]
    return result_dict(engine=f"{engine} on the source model {source.name}, {thread_count(threads)}", spec=device.spec,
                       facts=facts,
                       bundle=Path(beside["bundle"]["path"]), load_ms=load_ms, times=times, warmup=beside["warmup"],
                       peak_rss_mb=rss.peak_mb, inputs=beside["inputs"], checks=checks,
                       against="reference on the source model")
