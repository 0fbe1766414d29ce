"""`--tune`: decide never-slower at build time by timing the model itself on the target's runtime: the fp32 model
against, for each quantizable op class present, the model with only that class in int8. A class stays int8 only
if its model ran faster. This replaces the checked-in table (`int8_speed.toml`, measured on single-op models) with
the model's own chains, shapes and this machine."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np
import onnx

from edgepack.packager.quantize import QuantizeResult
from edgepack.packager.quantize.never_slower import RUNTIME_OF_TARGET, op_class

from .errors import EdgepackError

Feeds = dict[str, np.ndarray]
Timed = Callable[[], object]
BLOCKS = 5
BLOCK_SECONDS = 0.05
"""About how long one block of calls to one variant lasts; blocks rotate over the variants."""


def tune_int8(reference: onnx.ModelProto, lowered: QuantizeResult, lower: Callable[[frozenset[str]], QuantizeResult],
              keep: frozenset[str], target: str, feeds: Feeds) -> tuple[frozenset[str], dict[str, float]]:
    """The lowered nodes whose op class made the model slower on `target`'s runtime, and the int8 / fp32 latency
    ratio measured per class. `lower(keep)` quantizes with the nodes in `keep` left in float."""
    make = RUNNERS.get(RUNTIME_OF_TARGET.get(target, ""))
    if make is None:
        raise EdgepackError(f"--tune cannot time the {target!r} target on this machine: only "
                            f"{', '.join(sorted(RUNTIME_OF_TARGET))} bundles run here",
                            where="quantize stage", fix="build without --tune: the measured table then decides")
    initializers = {t.name: t for t in reference.graph.initializer}
    by_name = {node.name: node for node in reference.graph.node}
    classes: dict[str, set[str]] = {}
    for name in set(lowered.nodes) - keep:
        kind = op_class(by_name[name], initializers) if name in by_name else None
        if kind is not None:
            classes.setdefault(kind, set()).add(name)
    candidates = set().union(*classes.values()) if classes else set()
    variants = {"fp32": make(reference, feeds)}
    for kind, nodes in classes.items():
        variants[kind] = make(lower(frozenset(keep | (candidates - nodes))).model, feeds)
    medians = _median_seconds(variants)
    ratios = {kind: medians[kind] / medians["fp32"] for kind in classes}
    slower = frozenset(name for kind, nodes in classes.items() if ratios[kind] >= 1.0 for name in nodes)
    return slower, {kind: round(ratio, 3) for kind, ratio in sorted(ratios.items())}


def _median_seconds(variants: dict[str, Timed]) -> dict[str, float]:
    """Per variant, the median over BLOCKS blocks of its mean seconds per call; the order rotates every block."""
    calls = {}
    for name, run in variants.items():
        run()
        start = time.perf_counter()
        run()
        calls[name] = max(3, int(BLOCK_SECONDS / max(time.perf_counter() - start, 1e-6)))
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for block in range(BLOCKS):
        for name in names[block % len(names):] + names[:block % len(names)]:
            run = variants[name]
            start = time.perf_counter()
            for _ in range(calls[name]):
                run()
            seconds[name].append((time.perf_counter() - start) / calls[name])
    return {name: statistics.median(values) for name, values in seconds.items()}


def _onnxruntime(model: onnx.ModelProto, feeds: Feeds) -> Timed:
    try:
        import onnxruntime as ort
    except ImportError as error:
        raise EdgepackError("--tune for the generic target times onnxruntime, which is not installed",
                            where="quantize stage", fix="pip install onnxruntime, or build without --tune") from error
    from edgepack.targets.generic import onnxruntime_session_config

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.log_severity_level = 3
    for key, value in onnxruntime_session_config(model).items():
        options.add_session_config_entry(key, value)
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    copy.ir_version = min(copy.ir_version, 10)
    session = ort.InferenceSession(copy.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return lambda: session.run(None, feeds)


def _openvino(model: onnx.ModelProto, feeds: Feeds) -> Timed:
    from edgepack.runtime.providers import PROVIDERS

    compiled = PROVIDERS["openvino"].compile(model, {"threads": 1})
    return lambda: compiled.run(feeds)


RUNNERS: dict[str, Callable[[onnx.ModelProto, Feeds], Timed]] = {"onnxruntime": _onnxruntime, "openvino": _openvino}
"""Runtime name -> makes a timed call of a model on it (one thread)."""
