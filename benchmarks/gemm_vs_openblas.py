"""The C core's matrix product against OpenBLAS's sgemm, on one core, per instruction set.

    python benchmarks/gemm_vs_openblas.py [--blocks 7] [--block-ms 150] [MxKxN ...]

edgepack: a one-node ONNX model, MatMul of input x [M, K] by input w [K, N] (standard normal, seed 0), lowered to
an `.epk` plan and run by the profiling `ep_run` built for the instruction set (static, `-O3 -march=LEVEL`, the
flags the host core takes but for the level), so one call is the MatMul kernel on a B it has not seen: B packed
into panels on every call (or read in place where its rows allow) and the register-blocked micro-kernel. (A
constant weight is packed once, at plan time, into PackedMatMul: that is faster, and not what sgemm does.)
OpenBLAS: numpy's `x @ w` into a preallocated output (cblas_sgemm of the OpenBLAS numpy ships), in a worker
process with OPENBLAS_NUM_THREADS=1 and OPENBLAS_CORETYPE set to the same instruction set's kernels (Haswell for
AVX2/FMA, SkylakeX for AVX-512; on ARM64 OpenBLAS's own choice). The core OpenBLAS reports is printed.

Instruction sets: each x86-64 level this CPU has (x86-64-v3: AVX2/FMA; x86-64-v4: AVX-512), or NEON on ARM64.
Timing: --blocks blocks; in each, every (size, instruction set) pair runs edgepack then OpenBLAS, or the reverse
in every other block, N calls each (N makes a side's block about --block-ms), and a side's block gives the median
of its N calls. A side's figure is the median of its block medians as GFLOP/s (2 M K N / time); the ratio is
edgepack's GFLOP/s over OpenBLAS's (above 1: edgepack is faster), with the range of the per-block ratios, which
shows the noise. Per instruction set the geometric mean of the ratios is checked against issue 26's target
(>= 0.80). Absolute figures are this machine's, and other work shares it: read the ratios.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper
from rich.console import Console
from rich.table import Table

from edgepack.bench_device import x86_levels
from edgepack.compiler.lower import lower
from edgepack.devices.local import cpu_model
from edgepack.runtime.native.build import device_profile_runner
from edgepack.runtime.native.emulated import save_inputs
from edgepack.runtime.native.epk import ports

SIZES = [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (3136, 576, 64), (128, 384, 1536), (784, 96, 192)]
"""Square products, then shapes from models: a 3x3 conv's im2col at 56x56 (64 -> 64 channels), a transformer's
feed-forward (128 tokens, 384 -> 1536), a 1x1 conv at 28x28 (96 -> 192 channels)."""
TARGET = 0.80
OPENBLAS_CORE = {"x86-64-v3": "Haswell", "x86-64-v4": "SkylakeX"}
ISA_NAME = {"x86-64-v3": "AVX2/FMA", "x86-64-v4": "AVX-512", None: "NEON"}
MAX_REPEAT = 1024
"""ep_run times at most this many calls per invocation."""


@dataclass
class Pair:
    size: tuple[int, int, int]
    march: str | None
    plan: Path
    inputs: list[Path]
    ours: list[float] = field(default_factory=list)
    theirs: list[float] = field(default_factory=list)

    @property
    def flops(self) -> float:
        m, k, n = self.size
        return 2.0 * m * k * n


def levels() -> list[str | None]:
    """The instruction sets to measure: each x86-64 level this CPU's flags allow, or the ARM64 baseline (NEON)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return [None]
    line = next((line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags")), "")
    return x86_levels(set(line.partition(":")[2].split()))


def matmul_model(size: tuple[int, int, int]) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The one-MatMul model for `size` (M, K, N), both operands inputs (so that B is packed on every call, as sgemm
    packs it), and its feeds (standard normal, seed 0)."""
    m, k, n = size
    rng = np.random.default_rng(0)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "gemm",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k]),
                               helper.make_tensor_value_info("w", TensorProto.FLOAT, [k, n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model, {"x": rng.standard_normal((m, k)).astype(np.float32),
                   "w": rng.standard_normal((k, n)).astype(np.float32)}


def matmul_plan(size: tuple[int, int, int], folder: Path) -> tuple[Path, list[Path]]:
    """The one-MatMul plan for `size` and its inputs, saved in `folder`."""
    model, feeds = matmul_model(size)
    plan = lower(model, {name: value.shape for name, value in feeds.items()})
    path = folder / "plan.epk"
    path.write_bytes(plan)
    return path, save_inputs(folder, ports(plan)[0], feeds)


def ours_ms(runner: Path, pair: Pair, calls: int) -> float:
    """The median of `calls` runs of the pair's plan by `runner`, in ms."""
    with tempfile.TemporaryDirectory(prefix="edgepack-gemm-") as out:
        proc = subprocess.run([str(runner), str(pair.plan), out, "--repeat", str(max(calls, 2)),
                               *map(str, pair.inputs)], capture_output=True, text=True, check=True)
    return float(next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("median_ms")))


class OpenBlasWorker:
    """A process running numpy's sgemm on one thread with OpenBLAS's kernels for one instruction set: each request
    `M K N CALLS` on its stdin is answered with the median time of CALLS products in ms."""

    def __init__(self, march: str | None) -> None:
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
        if march in OPENBLAS_CORE:
            env["OPENBLAS_CORETYPE"] = OPENBLAS_CORE[march]
        self.process = subprocess.Popen([sys.executable, __file__, "--openblas-worker"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env)
        self.core = self.process.stdout.readline().strip()

    def median_ms(self, size: tuple[int, int, int], calls: int) -> float:
        self.process.stdin.write(f"{' '.join(map(str, size))} {calls}\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def openblas_core() -> str:
    """The kernel family numpy's OpenBLAS picked (its corename), or 'unknown'."""
    import ctypes

    for library in sorted((Path(np.__file__).parent.parent / "numpy.libs").glob("libscipy_openblas*.so")):
        lib = ctypes.CDLL(str(library))
        for symbol in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename"):
            if hasattr(lib, symbol):
                getattr(lib, symbol).restype = ctypes.c_char_p
                return getattr(lib, symbol)().decode()
    return "unknown"


def serve_openblas() -> None:
    """The worker's loop (see OpenBlasWorker)."""
    print(openblas_core(), flush=True)
    rng = np.random.default_rng(0)
    for line in sys.stdin:
        m, k, n, calls = map(int, line.split())
        x = rng.standard_normal((m, k)).astype(np.float32)
        w = rng.standard_normal((k, n)).astype(np.float32)
        y = np.empty((m, n), np.float32)
        np.matmul(x, w, out=y)
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            np.matmul(x, w, out=y)
            times.append(time.perf_counter() - start)
        print(statistics.median(times) * 1e3, flush=True)


def gflops(pair: Pair, ms: float) -> float:
    return pair.flops / ms / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", help="products as MxKxN (default: the SIZES list)")
    parser.add_argument("--blocks", type=int, default=7, help="interleaved timing blocks (default: 7)")
    parser.add_argument("--block-ms", type=float, default=150.0, help="about how long a side's block of calls takes")
    parser.add_argument("--openblas-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.openblas_worker:
        serve_openblas()
        return
    sizes = [tuple(int(d) for d in text.lower().split("x")) for text in args.sizes] or SIZES
    console = Console(width=120)
    marches = levels()
    runners = {march: device_profile_runner(march) for march in marches}
    workers = {march: OpenBlasWorker(march) for march in marches}
    with tempfile.TemporaryDirectory(prefix="edgepack-gemm-") as tmp:
        pairs = []
        for index, size in enumerate(sizes):
            folder = Path(tmp) / str(index)
            folder.mkdir()
            plan, inputs = matmul_plan(size, folder)
            pairs += [Pair(size, march, plan, inputs) for march in marches]
        calls = {}
        for pair in pairs:
            once = workers[pair.march].median_ms(pair.size, 3)
            calls[id(pair)] = min(MAX_REPEAT, max(3, round(args.block_ms / max(once, 1e-3))))
        for block in range(args.blocks):
            for pair in pairs:
                sides = [("ours", lambda p=pair: ours_ms(runners[p.march], p, calls[id(p)])),
                         ("theirs", lambda p=pair: workers[p.march].median_ms(p.size, calls[id(p)]))]
                for side, measure in sides[::-1] if block % 2 else sides:
                    getattr(pair, side).append(measure())
    for worker in workers.values():
        worker.close()
    report(console, pairs, {march: worker.core for march, worker in workers.items()})


def report(console: Console, pairs: list[Pair], cores: dict[str | None, str]) -> None:
    console.print(f"CPU: {cpu_model()}, one thread; OpenBLAS kernels: "
                  + ", ".join(f"{ISA_NAME[march]} -> {core}" for march, core in cores.items()))
    table = Table("M x K x N", "ISA", "edgepack GFLOP/s", "OpenBLAS GFLOP/s", "ratio", "block range")
    ratios: dict[str | None, list[float]] = {}
    for pair in pairs:
        ours, theirs = statistics.median(pair.ours), statistics.median(pair.theirs)
        ratio = theirs / ours
        blocks = [t / o for o, t in zip(pair.ours, pair.theirs)]
        ratios.setdefault(pair.march, []).append(ratio)
        table.add_row("x".join(map(str, pair.size)), ISA_NAME[pair.march], f"{gflops(pair, ours):.1f}",
                      f"{gflops(pair, theirs):.1f}", f"{ratio:.2f}", f"{min(blocks):.2f}-{max(blocks):.2f}")
    console.print(table)
    for march, values in ratios.items():
        mean = math.exp(statistics.fmean(map(math.log, values)))
        verdict = "meets" if mean >= TARGET else "misses"
        console.print(f"{ISA_NAME[march]}: geometric mean {mean:.2f} of OpenBLAS ({verdict} the {TARGET:.2f} target)")


if __name__ == "__main__":
    main()
