"""The intel-nuc profile end to end: OpenVINO IR partitions plus ONNX fallback, run by Session, against the source."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest

import edgepack
from edgepack import samples
from edgepack.runtime import Session
from edgepack.verify import compare
from tests.oracle import run_onnxruntime
from tests.small_feeds import small_feeds, small_shapes


def fp32_profile(folder: Path) -> Path:
    text = (Path(edgepack.__file__).parent / "profiles" / "intel-nuc.toml").read_text()
    path = folder / "intel-nuc-fp32.toml"
    path.write_text(text.replace('name = "intel-nuc"', 'name = "intel-nuc-fp32"')
                    .replace('weights = "fp16"', 'weights = "fp32"'))
    return path


Builds = Callable[[str, str], edgepack.BuildResult]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Builds:
    """intel-nuc bundles of the samples at the size tests run them, `fp16` (the profile's) or `fp32`, each built
    once."""
    root = tmp_path_factory.mktemp("intel-nuc")
    profiles = {"fp16": "intel-nuc", "fp32": fp32_profile(root)}
    results: dict[tuple[str, str], edgepack.BuildResult] = {}

    def build(name: str, weights: str) -> edgepack.BuildResult:
        if (name, weights) not in results:
            results[name, weights] = edgepack.build(samples.path(name), profiles[weights], root / weights,
                                                    sample_inputs=[small_feeds(name)], input_shapes=small_shapes(name))
        return results[name, weights]

    return build


@pytest.mark.parametrize("name", samples.names())
def test_intel_nuc_bundle_runs_close_to_the_source(built: Builds, name: str) -> None:
    feeds = small_feeds(name)
    expected = run_onnxruntime(samples.path(name), feeds)
    fp16, fp32 = built(name, "fp16"), built(name, "fp32")
    for result in (fp16, fp32):
        manifest = result.manifest
        assert {p["provider"] for p in manifest["partitions"]} <= {"openvino", "reference"}
        assert any(p["provider"] == "openvino" for p in manifest["partitions"])
        assert manifest["fidelity"]["passed"]
    fp16_out = Session(fp16.bundle_dir).run(feeds)
    for key, value in expected.items():
        assert compare(value, fp16_out[key])["cosine"] >= 0.9999, key
    fp32_out = Session(fp32.bundle_dir).run(feeds)
    for key, value in expected.items():
        np.testing.assert_allclose(fp32_out[key], value, rtol=0, atol=1e-4, err_msg=key)


@pytest.mark.parametrize("name", ["ppocr-det", "ppocr-rec", "ppocr-cls"])
def test_ppocr_is_wholly_on_openvino_with_fp16_weights(built: Builds, name: str) -> None:
    result = built(name, "fp16")
    assert [p["provider"] for p in result.manifest["partitions"]] == ["openvino"]
    fp32 = built(name, "fp32")
    fp16_bytes = (result.bundle_dir / "p0.bin").stat().st_size
    fp32_bytes = (fp32.bundle_dir / "p0.bin").stat().st_size
    assert fp16_bytes < 0.55 * fp32_bytes


def test_fp16_weights_never_cross_partitions(tmp_path: Path) -> None:
    """The Cast of an fp16 weight is copied into each partition that reads it, so only activations cross."""
    result = edgepack.build(samples.path("silero-vad-16k-op15"), "intel-nuc", tmp_path,
                            sample_inputs=[samples.feeds("silero-vad-16k-op15")])
    partitions = result.manifest["partitions"]
    assert len(partitions) == 3
    assert result.manifest["quantization"]["quantized_tensors"] > 0
    casts = _fp16_weight_names(result.bundle_dir)
    crossing = {name for p in partitions for name in p["inputs"]}
    assert casts and not casts & crossing


def _fp16_weight_names(bundle: Path) -> set[str]:
    """The weights that the bundle's partitions decompress from fp16 (ONNX Cast nodes, OpenVINO Convert layers)."""
    names = set()
    for path in bundle.glob("*.onnx"):
        names |= {node.output[0] for node in onnx.load(path).graph.node if node.name.endswith("__to_fp32")}
    for path in bundle.glob("*.xml"):
        for layer in ElementTree.parse(path).getroot().iter("layer"):
            if layer.get("type") == "Convert" and layer.get("name", "").endswith("__to_fp32"):
                names.add(layer.get("name").removesuffix("__to_fp32"))
    return names


def test_int4_weights_stay_int4_in_the_ir(tmp_path: Path, built: Builds) -> None:
    """ppocr-rec with --weights int4 on intel-nuc: OpenVINO keeps every block-quantized weight as an int4 constant
    (its own compressed form; blocks divide each reduction axis, as its ONNX reader needs), and the bundle stays
    close to the source."""
    feeds = samples.feeds("ppocr-rec")
    int4 = edgepack.build(samples.path("ppocr-rec"), "intel-nuc", tmp_path / "int4", sample_inputs=[feeds],
                          weights="int4")
    fp32 = built("ppocr-rec", "fp32")
    assert [p["provider"] for p in int4.manifest["partitions"]] == ["openvino"]
    ir = ElementTree.parse(int4.bundle_dir / "p0.xml").getroot()
    constants = [layer.find("data").get("element_type") for layer in ir.iter("layer") if layer.get("type") == "Const"]
    assert constants.count("i4") == int4.manifest["quantization"]["quantized_tensors"] > 40
    assert (int4.bundle_dir / "p0.bin").stat().st_size < 0.2 * (fp32.bundle_dir / "p0.bin").stat().st_size
    assert int4.manifest["fidelity"]["passed"]
    expected = run_onnxruntime(samples.path("ppocr-rec"), feeds)
    actual = Session(int4.bundle_dir).run(feeds)
    assert all(compare(value, actual[key])["cosine"] >= 0.9 for key, value in expected.items())
