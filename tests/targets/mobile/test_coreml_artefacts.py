"""What `--profile iphone` ships beside the Swift code: `.mlpackage` partitions that coremltools reads back without
CoreML, whose weight bytes follow the precision, and a C target that cross-compiles for ARM64 and runs its plans
under qemu-aarch64, chained with the CoreML partitions (evaluated with numpy here) to the source model's outputs."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from edgepack import samples
from edgepack.runtime import Session
from edgepack.runtime.native.build import AARCH64_CC, RUNNER
from edgepack.runtime.native.emulated import EmulatedSession, qemu
from edgepack.runtime.providers.coreml import load_mlpackage
from edgepack.runtime.providers.coreml.convert import to_mlpackage
from edgepack.runtime.providers.coreml.evaluate import MilEvaluator, load_program
from edgepack.runtime.providers.coreml.mil import coremltools
from tests.output_error import relative_error

from .ios_builds import IosBuilds

FP16_TOLERANCE = 2e-2
"""Relative to max(1, |reference|): the iphone profile computes in float16."""


def test_mlpackage_reads_back_without_coreml(ios_builds: IosBuilds) -> None:
    bundle = ios_builds.bundle("tiny-if")
    manifest = json.loads((bundle / "manifest.json").read_text())
    [part] = [p for p in manifest["partitions"] if p["provider"] == "coreml"]
    model = coremltools().models.MLModel(str(bundle / part["artifact"]), skip_model_load=True)
    spec = model.get_spec()
    assert spec.WhichOneof("Type") == "mlProgram"
    assert spec.specificationVersion >= 7, "iOS16's ML Program opset"
    features = part["options"]["features"]
    assert sorted(i.name for i in spec.description.input) == sorted(features["inputs"][n] for n in part["inputs"])
    assert sorted(o.name for o in spec.description.output) == sorted(features["outputs"][n] for n in part["outputs"])
    assert part["options"]["compute_precision"] == "fp16" and part["options"]["deployment_target"] == "iOS16"


def convs(channels: int = 64, layers: int = 4) -> onnx.ModelProto:
    """A conv stack whose weights (147 KB in fp32 each) dominate the package."""
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array((rng.standard_normal((channels, channels, 3, 3)) * 0.1).astype(np.float32),
                                       f"w{i}") for i in range(layers)]
    nodes, previous = [], "x"
    for i in range(layers):
        nodes += [helper.make_node("Conv", [previous, f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        previous = f"r{i}"
    shape = [1, channels, 16, 16]
    graph = helper.make_graph(nodes, "convs", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(previous, onnx.TensorProto.FLOAT, shape)], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(("weights", "low", "high", "min_cosine"), [
    ("fp16", 0.45, 0.55, 0.9999), ("int8", 0.22, 0.30, 0.999), ("palette4", 0.11, 0.16, 0.95)])
def test_weight_bytes_follow_the_precision(tmp_path: Path, weights: str, low: float, high: float,
                                           min_cosine: float) -> None:
    model = convs()
    fp32_bytes = sum(numpy_helper.to_array(t).nbytes for t in model.graph.initializer)
    to_mlpackage(model, tmp_path / "fp32.mlpackage", {"weights": "fp32", "compute_precision": "fp32"})
    to_mlpackage(model, tmp_path / "small.mlpackage", {"weights": weights, "compute_precision": "fp16"})
    blob = tmp_path / "small.mlpackage" / "Data" / "com.apple.CoreML" / "weights" / "weight.bin"
    assert low <= blob.stat().st_size / fp32_bytes <= high
    features = {"features": {"inputs": {"x": "x"}, "outputs": {"r3": "r3"}}}
    x = np.random.default_rng(1).standard_normal((1, 64, 16, 16)).astype(np.float32)
    full = load_mlpackage(tmp_path / "fp32.mlpackage", features).run({"x": x})["r3"].ravel()
    small = load_mlpackage(tmp_path / "small.mlpackage", features).run({"x": x})["r3"].ravel()
    assert float(full @ small / np.linalg.norm(full) / np.linalg.norm(small)) >= min_cosine


@pytest.fixture(scope="module")
def arm64_runner(ios_builds: IosBuilds, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundle's C target (its own copy of the core, trimmed registry) with the core's plan runner, built for
    ARM64 with the cross compiler, as Xcode would build the target for a device."""
    if not shutil.which(AARCH64_CC) or not qemu():
        pytest.skip("the aarch64 cross compiler and qemu-aarch64 are needed")
    core = ios_builds.bundle("tiny-if") / "Sources" / "TinyIfCore"
    runner = tmp_path_factory.mktemp("arm64") / "ep_run"
    sources = [*sorted(core.rglob("*.c")), *RUNNER]
    subprocess.run([AARCH64_CC, "-std=c11", "-O2", "-static", "-pthread", "-Wall", "-Werror", f"-I{core}", "-o",
                    str(runner), *map(str, sources), "-lm"], check=True, capture_output=True, text=True)
    return runner


def test_partitions_chain_to_the_source_outputs(ios_builds: IosBuilds, arm64_runner: Path) -> None:
    bundle = ios_builds.bundle("tiny-if")
    manifest = json.loads((bundle / "manifest.json").read_text())
    feeds = ios_builds.feeds("tiny-if")
    values = dict(feeds)
    for part in manifest["partitions"]:
        path = bundle / part["artifact"]
        if part["provider"] == "coreml":
            step = load_mlpackage(path, part["options"])
        else:
            step = EmulatedSession(path.read_bytes(), [qemu(), str(arm64_runner)])
        values.update(step.run({name: values[name] for name in part["inputs"]}))
    expected = Session(samples.path("tiny-if"), providers=["reference"]).run(feeds)
    for name, reference in expected.items():
        assert relative_error(reference, values[name]) < FP16_TOLERANCE, name
    assert manifest["fidelity"]["passed"]


@pytest.mark.macos
@pytest.mark.skipif(platform.system() != "Darwin", reason="CoreML prediction only exists on macOS; on Linux the "
                                                         "saved program is evaluated with numpy instead")
def test_coreml_prediction_matches_the_numpy_evaluation(tmp_path: Path) -> None:
    model = convs()
    to_mlpackage(model, tmp_path / "convs.mlpackage", {"weights": "fp16", "compute_precision": "fp16"})
    x = np.random.default_rng(2).standard_normal((1, 64, 16, 16)).astype(np.float32)
    on_coreml = load_mlpackage(tmp_path / "convs.mlpackage", {"features": {"inputs": {"x": "x"},
                                                                          "outputs": {"r3": "r3"}}}).run({"x": x})
    evaluated = MilEvaluator(load_program(tmp_path / "convs.mlpackage")).run({"x": x})
    expected = Session(model, providers=["reference"]).run({"x": x})
    assert relative_error(expected["r3"], on_coreml["r3"]) < FP16_TOLERANCE
    assert relative_error(evaluated["r3"], on_coreml["r3"]) < FP16_TOLERANCE
