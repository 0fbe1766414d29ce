"""emx-onnx-cgen (emmtrix's ONNX-to-C generator, PyPI) beside the `cpu` provider (edgepack's C core, through ctypes).

    python benchmarks/emx_onnx_cgen.py [--part both|nodes|samples] [--filter SUBSTRING] [--jobs 1] [--json FILE]
                                       [--cache DIR] [--blocks 5] [--block-ms 300] [--warmup 2] [--seed 0] [model ...]

node cases: onnx's 1,884 (`load_model_tests(kind="node")`; --filter keeps names containing a substring). emx runs a
case as its ONNX backend's `run_model` does: its `Compiler` generates C with a JSON testbench, gcc -O2 builds it, the
executable runs on the case's inputs, emx's backend decodes the outputs; "refused": emx will not generate the C;
"error": the C does not build, crashes or prints what emx cannot decode. Ours runs a case as test_conformance.py does:
if `claim_refusal` is None, compiled by `PROVIDERS["cpu"].compile`. Both are checked by onnx's
`assert_similar_outputs` at the case's rtol/atol. emx's side runs in --jobs worker processes beside ours; its C and
executables are cached per case under --cache, so that a second pass only runs them. --json writes the case table.

sample models: each of docs/samples.md on `samples.feeds(name, --seed)`, slimmed as a build slims it, its inputs pinned
to the feeds' shapes, slimmed again (emx generates code for static shapes only); all sides run it (`sample_model`).
emx's CLI `compile` writes the C and weight file; `HARNESS` includes the C, calls `model_load`, then `model(...)` in a
loop timed by clock_gettime, built by gcc -O3 -march=native (single-threaded, like the code). Every side copies inputs
in and outputs out per call (the harness around `model(...)`; `NativeSession.run` and onnxruntime's `run`, 1 thread,
ORT_ENABLE_ALL, from Python: microseconds that count on the tiny models only). --blocks interleaved blocks (the first
side rotates; fresh sessions or harness process per block) of --warmup untimed calls then N calls, N making the slowest
side's block about --block-ms, on wall and on process CPU time (which leaves out waiting for a core other work held).
Latency: the median of block medians; ratios emx / cpu and cpu / onnxruntime (below 1: the left side is faster).
max |diff| is against onnxruntime's outputs; a side further off than TOLERANCE is reported as wrong, not timed.
"""
# ruff: noqa: E402

from __future__ import annotations

import sys
from pathlib import Path

if Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)  # this file would shadow the package emx_onnx_cgen

import argparse
import gc
import hashlib
import json
import math
import statistics
import subprocess
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from functools import cache, partial
from importlib.metadata import version
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from emx_onnx_cgen.codegen.image_decoder_libs import prepare_image_decoder_build
from emx_onnx_cgen.compiler import Compiler, CompilerOptions
from emx_onnx_cgen.errors import CompilerError
from emx_onnx_cgen.onnx_backend import backend as emx_backend
from onnx.backend.test.case.test_case import TestCase
from onnx.backend.test.loader import load_model_tests
from onnx.backend.test.runner import Runner
from rich.console import Console
from rich.table import Table

from benchmarks.cpu_vs_onnxruntime import CLOCKS, Feeds, Run, timed
from edgepack import samples
from edgepack.compiler.lower import lower
from edgepack.model_check import check_model
from edgepack.packager.slim import slim
from edgepack.runtime.model_file import load_model
from edgepack.runtime.native.binding import NativeSession
from edgepack.runtime.providers import PROVIDERS
from tests.runtime.providers.node_backend import PartitionRep, claim_refusal

Block = Callable[[int, int], dict[str, list[float]]]  # (warmup, count) calls: seconds of each counted one, by clock

EMX_VERSION = version("emx-onnx-cgen")
NODE_OPTIONS = CompilerOptions(emit_testbench=True, testbench_output_format="json", large_weight_threshold=0)
"""As emx's ONNX backend generates a case, but with every weight inline (its backend runs the executable without the
weight file larger constants go to) and emx's default ImageDecoder (stb), not the system libraries it asks for."""
NODE_CFLAGS = ["-O2"]  # as emx's ONNX backend builds
SAMPLE_CFLAGS = ["-O3", "-march=native"]
PASSED, FAILED, REFUSED, ERROR, NOT_CLAIMED = "passed", "failed", "refused", "error", "not claimed"
SIDES = ("emx", "cpu", "onnxruntime")
RATIOS = [(clock, top, bottom) for clock in CLOCKS for top, bottom in (("emx", "cpu"), ("cpu", "onnxruntime"))]
TOLERANCE = 1e-4  # outputs further from onnxruntime's than this times max(1, max |output|) are wrong

HARNESS = r"""#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "model.c"
static const size_t bench_bytes[] = {%(bytes)s};  /* each input, then each output */
enum { bench_inputs = %(inputs)d, bench_args = %(args)d };
static double bench_seconds(clockid_t clock) {
    struct timespec now;
    clock_gettime(clock, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}
static void bench_call(void *args[], void *staged[]) {
    for (int i = 0; i < bench_inputs; ++i) memcpy(args[i], staged[i], bench_bytes[i]);
    model(%(call)s);
    for (int i = bench_inputs; i < bench_args; ++i) memcpy(staged[i], args[i], bench_bytes[i]);
}
int main(int argc, char **argv) {  /* bench WEIGHTS INPUTS OUTPUTS WARMUP COUNT: wall and CPU seconds per call */
    void *args[bench_args], *staged[bench_args];
    FILE *file = argc == 6 && model_load(argv[1]) ? fopen(argv[2], "rb") : NULL;
    if (!file) return 2;
    for (int i = 0; i < bench_args; ++i) {
        args[i] = aligned_alloc(64, (bench_bytes[i] / 64 + 1) * 64);
        staged[i] = malloc(bench_bytes[i] + 1);
        if (i < bench_inputs && fread(staged[i], 1, bench_bytes[i], file) != bench_bytes[i]) return 3;
    }
    fclose(file);
    for (int i = atoi(argv[4]); i > 0; --i) bench_call(args, staged);
    for (int i = atoi(argv[5]); i > 0; --i) {
        double wall = bench_seconds(CLOCK_MONOTONIC), cpu = bench_seconds(CLOCK_PROCESS_CPUTIME_ID);
        bench_call(args, staged);
        printf("%%.9f %%.9f\n", bench_seconds(CLOCK_MONOTONIC) - wall, bench_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu);
    }
    file = fopen(argv[3], "wb");
    for (int i = bench_inputs; i < bench_args; ++i) fwrite(staged[i], 1, bench_bytes[i], file);
    return fclose(file) != 0;
}
"""
"""The timing harness: includes the generated C and calls its entry point; %-formatted per model."""


def one_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {' '.join(str(error).split())[:300]}"


def gcc(arguments: list[str], output: Path, cwd: Path) -> None:
    """Builds `output`, renamed into place once complete, so that the cache never holds half a binary."""
    partial_output = output.with_suffix(".partial")
    result = subprocess.run(["gcc", *arguments, "-o", str(partial_output), "-lm"], cwd=cwd, capture_output=True,
                            text=True)
    if result.returncode:
        errors = [line for line in result.stderr.splitlines() if "error" in line] or result.stderr.splitlines()
        raise RuntimeError(f"gcc failed: {errors[0] if errors else result.returncode}")
    partial_output.rename(output)


def digest(*parts: str | bytes) -> str:
    return hashlib.sha256(b"\0".join(p.encode() if isinstance(p, str) else p for p in parts)).hexdigest()[:16]


@dataclass
class NodeRow:
    name: str
    emx: str
    emx_detail: str
    ours: str
    ours_detail: str


@cache
def node_compiler() -> Compiler:
    """One per process: a Compiler loads its Jinja templates once (a second), then generates a case in milliseconds."""
    return Compiler(NODE_OPTIONS)


def as_array(value: Any) -> Any:
    return onnx.numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else value


def check(run: Callable[[list[Any]], Sequence[Any]], case: TestCase) -> None:
    """Raises AssertionError unless `run` reproduces every data set of `case` (as onnx's BackendTest checks)."""
    for inputs, expected in case.data_sets or []:
        outputs = run([as_array(value) for value in inputs])
        Runner.assert_similar_outputs([as_array(value) for value in expected], list(outputs), case.rtol, case.atol)


def emx_executable(case: TestCase, hints: dict[str, Any], root: Path) -> Path:
    """`case`'s testbench executable, generated and built under `root` unless already there."""
    assert case.model is not None
    folder = root / f"{case.name}-{digest(case.model.SerializeToString(), repr(sorted(hints.items())), *NODE_CFLAGS)}"
    if (folder / "model").exists():
        return folder / "model"
    compiler = Compiler(replace(NODE_OPTIONS, sequence_element_shapes=hints)) if hints else node_compiler()
    source = compiler.compile(case.model)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.c").write_text(source)
    cflags, ldflags = prepare_image_decoder_build(case.model, NODE_OPTIONS.image_decoder_libs, folder)
    gcc([*NODE_CFLAGS, *cflags, "model.c", *ldflags], folder / "model", folder)
    return folder / "model"


def emx_case(case: TestCase, root: Path) -> tuple[str, str]:
    """emx-onnx-cgen's result on `case` and why."""
    assert case.model is not None and case.data_sets
    try:  # emx's `run_model` bounds open sequence element shapes by the inputs; without bounds emx refuses them
        hints = emx_backend._infer_sequence_element_shapes(case.model, tuple(map(as_array, case.data_sets[0][0])))
        executable = emx_executable(case, hints, root)
    except CompilerError as error:
        return REFUSED, one_line(error)
    except Exception as error:  # the generator failing otherwise, or gcc
        return ERROR, one_line(error)
    try:
        metadata = emx_backend._build_backend_metadata(case.model, sequence_element_shapes=hints)
        artifact = emx_backend._CompiledArtifact(executable, None)  # type: ignore[arg-type]
        check(emx_backend.EmxOnnxCgenBackendRep(artifact=artifact, metadata=metadata, model=case.model).run, case)
    except AssertionError as error:
        return FAILED, one_line(error)
    except Exception as error:  # the executable crashing or timing out, outputs emx cannot decode
        return ERROR, one_line(error)
    return PASSED, ""


def ours_case(case: TestCase) -> tuple[str, str]:
    """The `cpu` provider's result on `case` and why."""
    assert case.model is not None
    try:
        reason = claim_refusal("cpu", case.model)
        if reason is not None:
            return NOT_CLAIMED, reason
        inferred = onnx.shape_inference.infer_shapes(case.model)
        check(PartitionRep(PROVIDERS["cpu"].compile(inferred, {}), inferred).run, case)
    except Exception as error:
        return FAILED, one_line(error)
    return PASSED, ""


def node_cases(substring: str) -> list[TestCase]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the case generators warn about overflows they test on purpose
        return [case for case in load_model_tests(kind="node") if substring in case.name]


def run_node_cases(cases: list[TestCase], jobs: int, root: Path) -> list[NodeRow]:
    """emx in `jobs` worker processes while this process runs ours."""
    with ProcessPoolExecutor(jobs) as pool:
        futures = [pool.submit(emx_case, case, root) for case in cases]
        ours = [ours_case(case) for case in cases]
        return [NodeRow(case.name, *future.result(), *mine) for case, future, mine in zip(cases, futures, ours)]


def report_nodes(console: Console, rows: list[NodeRow], seconds: float, jobs: int) -> dict[str, int]:
    """Prints the counts (and the cases ours fails) and returns the counts."""
    counts = Counter(f"emx {row.emx}" for row in rows) + Counter(f"ours {row.ours}" for row in rows)
    both = Counter((row.emx == PASSED, row.ours == PASSED) for row in rows)
    counts.update({"cases": len(rows), "both passed": both[True, True], "only emx passed": both[True, False],
                   "only ours passed": both[False, True]})
    console.print(f"node cases: {len(rows)} (onnx {onnx.__version__}), {seconds:.0f} s with {jobs} emx job(s)\n"
                  f"  emx-onnx-cgen {EMX_VERSION}: passed {counts['emx passed']}, failed {counts['emx failed']}, "
                  f"refused or error {counts['emx refused'] + counts['emx error']} (refused {counts['emx refused']}, "
                  f"error {counts['emx error']})\n  edgepack cpu: passed {counts['ours passed']}, failed "
                  f"{counts['ours failed']}, not claimed {counts['ours not claimed']}\n  both passed "
                  f"{counts['both passed']}, only emx {counts['only emx passed']}, "
                  f"only ours {counts['only ours passed']}", markup=False)
    for row in rows:
        if row.ours == FAILED:
            console.print(f"  ours failed: {row.name}: {row.ours_detail}", markup=False)
    return dict(counts)


@dataclass
class SampleRun:
    name: str
    feeds: Feeds
    reference: dict[str, np.ndarray]  # onnxruntime's outputs
    blocks: dict[str, Block] = field(default_factory=dict)  # by side, the sides that are timed
    notes: dict[str, str] = field(default_factory=dict)  # why a side is not timed, or how the graph differs
    diffs: dict[str, float] = field(default_factory=dict)
    medians: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    """Median seconds per call, one per block, by clock and side."""


def ort_session(model: bytes) -> Run:
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.graph_optimization_level, options.log_severity_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL, 3
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return lambda feeds: dict(zip(names, session.run(names, feeds)))


def ort_bytes(model: onnx.ModelProto) -> bytes:
    """`model` as onnxruntime reads it (IR 10 at most; onnx 1.23 writes IR 14)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    copy.ir_version = min(copy.ir_version, 10)
    return copy.SerializeToString()


def sample_model(name: str, feeds: Feeds) -> tuple[onnx.ModelProto, str]:
    """The graph the sides run: slimmed, pinned to the shapes of `feeds`, slimmed again; or, with a note, where
    onnxruntime rejects that (silero-vad's 8 kHz branch does not fit a 512-sample chunk), slimmed only."""
    model = slim(check_model(load_model(samples.path(name)).model, name))[0]
    static = onnx.ModelProto()
    static.CopyFrom(model)
    for value in static.graph.input:
        for dim, size in zip(value.type.tensor_type.shape.dim, feeds[value.name].shape if value.name in feeds else ()):
            dim.CopyFrom(onnx.TensorShapeProto.Dimension(dim_value=size))
    static = slim(static)[0]
    try:
        ort_session(ort_bytes(static))
    except Exception as error:
        return model, f"inputs left dynamic, onnxruntime rejects them pinned ({one_line(error)[:160]})"
    return static, ""


def input_dims(model: onnx.ModelProto, feeds: Feeds) -> list[str]:
    """emx-onnx-cgen's --input-dim options that pin the dims `model` leaves open to the shapes of `feeds`."""
    return [option for value in model.graph.input if value.name in feeds
            for axis, dim in enumerate(value.type.tensor_type.shape.dim) if not dim.HasField("dim_value")
            for option in ("--input-dim", f"{value.name}:{axis}={feeds[value.name].shape[axis]}")]


def emx_harness(name: str, model: onnx.ModelProto, feeds: Feeds, reference: dict[str, np.ndarray], root: Path) -> Path:
    """The folder of the built harness (`bench`), its weights (`model.bin`, when emx writes one) and its inputs."""
    source, options = model.SerializeToString(), input_dims(model, feeds)
    folder = root / f"{name}-{digest(source, HARNESS, *options, *SAMPLE_CFLAGS)}"
    if (folder / "bench").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.onnx").write_bytes(source)
    result = subprocess.run([sys.executable, "-m", "emx_onnx_cgen", "compile", "--color", "never", *options,
                             "model.onnx", "model.c"], cwd=folder, capture_output=True, text=True)
    if result.returncode:
        lines = [line for line in result.stdout.splitlines() if line.startswith("Result:")]
        raise RuntimeError(f"refused: {(lines or result.stderr.splitlines() or ['?'])[-1].removeprefix('Result: ')}")
    inputs = [feeds[value.name] for value in model.graph.input if value.name in feeds]
    sizes = [array.nbytes for array in [*inputs, *reference.values()]]
    calls = ", ".join(f"args[{index}]" for index in range(len(sizes)))
    (folder / "harness.c").write_text(HARNESS % {"bytes": ", ".join(map(str, sizes)), "inputs": len(inputs),
                                                 "args": len(sizes), "call": calls})
    (folder / "inputs.bin").write_bytes(b"".join(np.ascontiguousarray(array).tobytes() for array in inputs))
    gcc([*SAMPLE_CFLAGS, "harness.c"], folder / "bench", folder)
    return folder


def emx_block(folder: Path, reference: dict[str, np.ndarray], warmup: int, count: int,
              outputs: dict[str, np.ndarray] | None = None) -> dict[str, list[float]]:
    """One harness process: `warmup` untimed calls, `count` timed ones; the last call's outputs go into `outputs`."""
    result = subprocess.run([str(folder / "bench"), str(folder / "model.bin"), "inputs.bin", "outputs.bin",
                             str(warmup), str(count)], cwd=folder, capture_output=True, text=True, check=True)
    if outputs is not None:
        data, offset = (folder / "outputs.bin").read_bytes(), 0
        for name, array in reference.items():
            outputs[name] = np.frombuffer(data, array.dtype, array.size, offset).reshape(array.shape)
            offset += array.nbytes
    wall, cpu = zip(*(map(float, line.split()) for line in result.stdout.splitlines()))
    return {"wall": list(wall), "cpu": list(cpu)}


def python_block(open_session: Callable[[], Run], feeds: Feeds, warmup: int, count: int) -> dict[str, list[float]]:
    """A fresh session: `warmup` untimed calls, `count` timed ones."""
    run = open_session()
    timed(run, feeds, warmup)
    gc.collect()
    return timed(run, feeds, count)


def add_side(sample: SampleRun, side: str, block: Block, outputs: dict[str, np.ndarray]) -> None:
    """Times `side` if its `outputs` are within TOLERANCE of onnxruntime's; notes it as wrong otherwise."""
    diff = max(float(np.max(np.abs(outputs[name].astype(np.float64) - array.astype(np.float64)), initial=0.0))
               for name, array in sample.reference.items())
    scale = max(1.0, *(float(np.max(np.abs(array), initial=0.0)) for array in sample.reference.values()))
    sample.diffs[side] = diff
    if diff <= TOLERANCE * scale:
        sample.blocks[side] = block
    else:
        sample.notes[side] = f"wrong: max |diff| {diff:.2e}"


def prepare_sample(name: str, seed: int, root: Path) -> SampleRun:
    """The sample's three sides, each checked against onnxruntime once."""
    feeds = samples.feeds(name, seed)
    model, graph_note = sample_model(name, feeds)
    ort_model = ort_bytes(model)
    sample = SampleRun(name, feeds, ort_session(ort_model)(feeds), {"onnxruntime": partial(
        python_block, lambda: ort_session(ort_model), feeds)}, {"graph": graph_note} if graph_note else {})
    try:
        open_cpu = partial(NativeSession, lower(model, {key: value.shape for key, value in feeds.items()}))
        add_side(sample, "cpu", partial(python_block, lambda: open_cpu().run, feeds), open_cpu().run(feeds))
    except Exception as error:
        sample.notes["cpu"] = f"failed: {one_line(error)}"
    try:
        folder = emx_harness(name, model, feeds, sample.reference, root)
        outputs: dict[str, np.ndarray] = {}
        emx_block(folder, sample.reference, 0, 1, outputs)
        add_side(sample, "emx", partial(emx_block, folder, sample.reference), outputs)
    except Exception as error:
        sample.notes["emx"] = one_line(error)
    return sample


def time_sample(sample: SampleRun, blocks: int, block_s: float, warmup: int) -> None:
    """Each timed side's median per block; the first side rotates from block to block."""
    sides = [side for side in SIDES if side in sample.blocks]
    slowest = max(statistics.median(sample.blocks[side](warmup, 3)["wall"]) for side in sides)
    count = max(3, round(block_s / slowest))
    sample.medians = {clock: {side: [] for side in sides} for clock in CLOCKS}
    for index in range(blocks):
        for side in sides[index % len(sides):] + sides[:index % len(sides)]:
            for clock, times in sample.blocks[side](warmup, count).items():
                sample.medians[clock][side].append(statistics.median(times))


def latency(sample: SampleRun, clock: str, side: str) -> float | None:
    """The median of `side`'s block medians on `clock`, in seconds (None: not timed)."""
    medians = sample.medians.get(clock, {}).get(side)
    return statistics.median(medians) if medians else None


def ratio(sample: SampleRun, clock: str, top: str, bottom: str) -> float | None:
    above, below = latency(sample, clock, top), latency(sample, clock, bottom)
    return above / below if above is not None and below is not None else None


def shown(value: float | None, pattern: str, scale: float = 1.0) -> str:
    return "-" if value is None else format(value * scale, pattern)


def geometric_mean(values: list[float]) -> str:
    return f"{math.exp(statistics.fmean(math.log(v) for v in values)):.2f}" if values else "-"


def report_samples(console: Console, runs: list[SampleRun], caption: str) -> None:
    table = Table(title="emx-onnx-cgen (gcc -O3 -march=native) vs edgepack cpu (C core, ctypes) vs onnxruntime "
                        "(CPU EP, ORT_ENABLE_ALL), 1 thread", title_justify="left", caption=caption,
                  caption_justify="left")
    for column in ("model", "input", "emx ms", "cpu ms", "ort ms", "emx / cpu", "cpu / ort", "emx / cpu, CPU time",
                   "cpu / ort, CPU time", "emx max |diff|", "cpu max |diff|"):
        table.add_column(column, justify="left" if column in ("model", "input") else "right")
    for run in runs:
        shapes = ", ".join("x".join(map(str, v.shape)) or "scalar" for v in run.feeds.values())
        table.add_row(run.name, shapes, *(shown(latency(run, "wall", side), ".3f", 1000) for side in SIDES),
                      *(shown(ratio(run, *columns), ".2f") for columns in RATIOS),
                      *(shown(run.diffs.get(side), ".2e") for side in ("emx", "cpu")))
    table.add_section()
    means = [geometric_mean([v for run in runs if (v := ratio(run, *columns)) is not None]) for columns in RATIOS]
    table.add_row("geometric mean", "", "", "", "", *means, "", "")
    console.print(table)
    for run in runs:
        for what, note in run.notes.items():
            console.print(f"{run.name}, {what}: {note}", markup=False, overflow="ignore", crop=False)


def machine() -> str:
    """The CPU (lscpu's model name) and the versions that the figures depend on."""
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines()
    names = [line.split(":", 1)[1].strip() for line in lscpu if line.startswith("Model name:")]
    compiler = subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return (f"CPU: {names[0] if names else 'unknown (lscpu names no model)'}; emx-onnx-cgen {EMX_VERSION}, "
            f"onnxruntime {ort.__version__}, {compiler}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=samples.names(), help="sample models (default: all)")
    parser.add_argument("--part", choices=("both", "nodes", "samples"), default="both", help="what to run")
    parser.add_argument("--filter", default="", help="node cases whose name contains this (default: all)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes for emx's side of the node cases")
    parser.add_argument("--json", type=Path, help="write the node cases' per-case table to this file")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "edgepack-emx-onnx-cgen",
                        help="where emx's generated C and executables are kept between runs")
    parser.add_argument("--blocks", type=int, default=5, help="interleaved timing blocks (default: 5)")
    parser.add_argument("--block-ms", type=float, default=300.0, help="about how long the slowest side's block takes")
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls per block (default: 2)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample inputs (default: 0)")
    args = parser.parse_args()

    console = Console(width=200)
    root = args.cache / EMX_VERSION
    console.print(machine(), markup=False)
    if args.part in ("both", "nodes"):
        start = time.perf_counter()
        rows = run_node_cases(node_cases(args.filter), args.jobs, root / "nodes")
        counts = report_nodes(console, rows, time.perf_counter() - start, args.jobs)
        if args.json:
            args.json.write_text(json.dumps({"emx-onnx-cgen": EMX_VERSION, "onnx": onnx.__version__,
                                             "counts": counts, "cases": [asdict(row) for row in rows]}, indent=1))
    if args.part in ("both", "samples"):
        runs = [prepare_sample(name, args.seed, root / "samples") for name in args.models]
        for run in runs:
            time_sample(run, args.blocks, args.block_ms / 1000, args.warmup)
        report_samples(console, runs, f"ms are wall time; medians of {args.blocks} interleaved blocks of about "
                                      f"{args.block_ms:.0f} ms for the slowest side, {args.warmup} warmup calls "
                                      f"each; max |diff| against onnxruntime")


if __name__ == "__main__":
    main()
