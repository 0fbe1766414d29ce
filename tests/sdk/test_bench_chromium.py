"""`edgepack bench BUNDLE --device chromium`: runs a web bundle in headless Chromium, reports the provider per
partition, the adapter and the timings, checks the outputs against `reference` on the source model, and with
`--compare onnxruntime-web` runs the source model in onnxruntime-web in the same browser."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

import edgepack
from edgepack import samples
from edgepack.bench_chromium import chosen_inputs
from edgepack.runtime.native.build import cache_root
from edgepack.targets.web.chromium import missing

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "bench.schema.json").read_text())
needs_chromium = pytest.mark.skipif(missing() is not None, reason=f"no headless Chromium: {missing()}")


def ort_web_reason() -> str | None:
    """Why onnxruntime-web cannot be had (not in the cache, and no npm to install it), or None."""
    cached = (cache_root().parent / "bench-node" / "node_modules" / "onnxruntime-web" / "package.json").is_file()
    if cached or (shutil.which("npm") and shutil.which("node")):
        return None
    return "onnxruntime-web is not in the cache and node/npm are missing to install it"


def web_bundle(name: str, folder: Path, weights: str | None = None) -> Path:
    feeds = samples.feeds(name)
    return edgepack.build(samples.path(name), profile="web", output_dir=folder,
                          input_shapes={k: v.shape for k, v in feeds.items()}, sample_inputs=[feeds],
                          weights=weights, verify=False).bundle_dir


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("web-bench")
    return {"tiny-cnn": web_bundle("tiny-cnn", root / "fp16"),
            "ppocr-cls": web_bundle("ppocr-cls", root / "fp32", weights="fp32")}


def test_a_scalar_input_keeps_rank_zero() -> None:
    """A 0-d input (tiny-if's use_relu) stays 0-d: np.ascontiguousarray would have made it [1], which the bundle's
    graph refuses."""
    manifest = {"inputs": [{"name": "x", "dtype": "float32", "shape": [2, 8]},
                           {"name": "use_relu", "dtype": "bool", "shape": []}]}
    chosen, described = chosen_inputs(manifest, samples.feeds("tiny-if"), None, 0)
    assert chosen["use_relu"].shape == () and described[1]["shape"] == []


@needs_chromium
def test_bench_runs_a_web_bundle_on_its_own_providers(bundles: dict[str, Path], cli) -> None:
    result = cli("bench", bundles["tiny-cnn"], "--device", "chromium", "--runs", "3", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    jsonschema.validate(report, SCHEMA)
    assert report["device"]["spec"] == "chromium" and report["device"]["browser"].startswith("Chromium")
    assert report["engine"].endswith("providers auto") and report["fidelity"]["passed"] is True
    assert report["fidelity"]["against"] == "reference on the source model"
    assert [o["name"] for o in report["fidelity"]["outputs"]] == ["probs"]
    assert {p["provider"] for p in report["placement"]} <= {"webgpu", "wasm"}
    assert report["runs"] == len(report["times_ms"]) == 3 and report["load_ms"] > 0
    assert report["latency_ms"]["p90"] >= report["latency_ms"]["p50"] > 0 and report["first_run_ms"] > 0
    assert report["inputs"][0]["from"] == "generated" and report["emulated"] is False
    assert "not those of a user's device" in report["note"]
    adapter = report["device"]["adapter"]
    if adapter and adapter["isFallbackAdapter"]:
        assert "do not measure GPU speed" in report["note"]


@needs_chromium
def test_bench_compares_with_onnxruntime_web_on_wasm(bundles: dict[str, Path], cli, tmp_path: Path) -> None:
    reason = ort_web_reason()
    if reason:
        pytest.skip(reason)
    result = cli("bench", bundles["ppocr-cls"], "--device", "chromium", "--provider", "wasm", "--runs", "3",
                 "--warmup", "1", "--compare", "onnxruntime-web")
    assert result.code == 0, result.err
    text = " ".join(result.out.split())
    assert "correctness: PASS" in text and ": ok" in text and "FAIL" not in text
    assert "providers: wasm" in text and "adapter: none" in text
    assert "max abs diff within 0.0001 of each output's scale" in text
    assert "onnxruntime-web" in text and "(wasm backend, 1 thread)" in text
    assert "ratios edgepack / onnxruntime-web" in text and "cold start" in text and "p50" in text
    printed = cli("bench", bundles["ppocr-cls"], "--device", "chromium", "--provider", "wasm", "--runs", "3",
                  "--compare", "onnxruntime-web", "--json", "--html", tmp_path / "report.html")
    report = json.loads(printed.out)
    jsonschema.validate(report, SCHEMA)
    [peer] = report["peers"]
    assert peer["engine"].startswith("onnxruntime-web ") and peer["fidelity"]["passed"] and peer["runs"] == 3
    assert peer["device"]["spec"] == "chromium" and peer["inputs"] == report["inputs"]
    html = (tmp_path / "report.html").read_text()
    assert html.count("on chromium") >= 2 and "onnxruntime-web" in html


def test_bench_chromium_refuses_a_bundle_that_is_not_a_web_bundle(cli, tmp_path: Path) -> None:
    bundle = edgepack.build(samples.path("tiny-cnn"), profile="generic", output_dir=tmp_path).bundle_dir
    result = cli("bench", bundle, "--device", "chromium")
    assert result.code == 2
    text = " ".join(result.message.split())
    assert "'generic' bundle, not a web bundle" in text and "--profile web" in text


def test_bench_chromium_says_when_the_folder_is_missing(cli, tmp_path: Path) -> None:
    result = cli("bench", tmp_path / "nowhere", "--device", "chromium")
    assert result.code == 2
    assert "is not a folder" in " ".join(result.message.split())
