"""Where does Winograd beat the direct conv? The C core's kernel selection table, measured for this CPU kind.

    python benchmarks/kernel_choice.py [--write] [--march native|x86-64-v3] [--blocks 7] [--block-ms 40]

For every (channels, tiles) edge of `runtime/native/kernel_choice.toml`'s [winograd] grid, a single-conv model
(3x3, pads 1, bias, C -> C channels, 2t x 2u outputs for t x u tiles) is lowered once to a plan with Winograd's
scratch, and run by two host libraries built from this tree with -O3 -march=MARCH: one compiled with
-DEP_WINOGRAD_CHOICE=1 (every such conv as Winograd) and one with =0 (every one directly). One thread; the two
sides alternate in --blocks blocks of about --block-ms each, the first side shifting every block, each block on a
fresh session after a warm-up call (two sessions of one plan can differ in speed for their whole life here). A
cell is the median Winograd block over the median direct block; below the table's `faster_below` the core compiled
for this kind runs Winograd there. The outputs of both sides are checked against each other (relative error under
1e-4) before timing.

The kind is the one a core built with -march=MARCH is compiled for: avx512 where the compiler defines __AVX512F__,
avx2 with __AVX2__ and __FMA__ (x86-64-v3 here measures the AVX2 core on this CPU). Without --write the section is
printed; with --write it replaces that kind's section in the table and keeps the others.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import re
import statistics
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from edgepack.compiler.lower import lower_to_plan
from edgepack.runtime.native import epk
from edgepack.runtime.native.binding import NativeSession
from edgepack.runtime.native.build import core_kind, forced_winograd_library
from edgepack.runtime.native.kernel_choice import KINDS, TABLE, winograd_everywhere, winograd_table


def conv_model(channels: int, tiles: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """C -> C channels, 3x3, pads 1, with t x u tiles of 2x2 outputs (u = t, or 2t where `tiles` is not a square)."""
    rows = int(round(np.sqrt(tiles)))
    if rows * rows != tiles:
        rows = int(round(np.sqrt(tiles / 2)))
    height, width = 2 * rows, 2 * (tiles // rows)
    rng = np.random.default_rng(channels * tiles)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, height, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array((rng.standard_normal((channels, channels, 3, 3)) / 6).astype(np.float32), "w"),
         numpy_helper.from_array(rng.standard_normal(channels).astype(np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, {"x": rng.standard_normal((1, channels, height, width)).astype(np.float32)}


def block_seconds(session: NativeSession, feeds: dict[str, np.ndarray], seconds: float) -> float:
    """Median call time over calls that fill about `seconds`."""
    times = []
    end = time.perf_counter() + seconds
    while not times or time.perf_counter() < end:
        start = time.perf_counter()
        session.run(feeds)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(channels: int, tiles: int, libraries: list[Path], blocks: int, seconds: float) -> float:
    model, feeds = conv_model(channels, tiles)
    with winograd_everywhere():
        plan = epk.write(lower_to_plan(model, {"x": feeds["x"].shape}))
    a, b = (NativeSession(plan, library).run(feeds)["y"] for library in libraries)
    error = float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))
    if error > 1e-4:
        raise SystemExit(f"{channels} channels, {tiles} tiles: Winograd and direct differ by {error:.2e} (relative)")
    times: list[list[float]] = [[], []]
    for index in range(blocks):
        for side in (index % 2, 1 - index % 2):
            session = NativeSession(plan, libraries[side])
            session.run(feeds)
            times[side].append(block_seconds(session, feeds, seconds))
    return statistics.median(times[0]) / statistics.median(times[1])


def section(kind: str, march: str, grid: list[list[float]]) -> str:
    info = {key.strip(): value.strip() for key, value in
            (line.split(":", 1) for line in Path("/proc/cpuinfo").read_text().splitlines() if ":" in line)}
    cpu = f"{info['model name']}, family {info['cpu family']} model {info['model']}" \
        if {"model name", "cpu family", "model"} <= set(info) else platform.processor()
    rows = ",\n".join("  [" + ", ".join(f"{v:.2f}" for v in row) + "]" for row in grid)
    return (f"# {cpu} ({platform.machine()}), -march={march}, {datetime.date.today()}\n"
            f"[winograd.{kind}]\nratio = [\n{rows},\n]\n")


def write(kind: str, text: str) -> None:
    """Replaces `kind`'s section (with the comment line above it) in the table, or appends it."""
    table = TABLE.read_text()
    pattern = re.compile(rf"(# [^\n]*\n)?\[winograd\.{kind}\]\nratio = \[\n.*?\n\]\n", re.S)
    table = pattern.sub(lambda _: text, table) if pattern.search(table) else table.rstrip("\n") + "\n\n" + text
    TABLE.write_text(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--march", default="native")
    parser.add_argument("--blocks", type=int, default=7)
    parser.add_argument("--block-ms", type=float, default=40.0)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    kind = core_kind(args.march)
    if kind not in KINDS:
        raise SystemExit(f"a core built with -march={args.march} is none of the table's kinds ({', '.join(KINDS)})")
    table = winograd_table()
    libraries = [forced_winograd_library(1, args.march), forced_winograd_library(0, args.march)]
    print(f"kind {kind}; rows: channels {list(table.channels)}; columns: tiles {list(table.tiles)}")
    grid = []
    for channels in table.channels:
        grid.append([measure(channels, tiles, libraries, args.blocks, args.block_ms / 1000) for tiles in table.tiles])
        print(f"{channels:5d} " + " ".join(f"{v:5.2f}" for v in grid[-1]), flush=True)
    text = section(kind, args.march, grid)
    if args.write:
        write(kind, text)
        print(f"wrote [winograd.{kind}] to {TABLE}")
    else:
        print(text)


if __name__ == "__main__":
    main()
