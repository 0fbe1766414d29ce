"""Web bundles of the sample models in headless Chromium (Debian's, via Playwright; WebGPU on SwiftShader), served
from localhost: outputs against `reference`, the WebGPU adapter, the demo page, and errors for bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgepack import samples
from edgepack.targets.web.chromium import Chromium, run_bundle

from .web_builds import TOLERANCE, WebBuilds, relative_error

RUN_ERROR = """async ({ module, feeds, providers }) => {
  try {
    const { createSession } = await import(module);
    const session = await createSession({ providers });
    await session.run(feeds === null ? undefined : feeds);
    return "no error";
  } catch (error) {
    return `${error instanceof Error ? "Error" : typeof error}: ${error.message}`;
  }
}"""
"""Opens a bundle and runs it on feeds built in the page; returns the rejection's message."""


def module_url(web: WebBuilds, chromium: Chromium, bundle: Path) -> str:
    return chromium.url(web.path_in_root(bundle, "index.js"))


def planned(bundle: Path) -> list[str]:
    return [p["provider"] for p in json.loads((bundle / "manifest.json").read_text())["partitions"]]


@pytest.mark.slow
@pytest.mark.parametrize("providers", [["webgpu", "wasm"], ["wasm"]], ids=["webgpu", "wasm"])
@pytest.mark.parametrize("name", samples.names())
def test_sample_matches_reference(web: WebBuilds, chromium: Chromium, name: str, providers: list[str]) -> None:
    bundle = web.bundle(name)
    expected = web.reference(name)
    page = chromium.page()
    result = run_bundle(page, module_url(web, chromium, bundle), web.feeds(name),
                        {k: v.dtype.name for k, v in expected.items()}, providers)
    page.close()
    if providers == ["wasm"]:
        assert set(result["providers"]) == {"wasm"}
    else:
        assert result["providers"] == planned(bundle), result["partitions"]
    for output, value in expected.items():
        actual = result["outputs"][output]
        assert actual.shape == value.shape
        assert relative_error(value, actual) <= TOLERANCE, (output, relative_error(value, actual))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ppocr-cls", "tiny-transformer"])
def test_profile_fp16_weights_run_on_webgpu(web: WebBuilds, chromium: Chromium, name: str) -> None:
    """The web profile's own precision: fp16 weights in the plans, widened at upload; held to its min_cosine."""
    bundle = web.bundle(name, weights="fp16")
    expected = web.reference(name)
    page = chromium.page()
    result = run_bundle(page, module_url(web, chromium, bundle), web.feeds(name),
                        {k: v.dtype.name for k, v in expected.items()}, ["webgpu", "wasm"])
    page.close()
    assert result["providers"] == ["webgpu"]
    for output, value in expected.items():
        a, b = value.ravel().astype(np.float64), result["outputs"][output].ravel().astype(np.float64)
        assert float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)) >= 0.999, output


OPEN_AND_ASK_THE_ADAPTER = """async ({ module, providers }) => {
  const { createSession } = await import(module);
  const session = await createSession(providers === null ? undefined : { providers });
  const adapter = await navigator.gpu.requestAdapter();
  return { providers: session.providers, partitions: session.partitions, adapter: session.adapter,
           direct: adapter.info.architecture, fallback: adapter.info.isFallbackAdapter };
}"""


@pytest.mark.slow
def test_webgpu_partitions_asked_for_run_on_the_webgpu_adapter(web: WebBuilds, chromium: Chromium) -> None:
    bundle = web.bundle("ppocr-cls")
    assert planned(bundle) == ["webgpu"]
    page = chromium.page()
    info = page.evaluate(OPEN_AND_ASK_THE_ADAPTER, {"module": module_url(web, chromium, bundle),
                                                    "providers": ["webgpu", "wasm"]})
    page.close()
    assert info["providers"] == ["webgpu"]
    assert info["adapter"]["architecture"] == info["direct"] == "swiftshader"
    assert info["adapter"]["isFallbackAdapter"] is True


@pytest.mark.slow
@pytest.mark.parametrize("providers", [None, "auto"], ids=["default", "auto"])
def test_auto_never_lands_on_a_fallback_adapter(web: WebBuilds, chromium: Chromium, providers: str | None) -> None:
    """Headless Chromium's only adapter is SwiftShader (a CPU rasterizer, `isFallbackAdapter`): "auto" opens the
    webgpu partitions on wasm instead, and says why."""
    bundle = web.bundle("ppocr-cls")
    assert planned(bundle) == ["webgpu"]
    page = chromium.page()
    info = page.evaluate(OPEN_AND_ASK_THE_ADAPTER, {"module": module_url(web, chromium, bundle),
                                                    "providers": providers})
    page.close()
    assert info["fallback"] is True and info["direct"] == "swiftshader"
    assert info["providers"] == ["wasm"] and info["adapter"] is None
    assert "software fallback" in info["partitions"][0]["reason"]


WEB_RUNTIME_BUDGET = 143_000
"""Bytes of everything a page fetches to run a sample model but its plans: JS (index.js too), wasm and WGSL."""


def fetched(web: WebBuilds, chromium: Chromium, bundle: Path, providers: list[str]) -> tuple[dict[str, Any], set[str]]:
    """Opens `bundle` on `providers` in a fresh tab: the session's providers and adapter, and the bundle's files
    the tab requested (paths in the bundle)."""
    page = chromium.page()
    info = page.evaluate(OPEN_AND_ASK_THE_ADAPTER, {"module": module_url(web, chromium, bundle),
                                                    "providers": providers})
    page.close()
    prefix = web.path_in_root(bundle) + "/"
    return info, {path.removeprefix(prefix) for path in page.requests if path.startswith(prefix)}


@pytest.mark.slow
@pytest.mark.parametrize("providers", [["wasm"], ["webgpu", "wasm"]], ids=["wasm", "webgpu"])
def test_a_page_fetches_only_the_engine_it_runs(web: WebBuilds, chromium: Chromium, providers: list[str]) -> None:
    """On wasm, no WebGPU module, plan reader or WGSL is fetched; on WebGPU (every partition of ppocr-cls), not the
    wasm core."""
    bundle = web.bundle("ppocr-cls")
    assert planned(bundle) == ["webgpu"] and (bundle / "runtime" / "webgpu.js").is_file()
    info, files = fetched(web, chromium, bundle, providers)
    gpu_files = {path for path in files if path.endswith(".wgsl") or path.startswith("runtime/webgpu")
                 or path in ("runtime/epk.js", "runtime/ops.js")}
    assert info["providers"] == [providers[0]]
    assert {"index.js", "runtime/session.js", "model/p0.epk"} <= files, files
    if providers == ["wasm"]:
        assert "runtime/edgepack.wasm" in files and not gpu_files, files
    else:
        assert "runtime/edgepack.wasm" not in files, files
        assert {"runtime/webgpu.js", "runtime/epk.js", "runtime/ops.js", "kernels/conv.wgsl"} <= gpu_files, files


@pytest.mark.slow
@pytest.mark.parametrize("providers", [["wasm"], ["webgpu", "wasm"]], ids=["wasm", "webgpu"])
@pytest.mark.parametrize("name", ["ppocr-det", "ppocr-rec", "ppocr-cls", "silero-vad"])
def test_a_page_fetches_at_most_the_runtime_budget(web: WebBuilds, chromium: Chromium, name: str,
                                                   providers: list[str]) -> None:
    bundle = web.bundle(name)
    _, files = fetched(web, chromium, bundle, providers)
    runtime = [path for path in files if not path.startswith("model/")]
    assert "runtime/session.js" in runtime
    assert sum((bundle / path).stat().st_size for path in runtime) <= WEB_RUNTIME_BUDGET, sorted(runtime)


@pytest.mark.slow
def test_without_an_adapter_everything_runs_on_wasm(web: WebBuilds, chromium: Chromium) -> None:
    bundle = web.bundle("tiny-cnn")
    expected = web.reference("tiny-cnn")
    page = chromium.page()
    page.evaluate("() => { navigator.gpu.requestAdapter = async () => null; }")
    result = run_bundle(page, module_url(web, chromium, bundle), web.feeds("tiny-cnn"),
                        {k: v.dtype.name for k, v in expected.items()})
    page.close()
    assert result["providers"] == ["wasm"]
    assert "no adapter" in result["partitions"][0]["reason"]
    assert result["adapter"] is None
    for output, value in expected.items():
        assert relative_error(value, result["outputs"][output]) <= TOLERANCE


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ppocr-cls", "silero-vad"])
def test_demo_page_shows_the_outputs(web: WebBuilds, chromium: Chromium, name: str, tmp_path: Path) -> None:
    bundle = web.bundle(name)
    requests: list[str] = []
    page = chromium.page()
    page.on("request", lambda request: requests.append(request.url))
    page.goto(chromium.url(web.path_in_root(bundle, "demo/index.html")))
    page.wait_for_selector("body[data-ready]", timeout=120_000)
    shot = tmp_path / "demo.png"
    page.screenshot(path=str(shot), full_page=True)
    state = page.evaluate("document.body.dataset.ready")
    rows = page.locator("#outputs tr").all_inner_texts()
    errors = [m for m in page.messages if m[0] in ("error", "pageerror")]
    page.close()
    assert state == "true", page.messages
    assert errors == []
    outputs = [o["name"] for o in json.loads((bundle / "manifest.json").read_text())["outputs"]]
    assert [row.split("\t")[0] for row in rows[1:]] == outputs
    assert all(any(ch.isdigit() for ch in row.split("\t")[2]) for row in rows[1:])
    image = shot.read_bytes()
    assert image[:8] == b"\x89PNG\r\n\x1a\n" and len(image) > 10_000
    prefix = chromium.url(web.path_in_root(bundle))
    assert requests and all(url.startswith(prefix) for url in requests), requests


@pytest.mark.slow
def test_cache_option_keeps_the_plans_in_the_cache_api(web: WebBuilds, chromium: Chromium) -> None:
    bundle = web.bundle("tiny-cnn")
    page = chromium.page()
    cached = page.evaluate("""async (module) => {
      const { createSession, model } = await import(module);
      await createSession({ providers: ["wasm"], cache: true });
      const cache = await caches.open(`edgepack-${model.name}`);
      return (await cache.keys()).map((request) => new URL(request.url).pathname.split("/").slice(-2).join("/"));
    }""", module_url(web, chromium, bundle))
    page.close()
    assert sorted(cached) == ["model/p0.epk", "runtime/edgepack.wasm"]


def bad_feeds(name: str) -> dict[str, Any]:
    """In-page feed expressions for tiny-cnn (input `image`, float32 [1, 3, 32, 32])."""
    good = "new Float32Array(3072)"
    return {
        "wrong name": (f"{{ picture: {{ data: {good}, dims: [1, 3, 32, 32] }} }}", "missing [\"image\"]"),
        "wrong dims": (f"{{ image: {{ data: {good}, dims: [1, 3, 32, 16] }} }}", "must have dims [1,3,32,32]"),
        "wrong dtype": ("{ image: { data: new Float64Array(3072), dims: [1, 3, 32, 32] } }",
                        "must be a Float32Array (float32), got Float64Array"),
        "wrong length": ("{ image: { data: new Float32Array(10), dims: [1, 3, 32, 32] } }", "has 10 elements"),
    }[name]


@pytest.mark.slow
@pytest.mark.parametrize("case", ["wrong name", "wrong dims", "wrong dtype", "wrong length"])
@pytest.mark.parametrize("providers", [["webgpu", "wasm"], ["wasm"]], ids=["webgpu", "wasm"])
def test_bad_input_rejects_with_a_clear_error(web: WebBuilds, chromium: Chromium, case: str,
                                              providers: list[str]) -> None:
    bundle = web.bundle("tiny-cnn")
    feeds, expected = bad_feeds(case)
    page = chromium.page()
    message = page.evaluate(RUN_ERROR.replace("feeds === null ? undefined : feeds", feeds),
                            {"module": module_url(web, chromium, bundle), "feeds": None, "providers": providers})
    page.close()
    assert message.startswith("Error: edgepack: ") and expected in message, message


def broken_copy(web: WebBuilds, bundle: Path, label: str) -> Path:
    copy = bundle.parent / f"{bundle.name}-{label}"
    if not copy.exists():
        shutil.copytree(bundle, copy)
    return copy


@pytest.mark.slow
@pytest.mark.parametrize("providers", [["webgpu", "wasm"], ["wasm"]], ids=["webgpu", "wasm"])
def test_corrupted_plan_rejects(web: WebBuilds, chromium: Chromium, providers: list[str]) -> None:
    copy = broken_copy(web, web.bundle("tiny-cnn"), "corrupt")
    plan = copy / "model" / "p0.epk"
    data = bytearray(plan.read_bytes())
    data[20:24] = (10_000_000).to_bytes(4, "little")  # the tensor table now lies past the end of the file
    plan.write_bytes(bytes(data))
    page = chromium.page()
    message = page.evaluate(RUN_ERROR.replace("feeds === null ? undefined : feeds", "{}"),
                            {"module": module_url(web, chromium, copy), "feeds": None, "providers": providers})
    page.close()
    assert message.startswith("Error: edgepack: model/p0.epk (partition p0) is not a valid .epk plan"), message


@pytest.mark.slow
@pytest.mark.parametrize("missing", ["model/p0.epk", "runtime/edgepack.wasm"])
def test_missing_file_rejects(web: WebBuilds, chromium: Chromium, missing: str) -> None:
    copy = broken_copy(web, web.bundle("tiny-cnn"), "missing-" + missing.replace("/", "-"))
    (copy / missing).unlink(missing_ok=True)
    page = chromium.page()
    message = page.evaluate(RUN_ERROR.replace("feeds === null ? undefined : feeds", "{}"),
                            {"module": module_url(web, chromium, copy), "feeds": None, "providers": "auto"})
    page.close()
    assert message.startswith("Error: edgepack: could not load ") and missing in message and "HTTP 404" in message, \
        message
