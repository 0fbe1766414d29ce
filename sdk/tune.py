"""Never slower, checked on the model itself: int8 compute is chosen per op class from the measured table
(`int8_speed.toml`, single-op models) or, with `--tune`, by timing the model with each class alone in int8 against
fp32 on the target's runtime. "Faster" means at most `WORTH_IT` (0.9) of fp32's latency. Where that runtime is
installed here, the chosen model is then timed whole against fp32; if it is not faster, the classes are timed one by
one (when they were not already), and if the model is still not faster the build keeps int8 weights with fp32
compute."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx

from edgepack.packager.quantize import QuantizeResult
from edgepack.packager.quantize.never_slower import (
    FORM_CLASSES,
    WORTH_IT,
    op_class,
    slower_in_int8,
)
from edgepack.runtime.errors import EdgepackError
from edgepack.targets import ShippedRuntime

Feeds = dict[str, np.ndarray]
Timed = Callable[[], object]
Requantize = Callable[[frozenset[str]], QuantizeResult]
BLOCKS = 5
BLOCK_SECONDS = 0.05
"""About how long one block of calls to one variant lasts; blocks rotate over the variants."""


@dataclass(frozen=True)
class SpeedChoice:
    slower: frozenset[str]
    """Quantized nodes kept in float because their op class is slower in int8."""
    tuned: dict[str, float] | None
    """int8 / fp32 latency of the model with each class alone in int8, when timed."""
    int8_over_fp32: float | None
    """The chosen model's latency over fp32's on `runtime`, or None where it was not timed (that runtime is not
    installed here, or no class was left in int8)."""
    runtime: str | None
    fp32_compute: bool = False
    """int8 compute is left out: no op class was faster in it, or the chosen model was not faster as a whole."""


def choose_int8_compute(source: onnx.ModelProto, quantized: QuantizeResult, requantize: Requantize,
                        excluded: frozenset[str], runtime: ShippedRuntime | None, form: str, feeds: Feeds,
                        tune: bool) -> SpeedChoice:
    """Which quantized nodes stay float for speed on `runtime`, the one the target's bundles run on.
    `requantize(keep)` quantizes again with the nodes in `keep` left in float."""
    name = runtime.name if runtime else None
    make = _timer(runtime) if runtime and runtime.installed() else None
    if tune and make is None:
        raise EdgepackError(f"--tune cannot time int8 against fp32 here: the runtime the target's bundles run on "
                            f"({name or 'none known'}) is not installed on this machine",
                            where="quantize stage", fix="build without --tune: the measured table then decides")
    classes = _classes(source, quantized, excluded, form)
    candidates = set().union(*classes.values()) if classes else set()
    if tune:
        slower, tuned = _per_class(source, classes, requantize, excluded, make, feeds)
    else:
        slower, tuned = slower_in_int8(quantized.model, name, form) & candidates, None
    if candidates <= slower:
        return SpeedChoice(slower, tuned, None, name, fp32_compute=True)
    if make is None:
        return SpeedChoice(slower, tuned, None, None)
    ratio = _whole_ratio(source, requantize(excluded | slower), make, feeds)
    if ratio > WORTH_IT and not tune:
        slower, tuned = _per_class(source, classes, requantize, excluded, make, feeds)
        if candidates <= slower:
            return SpeedChoice(slower, tuned, round(ratio, 3), name, fp32_compute=True)
        ratio = _whole_ratio(source, requantize(excluded | slower), make, feeds)
    return SpeedChoice(slower, tuned, round(ratio, 3), name, fp32_compute=ratio > WORTH_IT)


def _timer(runtime: ShippedRuntime) -> Callable[[onnx.ModelProto, Feeds], Timed]:
    """Makes a timed call of a model on `runtime`."""

    def make(model: onnx.ModelProto, feeds: Feeds) -> Timed:
        run = runtime.run(model)
        return lambda: run(feeds)

    return make


def _classes(source: onnx.ModelProto, quantized: QuantizeResult, excluded: frozenset[str], form: str
             ) -> dict[str, set[str]]:
    """Op class -> the quantized nodes of that class, for the classes `form` computes in int8."""
    initializers = {t.name: t for t in source.graph.initializer}
    by_name = {node.name: node for node in source.graph.node}
    classes: dict[str, set[str]] = {}
    for name in set(quantized.nodes) - excluded:
        kind = op_class(by_name[name], initializers) if name in by_name else None
        if kind in FORM_CLASSES[form]:
            classes.setdefault(kind, set()).add(name)
    return classes


def _per_class(source: onnx.ModelProto, classes: dict[str, set[str]], requantize: Requantize, excluded: frozenset[str],
               make: Callable[[onnx.ModelProto, Feeds], Timed], feeds: Feeds
               ) -> tuple[frozenset[str], dict[str, float]]:
    candidates = set().union(*classes.values()) if classes else set()
    variants = {"fp32": make(source, feeds)}
    for kind, nodes in classes.items():
        variants[kind] = make(requantize(frozenset(excluded | (candidates - nodes))).model, feeds)
    medians = _median_seconds(variants)
    ratios = {kind: medians[kind] / medians["fp32"] for kind in classes}
    slower = frozenset(name for kind, nodes in classes.items() if ratios[kind] > WORTH_IT for name in nodes)
    return slower, {kind: round(ratio, 3) for kind, ratio in sorted(ratios.items())}


def _whole_ratio(source: onnx.ModelProto, chosen: QuantizeResult, make: Callable[[onnx.ModelProto, Feeds], Timed],
                 feeds: Feeds) -> float:
    medians = _median_seconds({"fp32": make(source, feeds), "int8": make(chosen.model, feeds)})
    return medians["int8"] / medians["fp32"]


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
