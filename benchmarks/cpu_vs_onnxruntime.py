"""The `cpu` provider (edgepack's C runtime core, host build, through ctypes) against onnxruntime on the CPU.

    python benchmarks/cpu_vs_onnxruntime.py [--blocks 9] [--block-ms 400] [--warmup 2] [--seed 0] [--threads 1]
                                            [--march native] [--qdq] [--no-memory] [--no-openvino] [model ...]

Models: ppocr-det at 1x3x640x640, ppocr-rec at 1x3x48x320, ppocr-cls at 1x3x48x192 and silero-vad (a 512-sample
chunk at 16 kHz), each slimmed as a build slims it; the inputs are `samples.feeds(name, --seed)` (synthetic text
images for the OCR models), the same arrays for both sides. edgepack lowers the slimmed model once to an `.epk`
plan at those shapes (`compiler/lower.py`, not timed) and runs it with `NativeSession`; onnxruntime runs the
same slimmed model (CPUExecutionProvider, ORT_ENABLE_ALL, 1 intra- and 1 inter-op thread). Where the openvino
package is installed (and without --no-openvino), OpenVINO runs the same slimmed model too, as a third side of every
block: its CPU plugin, f32 (INFERENCE_PRECISION_HINT, not bf16 on AMX), one thread (`edgepack bench --compare
openvino`'s peer); a model it cannot compile is named under the table and timed without it.

threads: one by default, the headline figure. With --threads N every side computes on N threads: the C core on its
thread pool (`NativeSession(plan, threads=N)`), onnxruntime with N intra-op threads, OpenVINO with
INFERENCE_NUM_THREADS N; the compute floor is then the products at N times the one-thread speed.

march: the C core is the `cpu` provider's host library, -march=native. With --march x86-64-v3 it is compiled for
AVX2/FMA instead (the kernel selection table's avx2 kind), while onnxruntime and OpenVINO keep the kernels they pick
for this CPU: on an AVX-512 machine that is a pessimistic stand-in for an AVX2 machine (the peers keep AVX-512).

qdq: with --qdq every side runs the slimmed model as onnxruntime's `quantize_static` writes it in QDQ form (int8
weights, a scale per output channel from opset 13; uint8 activations calibrated on the inputs and three shifted
copies), as users who quantize with onnxruntime's tools ship it. onnxruntime may run such convs in int8 (QLinearConv)
and round some outputs a step of the output's scale apart from the QDQ model's own values, which the C core gives.

latency: one call is `run(feeds)` from Python on either side (inputs copied in, outputs copied out: onnxruntime's
`InferenceSession.run` and `NativeSession.run` both do). The two sides are timed in this process in --blocks
blocks that alternate which side goes first; in every block each side opens a fresh session (two sessions of one
model can differ in speed for their whole life), calls it --warmup times untimed, then N times, each call timed on two
clocks: wall time (`time.perf_counter`) and this process's CPU time (`time.process_time`, all its threads), which
leaves out the time the process waited for a core while other work held it; N makes the slower side's block about
--block-ms of wall time (at least 3). Per clock, a side's latency is the median of its block medians; the ratio is
cpu / onnxruntime (below 1: the C core is faster) with the range of the per-block wall-time ratios, which shows the
noise; likewise cpu / OpenVINO. The geometric mean of the per-model cpu / onnxruntime ratios is checked against the
target of issue 5 (<= 1.5) on both clocks. Absolute times are this machine's, and other work shares it: read the ratios.

max |diff|: the largest absolute difference between the two sides' outputs, over every output, on the timed input.

compute floor: the plan's products (Conv and ConvTranspose: output or input elements times the taps of a group's
channels; MatMul, PackedMatMul, Int8MatMul, RoundTripMatMul and Gemm: output elements times the contracted length;
two FLOPs each) over the core's own matrix-product speed, measured after the blocks on a 512^3 MatMul plan (median
of 30 calls): GFLOP, floor ms, and cpu ms / floor ms (how far the model runs from doing only its products at that
speed).

memory: edgepack's plan states its memory: the activation arena, the kernels' scratch and the weight blob (read in
place), from the `.epk` header. Both sides are also measured the same way, each in a fresh Python process (spawned,
one per side and model): with the runtime imported, the model or plan bytes and the inputs in memory and freed heap
pages handed back (`malloc_trim`, so that reusing them counts), the peak RSS is reset (`/proc/self/clear_refs`);
then a session is opened and called --warmup + 1 times, and the growth is VmHWM after minus VmRSS before. It counts
what each runtime allocates and touches (edgepack: its aligned copy of the plan and its session memory;
onnxruntime: the parsed model, initializers, arena and prepacked weights) and code pages touched for the first
time. Memory is measured on one thread. With --no-memory the measured columns are left out.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import importlib.util
import math
import multiprocessing
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from rich.console import Console
from rich.table import Table

from edgepack import samples
from edgepack.bench_peers import load_openvino
from edgepack.bench_result import thread_count
from edgepack.compiler.lower import lower_to_plan
from edgepack.model_check import check_model
from edgepack.packager.slim import slim
from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.model_file import load_model
from edgepack.runtime.native import epk
from edgepack.runtime.native.binding import NativeSession, library
from edgepack.runtime.native.build import core_kind, shared_library

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script, or imported by emx_onnx_cgen.py
from benchmarks.gemm_vs_openblas import matmul_model  # noqa: E402

Feeds = dict[str, np.ndarray]
Run = Callable[[Feeds], dict[str, np.ndarray]]
MODELS = ("ppocr-det", "ppocr-rec", "ppocr-cls", "silero-vad")
TARGET = 1.5
"""Issue 5: the geometric mean of cpu / onnxruntime latency over the models is at most this."""
SIDES = ("cpu", "onnxruntime")
"""The sides every model is timed on (and measured for memory); OpenVINO joins them where it runs."""
CLOCKS = ("wall", "cpu")
MB = 1 << 20


@dataclass
class Case:
    name: str
    model: bytes
    """The slimmed model, serialized for onnxruntime."""
    plan: bytes
    feeds: Feeds
    flops: float
    """The plan's multiply-adds of Conv, ConvTranspose, MatMul, PackedMatMul, Int8MatMul, RoundTripMatMul and Gemm,
    times two."""
    blocks: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    """Median seconds per call, one per block, by clock and side."""
    growth: dict[str, int] = field(default_factory=dict)
    """Peak RSS growth in bytes, by side."""
    sides: tuple[str, ...] = SIDES
    openvino_model: Path | None = None
    """The slimmed model as a file, for OpenVINO, where it compiles it."""
    threads: int = 1
    """Threads of every side."""
    core: Path | None = None
    """The host library the cpu side runs (None: the `cpu` provider's)."""


def serialized(model: onnx.ModelProto) -> bytes:
    """`model` as onnxruntime 1.31 reads it (IR 10; onnx 1.23 writes IR 14)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    copy.ir_version = 10
    return copy.SerializeToString()


def load_case(name: str, seed: int, qdq: bool = False) -> Case:
    model = slim(check_model(load_model(samples.path(name)).model, name))[0]
    feeds = samples.feeds(name, seed)
    if qdq:
        model = qdq_quantized(model, feeds)
    plan = lower_to_plan(model, {key: value.shape for key, value in feeds.items()})
    return Case(name, serialized(model), epk.write(plan), feeds, product_flops(plan))


def qdq_quantized(model: onnx.ModelProto, feeds: Feeds) -> onnx.ModelProto:
    """`model` as onnxruntime's `quantize_static` writes it in QDQ form: int8 weights (a scale per output channel
    from opset 13, where DequantizeLinear takes an axis), uint8 activations calibrated on `feeds` and three copies
    shifted by 1%, 2% and 3% of their spread."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Samples(CalibrationDataReader):
        def __init__(self) -> None:
            self.left = [{key: (value + np.float32(0.01 * i) * np.ptp(value)).astype(value.dtype)
                          if value.dtype == np.float32 else value for key, value in feeds.items()} for i in range(4)]

        def get_next(self) -> Feeds | None:
            return self.left.pop(0) if self.left else None

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    with tempfile.TemporaryDirectory() as folder:
        source, quantized = Path(folder) / "model.onnx", Path(folder) / "qdq.onnx"
        source.write_bytes(serialized(model))
        quantize_static(str(source), str(quantized), Samples(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=opset >= 13)
        return onnx.load(quantized)


def product_flops(plan: epk.Plan) -> float:
    """2 x the multiply-adds of the plan's products: Conv (output elements x input channels per group x kernel
    taps), ConvTranspose (input elements x output channels per group x taps), MatMul, PackedMatMul, Int8MatMul,
    RoundTripMatMul and Gemm (output elements x the contracted length; the int8 products' count at the float speed,
    as their peers' are)."""
    total = 0
    for op in plan.ops:
        shapes = [plan.tensors[i].shape if i is not None else () for i in op.inputs]
        out = plan.tensors[op.outputs[0]].shape if op.outputs else ()
        if op.kind == "Conv":
            total += math.prod(out) * math.prod(shapes[1][1:])
        elif op.kind == "ConvTranspose":
            total += math.prod(shapes[0]) * math.prod(shapes[1][1:])
        elif op.kind in ("MatMul", "PackedMatMul", "Int8MatMul", "RoundTripMatMul"):
            total += math.prod(out) * shapes[0][-1]
        elif op.kind == "Gemm":
            total += math.prod(out) * (shapes[0][0] if op.params[0] else shapes[0][-1])
    return 2.0 * total


PEAK_SIZE = (512, 512, 512)


def measured_peak(core: Path | None = None, runs: int = 30) -> float:
    """The C core's matrix-product speed on this machine, in FLOP/s: a 512^3 MatMul plan (gemm_vs_openblas.py's, B
    packed per call), median of `runs` calls."""
    model, feeds = matmul_model(PEAK_SIZE)
    run = cpu_session(epk.write(lower_to_plan(model, {name: value.shape for name, value in feeds.items()})), core=core)
    run(feeds)
    return 2.0 * math.prod(PEAK_SIZE) / statistics.median(timed(run, feeds, runs)["wall"])


def ort_session(model: bytes, threads: int = 1) -> Run:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return lambda feeds: dict(zip(names, session.run(names, feeds)))


def cpu_session(plan: bytes, threads: int = 1, core: Path | None = None) -> Run:
    return NativeSession(plan, core, threads).run


def add_openvino(case: Case, folder: Path) -> str | None:
    """OpenVINO as a third side of `case` when it compiles the slimmed model; else why not, in one line."""
    path = folder / f"{case.name}.onnx"
    path.write_bytes(case.model)
    try:
        load_openvino(path)
    except EdgepackError as error:
        return str(error).splitlines()[0]
    case.openvino_model = path
    case.sides = (*SIDES, "openvino")
    return None


def opener(side: str, case: Case) -> Callable[[], Run]:
    """What opens a fresh session of `case` on `side`."""
    if side == "cpu":
        return lambda: cpu_session(case.plan, case.threads, case.core)
    if side == "openvino":
        return lambda: load_openvino(case.openvino_model, case.threads)[1]
    return lambda: ort_session(case.model, case.threads)


def plan_memory(plan: bytes) -> tuple[int, int, int]:
    """Arena, scratch and weight bytes from the `.epk` header (words 18, 19 and 20; see runtime/native/EPK.md)."""
    weights, arena, scratch = struct.unpack_from("<3I", plan, 18 * 4)
    return arena, scratch, weights


def max_abs_diff(case: Case) -> float:
    ours, theirs = cpu_session(case.plan, core=case.core)(case.feeds), ort_session(case.model)(case.feeds)
    return max(float(np.max(np.abs(ours[name].astype(np.float64) - theirs[name].astype(np.float64))))
               for name in theirs)


def timed(run: Run, feeds: Feeds, count: int) -> dict[str, list[float]]:
    """Seconds of each of `count` calls, by clock."""
    times: dict[str, list[float]] = {clock: [] for clock in CLOCKS}
    for _ in range(count):
        wall, cpu = time.perf_counter(), time.process_time()
        run(feeds)
        times["cpu"].append(time.process_time() - cpu)
        times["wall"].append(time.perf_counter() - wall)
    return times


def time_blocks(case: Case, blocks: int, block_s: float, warmup: int) -> None:
    """Each side's median per block; the first side alternates every block and each block opens fresh sessions."""
    opens = {side: opener(side, case) for side in case.sides}
    slowest = max(statistics.median(timed(opens[side](), case.feeds, warmup + 1)["wall"]) for side in case.sides)
    runs = max(3, round(block_s / slowest))
    case.blocks = {clock: {side: [] for side in case.sides} for clock in CLOCKS}
    for block in range(blocks):
        for side in case.sides if block % 2 == 0 else case.sides[::-1]:
            run = opens[side]()
            timed(run, case.feeds, warmup)
            gc.collect()
            for clock, times in timed(run, case.feeds, runs).items():
                case.blocks[clock][side].append(statistics.median(times))
            del run


def status_bytes(field_name: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field_name}")


def peak_growth(side: str, payload: bytes, feeds: Feeds, calls: int, core: Path | None) -> int:
    """In a fresh process: the peak RSS growth of opening `payload` (plan or model bytes) on `side` and calling it
    `calls` times. Runs in a spawned child, so that no earlier allocation is reused."""
    if side == "cpu":
        library(core)
    gc.collect()
    ctypes.CDLL(None).malloc_trim(0)
    before = status_bytes("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")
    run = cpu_session(payload, core=core) if side == "cpu" else ort_session(payload)
    for _ in range(calls):
        run(feeds)
    return status_bytes("VmHWM") - before


def measure_memory(cases: list[Case], calls: int) -> None:
    context = multiprocessing.get_context("spawn")
    for case in cases:
        for side in SIDES:
            with context.Pool(1) as pool:
                payload = case.plan if side == "cpu" else case.model
                case.growth[side] = pool.apply(peak_growth, (side, payload, case.feeds, calls, case.core))


def megabytes(count: int) -> str:
    return f"{count / MB:.1f}"


def ratio(case: Case, clock: str, peer: str = "onnxruntime") -> float:
    """cpu / peer: the ratio of the medians of block medians on `clock`."""
    return statistics.median(case.blocks[clock]["cpu"]) / statistics.median(case.blocks[clock][peer])


def openvino_cells(case: Case) -> list[str]:
    """OpenVINO's ms and cpu / OpenVINO (wall, with the block range), or dashes where it did not run."""
    if "openvino" not in case.sides:
        return ["-", "-"]
    wall = case.blocks["wall"]
    spread = [a / b for a, b in zip(wall["cpu"], wall["openvino"])]
    return [f"{statistics.median(wall['openvino']) * 1000:.3f}",
            f"{ratio(case, 'wall', 'openvino'):.2f} ({min(spread):.2f}-{max(spread):.2f})"]


def geometric_mean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def report(console: Console, cases: list[Case], diffs: dict[str, float], runs_note: str, peak: float,
           threads: int) -> None:
    with_openvino = any("openvino" in case.sides for case in cases)
    table = Table(title="edgepack cpu (C core, ctypes) vs onnxruntime (CPU EP, ORT_ENABLE_ALL)"
                        f"{' and OpenVINO (CPU, f32)' if with_openvino else ''}, "
                        f"{thread_count(threads)}",
                  title_justify="left", caption=runs_note, caption_justify="left")
    openvino_columns = ["ov ms", "cpu / ov, wall (block range)"] if with_openvino else []
    for column in ("model", "input", "cpu ms", "ort ms", "cpu / ort, wall (block range)", "cpu / ort, CPU time",
                   *openvino_columns, "max |diff|", "GFLOP", "floor ms", "cpu / floor"):
        table.add_column(column, justify="left" if column in ("model", "input") else "right")
    for case in cases:
        wall = case.blocks["wall"]
        spread = [a / b for a, b in zip(wall["cpu"], wall["onnxruntime"])]
        shapes = ", ".join("x".join(map(str, v.shape)) or "scalar" for v in case.feeds.values())
        floor = case.flops / (peak * threads)
        table.add_row(case.name, shapes, *(f"{statistics.median(wall[side]) * 1000:.3f}" for side in SIDES),
                      f"{ratio(case, 'wall'):.2f} ({min(spread):.2f}-{max(spread):.2f})", f"{ratio(case, 'cpu'):.2f}",
                      *(openvino_cells(case) if with_openvino else []), f"{diffs[case.name]:.2e}",
                      f"{case.flops / 1e9:.3f}", f"{floor * 1000:.3f}",
                      f"{statistics.median(wall['cpu']) / floor:.2f}" if floor else "-")
    geomeans = {clock: geometric_mean([ratio(case, clock) for case in cases]) for clock in CLOCKS}
    timed_on_openvino = [ratio(case, "wall", "openvino") for case in cases if "openvino" in case.sides]
    openvino_mean = [f"{geometric_mean(timed_on_openvino):.2f}" if timed_on_openvino else "-"] if with_openvino else []
    table.add_section()
    table.add_row("geometric mean", "", "", "", f"{geomeans['wall']:.2f}", f"{geomeans['cpu']:.2f}",
                  *([""] if with_openvino else []), *openvino_mean, "", "", "", "")
    console.print(table)
    console.print(f"compute floor: a model's products (Conv, ConvTranspose, MatMul, Gemm) at the core's measured "
                  f"matrix-product speed, {peak / 1e9:.1f} GFLOP/s (a {'x'.join(map(str, PEAK_SIZE))} MatMul plan, "
                  f"one thread{f', times {threads} threads' if threads > 1 else ''}; see gemm_vs_openblas.py for it "
                  "beside OpenBLAS)")
    for clock, label in (("wall", "wall time"), ("cpu", "CPU time")):
        console.print(f"target (issue 5): geometric mean of cpu / onnxruntime latency <= {TARGET}x; on {label}: "
                      f"{geomeans[clock]:.2f}x, {'holds' if geomeans[clock] <= TARGET else 'does not hold'}")

    memory = Table(title="memory, MB (plan: the .epk header's own figures; growth: peak RSS growth in a fresh "
                         "process)", title_justify="left")
    for column in ("model", "arena", "scratch", "weights", "plan total", "cpu growth", "ort growth",
                   "plan / ort growth", "cpu / ort growth"):
        memory.add_column(column, justify="left" if column == "model" else "right")
    for case in cases:
        arena, scratch, weights = plan_memory(case.plan)
        total = arena + scratch + weights
        measured = ["-"] * 4
        if case.growth:
            cpu_growth, ort_growth = case.growth["cpu"], case.growth["onnxruntime"]
            measured = [megabytes(cpu_growth), megabytes(ort_growth), f"{total / ort_growth:.2f}",
                        f"{cpu_growth / ort_growth:.2f}"]
        memory.add_row(case.name, megabytes(arena), megabytes(scratch), megabytes(weights), megabytes(total),
                       *measured)
    console.print(memory)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(MODELS), help=f"models (default: {' '.join(MODELS)})")
    parser.add_argument("--blocks", type=int, default=9, help="interleaved timing blocks (default: 9)")
    parser.add_argument("--block-ms", type=float, default=400.0, help="about how long a side's block of calls takes")
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls per fresh session (default: 2)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the inputs (default: 0)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak RSS measurements")
    parser.add_argument("--no-openvino", action="store_true", help="leave OpenVINO out even where it is installed")
    parser.add_argument("--threads", type=int, default=1, help="threads of every side (default: 1, the headline)")
    parser.add_argument("--march", default="native",
                        help="the C core's -march (default: native; x86-64-v3: the AVX2/FMA kind)")
    parser.add_argument("--qdq", action="store_true",
                        help="every side runs the model as onnxruntime's quantize_static writes it in QDQ form")
    args = parser.parse_args()
    if args.threads < 1:
        parser.error("--threads must be 1 or more")

    console = Console(width=200)
    core = None if args.march == "native" else shared_library(args.march)
    cases = [load_case(name, args.seed, args.qdq) for name in args.names]
    for case in cases:
        case.threads, case.core = args.threads, core
    diffs = {case.name: max_abs_diff(case) for case in cases}
    if not args.no_memory:
        measure_memory(cases, args.warmup + 1)
    peers = (f"{'QDQ models (quantize_static); ' if args.qdq else ''}C core -march={args.march} "
             f"({core_kind(args.march)} kind); onnxruntime {ort.__version__}")
    with tempfile.TemporaryDirectory() as folder:
        if not args.no_openvino and importlib.util.find_spec("openvino"):
            import openvino

            peers += f", OpenVINO {openvino.__version__.split('-')[0]}"
            for case in cases:
                if reason := add_openvino(case, Path(folder)):
                    console.print(f"OpenVINO left out on {case.name}: {reason}")
        for case in cases:
            time_blocks(case, args.blocks, args.block_ms / 1000, args.warmup)
    report(console, cases, diffs, f"{peers}; ms are wall time; medians of {args.blocks} interleaved blocks of about "
                                  f"{args.block_ms:.0f} ms per side, fresh sessions per block, {args.warmup} warmup "
                                  "calls each", measured_peak(core), args.threads)


if __name__ == "__main__":
    main()
