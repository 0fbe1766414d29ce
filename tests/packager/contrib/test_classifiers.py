"""scikit-learn-style classifiers (ai.onnx.ml LinearClassifier, Normalizer, ZipMap, as onnxmltools and skl2onnx
write them) rewritten into standard ops at load: each bundle's labels equal onnxruntime's on the source model, and
its probabilities tensor equals onnxruntime's sequence of maps, column by class label. A classifier with more weights
than its input needs computes with the leading ones, as onnxruntime does; one with fewer is refused by name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import edgepack
from edgepack.build_checks import target_available
from edgepack.runtime import Session
from edgepack.runtime.errors import EdgepackError

ort = pytest.importorskip("onnxruntime")

FEATURES = 4
TOLERANCE = {"iphone": (1e-2, 2e-3)}
"""(relative, absolute) tolerance of the probabilities where the profile computes in fp16 (CoreML on iphone: about
three significant digits); elsewhere (1e-4, 1e-5)."""
LABELS = [3, 7, 9]


def classifier(path: Path, transform: str, norm: str | None, labels: list[int], rows: int) -> Path:
    rng = np.random.default_rng(len(labels) + rows)
    nodes = [helper.make_node("LinearClassifier", ["x"], ["label", "scores"], domain="ai.onnx.ml", name="linear",
                              coefficients=rng.standard_normal(rows * FEATURES).round(3).tolist(),
                              intercepts=rng.standard_normal(rows).round(3).tolist(), classlabels_ints=labels,
                              post_transform=transform)]
    scores = "scores"
    if norm:
        nodes.append(helper.make_node("Normalizer", ["scores"], ["normalized"], domain="ai.onnx.ml", norm=norm))
        scores = "normalized"
    nodes.append(helper.make_node("ZipMap", [scores], ["probabilities"], domain="ai.onnx.ml",
                                  classlabels_int64s=labels))
    maps = helper.make_value_info("probabilities", helper.make_sequence_type_proto(helper.make_map_type_proto(
        TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, None))))
    graph = helper.make_graph(nodes, "classifier", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 4])],
                              [helper.make_tensor_value_info("label", TensorProto.INT64, [5]), maps])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx.ml", 1)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return path


CASES = {"softmax, L1": ("SOFTMAX", "L1", LABELS, 3), "logistic, L2": ("LOGISTIC", "L2", LABELS, 3),
         "none, max": ("NONE", "MAX", LABELS, 3), "binary, one row": ("LOGISTIC", None, [0, 1], 1)}


@pytest.mark.parametrize("profile", ["generic", "raspberry-pi", "web", "intel-nuc", "iphone"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_classifier_builds_and_matches_onnxruntime(tmp_path: Path, case: str, profile: str) -> None:
    if target_available(edgepack.load_profile(profile)):
        pytest.skip(target_available(edgepack.load_profile(profile)))
    transform, norm, labels, rows = CASES[case]
    source = classifier(tmp_path / "clf.onnx", transform, norm, labels, rows)
    feeds = {"x": np.random.default_rng(1).uniform(-2, 2, (5, FEATURES)).astype(np.float32)}
    label, maps = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"]).run(None, feeds)
    result = edgepack.build(source, profile, tmp_path / "dist", sample_inputs=[feeds])
    assert any("LinearClassifier" in item for item in result.report.decomposed)
    outputs = Session(result.bundle_dir).run(feeds)  # each partition on its provider (web: in node, iphone: CoreML's
    # program evaluated, raspberry-pi: the plan under qemu)
    np.testing.assert_array_equal(outputs["label"], label)
    expected = np.array([[row[key] for key in labels] for row in maps], np.float32)
    rtol, atol = TOLERANCE.get(profile, (1e-4, 1e-5))
    np.testing.assert_allclose(outputs["probabilities"], expected, rtol=rtol, atol=atol)


def _narrowed(source: Path, features: int) -> Path:
    model = onnx.load(source)
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_value = features
    onnx.save(model, source)
    return source


def test_extra_coefficients_are_read_as_onnxruntime_reads_them(tmp_path: Path) -> None:
    source = _narrowed(classifier(tmp_path / "clf.onnx", "SOFTMAX", None, LABELS, 3), 2)  # 12 for 3 x 2
    feeds = {"x": np.random.default_rng(2).uniform(-2, 2, (5, 2)).astype(np.float32)}
    label, maps = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"]).run(None, feeds)
    result = edgepack.build(source, "generic", tmp_path / "dist", sample_inputs=[feeds])
    outputs = Session(result.bundle_dir).run(feeds)
    np.testing.assert_array_equal(outputs["label"], label)
    expected = np.array([[row[key] for key in LABELS] for row in maps], np.float32)
    np.testing.assert_allclose(outputs["probabilities"], expected, rtol=1e-4, atol=1e-5)


def test_too_few_coefficients_for_the_input_are_refused_by_name(tmp_path: Path) -> None:
    source = _narrowed(classifier(tmp_path / "clf.onnx", "SOFTMAX", None, LABELS, 3), 6)
    with pytest.raises(EdgepackError, match="12 coefficients for 3 classes and 6 input features"):
        edgepack.build(source, "generic", tmp_path / "dist")
