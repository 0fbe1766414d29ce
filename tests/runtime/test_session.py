"""Session: runs bundles and models on the reference provider, checks feeds and bundle integrity first."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import edgepack
from edgepack import EdgepackError, samples
from edgepack.runtime import Session
from tests.oracle import run_onnxruntime


@pytest.mark.parametrize("name", ["ppocr-cls", "silero-vad", "silero-vad-16k-sequence", "tiny-transformer"])
def test_bundle_on_reference_matches_onnxruntime(generic_bundle: Callable[[str], edgepack.BuildResult],
                                                  name: str) -> None:
    bundle = generic_bundle(name).bundle_dir
    session = Session(bundle)
    feeds = samples.feeds(name)
    expected = run_onnxruntime(samples.path(name), feeds)
    actual = session.run(feeds)
    assert list(actual) == list(expected)
    for key in expected:
        np.testing.assert_allclose(actual[key], expected[key], rtol=0, atol=1e-5, err_msg=key)
    assert [p.provider for p in session.partitions] == ["reference"]


@pytest.mark.parametrize("flag", [True, False])
def test_if_branches_on_reference(flag: bool) -> None:
    feeds = {"x": np.linspace(-2, 2, 16, dtype=np.float32).reshape(2, 8), "use_relu": np.array(flag)}
    np.testing.assert_allclose(Session(samples.path("tiny-if")).run(feeds)["y"],
                               run_onnxruntime(samples.path("tiny-if"), feeds)["y"], atol=1e-6)


@pytest.mark.parametrize("opset", [9, 11, 14, 15])
def test_batch_normalization_with_momentum_is_inference(opset: int) -> None:
    rng = np.random.default_rng(0)
    params = [numpy_helper.from_array(rng.uniform(0.5, 1.5, 4).astype(np.float32), n) for n in "sbmv"]
    node = helper.make_node("BatchNormalization", ["x", *"sbmv"], ["y"], epsilon=1e-5, momentum=0.9)
    graph = helper.make_graph([node], "bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 3, 3])], params)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    feeds = {"x": rng.standard_normal((2, 4, 3, 3)).astype(np.float32)}
    np.testing.assert_allclose(Session(model).run(feeds)["y"], run_onnxruntime(model, feeds)["y"], atol=1e-5)


@pytest.mark.parametrize(("feeds", "fragment"), [
    ({}, "missing ['x']"),
    ({"x": np.zeros((1, 3, 48, 192), np.float32), "y": np.zeros(1)}, "unexpected ['y']"),
    ({"x": np.zeros((1, 3, 48, 192), np.float64)}, "input 'x' must be float32, got float64"),
    ({"x": np.zeros((3, 48, 192), np.float32)}, "must have rank 4"),
    ({"x": np.zeros((1, 4, 48, 192), np.float32)}, "must have size 3 on axis 1, got 4"),
])
def test_feeds_are_checked(feeds: dict, fragment: str) -> None:
    session = Session(samples.path("ppocr-cls"))
    with pytest.raises(EdgepackError) as info:
        session.run(feeds)
    assert fragment in str(info.value)


def test_tampered_bundle_is_refused_before_running(tmp_path: Path) -> None:
    bundle = edgepack.build(samples.path("tiny-cnn"), "generic", tmp_path).bundle_dir
    (bundle / "model.onnx").write_bytes((bundle / "model.onnx").read_bytes() + b"\0")
    with pytest.raises(EdgepackError, match="does not match its sha256"):
        Session(bundle)


def test_unknown_provider_is_a_user_error() -> None:
    with pytest.raises(EdgepackError, match="unknown provider 'tpu'.*reference"):
        Session(samples.path("tiny-cnn"), providers=["tpu"])


def test_unknown_format_version_is_refused(tmp_path: Path) -> None:
    bundle = edgepack.build(samples.path("tiny-cnn"), "generic", tmp_path).bundle_dir
    manifest = (bundle / "manifest.json").read_text()
    (bundle / "manifest.json").write_text(manifest.replace('"format_version": 1', '"format_version": 99'))
    with pytest.raises(EdgepackError, match="format version 99 is not supported"):
        Session(bundle)


def test_ir_partition_needs_its_provider(tmp_path: Path) -> None:
    bundle = edgepack.build(samples.path("tiny-cnn"), "intel-nuc", tmp_path).bundle_dir
    with pytest.raises(EdgepackError, match="only the 'openvino' provider runs it"):
        Session(bundle, providers=["reference"])
