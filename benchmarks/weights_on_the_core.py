"""Quantized weights on the C core: is a plan with int8, int4 or fp16 weights ever slower than its fp32 plan?

    python benchmarks/weights_on_the_core.py [--blocks 7] [--block-ms 300] [--warmup 2] [--seed 0] [model ...]

Models: the sample models (default) or any `samples` name (the corpus too), slimmed as a build slims them, inputs
`samples.feeds(name, --seed)`. Variants, each lowered to an `.epk` plan at those shapes and run with `NativeSession`
(the host build, 1 thread):

    fp32               the slimmed model
    int8, int4, fp16   `quantize(m, precision)`: the weights a build with `--weights` ships (int8 per output
                       channel, int4 in blocks), expanded to float32 once when a session opens (ExpandWeight)
    int8 per call      the same int8 model lowered with `expand_weights=False`: every call dequantizes its weights,
                       as a plan over the profile's `peak_memory_mb` does

Latency: the variants are timed in --blocks blocks that rotate which goes first; in every block each variant opens a
fresh session, runs --warmup calls untimed, then N timed calls (N makes the fp32 block about --block-ms). A variant's
latency is the median of its block medians; the ratio is variant / fp32 (above 1: slower than fp32) with the range of
the per-block ratios, which shows this machine's noise. Memory: the plan's weight bytes (what ships) and its
session bytes (arena and scratch, which hold the expanded weights), from the `.epk` header. max |diff|: against
fp32 on the timed input (the quantization error, not the runtime's). Absolute times are this machine's: read the
ratios, and name the CPU beside them.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from edgepack import samples
from edgepack.compiler.lower import lower_to_plan
from edgepack.model_check import check_model
from edgepack.packager.quantize import quantize
from edgepack.packager.slim import slim
from edgepack.runtime.model_file import load_model
from edgepack.runtime.native import epk
from edgepack.runtime.native.binding import NativeSession

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.cpu_vs_onnxruntime import MB, geometric_mean, plan_memory, timed  # noqa: E402

VARIANTS = ("fp32", "int8", "int4", "fp16", "int8 per call")


def variant_plans(name: str, seed: int) -> tuple[dict[str, bytes], dict[str, np.ndarray]]:
    model = slim(check_model(load_model(samples.path(name)).model, name))[0]
    feeds = samples.feeds(name, seed)
    shapes = {key: value.shape for key, value in feeds.items()}
    plans = {"fp32": epk.write(lower_to_plan(model, shapes))}
    for precision in ("int8", "int4", "fp16"):
        plans[precision] = epk.write(lower_to_plan(quantize(model, precision).model, shapes))
    plans["int8 per call"] = epk.write(lower_to_plan(quantize(model, "int8").model, shapes, expand_weights=False))
    return plans, feeds


def time_variants(plans: dict[str, bytes], feeds: dict[str, np.ndarray], blocks: int, block_s: float,
                  warmup: int) -> dict[str, list[float]]:
    """Each variant's median per block, the order rotated every block, a fresh session per block."""
    first = NativeSession(plans["fp32"]).run
    runs = max(3, round(block_s / statistics.median(timed(first, feeds, warmup + 3)["wall"])))
    medians: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    for block in range(blocks):
        order = VARIANTS[block % len(VARIANTS):] + VARIANTS[:block % len(VARIANTS)]
        for variant in order:
            run = NativeSession(plans[variant]).run
            timed(run, feeds, warmup)
            gc.collect()
            medians[variant].append(statistics.median(timed(run, feeds, runs)["wall"]))
            del run
    return medians


def max_diff(plans: dict[str, bytes], variant: str, feeds: dict[str, np.ndarray]) -> float:
    ours, base = NativeSession(plans[variant]).run(feeds), NativeSession(plans["fp32"]).run(feeds)
    return max(float(np.max(np.abs(ours[key].astype(np.float64) - base[key]))) for key in base)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", default=["ppocr-det", "ppocr-rec", "ppocr-cls", "silero-vad"])
    parser.add_argument("--blocks", type=int, default=7)
    parser.add_argument("--block-ms", type=float, default=300)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    console = Console(width=160)
    table = Table(title="C core (host build, 1 thread): quantized weights against fp32, same plan shapes and input",
                  title_justify="left")
    for column in ("model", "variant", "ms", "/ fp32 (block range)", "weights MB", "session MB", "max |diff|"):
        table.add_column(column, justify="left" if column in ("model", "variant") else "right")
    ratios: dict[str, list[float]] = {variant: [] for variant in VARIANTS[1:]}
    for name in args.models:
        plans, feeds = variant_plans(name, args.seed)
        medians = time_variants(plans, feeds, args.blocks, args.block_ms / 1000, args.warmup)
        base = statistics.median(medians["fp32"])
        for variant in VARIANTS:
            arena, scratch, weights = plan_memory(plans[variant])
            ms = statistics.median(medians[variant])
            cells = [name, variant, f"{ms * 1000:.3f}", "", f"{weights / MB:.2f}", f"{(arena + scratch) / MB:.2f}", ""]
            if variant != "fp32":
                per_block = [a / b for a, b in zip(medians[variant], medians["fp32"])]
                ratios[variant].append(ms / base)
                cells[3] = f"{ms / base:.2f} ({min(per_block):.2f}-{max(per_block):.2f})"
                cells[6] = f"{max_diff(plans, variant, feeds):.2e}"
            table.add_row(*cells)
        table.add_section()
    console.print(table)
    for variant, values in ratios.items():
        console.print(f"{variant}: geometric mean {geometric_mean(values):.3f} of fp32's latency, "
                      f"largest {max(values):.2f}")


if __name__ == "__main__":
    main()
