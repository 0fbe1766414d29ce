"""`edgepack bench BUNDLE --device chromium`: runs a web bundle (`--profile web`) in headless Chromium through its
own `index.js`, times it (cold start: import + fetch + compile + first run; then p50/p90 of the timed runs), reports
the provider of each partition and the WebGPU adapter, and checks its outputs against the `reference` provider on the
bundle's source model. With `--compare onnxruntime-web`, the source model also runs in onnxruntime-web (wasm backend,
1 thread) in the same browser on the same inputs, and the report gives the ratios.

A web bundle ships `.epk` plans, not an ONNX graph, so the oracle runs on the source model: `--source PATH`, or the
file the manifest names (matched by sha256) beside the bundle or in the edgepack sample cache. With fp32 weights the
outputs must be within bench_result's TOLERANCE of each output's scale; with fp16 or int8 weights the bundle differs
from its fp32 source by design, and the bar is the cosine the build's fidelity check held it to (the profile's)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import onnx

from edgepack.runtime.bundle_format import read_manifest
from edgepack.runtime.errors import EdgepackError

from .bench_result import TOLERANCE, OutputCheck, check_output, result_dict
from .devices.local import HostDevice
from .input_files import check_names
from .sample_inputs import dims_of, sample_feeds
from .source_model import find_source

DEVICE = "chromium"
PROVIDERS = {"webgpu": ["webgpu", "wasm"], "wasm": ["wasm"]}
"""--provider -> the providers createSession gets (webgpu keeps wasm for the partitions the GPU kernels refuse)."""
COMPARE = "onnxruntime-web"
ORT_WEB = "onnxruntime-web@^1.20"
ORT_IR_VERSION = 10
"""onnxruntime reads IR <= 10 (onnx 1.23 writes 14)."""
FALLBACK_NOTE = ("The WebGPU adapter is a fallback adapter (SwiftShader, a CPU rasterizer in headless Chromium): its "
                 "timings do not measure GPU speed; the run checks correctness only.")
FP32_RULE = f"max abs diff within {TOLERANCE:g} of each output's scale"
ORACLE_KIND = "reference on the source model"
HOST_NOTE = "Timings are this machine's CPU running Chromium headless, not those of a user's device."

ORT_RUN = """
async ({ module, wasmPaths, model, feeds, repeat, threads }) => {
  const TYPES = { float32: Float32Array, int32: Int32Array, int64: BigInt64Array, uint8: Uint8Array,
    int8: Int8Array, bool: Uint8Array };
  const decode = (text, Type) => new Type(Uint8Array.from(atob(text), (c) => c.charCodeAt(0)).buffer);
  const encode = (array) => {
    const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
    let text = "";
    for (let i = 0; i < bytes.length; i += 32768) text += String.fromCharCode(...bytes.subarray(i, i + 32768));
    return btoa(text);
  };
  const started = performance.now();
  const ort = await import(module);
  ort.env.wasm.numThreads = threads;
  ort.env.wasm.proxy = false;
  ort.env.wasm.wasmPaths = { wasm: wasmPaths };
  const options = { executionProviders: ["wasm"], graphOptimizationLevel: "all" };
  const session = await ort.InferenceSession.create(model, options);
  const arrays = Object.entries(feeds).map(([name, f]) => [name, decode(f.data, TYPES[f.dtype]), f]);
  const call = () => session.run(Object.fromEntries(
    arrays.map(([name, data, f]) => [name, new ort.Tensor(f.dtype, data, f.dims)])));
  const firstStart = performance.now();
  let outputs = await call();
  const coldStart = performance.now() - started;
  const first = performance.now() - firstStart;
  const times = [];
  for (let i = 0; i < repeat; i++) {
    const t = performance.now();
    outputs = await call();
    times.push(performance.now() - t);
  }
  const result = { coldStartMs: coldStart, firstRunMs: first, runMs: times, outputs: {} };
  for (const [name, tensor] of Object.entries(outputs)) {
    result.outputs[name] = { data: encode(tensor.data), dims: Array.from(tensor.dims), dtype: tensor.type };
  }
  await session.release();
  return result;
}
"""
"""Evaluated in a page: imports onnxruntime-web, opens the model on its wasm backend (`threads`), runs it on the
base64 feeds like `run_bundle.js` runs a bundle, and returns the outputs (base64) and the timings."""


@dataclass(frozen=True)
class Timing:
    cold_start_ms: float
    """import + fetch + compile + first run, in a fresh page."""
    first_run_ms: float
    p50_ms: float
    p90_ms: float
    runs: int


@dataclass(frozen=True)
class Comparison:
    peer: str
    version: str
    model: str
    timing: Timing
    max_abs_diff: float | None
    """Between edgepack's and the peer's outputs."""
    outputs: list[OutputCheck]
    """Its outputs against `reference` on the source model."""
    run_ms: list[float]
    """Every run after the first (warm-up, then timed)."""

    def ratios(self, ours: Timing) -> dict[str, float]:
        """edgepack / peer (below 1: edgepack is faster)."""
        return {"cold_start": ours.cold_start_ms / self.timing.cold_start_ms,
                "p50": ours.p50_ms / self.timing.p50_ms, "p90": ours.p90_ms / self.timing.p90_ms}


@dataclass(frozen=True)
class ChromiumBenchReport:
    bundle: str
    provider: str
    browser: str
    inputs: list[dict[str, Any]]
    timing: Timing
    providers: list[str]
    partitions: list[dict[str, Any]]
    adapter: dict[str, Any] | None
    outputs: list[OutputCheck]
    criterion: str
    oracle: str
    warmup: int
    run_ms: list[float]
    """Every run after the first (warm-up, then timed)."""
    compare: Comparison | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.outputs)

    def as_dict(self) -> dict[str, Any]:
        """The report in the bench result schema (edgepack-bench/1): the browser, the adapter and the placement in
        `device` and `placement`, onnxruntime-web's run in `peers`."""
        facts = HostDevice().facts()
        details = {"browser": self.browser, "adapter": self.adapter}

        def in_this_page(engine: str, timing: Timing, run_ms: list[float], checks: list[OutputCheck], rule: str
                         ) -> dict[str, Any]:
            return result_dict(engine=engine, spec=DEVICE, facts=facts, bundle=Path(self.bundle),
                               load_ms=timing.cold_start_ms - timing.first_run_ms, times=run_ms, warmup=self.warmup,
                               first_run_ms=timing.first_run_ms, peak_rss_mb=None, inputs=self.inputs, checks=checks,
                               against=ORACLE_KIND, fidelity_rule=rule, device_details=details,
                               note=" ".join(self.notes))

        result = in_this_page(f"edgepack web bundle in headless Chromium, providers {self.provider}", self.timing,
                              self.run_ms, self.outputs, self.criterion)
        result["placement"] = [{"partition": p["id"], "provider": p["provider"], "planned": p.get("planned"),
                                "reason": p.get("reason")} for p in self.partitions]
        if self.compare:
            c = self.compare
            result["peers"] = [in_this_page(f"{c.peer} {c.version} (wasm, 1 thread) on the source model {c.model}",
                                            c.timing, c.run_ms, c.outputs, FP32_RULE)]
        return result


def read_web_bundle(bundle: str | Path) -> tuple[Path, dict[str, Any]]:
    """The bundle folder and its manifest, after checking that it is a web bundle."""
    folder = Path(bundle)
    if not folder.is_dir():
        raise EdgepackError(f"{str(bundle)!r} is not a folder", where=str(folder.absolute()),
                            fix="pass a bundle folder written by `edgepack build MODEL --profile web`")
    manifest = read_manifest(folder)
    if manifest.get("target") != "web":
        profile = manifest.get("profile", {}).get("name", manifest.get("target", "?"))
        raise EdgepackError(f"{str(bundle)!r} is a {profile!r} bundle, not a web bundle: --device chromium runs a "
                            "web bundle's index.js", where=str(folder.absolute()),
                            fix="build one with `edgepack build MODEL --profile web`, or bench this bundle without "
                                "--device chromium")
    if not (folder / "index.js").is_file():
        raise EdgepackError(f"the web bundle {str(bundle)!r} has no index.js", where=str(folder.absolute()),
                            fix="rebuild it with `edgepack build MODEL --profile web`")
    return folder, manifest


def serialized_for_ort(path: Path) -> bytes:
    model = onnx.load(str(path))
    model.ir_version = min(model.ir_version, ORT_IR_VERSION)
    return model.SerializeToString()


def ort_web_package() -> Path:
    """onnxruntime-web in edgepack's cache (`<cache>/bench-node`, shared with benchmarks/wasm_vs_onnxruntime_web.py),
    installed with npm on first use."""
    from edgepack.runtime.native.build import cache_root

    folder = cache_root().parent / "bench-node"
    package = folder / "node_modules" / "onnxruntime-web"
    if (package / "package.json").is_file():
        return package
    npm = shutil.which("npm")
    if npm is None:
        raise EdgepackError("--compare onnxruntime-web needs onnxruntime-web from npm, and npm is not installed",
                            where=str(folder), fix="apt-get install npm, or bench without --compare")
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", "--loglevel=error",
                           ORT_WEB], capture_output=True, text=True)
    if proc.returncode != 0 or not (package / "package.json").is_file():
        raise EdgepackError(f"npm could not install {ORT_WEB}: {(proc.stderr.strip().splitlines() or ['?'])[-1]}",
                            where=str(folder), fix="check that the npm registry is reachable, or bench without "
                                                   "--compare")
    return package


def ort_browser_files(package: Path) -> tuple[Path, list[Path]]:
    """Its wasm-only browser entry (`onnxruntime-web/wasm`, the emscripten glue inlined) and the .wasm it loads."""
    exports = json.loads((package / "package.json").read_text())["exports"]
    entry = package / exports["./wasm"]["import"]["default"]
    return entry, [package / "dist" / "ort-wasm-simd-threaded.wasm"]


def ort_version(package: Path) -> str:
    return json.loads((package / "package.json").read_text())["version"]


def stage_ort(package: Path, root: Path) -> tuple[str, str]:
    """Copies the browser entry and its .wasm under `root/ort/`; the module's and the .wasm's paths in root (the
    .wasm alone in `env.wasm.wasmPaths`, so that the bundle uses its inlined glue rather than fetching the .mjs)."""
    entry, wasm = ort_browser_files(package)
    target = root / "ort"
    target.mkdir(exist_ok=True)
    for path in [entry, *wasm]:
        shutil.copyfile(path, target / path.name)
    return f"ort/{entry.name}", f"ort/{wasm[0].name}"


def encode_feeds(feeds: Mapping[str, np.ndarray]) -> dict[str, dict[str, Any]]:
    return {name: {"data": base64.b64encode(np.ascontiguousarray(value).tobytes()).decode(),
                   "dtype": value.dtype.name, "dims": list(value.shape)} for name, value in feeds.items()}


def run_ort(page: Any, module_url: str, wasm_url: str, model_url: str, feeds: Mapping[str, np.ndarray],
            repeat: int, threads: int = 1) -> dict[str, Any]:
    """Runs onnxruntime-web on `model_url` in `page` (on `threads`: more than one needs a cross-origin isolated
    page) like `run_bundle` runs a bundle; outputs as numpy."""
    from edgepack.targets.web.chromium import NUMPY_DTYPES

    result = page.evaluate(ORT_RUN, {"module": module_url, "wasmPaths": wasm_url, "model": model_url,
                                     "feeds": encode_feeds(feeds), "repeat": repeat, "threads": threads})
    result["outputs"] = {name: np.frombuffer(base64.b64decode(value["data"]),
                                             NUMPY_DTYPES.get(value["dtype"], np.float32)).reshape(value["dims"])
                         for name, value in result["outputs"].items()}
    return result


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def timing_of(result: dict[str, Any], warmup: int) -> Timing:
    timed = result["runMs"][warmup:] or [result["firstRunMs"]]
    return Timing(result["coldStartMs"], result["firstRunMs"], statistics.median(timed), percentile(timed, 90),
                  len(timed))


def criterion_of(manifest: dict[str, Any]) -> tuple[float | None, str]:
    weights = manifest.get("quantization", {}).get("weights") or manifest.get("profile", {}).get(
        "precision", {}).get("weights", "fp32")
    if weights in (None, "fp32"):
        return None, FP32_RULE
    fidelity = manifest.get("profile", {}).get("fidelity", {})
    min_cosine = fidelity.get(f"min_cosine_{weights}", fidelity.get("min_cosine", 0.999))
    return float(min_cosine), (f"cosine >= {min_cosine:g} ({weights} weights differ from the fp32 source by design; "
                               "the build's fidelity bar)")


def chosen_inputs(manifest: dict[str, Any], feeds: Mapping[str, np.ndarray] | None, dims: Mapping[str, int] | None,
                  seed: int) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
    """The bundle's inputs: the given arrays, the rest generated from the manifest's input specs."""
    specs = [SimpleNamespace(name=i["name"], dtype=i["dtype"], shape=i["shape"]) for i in manifest["inputs"]]
    given = dict(feeds or {})
    check_names(given, [s.name for s in specs], require_all=False)
    generated = sample_feeds([s for s in specs if s.name not in given], seed,
                             {**dims_of(specs, given), **(dims or {})})
    chosen = {}
    for spec in specs:
        value = np.asarray(given[spec.name]) if spec.name in given else generated[spec.name]
        chosen[spec.name] = np.require(value.astype(np.dtype(spec.dtype), copy=False), requirements="C")
        fixed = spec.shape is not None and len(spec.shape) == value.ndim and all(
            not isinstance(d, int) or d == n for d, n in zip(spec.shape, value.shape))
        if not fixed:
            raise EdgepackError(f"input {spec.name!r} has shape {list(value.shape)}, and the web bundle was built for "
                                f"{spec.shape}", where=f"input {spec.name!r}",
                                fix="give an array of the bundle's shape (web bundles run at pinned shapes)")
    described = [{"name": n, "dtype": v.dtype.name, "shape": list(v.shape),
                  "from": "file" if n in given else "generated"} for n, v in chosen.items()]
    return chosen, described


def browser_version(browser: Any) -> str:
    try:
        return f"Chromium {browser.context.browser.version}"
    except Exception:  # noqa: BLE001  (a persistent context may not expose its browser)
        return "Chromium"


def bench_in_chromium(bundle: str | Path, provider: str | None = None, runs: int = 10, warmup: int = 1,
                      feeds: Mapping[str, np.ndarray] | None = None, dims: Mapping[str, int] | None = None,
                      seed: int = 0, compare: str | None = None, source: str | Path | None = None
                      ) -> ChromiumBenchReport:
    """Runs the web bundle in headless Chromium (`provider`: webgpu, wasm, or None for the bundle's own placement),
    checks its outputs against `reference` on the source model, and with `compare="onnxruntime-web"` runs the source
    model there too."""
    from edgepack.runtime import Session
    from edgepack.targets.web.chromium import Chromium, missing, run_bundle

    if provider is not None and provider not in PROVIDERS:
        raise EdgepackError(f"--provider {provider!r} does not apply to --device chromium",
                            fix=f"use one of: {', '.join(PROVIDERS)} (or leave it out: the bundle's own placement)")
    if compare is not None and compare != COMPARE:
        raise EdgepackError(f"--compare {compare!r} does not apply to --device chromium",
                            fix=f"use --compare {COMPARE}")
    if runs < 1 or warmup < 0:
        raise EdgepackError("--runs must be at least 1 and --warmup at least 0", fix="pass --runs 1 or more")
    folder, manifest = read_web_bundle(bundle)
    reason = missing()
    if reason:
        raise EdgepackError(f"--device chromium needs headless Chromium, which cannot run here: {reason}",
                            where="--device chromium", fix="install Debian's chromium and Playwright for Python "
                                                           "(pip install playwright), then run again")
    model_path = find_source(folder, manifest, source)
    chosen, described = chosen_inputs(manifest, feeds, dims, seed)
    try:
        expected = Session(str(model_path), providers=["reference"]).run(chosen)
    except EdgepackError:
        raise
    except Exception as error:  # noqa: BLE001  (the model itself rejects these inputs)
        raise EdgepackError(f"the source model fails on these inputs on reference: {type(error).__name__}: {error}",
                            where=str(model_path),
                            fix="give real inputs with --input NAME=FILE.npy (silero-vad's sr must be 8000 or 16000)"
                            ) from error
    package = ort_web_package() if compare else None
    dtypes = {o["name"]: o["dtype"] for o in manifest["outputs"]}
    providers = PROVIDERS[provider] if provider else "auto"
    with tempfile.TemporaryDirectory(prefix="edgepack-bench-chromium-") as tmp:
        root = Path(tmp)
        os.symlink(folder.absolute(), root / "bundle", target_is_directory=True)
        with Chromium(root) as browser:
            page = browser.page()
            try:
                ours = run_bundle(page, browser.url("bundle/index.js"), chosen, dtypes, providers, warmup + runs)
            except Exception as error:  # noqa: BLE001  (a JS error in the page)
                raise EdgepackError(f"the bundle failed in Chromium: {str(error).strip().splitlines()[0]}",
                                    where=str(folder), fix="run its demo/index.html in a browser to see the whole "
                                                           "error, or try --provider wasm") from None
            finally:
                page.close()
            peer = None
            if package is not None:
                module, wasm_paths = stage_ort(package, root)
                (root / "model.onnx").write_bytes(serialized_for_ort(model_path))
                page = browser.page()
                try:
                    theirs = run_ort(page, browser.url(module), browser.url(wasm_paths), browser.url("model.onnx"),
                                     chosen, warmup + runs)
                except Exception as error:  # noqa: BLE001
                    raise EdgepackError(f"onnxruntime-web failed on {model_path.name}: "
                                        f"{str(error).strip().splitlines()[0]}", where=str(model_path),
                                        fix="bench without --compare") from None
                finally:
                    page.close()
                diffs = [float(np.max(np.abs(np.asarray(v, np.float64) - np.asarray(theirs["outputs"][k], np.float64))))
                         for k, v in ours["outputs"].items()
                         if k in theirs["outputs"] and np.shape(v) == np.shape(theirs["outputs"][k]) and np.size(v)]
                peer_checks = [check_output(name, np.asarray(value), theirs["outputs"][name], None)
                               for name, value in expected.items() if name in theirs["outputs"]]
                peer = Comparison(COMPARE, ort_version(package), model_path.name, timing_of(theirs, warmup),
                                  max(diffs) if diffs else None, peer_checks, list(theirs["runMs"]))
            version = browser_version(browser)
    min_cosine, criterion = criterion_of(manifest)
    checks = [check_output(name, np.asarray(value), ours["outputs"][name], min_cosine)
              for name, value in expected.items() if name in ours["outputs"]]
    adapter = ours.get("adapter")
    notes = [HOST_NOTE]
    if adapter and adapter.get("isFallbackAdapter"):
        notes.append(FALLBACK_NOTE)
    return ChromiumBenchReport(str(bundle), provider or "auto", version, described, timing_of(ours, warmup),
                               list(ours["providers"]), list(ours["partitions"]), adapter, checks, criterion,
                               f"reference on the source model {model_path.name}", warmup, list(ours["runMs"]), peer,
                               notes)


def summary_lines(report: ChromiumBenchReport) -> list[str]:
    """The report as plain lines: inputs, placement, timings, one line per output, the verdict, the comparison."""
    t = report.timing
    lines = [f"bench {report.bundle} on {DEVICE} ({report.browser}, headless), providers {report.provider}: "
             f"{t.runs} timed runs",
             "inputs: " + ", ".join(f"{i['name']} {i['dtype']}{i['shape']} ({i['from']})" for i in report.inputs)]
    for part in report.partitions:
        why = f" ({part['reason']})" if part.get("reason") else ""
        lines.append(f"partition {part['id']}: {part['provider']} (built for {part.get('planned', '?')}){why}")
    lines.append("providers: " + ", ".join(report.providers))
    adapter = report.adapter
    if adapter:
        lines.append(f"adapter: {adapter.get('vendor') or '?'} {adapter.get('architecture') or ''}".rstrip()
                     + (" (fallback adapter)" if adapter.get("isFallbackAdapter") else ""))
    else:
        lines.append("adapter: none (no partition runs on WebGPU)")
    lines.append(f"cold start: {t.cold_start_ms:.1f} ms (import + fetch + compile + first run); first run "
                 f"{t.first_run_ms:.2f} ms")
    lines.append(f"latency: p50 {t.p50_ms:.3f} ms, p90 {t.p90_ms:.3f} ms")
    for check in report.outputs:
        lines.append(f"output {check.name} {check.shape}: max abs diff {check.max_abs_diff:.3g} from reference "
                     f"(scale {check.scale:.3g}), cosine {check.cosine:.6f}: {'ok' if check.passed else 'FAIL'}")
    lines.append(f"correctness: {'PASS' if report.passed else 'FAIL'} against {report.oracle} ({report.criterion})")
    if report.compare:
        c = report.compare
        r = c.ratios(t)
        diff = "n/a" if c.max_abs_diff is None else f"{c.max_abs_diff:.3g}"
        lines.append(f"{c.peer} {c.version} (wasm backend, 1 thread) on {c.model}: cold start "
                     f"{c.timing.cold_start_ms:.1f} ms, p50 {c.timing.p50_ms:.3f} ms, p90 {c.timing.p90_ms:.3f} ms")
        lines.append(f"ratios edgepack / {c.peer} (below 1: edgepack is faster): cold start {r['cold_start']:.2f}x, "
                     f"p50 {r['p50']:.2f}x, p90 {r['p90']:.2f}x; max abs diff between them {diff}")
    lines.extend(report.notes)
    return lines
