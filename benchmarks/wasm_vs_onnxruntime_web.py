"""The `wasm` build of edgepack's C runtime core against onnxruntime-web (wasm backend, 1 thread), both in node.

    python benchmarks/wasm_vs_onnxruntime_web.py [--blocks 5] [--block-ms 400] [--warmup 1] [--seed 0] [model ...]

Models and inputs are those of `cpu_vs_onnxruntime.py`: ppocr-det at 1x3x640x640, ppocr-rec at 1x3x48x320,
ppocr-cls at 1x3x48x192 and silero-vad (512 samples at 16 kHz), slimmed as a build slims them, inputs from
`samples.feeds(name, --seed)`. edgepack runs the `.epk` plan lowered at those shapes on `core.wasm` (clang wasm32 +
SIMD128, `runtime/native/build.py`); onnxruntime-web runs the same slimmed ONNX model with
`executionProviders: ["wasm"]`, `graphOptimizationLevel: "all"` and `ort.env.wasm.numThreads = 1`.
onnxruntime-web comes from npm (`onnxruntime-web@^1.20`), installed on first use into a cache folder outside the
repository (`<edgepack cache>/bench-node`); the script says when it installs it.

latency: one node process (`benchmarks/node/bench.mjs`) loads both runtimes and times them side by side. It runs
with `--no-liftoff`: V8 compiles both modules with its optimizing compiler up front, so every timed call runs the code
a long-lived page runs after tier-up (with the baseline compiler first, the early blocks were several times slower
and swung the ratios). Per model, --blocks blocks alternate which side goes first; in each block each side opens a
fresh session (edgepack: a new instance of the compiled core module and `ep_open`; onnxruntime-web:
`InferenceSession.create`), calls it --warmup times untimed, then N times, each call timed on two clocks: wall time
(`performance.now()`) and node's CPU time (`process.cpuUsage()`, all its threads), which leaves out the time node
waited for a core while other work held it; N makes the slower side's block about --block-ms of wall time (at
least 3). One call is an awaited `run(feeds)` on either side: inputs copied into the runtime's memory
(onnxruntime-web: wrapped as `ort.Tensor` first), the model run, outputs copied out to JS arrays. Per clock, a
side's latency is the median of its block medians; the ratio is edgepack / onnxruntime-web (below 1: edgepack is
faster), on wall time with the range of the per-block ratios. max |diff| compares the two sides' outputs of their
first call. Absolute times are this machine's, and other work shares it: read the ratios.

runtime bytes: what each side needs to run a model, raw and gzip -9. edgepack: `core.wasm` plus its node glue
`runtime/native/wasm/ep_run.mjs` (the only JS glue the core has so far). onnxruntime-web in node: the module that
`import "onnxruntime-web"` resolves to under node (`dist/ort.node.min.mjs`), the emscripten glue it imports
(`dist/ort-wasm-simd-threaded.mjs`) and the `.wasm` that glue loads (`dist/ort-wasm-simd-threaded.wasm`); for a
browser, its wasm-only entry (`onnxruntime-web/wasm`: `dist/ort.wasm.bundle.min.mjs`, the glue inlined) and the
same `.wasm`. Models and plans are not counted. The target of issue 5: edgepack's bytes <= 1/30 of theirs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import shutil
import statistics
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from rich.console import Console
from rich.table import Table

from edgepack import samples
from edgepack.compiler.lower import lower
from edgepack.model_check import check_model
from edgepack.packager.slim import slim
from edgepack.runtime.model_file import load_model
from edgepack.runtime.native.build import WASM_GLUE, wasm_core

Feeds = dict[str, np.ndarray]
MODELS = ("ppocr-det", "ppocr-rec", "ppocr-cls", "silero-vad")
NODE = Path(__file__).parent / "node"
SIDES = ("edgepack", "onnxruntime-web")
BYTES_TARGET = 30
"""Issue 5: edgepack's runtime bytes are at most 1/30 of onnxruntime-web's."""
ORT_NODE_FILES = ("dist/ort-wasm-simd-threaded.mjs", "dist/ort-wasm-simd-threaded.wasm")
"""What onnxruntime-web's node entry loads for the wasm backend (besides the entry itself)."""
ORT_BROWSER_FILES = ("dist/ort-wasm-simd-threaded.wasm",)
"""What its wasm-only browser bundle loads (the emscripten glue is inlined in the bundle)."""


@dataclass(frozen=True)
class Case:
    name: str
    model: bytes
    """The slimmed model, serialized for onnxruntime-web."""
    plan: bytes
    feeds: Feeds


@dataclass(frozen=True)
class Measured:
    name: str
    blocks: dict[str, dict[str, list[float]]]
    """Median ms per call, one per block, by clock ("wall", "cpu") and side."""
    runs: int
    max_abs_diff: float


def serialized(model: onnx.ModelProto) -> bytes:
    """`model` at IR 10, as onnxruntime reads it (onnx 1.23 writes IR 14)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    copy.ir_version = 10
    return copy.SerializeToString()


def load_case(name: str, seed: int) -> Case:
    model = slim(check_model(load_model(samples.path(name)).model, name))[0]
    feeds = samples.feeds(name, seed)
    return Case(name, serialized(model), lower(model, {key: value.shape for key, value in feeds.items()}), feeds)


def install_ort_web(console: Console) -> Path:
    """The onnxruntime-web package folder in the cache, installed with npm when missing (`edgepack bench --compare
    onnxruntime-web` shares it)."""
    from edgepack.bench_chromium import ORT_WEB, ort_web_package

    console.print(f"onnxruntime-web from npm ({ORT_WEB}), in edgepack's cache (installed once)")
    return ort_web_package()


def package_json(package: Path) -> dict:
    return json.loads((package / "package.json").read_text())


def node_entry(package: Path) -> Path:
    """The file `import "onnxruntime-web"` resolves to under node (the "node" condition of its exports)."""
    return package / package_json(package)["exports"]["."]["node"]["import"]


def browser_entry(package: Path) -> Path:
    """The default ES module of its wasm-only entry, `onnxruntime-web/wasm`."""
    return package / package_json(package)["exports"]["./wasm"]["import"]["default"]


def write_job(folder: Path, cases: list[Case], core: Path, entry: Path, args: argparse.Namespace) -> Path:
    specs = []
    for case in cases:
        (folder / f"{case.name}.epk").write_bytes(case.plan)
        (folder / f"{case.name}.onnx").write_bytes(case.model)
        inputs = []
        for name, value in case.feeds.items():
            path = folder / f"{case.name}.{len(inputs)}.bin"
            path.write_bytes(np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<")).tobytes())
            inputs.append({"name": name, "dtype": value.dtype.name, "dims": list(value.shape), "file": str(path)})
        specs.append({"name": case.name, "plan": str(folder / f"{case.name}.epk"),
                      "model": str(folder / f"{case.name}.onnx"), "inputs": inputs})
    job = {"core": str(core), "ortEntry": entry.as_uri(), "blocks": args.blocks, "blockMs": args.block_ms,
           "warmup": args.warmup, "cases": specs}
    path = folder / "job.json"
    path.write_text(json.dumps(job))
    return path


def run_node(job: Path) -> dict:
    node = shutil.which("node")
    if node is None:
        raise SystemExit("node is needed (apt-get install nodejs)")
    proc = subprocess.run([node, "--no-liftoff", str(NODE / "bench.mjs"), str(job)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"benchmarks/node/bench.mjs failed:\n{proc.stderr.strip()[-3000:]}")
    return json.loads(proc.stdout)


def sizes(paths: list[Path]) -> tuple[int, int]:
    """Raw bytes and gzip -9 bytes, summed over the files (each compressed on its own, as a server sends them)."""
    return (sum(p.stat().st_size for p in paths),
            sum(len(gzip.compress(p.read_bytes(), compresslevel=9, mtime=0)) for p in paths))


def ratio(row: Measured, clock: str) -> float:
    """edgepack / onnxruntime-web: the ratio of the medians of block medians on `clock`."""
    return statistics.median(row.blocks[clock]["edgepack"]) / statistics.median(row.blocks[clock]["onnxruntime-web"])


def geometric_mean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def latency_table(measured: list[Measured], caption: str) -> tuple[Table, float]:
    table = Table(title="edgepack wasm core vs onnxruntime-web (wasm backend), 1 thread, in node",
                  title_justify="left", caption=caption, caption_justify="left")
    for column in ("model", "calls/block", "edgepack ms", "ort-web ms", "edgepack / ort-web, wall (block range)",
                   "edgepack / ort-web, CPU time", "max |diff|"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for row in measured:
        wall = row.blocks["wall"]
        spread = [a / b for a, b in zip(wall["edgepack"], wall["onnxruntime-web"])]
        table.add_row(row.name, str(row.runs), *(f"{statistics.median(wall[side]):.3f}" for side in SIDES),
                      f"{ratio(row, 'wall'):.2f} ({min(spread):.2f}-{max(spread):.2f})", f"{ratio(row, 'cpu'):.2f}",
                      f"{row.max_abs_diff:.2e}")
    geomeans = [geometric_mean([ratio(row, clock) for row in measured]) for clock in ("wall", "cpu")]
    table.add_section()
    table.add_row("geometric mean", "", "", "", *(f"{g:.2f}" for g in geomeans), "")
    return table, geomeans[0]


def bytes_table(console: Console, package: Path, core: Path) -> None:
    ours = [core, WASM_GLUE]
    theirs = {"node (as run here)": [node_entry(package), *(package / f for f in ORT_NODE_FILES)],
              "browser (onnxruntime-web/wasm)": [browser_entry(package), *(package / f for f in ORT_BROWSER_FILES)]}
    table = Table(title="runtime bytes (wasm + JS glue; models and plans not counted)", title_justify="left")
    for column in ("onnxruntime-web as", "edgepack raw", "ort-web raw", "raw ratio", "edgepack gzip", "ort-web gzip",
                   "gzip ratio", "target <= 1/30"):
        table.add_column(column, justify="left" if column == "onnxruntime-web as" else "right")
    our_raw, our_gzip = sizes(ours)
    for label, files in theirs.items():
        raw, packed = sizes(files)
        holds = our_raw * BYTES_TARGET <= raw and our_gzip * BYTES_TARGET <= packed
        table.add_row(label, f"{our_raw:,}", f"{raw:,}", f"1/{raw / our_raw:.0f}", f"{our_gzip:,}", f"{packed:,}",
                      f"1/{packed / our_gzip:.0f}", "holds" if holds else "does not hold")
    console.print(table)
    root = package.parent.parent
    console.print("edgepack: " + ", ".join(f"{p.name} {p.stat().st_size:,}" for p in ours))
    for label, files in theirs.items():
        console.print(f"onnxruntime-web, {label}: "
                      + ", ".join(f"{p.relative_to(root)} {p.stat().st_size:,}" for p in files))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(MODELS), help=f"models (default: {' '.join(MODELS)})")
    parser.add_argument("--blocks", type=int, default=5, help="interleaved timing blocks (default: 5)")
    parser.add_argument("--block-ms", type=float, default=400.0, help="about how long a side's block of calls takes")
    parser.add_argument("--warmup", type=int, default=1, help="untimed calls per fresh session (default: 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the inputs (default: 0)")
    args = parser.parse_args()

    console = Console(width=200)
    package = install_ort_web(console)
    core = wasm_core()
    cases = [load_case(name, args.seed) for name in args.names]
    with tempfile.TemporaryDirectory(prefix="edgepack-wasm-bench-") as folder:
        results = run_node(write_job(Path(folder), cases, core, node_entry(package), args))
    measured = [Measured(r["name"], r["blocks"], r["runs"], r["maxAbsDiff"]) for r in results["results"]]
    caption = (f"onnxruntime-web {package_json(package)['version']}, node {results['node']}; ms are wall time; "
               f"medians of {args.blocks} interleaved blocks of about {args.block_ms:.0f} ms per side, fresh "
               f"sessions per block, {args.warmup} warmup call(s) each")
    table, geomean = latency_table(measured, caption)
    console.print(table)
    console.print(f"edgepack wasm / onnxruntime-web latency on wall time, geometric mean: {geomean:.2f}x "
                  f"({'faster' if geomean < 1 else 'slower'}; issue 5 sets no latency target for wasm)")
    bytes_table(console, package, core)


if __name__ == "__main__":
    main()
