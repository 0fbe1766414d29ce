"""What a web bundle holds: package.json, index.js, index.d.ts typed from the model, the runtime and only the WGSL
kernels its WebGPU plans need, `.epk` plans and no ONNX, a README whose snippet matches the API, nothing fetched
from outside; and how it runs here (its plans on the wasm core in node) and with the profile's fp16 weights."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from edgepack.runtime import Session
from edgepack.runtime.native.epk import OPS
from edgepack.targets.web.gpu_kernels import KERNEL_FILES

from .web_builds import WebBuilds, relative_error

OP_NAMES = {index: name for name, index in OPS.items()}


def manifest(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_text())


def test_package_json_describes_an_es_module(web: WebBuilds) -> None:
    bundle = web.bundle("tiny-cnn")
    package = json.loads((bundle / "package.json").read_text())
    assert package["name"] == "tiny-cnn"
    assert package["type"] == "module" and package["main"] == "index.js" and package["types"] == "index.d.ts"
    assert package["exports"]["."] == {"types": "./index.d.ts", "default": "./index.js"}
    for entry in package["files"]:
        assert (bundle / entry).exists(), entry


def test_typings_follow_the_model(web: WebBuilds) -> None:
    typings = (web.bundle("silero-vad") / "index.d.ts").read_text()
    assert '"input": { data: Float32Array; dims: [1, 512] };' in typings
    assert '"sr": { data: BigInt64Array; dims: [] };' in typings
    assert '"stateN": { data: Float32Array; dims: number[] };' in typings
    assert "export function createSession(options?: SessionOptions): Promise<Session>;" in typings


def plan_ops(plan: Path) -> set[str]:
    """The op names of an .epk plan, read from its op table (EPK.md)."""
    data = plan.read_bytes()
    count, offset = int.from_bytes(data[24:28], "little"), int.from_bytes(data[28:32], "little")
    return {OP_NAMES[int.from_bytes(data[offset + 16 * i:offset + 16 * i + 2], "little")] for i in range(count)}


@pytest.mark.parametrize("name", ["ppocr-cls", "tiny-transformer", "silero-vad"])
def test_only_the_kernels_the_webgpu_plans_need_are_shipped(web: WebBuilds, name: str) -> None:
    bundle = web.bundle(name)
    needed = set()
    for part in manifest(bundle)["partitions"]:
        if part["provider"] == "webgpu":
            needed |= {file for op in plan_ops(bundle / part["artifact"]) for file in KERNEL_FILES[op]}
    shipped = {p.name for p in (bundle / "kernels").glob("*.wgsl")} if (bundle / "kernels").is_dir() else set()
    assert shipped == needed
    assert (bundle / "runtime" / "webgpu.js").exists() == bool(needed)


def test_plans_not_onnx_and_nothing_from_outside(web: WebBuilds) -> None:
    bundle = web.bundle("ppocr-cls")
    files = [p for p in bundle.rglob("*") if p.is_file()]
    assert not [p for p in files if p.suffix == ".onnx"]
    assert all(part["artifact"].endswith(".epk") for part in manifest(bundle)["partitions"])
    for path in files:
        if path.suffix in (".js", ".html", ".json", ".ts", ".wgsl"):
            assert not re.search(r"https?://", path.read_text()), path


def test_readme_snippet_matches_the_api(web: WebBuilds) -> None:
    bundle = web.bundle("ppocr-cls")
    readme = (bundle / "README.md").read_text()
    snippet = readme.split("```js\n")[1].split("```")[0]
    package = json.loads((bundle / "package.json").read_text())["name"]
    assert f'import {{ createSession }} from "./{package}/index.js";' in snippet
    assert '"x": { data: new Float32Array(27648), dims: [1, 3, 48, 192] }' in snippet
    assert 'outputs["save_infer_model/scale_0.tmp_1"]' in snippet
    index = (bundle / "index.js").read_text()
    assert "export function createSession(options = {})" in index and "export const model =" in index


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ppocr-cls", "silero-vad"])
def test_the_bundle_runs_here_on_the_wasm_core(web: WebBuilds, name: str) -> None:
    bundle = web.bundle(name)
    feeds = web.feeds(name)
    expected = web.reference(name)
    actual = Session(bundle).run(feeds)
    for output, value in expected.items():
        assert relative_error(value, actual[output]) <= 1e-4, output


@pytest.mark.slow
def test_the_profile_default_fp16_weights_pass_the_fidelity_gate(web: WebBuilds) -> None:
    bundle = web.bundle("ppocr-cls", weights="fp16")
    built = manifest(bundle)
    assert built["fidelity"]["passed"]
    plan_bytes = (bundle / "model" / "p0.epk").stat().st_size
    assert plan_bytes <= 0.56 * (web.bundle("ppocr-cls") / "model" / "p0.epk").stat().st_size
    assert min(o["cosine"] for o in built["fidelity"]["outputs"].values()) >= 0.999
    feeds = web.feeds("ppocr-cls")
    expected = web.reference("ppocr-cls")
    actual = Session(bundle).run(feeds)
    for output, value in expected.items():
        a, b = value.ravel().astype(np.float64), actual[output].ravel().astype(np.float64)
        assert float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)) >= 0.999


def test_dynamic_dims_fail_the_build_and_say_how_to_pin_them(cli, tmp_path: Path) -> None:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "dynamic",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "length"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "length"])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "dynamic.onnx")
    result = cli("build", tmp_path / "dynamic.onnx", "--profile", "web", "-o", tmp_path / "dist")
    assert result.code == 2
    assert "the web bundle runs at fixed input shapes" in result.message and "--dim length=SIZE" in result.message
    assert not (tmp_path / "dist" / "dynamic-web").exists()
    pinned = cli("build", tmp_path / "dynamic.onnx", "--profile", "web", "-o", tmp_path / "dist",
                 "--input-shape", "x=1,16")
    assert pinned.code == 0, pinned.message
    typings = (tmp_path / "dist" / "dynamic-web" / "index.d.ts").read_text()
    assert '"x": { data: Float32Array; dims: [1, 16] };' in typings
