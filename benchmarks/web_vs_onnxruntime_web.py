"""edgepack's web bundle (`--profile web`, its JS runtime on the wasm core) against onnxruntime-web (wasm backend,
1 thread, or --threads on both sides), both in one headless Chromium.

    python benchmarks/web_vs_onnxruntime_web.py [--blocks 5] [--block-ms 400] [--warmup 2] [--cold 3]
                                                [--gpu-runs 1] [--seed 0] [--threads 1] [model ...]

Models and inputs are those of `wasm_vs_onnxruntime_web.py`: ppocr-det at 1x3x640x640, ppocr-rec at 1x3x48x320,
ppocr-cls at 1x3x48x192 and silero-vad (512 samples at 16 kHz), inputs from `samples.feeds(name, --seed)`. edgepack
runs the web bundle that `edgepack.build(model, "web", weights="fp32", input_shapes=<the feeds' shapes>)` writes,
through its own `index.js` (`createSession({providers: ["wasm"]})`: every partition on `runtime/edgepack.wasm`);
onnxruntime-web runs the same model slimmed as a build slims it, from its wasm-only browser entry
(`onnxruntime-web/wasm`, `dist/ort.wasm.bundle.min.mjs`, the emscripten glue inlined, plus
`dist/ort-wasm-simd-threaded.wasm`), with `executionProviders: ["wasm"]`, `graphOptimizationLevel: "all"` and
`ort.env.wasm.numThreads = 1`. onnxruntime-web comes from npm into edgepack's cache (`install_ort_web` of
wasm_vs_onnxruntime_web.py). One localhost server (targets/web/chromium.py, `Cache-Control: no-store`, no COOP/COEP
headers, so neither side could use threads) serves both. With --threads N above 1 the server adds COOP and COEP (the
pages are cross-origin isolated), edgepack opens `createSession({providers: ["wasm"], threads: N})` (its threaded
core, `runtime/edgepack-threads.wasm`, on the page's thread and N - 1 Workers) and onnxruntime-web runs with
`numThreads = N`; Chromium is Debian's, driven by Playwright, with default V8
flags (wasm compiled by Liftoff first and tiered up in the background, as a user's browser does).

cold start: a fresh tab per measurement (nothing imported, nothing compiled, nothing cached): the time from the
`import()` of the entry module to the end of the first run on the feeds: fetching and compiling the JS and the
.wasm, fetching the plans or the model, opening the session (onnxruntime-web: `InferenceSession.create`, which
optimizes the graph), and the first call. --cold tabs per side, alternating which side goes first; the figure is the
median. Target: edgepack's cold start <= onnxruntime-web's.

latency: one tab per side per model. --blocks blocks alternate which side goes first; in each block each side opens a
fresh session (the module stays imported), calls it --warmup times untimed, then N times, each call an awaited
`run(feeds)` timed with `performance.now()` (input copy in, run, outputs out to JS arrays; onnxruntime-web: the
inputs wrapped as `ort.Tensor` in each call). N makes the slower side's block about --block-ms (at least 3). A side's
p50 is the median of its block medians; the ratio is edgepack / onnxruntime-web with the range of the per-block
ratios. Target: <= 1.5x. `performance.now()` in a page that is not cross-origin isolated has 0.1 ms resolution.
max |diff| compares the two sides' outputs of their first latency call.

webgpu: the same bundle with `providers: ["webgpu", "wasm"]` in a fresh tab, --gpu-runs timed calls after the first
(--gpu-runs -1 leaves the column out);
p50. Headless Chromium's WebGPU is SwiftShader, a CPU rasterizer: this column checks that the WebGPU path runs and
gives the right numbers (its max |diff| is against onnxruntime-web); it does not measure GPU speed.

page bytes: per model, what a fresh tab fetches to open the bundle (`createSession`, then `release`), as Chromium
saw its requests, plans aside: on the wasm path (`providers: ["wasm"]`: index.js, session.js, wasm.js, core.js and
the wasm core) and on the WebGPU path (`["webgpu", "wasm"]`, on SwiftShader here: the WebGPU executor's modules and
the WGSL kernels, and the wasm core only where a partition runs on it); with --threads, the threaded core and its
worker module in place of the one-thread core. Raw, gzip -9 and brotli (quality 11), each file compressed on its own,
as a server sends them. Target: <= 143,000 bytes raw on each path.

runtime bytes: what each side ships to run any model, raw and gzip -9. edgepack: the bundle's `runtime/*.js` and
both wasm cores (`runtime/*.wasm`; a page fetches one); onnxruntime-web: its browser entry and .wasm as above.
Models, plans and the bundle's index.js (the model's description) are not counted. Target: edgepack's bytes <= 1/30
of onnxruntime-web's.
Absolute times are this machine's, and other work shares it: read the ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import brotli
import numpy as np
from rich.console import Console
from rich.table import Table
from wasm_vs_onnxruntime_web import (
    BYTES_TARGET,
    MODELS,
    ORT_BROWSER_FILES,
    browser_entry,
    geometric_mean,
    install_ort_web,
    package_json,
    serialized,
    sizes,
)

import edgepack
from edgepack import samples
from edgepack.bench_chromium import run_ort, stage_ort
from edgepack.model_check import check_model
from edgepack.packager.slim import slim
from edgepack.runtime.model_file import load_model
from edgepack.targets.web.chromium import Chromium, run_bundle

SIDES = ("edgepack", "onnxruntime-web")
COLD_TARGET = 1.0
LATENCY_TARGET = 1.5


@dataclass
class Case:
    name: str
    feeds: dict[str, np.ndarray]
    bundle: Path
    model: Path
    dtypes: dict[str, str]


@dataclass
class Measured:
    name: str
    cold: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in SIDES})
    blocks: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in SIDES})
    runs: int = 0
    max_abs_diff: float = float("nan")
    gpu_p50: float | None = None
    gpu_providers: list[str] = field(default_factory=list)
    gpu_adapter: dict[str, Any] | None = None
    gpu_diff: float | None = None
    gpu_error: str | None = None


def max_abs_diff(ours: dict[str, np.ndarray], theirs: dict[str, np.ndarray]) -> float:
    diffs = [float(np.max(np.abs(np.asarray(v, np.float64) - np.asarray(theirs[k], np.float64))))
             for k, v in ours.items() if k in theirs and np.shape(v) == np.shape(theirs[k]) and np.size(v)]
    return max(diffs) if diffs else float("nan")


def prepare(name: str, seed: int, root: Path) -> Case:
    feeds = samples.feeds(name, seed)
    result = edgepack.build(samples.path(name), "web", root / "bundles" / name, weights="fp32",
                            input_shapes={k: v.shape for k, v in feeds.items()}, sample_inputs=[feeds])
    model = slim(check_model(load_model(samples.path(name)).model, name))[0]
    path = root / "models" / f"{name}.onnx"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(serialized(model))
    manifest = json.loads((result.bundle_dir / "manifest.json").read_text())
    return Case(name, feeds, result.bundle_dir, path, {o["name"]: o["dtype"] for o in manifest["outputs"]})


class Runner:
    """Both sides in one Chromium: `call(side, page, repeat)` runs a fresh session and returns run_bundle's dict."""

    def __init__(self, browser: Chromium, root: Path, ort_module: str, ort_wasm: str, threads: int) -> None:
        self.browser, self.root, self.ort_module, self.ort_wasm = browser, root, ort_module, ort_wasm
        self.threads = threads

    def call(self, side: str, page: Any, case: Case, repeat: int, providers: list[str] | None = None
             ) -> dict[str, Any]:
        if side == "edgepack":
            url = self.browser.url((case.bundle / "index.js").relative_to(self.root).as_posix())
            return run_bundle(page, url, case.feeds, case.dtypes, providers or ["wasm"], repeat, self.threads)
        return run_ort(page, self.browser.url(self.ort_module), self.browser.url(self.ort_wasm),
                       self.browser.url(case.model.relative_to(self.root).as_posix()), case.feeds, repeat,
                       self.threads)


def measure(runner: Runner, case: Case, args: argparse.Namespace, console: Console) -> Measured:
    row = Measured(case.name)
    browser = runner.browser
    for index in range(args.cold):
        order = SIDES if index % 2 == 0 else SIDES[::-1]
        for side in order:
            page = browser.page()
            try:
                row.cold[side].append(runner.call(side, page, case, 0)["coldStartMs"])
            finally:
                page.close()
    pages = {side: browser.page() for side in SIDES}
    try:
        probe = {side: runner.call(side, pages[side], case, 3) for side in SIDES}
        slowest = max(statistics.median(p["runMs"]) for p in probe.values())
        row.runs = max(3, int(args.block_ms / max(slowest, 0.1)))
        for block in range(args.blocks):
            order = SIDES if block % 2 == 0 else SIDES[::-1]
            outputs = {}
            for side in order:
                result = runner.call(side, pages[side], case, args.warmup + row.runs)
                row.blocks[side].append(statistics.median(result["runMs"][args.warmup:]))
                outputs[side] = result["outputs"]
            if block == 0:
                row.max_abs_diff = max_abs_diff(outputs["edgepack"], outputs["onnxruntime-web"])
                reference = outputs["onnxruntime-web"]
    finally:
        for page in pages.values():
            page.close()
    if args.gpu_runs < 0:
        return row
    page = browser.page()
    try:
        result = runner.call("edgepack", page, case, args.gpu_runs, ["webgpu", "wasm"])
        row.gpu_p50 = statistics.median(result["runMs"]) if result["runMs"] else result["firstRunMs"]
        row.gpu_providers, row.gpu_adapter = list(result["providers"]), result["adapter"]
        row.gpu_diff = max_abs_diff(result["outputs"], reference)
    except Exception as error:  # noqa: BLE001  (the WebGPU executor is a work in progress: report, go on)
        row.gpu_error = (str(error).strip().splitlines() or [type(error).__name__])[0][:160]
        console.print(f"[yellow]{case.name}: webgpu failed: {row.gpu_error}[/]")
    finally:
        page.close()
    return row


def ratio(row: Measured) -> float:
    return statistics.median(row.blocks["edgepack"]) / statistics.median(row.blocks["onnxruntime-web"])


def cold_ratio(row: Measured) -> float:
    return statistics.median(row.cold["edgepack"]) / statistics.median(row.cold["onnxruntime-web"])


def gpu_cell(row: Measured) -> str:
    if row.gpu_error:
        return "error"
    on_gpu = sum(p == "webgpu" for p in row.gpu_providers)
    if row.gpu_p50 is None:
        return "skipped"
    return f"{row.gpu_p50:.1f} ({on_gpu}/{len(row.gpu_providers)} on gpu)"


def results_table(measured: list[Measured], caption: str, threads: int) -> Table:
    table = Table(title=f"edgepack web bundle (wasm) vs onnxruntime-web (wasm backend), {threads} thread(s) a side, "
                        "headless Chromium",
                  title_justify="left", caption=caption, caption_justify="left")
    columns = ("model", "cold edgepack ms", "cold ort-web ms", "cold ratio (<= 1)", "calls/block", "p50 edgepack ms",
               "p50 ort-web ms", "p50 ratio (<= 1.5) (block range)", "max |diff|",
               "webgpu p50 ms, SwiftShader (not GPU speed)", "webgpu max |diff|")
    for column in columns:
        table.add_column(column, justify="left" if column == "model" else "right")
    for row in measured:
        blocks = row.blocks
        spread = [a / b for a, b in zip(blocks["edgepack"], blocks["onnxruntime-web"])]
        table.add_row(row.name, *(f"{statistics.median(row.cold[s]):.1f}" for s in SIDES), f"{cold_ratio(row):.2f}",
                      str(row.runs), *(f"{statistics.median(blocks[s]):.2f}" for s in SIDES),
                      f"{ratio(row):.2f} ({min(spread):.2f}-{max(spread):.2f})", f"{row.max_abs_diff:.2e}",
                      gpu_cell(row), "" if row.gpu_diff is None else f"{row.gpu_diff:.2e}")
    table.add_section()
    table.add_row("geometric mean", "", "", f"{geometric_mean([cold_ratio(r) for r in measured]):.2f}", "", "", "",
                  f"{geometric_mean([ratio(r) for r in measured]):.2f}", "", "", "")
    return table


OPEN_SESSION = """async ({ module, providers, threads }) => {
  const { createSession } = await import(module);
  const session = await createSession({ providers, threads });
  const providersUsed = session.providers;
  session.release();
  return providersUsed;
}"""
"""Opens a bundle's session on `providers` and `threads` and releases it: what the page fetched is what running
needs."""
PATHS = {"wasm": ["wasm"], "webgpu": ["webgpu", "wasm"]}
"""The two ways a page runs a bundle, as createSession's providers."""
PAGE_BUDGET = 143_000
"""Issue 26: everything a page fetches to run a sample model but the model (its plans) is at most 143 KB."""


def fetched_runtime(browser: Chromium, root: Path, bundle: Path, providers: list[str],
                    threads: int) -> tuple[list[str], list[Path]]:
    """Opens `bundle` on `providers` and `threads` in a fresh tab: the providers its partitions got, and the bundle's
    files the tab fetched but the plans (index.js, the runtime's JS, the wasm core, its worker, the WGSL kernels)."""
    page = browser.page()
    used = page.evaluate(OPEN_SESSION, {"module": browser.url((bundle / "index.js").relative_to(root).as_posix()),
                                        "providers": providers, "threads": threads})
    page.close()
    prefix = bundle.relative_to(root).as_posix() + "/"
    files = sorted({path.removeprefix(prefix) for path in page.requests if path.startswith(prefix)})
    return used, [bundle / path for path in files if not path.startswith("model/")]


def compressed_sizes(paths: list[Path]) -> tuple[int, int, int]:
    """Raw, gzip -9 and brotli (quality 11) bytes, summed over the files, each compressed on its own."""
    raw, gzip = sizes(paths)
    return raw, gzip, sum(len(brotli.compress(p.read_bytes(), quality=11)) for p in paths)


def page_bytes_table(console: Console, browser: Chromium, root: Path, cases: list[Case], threads: int) -> None:
    """Per model and path (wasm, webgpu): the bytes the page fetched to open the bundle, against PAGE_BUDGET."""
    table = Table(title=f"what a page fetches to run the model, its plans aside (target <= {PAGE_BUDGET:,} bytes "
                        "raw): index.js, the runtime's JS, the wasm core, the WGSL kernels", title_justify="left")
    for column in ("model", "path", "partitions on", "raw", "gzip -9", "brotli", "target", "files"):
        table.add_column(column, justify="left" if column in ("model", "path", "partitions on", "files") else "right")
    for case in cases:
        for path, providers in PATHS.items():
            used, files = fetched_runtime(browser, root, case.bundle, providers, threads)
            raw, gzip, brotli_bytes = compressed_sizes(files)
            table.add_row(case.name, path, ", ".join(used), f"{raw:,}", f"{gzip:,}", f"{brotli_bytes:,}",
                          "holds" if raw <= PAGE_BUDGET else "does not hold",
                          " ".join(f"{p.relative_to(case.bundle).as_posix()} {p.stat().st_size:,}" for p in files))
    console.print(table)


def bytes_table(console: Console, package: Path, bundle: Path) -> None:
    ours = sorted((bundle / "runtime").glob("*.js")) + sorted((bundle / "runtime").glob("*.wasm"))
    theirs = [browser_entry(package), *(package / f for f in ORT_BROWSER_FILES)]
    table = Table(title="runtime bytes shipped (all of runtime/, which a page never fetches whole; models, plans, "
                        "WGSL and index.js not counted)", title_justify="left")
    for column in ("", "edgepack", "onnxruntime-web", "ratio", "target <= 1/30"):
        table.add_column(column, justify="left" if not column else "right")
    our_raw, our_gzip = sizes(ours)
    raw, packed = sizes(theirs)
    table.add_row("raw", f"{our_raw:,}", f"{raw:,}", f"1/{raw / our_raw:.0f}",
                  "holds" if our_raw * BYTES_TARGET <= raw else "does not hold")
    table.add_row("gzip -9", f"{our_gzip:,}", f"{packed:,}", f"1/{packed / our_gzip:.0f}",
                  "holds" if our_gzip * BYTES_TARGET <= packed else "does not hold")
    console.print(table)
    console.print("onnxruntime-web: " + ", ".join(f"{p.relative_to(package.parent.parent)} {p.stat().st_size:,}"
                                                  for p in theirs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(MODELS), help=f"models (default: {' '.join(MODELS)})")
    parser.add_argument("--blocks", type=int, default=5, help="interleaved timing blocks (default: 5)")
    parser.add_argument("--block-ms", type=float, default=400.0, help="about how long a side's block of calls takes")
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls per fresh session (default: 2)")
    parser.add_argument("--cold", type=int, default=3, help="fresh tabs per side for the cold start (default: 3)")
    parser.add_argument("--gpu-runs", type=int, default=1,
                        help="timed WebGPU calls after the first (default: 1; ppocr-det takes about a minute a call "
                             "on SwiftShader here; -1 skips the WebGPU column)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the inputs (default: 0)")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads of both sides' wasm engines (default: 1; more serves the pages cross-origin "
                             "isolated, and edgepack runs its threaded core)")
    args = parser.parse_args()

    console = Console(width=220)
    package = install_ort_web(console)
    measured: list[Measured] = []
    adapter = None
    with tempfile.TemporaryDirectory(prefix="edgepack-web-bench-") as folder:
        root = Path(folder)
        cases = []
        for name in args.names:
            console.print(f"building the web bundle of {name} (fp32 weights)")
            cases.append(prepare(name, args.seed, root))
        ort_module, ort_wasm = stage_ort(package, root)
        with Chromium(root, isolated=args.threads > 1) as browser:
            runner = Runner(browser, root, ort_module, ort_wasm, args.threads)
            version = browser.context.browser.version if browser.context.browser else "?"
            for case in cases:
                console.print(f"measuring {case.name}")
                try:
                    measured.append(measure(runner, case, args, console))
                except Exception:  # noqa: BLE001  (one model failing leaves the others' figures)
                    console.print(f"[red]{case.name} failed:[/]\n{traceback.format_exc(limit=3)}")
                    continue
                adapter = adapter or measured[-1].gpu_adapter
            page_bytes_table(console, browser, root, cases, args.threads)
        caption = (f"onnxruntime-web {package_json(package)['version']}, Chromium {version} headless, "
                   f"{args.threads} thread(s) a side{' (pages cross-origin isolated)' if args.threads > 1 else ''}; "
                   "ms are wall "
                   f"time; cold: median of {args.cold} fresh tabs per side; p50: median of {args.blocks} interleaved "
                   f"block medians of about {args.block_ms:.0f} ms per side, fresh sessions per block, {args.warmup} "
                   f"warmup call(s) each")
        if measured:
            console.print(results_table(measured, caption, args.threads))
        if adapter:
            console.print(f"WebGPU adapter: {adapter.get('vendor')} {adapter.get('architecture')}, fallback adapter: "
                          f"{adapter.get('isFallbackAdapter')}; SwiftShader runs WGSL on the CPU: the webgpu column "
                          "checks the path and its numbers, it does not measure GPU speed")
        bytes_table(console, package, cases[0].bundle)


if __name__ == "__main__":
    main()
