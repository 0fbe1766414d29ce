"""Models whose weights are external data: a real sample model saved that way builds for `generic` with its weights
copied file to file into the bundle's data file (never into the proto), runs on `Session` with them mapped, and
matches onnxruntime on the source; a profile whose artefacts hold the weights reads them in. The large-model figures
(a 2.4 GB model, build peak against the weight bytes) are `benchmarks/large_model.py`'s."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import edgepack
from edgepack import samples
from edgepack.build_checks import target_available
from edgepack.runtime import Session
from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.external_weights import DATA_ALIGNMENT, mapped_initializers, point_to
from tests.oracle import run_onnxruntime

MODELS = ["ppocr-cls", "silero-vad-16k-op15"]
"""paddle2onnx's export, whose weights are Constant nodes (made external initializers at load), and torch's."""


@pytest.fixture(scope="module", params=MODELS)
def external_model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The sample's name, and the sample re-saved with every tensor over 1 KB in `weights.bin` beside it (onnx
    moves only tensors stored as raw bytes: paddle2onnx's float lists are converted first)."""
    folder = tmp_path_factory.mktemp("external")
    model = onnx.load(samples.path(request.param))
    tensors = [*model.graph.initializer, *(a.t for node in model.graph.node for a in node.attribute
                                           if a.type == onnx.AttributeProto.TENSOR)]
    for tensor in tensors:
        tensor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(tensor), tensor.name))
    onnx.save(model, folder / "model.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
              location="weights.bin", size_threshold=1024, convert_attribute=True)
    assert (folder / "weights.bin").stat().st_size > 100_000
    return request.param, folder / "model.onnx"


def _matches_onnxruntime(name: str, run: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]) -> None:
    """Within 1e-5 absolute plus 1e-4 relative of onnxruntime on the sample as published (folding BatchNormalization
    into Conv weights reorders fp32 arithmetic)."""
    feeds = samples.feeds(name)
    expected = run_onnxruntime(samples.path(name), feeds)
    actual = run(feeds)
    for key, value in expected.items():
        np.testing.assert_allclose(actual[key], value, rtol=1e-4, atol=1e-5, err_msg=f"{name}:{key}")


def test_the_generic_bundle_keeps_the_weights_external_and_matches_onnxruntime(external_model: tuple[str, Path],
                                                                              tmp_path: Path) -> None:
    name, model = external_model
    result = edgepack.build(model, "generic", tmp_path, sample_inputs=[samples.feeds(name)])
    bundle = result.bundle_dir
    shipped = onnx.load(bundle / "model.onnx", load_external_data=False)
    external = mapped_initializers(shipped)
    assert external, "the bundle's weights were read into its model.onnx"
    inline = sum(len(t.raw_data) for t in shipped.graph.initializer)
    assert inline < (bundle / "model.onnx.data").stat().st_size / 10
    offsets = [int({e.key: e.value for e in t.external_data}["offset"]) for t in external]
    assert all(offset % DATA_ALIGNMENT == 0 for offset in offsets)
    assert set(result.manifest["artifacts"]) == {"model.onnx", "model.onnx.data"}
    assert any(p.name == "onnxslim" and p.status == "skipped" for p in result.report.passes)
    _matches_onnxruntime(name, lambda feeds: run_onnxruntime(bundle / "model.onnx", feeds))
    _matches_onnxruntime(name, Session(bundle).run)


def test_a_session_on_the_model_maps_its_weights(external_model: tuple[str, Path]) -> None:
    name, model = external_model
    session = Session(model)
    weights = session.partitions[0].compiled.weights
    assert weights and all(isinstance(_root(array), np.memmap) for array in weights.values())
    _matches_onnxruntime(name, session.run)


def test_a_profile_whose_artefacts_hold_the_weights_reads_them_in(external_model: tuple[str, Path],
                                                                   tmp_path: Path) -> None:
    """intel-nuc (OpenVINO IR, fp16 weights): the same bundle as from the model with its weights inside."""
    name, model = external_model
    profile = edgepack.load_profile("intel-nuc")
    if target_available(profile):
        pytest.skip(target_available(profile))
    feeds = samples.feeds(name)
    options = {"sample_inputs": [feeds], "input_shapes": {key: value.shape for key, value in feeds.items()}}
    external = edgepack.build(model, profile, tmp_path / "external", **options).bundle_dir
    inside = edgepack.build(samples.path(name), profile, tmp_path / "inside", **options).bundle_dir
    assert not list(external.rglob("*.data"))
    expected = Session(inside, full_precision=True).run(feeds)
    actual = Session(external, full_precision=True).run(feeds)
    for key, value in expected.items():
        np.testing.assert_allclose(actual[key], value, rtol=1e-6, atol=1e-7, err_msg=f"{name}:{key}")


def test_weights_past_protobufs_limit_are_refused_where_a_target_would_hold_them(tmp_path: Path) -> None:
    """A 2 GiB weight in a sparse data file (nothing is read: the refusal comes first)."""
    profile = edgepack.load_profile("intel-nuc")
    if target_available(profile):
        pytest.skip(target_available(profile))
    weight = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[16, 2**25])
    point_to(weight, "big.bin", 0, 2**31)
    with open(tmp_path / "big.bin", "wb") as data:
        data.truncate(2**31)
    value = onnx.helper.make_tensor_value_info
    graph = onnx.helper.make_graph([onnx.helper.make_node("MatMul", ["x", "w"], ["y"])], "big",
                                   [value("x", onnx.TensorProto.FLOAT, [1, 16])],
                                   [value("y", onnx.TensorProto.FLOAT, [1, 2**25])], [weight])
    onnx.save(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)]), tmp_path / "big.onnx")
    with pytest.raises(EdgepackError, match=r"2\.15 GB of weights in external data, over the 2 GB") as error:
        edgepack.build(tmp_path / "big.onnx", profile, tmp_path / "dist")
    assert "--profile generic" in error.value.fix
    assert not (tmp_path / "dist").exists() or not any((tmp_path / "dist").iterdir())


def _root(array: np.ndarray) -> np.ndarray:
    while isinstance(array, np.ndarray) and array.base is not None and not isinstance(array, np.memmap):
        array = array.base
    return array
