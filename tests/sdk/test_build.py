"""Building every sample model with the generic profile: equal outputs, fewer nodes than onnxslim, safe writes."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxslim
import pytest

import edgepack
from edgepack import samples
from edgepack.build_checks import target_available
from edgepack.packager.graphs import count_nodes
from tests.oracle import run_onnxruntime
from tests.small_feeds import small_feeds

ALL = samples.names()
Bundles = Callable[[str], edgepack.BuildResult]
"""The session's `generic_bundle` fixture: sample name -> its generic build."""


@pytest.mark.parametrize("name", ALL)
def test_generic_build_keeps_outputs_close(generic_bundle: Bundles, name: str) -> None:
    """Within 1e-5 absolute plus 1e-4 relative: folding BatchNormalization into Conv weights reorders fp32 arithmetic
    (ppocr-det's probability map moves by 3.4e-5 where it is about 0.3; onnxslim alone moves it by 1.0e-5)."""
    feeds = small_feeds(name)
    expected = run_onnxruntime(samples.path(name), feeds)
    actual = run_onnxruntime(generic_bundle(name).bundle_dir / "model.onnx", feeds)
    assert actual.keys() == expected.keys()
    for key in expected:
        assert actual[key].shape == expected[key].shape, key
        np.testing.assert_allclose(actual[key], expected[key], rtol=1e-4, atol=1e-5, err_msg=f"{name}:{key}")


@pytest.mark.parametrize("name", ALL)
def test_generic_build_has_no_more_nodes_than_onnxslim(generic_bundle: Bundles, name: str) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        peer = onnxslim.slim(onnx.load(samples.path(name)))
    ours = onnx.load(generic_bundle(name).bundle_dir / "model.onnx")
    assert count_nodes(ours) <= count_nodes(peer)
    passes = generic_bundle(name).manifest["passes"]
    assert all(p["status"] == "ok" for p in passes), passes


@pytest.mark.parametrize("name", ALL)
def test_manifest_describes_the_bundle(generic_bundle: Bundles, name: str) -> None:
    bundle = generic_bundle(name).bundle_dir
    manifest = json.loads((bundle / "manifest.json").read_text())
    source = onnx.load(samples.path(name))
    assert manifest["format"] == "edgepack-bundle" and manifest["format_version"] == 1
    assert manifest["source"]["nodes"] == count_nodes(source)
    assert manifest["source"]["bytes"] == samples.path(name).stat().st_size
    assert [o["name"] for o in manifest["outputs"]] == [o.name for o in source.graph.output]
    assert sorted(manifest["artifacts"]) == ["model.onnx"]
    assert manifest["artifacts"]["model.onnx"]["bytes"] == (bundle / "model.onnx").stat().st_size
    partition = manifest["partitions"][0]
    assert partition["nodes"] == count_nodes(onnx.load(bundle / "model.onnx"))


def test_pinning_an_input_exported_with_minus_one_dims(tmp_path: Path) -> None:
    result = edgepack.build(samples.path("ppocr-cls"), "generic", tmp_path, input_shapes={"x": (1, 3, 48, 192)},
                            verify=False)  # compared with onnxruntime below
    assert result.manifest["inputs"][0]["shape"] == [1, 3, 48, 192]
    feeds = samples.feeds("ppocr-cls")
    expected = run_onnxruntime(samples.path("ppocr-cls"), feeds)
    actual = run_onnxruntime(result.bundle_dir / "model.onnx", feeds)
    for key in expected:
        np.testing.assert_allclose(actual[key], expected[key], rtol=0, atol=1e-5)


def test_pinned_shapes_fold_shape_subgraphs(tmp_path: Path) -> None:
    result = edgepack.build(samples.path("ppocr-rec"), "generic", tmp_path, input_shapes={"x": (1, 3, 48, 320)},
                            verify=False)  # compared with onnxruntime below
    model = onnx.load(result.bundle_dir / "model.onnx")
    ops = {n.op_type for n in model.graph.node}
    assert "Shape" not in ops
    assert result.manifest["inputs"][0]["shape"] == [1, 3, 48, 320]
    feeds = samples.feeds("ppocr-rec")
    expected = run_onnxruntime(samples.path("ppocr-rec"), feeds)
    actual = run_onnxruntime(model, feeds)
    for key in expected:
        np.testing.assert_allclose(actual[key], expected[key], rtol=0, atol=1e-5)


def test_pins_that_onnxruntime_refuses_leave_the_generic_bundle_dynamic(tmp_path: Path) -> None:
    """silero-vad pinned to 512 samples is refused by onnxruntime (it type-checks the 8 kHz branch too): the generic
    bundle, made for onnxruntime, keeps the model's own dims, says why, and runs in onnxruntime like the source."""
    feeds = samples.feeds("silero-vad")
    result = edgepack.build(samples.path("silero-vad"), "generic", tmp_path, sample_inputs=[feeds],
                            input_shapes={name: value.shape for name, value in feeds.items()})
    assert any("onnxruntime refuses the model with the pinned dims" in w for w in result.report.warnings)
    assert "pinned" not in result.report.stages[0].summary
    expected = run_onnxruntime(samples.path("silero-vad"), feeds)
    actual = run_onnxruntime(result.bundle_dir / "model.onnx", feeds)
    for key in expected:
        np.testing.assert_allclose(actual[key], expected[key], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("name", "profile"), [("silero-vad", "generic"), ("tiny-cnn", "iphone"),
                                             ("tiny-cnn", "raspberry-pi"), ("tiny-cnn", "web"),
                                             ("tiny-cnn", "intel-nuc")])
def test_two_builds_are_byte_identical(tmp_path: Path, name: str, profile: str) -> None:
    """Every file of the bundle, the iphone's .mlpackage included (coremltools names its items with random UUIDs
    and writes maps in hash order; the build makes both reproducible)."""
    reason = target_available(edgepack.load_profile(profile))
    if reason:
        pytest.skip(reason)
    feeds = samples.feeds(name)
    shapes = {key: value.shape for key, value in feeds.items()}
    first, second = (edgepack.build(samples.path(name), profile, tmp_path / folder, input_shapes=shapes,
                                    sample_inputs=[feeds]).bundle_dir for folder in ("a", "b"))
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    for rel in files:
        assert (first / rel).read_bytes() == (second / rel).read_bytes(), rel


def test_failure_mid_build_leaves_no_partial_bundle_and_old_bundle_intact(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    old = edgepack.build(samples.path("tiny-cnn"), "generic", tmp_path).bundle_dir
    before = {p.name: p.read_bytes() for p in old.iterdir()}

    def explode(folder: Path, manifest: dict) -> None:
        (folder / "manifest.json").write_text("{half")
        raise OSError("disk full")

    monkeypatch.setattr(importlib.import_module("edgepack.build"), "write_manifest", explode)
    with pytest.raises(OSError, match="disk full"):
        edgepack.build(samples.path("tiny-cnn"), "generic", tmp_path, force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == [old.name]
    assert {p.name: p.read_bytes() for p in old.iterdir()} == before


def test_force_replaces_an_existing_bundle(tmp_path: Path) -> None:
    bundle = edgepack.build(samples.path("tiny-cnn"), "generic", tmp_path).bundle_dir
    (bundle / "stale.txt").write_text("left over")
    again = edgepack.build(samples.path("tiny-cnn"), "generic", tmp_path, force=True).bundle_dir
    assert again == bundle
    assert not (bundle / "stale.txt").exists()
    assert (bundle / "manifest.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == [bundle.name]


def test_ios_computes_in_fp32_when_fp16_compute_misses_the_tolerance(tmp_path: Path) -> None:
    """(x + 1000) - 1000 loses x in fp16 (its step at 1000 is 0.5): the iphone profile's CoreML fp16 compute fails
    verify, which mixed precision cannot fix (the target's tools lower the precision), so the bundle computes in
    fp32 (its weights stay fp16: the constant 1000 is exact there), and says so."""
    pytest.importorskip("coremltools")
    nodes = [onnx.helper.make_node("Add", ["x", "big"], ["shifted"]), onnx.helper.make_node("Sub", ["shifted", "big"],
                                                                                             ["y"])]
    graph = onnx.helper.make_graph(
        nodes, "cancel", [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 64])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 64])],
        [onnx.numpy_helper.from_array(np.array(1000.0, np.float32), "big")])
    model = tmp_path / "cancel.onnx"
    onnx.save(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)]), model)
    result = edgepack.build(model, "iphone", tmp_path / "dist")
    stages = {s.name: s.summary for s in result.report.stages}
    assert stages["full precision"].startswith("activations fp16 -> fp32")
    assert result.manifest["fidelity"]["passed"]
    assert result.manifest["partitions"][0]["options"]["compute_precision"] == "fp32"
