"""Loading: folders, external data inside the model's folder only, opset conversion into a profile's range."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgepack import EdgepackError
from edgepack.model_check import check_model
from edgepack.opset import convert_opset, default_opset
from edgepack.runtime.model_file import load_model
from edgepack.samples.tiny import tiny_cnn
from tests.oracle import run_onnxruntime


def _external_model(folder: Path, location: str) -> Path:
    weights = numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
    weights.data_location = TensorProto.EXTERNAL
    weights.ClearField("raw_data")
    for key, value in {"location": location, "offset": "0", "length": "16"}.items():
        entry = weights.external_data.add()
        entry.key, entry.value = key, value
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y], [weights])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "m.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def test_external_data_in_the_model_folder_is_loaded(tmp_path: Path) -> None:
    path = _external_model(tmp_path / "m", "weights/w.bin")
    (tmp_path / "m" / "weights").mkdir()
    (tmp_path / "m" / "weights" / "w.bin").write_bytes(np.arange(4, dtype=np.float32).tobytes())
    model = load_model(path).model
    np.testing.assert_array_equal(numpy_helper.to_array(model.graph.initializer[0]), np.arange(4))


@pytest.mark.parametrize("location", ["/etc/passwd", "../../outside.bin", "sub/../../outside.bin"])
def test_external_data_escaping_the_folder_is_refused(tmp_path: Path, location: str) -> None:
    (tmp_path / "outside.bin").write_bytes(b"\0" * 16)
    path = _external_model(tmp_path / "a" / "m", location)
    with pytest.raises(EdgepackError, match="tensor 'w'") as info:
        load_model(path)
    assert "not a relative path" in str(info.value) or "leaves the model's folder" in str(info.value)


def test_external_data_through_a_symlink_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "outside.bin").write_bytes(b"\0" * 16)
    path = _external_model(tmp_path / "m", "link.bin")
    os.symlink(tmp_path / "outside.bin", tmp_path / "m" / "link.bin")
    with pytest.raises(EdgepackError, match="leaves the model's folder"):
        load_model(path)


def test_external_data_shorter_than_declared_is_refused(tmp_path: Path) -> None:
    path = _external_model(tmp_path / "m", "w.bin")
    (tmp_path / "m" / "w.bin").write_bytes(b"\0" * 8)
    with pytest.raises(EdgepackError, match="beyond the end of 'w.bin'"):
        load_model(path)


def test_a_folder_with_one_model_loads_and_with_two_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.onnx").write_bytes(tiny_cnn().SerializeToString())
    assert load_model(tmp_path).path == tmp_path / "a.onnx"
    (tmp_path / "b.onnx").write_bytes(tiny_cnn().SerializeToString())
    with pytest.raises(EdgepackError, match="exactly one .onnx file, it holds: a.onnx, b.onnx"):
        load_model(tmp_path)


def test_opset_is_raised_into_the_profile_range_with_equal_outputs() -> None:
    model = check_model(tiny_cnn(), "tiny-cnn")
    converted, note = convert_opset(model, 18, 21)
    assert default_opset(converted) == 18 and note == "opset 17 -> 18"
    feeds = {"image": np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)}
    before, after = run_onnxruntime(model, feeds), run_onnxruntime(converted, feeds)
    np.testing.assert_allclose(after["probs"], before["probs"], atol=1e-6)


def test_opset_inside_the_range_is_left_alone() -> None:
    model = tiny_cnn()
    same, note = convert_opset(model, 13, 21)
    assert same is model and note is None
