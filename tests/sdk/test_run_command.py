"""`edgepack run`: outputs equal onnxruntime's, saved as .npy, summarised; bad --input is a one-paragraph error."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

import edgepack
from edgepack import samples
from edgepack.run_command import file_name, run_model, stats
from tests.oracle import run_onnxruntime
from tests.sdk.test_cli_errors import assert_user_error


@pytest.fixture
def image(tmp_path: Path) -> Path:
    path = tmp_path / "image.npy"
    np.save(path, samples.feeds("tiny-cnn")["image"])
    return path


def test_outputs_written_equal_onnxruntime(cli, tmp_path: Path, image: Path) -> None:
    result = cli("run", samples.path("tiny-cnn"), "--input", f"image={image}", "-o", tmp_path / "out")
    assert result.code == 0, result.err
    expected = run_onnxruntime(samples.path("tiny-cnn"), {"image": np.load(image)})
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["probs.npy"]
    written = np.load(tmp_path / "out" / "probs.npy")
    assert written.dtype == np.float32 and written.shape == (1, 10)
    np.testing.assert_allclose(written, expected["probs"], rtol=0, atol=1e-5)
    for header in ("output", "dtype", "shape", "min", "max", "mean"):
        assert header in result.out
    assert "probs" in result.out and "float32" in result.out and "[1, 10]" in result.out
    assert f"{float(expected['probs'].max()):.6g}" in result.out


def test_bundle_with_npz_input_and_json(cli, tmp_path: Path) -> None:
    bundle = edgepack.build(samples.path("tiny-cnn"), "generic", tmp_path).bundle_dir
    feeds = samples.feeds("tiny-cnn", seed=1)
    np.savez(tmp_path / "only.npz", anything=feeds["image"])  # the only array, whatever its name
    result = cli("run", bundle, "--input", f"image={tmp_path / 'only.npz'}", "--json")
    assert result.code == 0, result.err
    summary = json.loads(result.out)
    assert summary["providers"] == ["reference"]
    (output,) = summary["outputs"]
    probs = run_onnxruntime(samples.path("tiny-cnn"), feeds)["probs"]
    assert output["name"] == "probs" and output["dtype"] == "float32" and output["shape"] == [1, 10]
    assert output["file"] is None
    assert output["min"] == pytest.approx(float(probs.min()), abs=1e-6)
    assert output["max"] == pytest.approx(float(probs.max()), abs=1e-6)
    assert output["mean"] == pytest.approx(0.1, abs=1e-6)  # softmax over 10 classes


def test_npz_array_named_after_the_input(tmp_path: Path) -> None:
    feeds = samples.feeds("tiny-cnn")
    np.savez(tmp_path / "many.npz", other=np.zeros(3), image=feeds["image"])
    result = run_model(samples.path("tiny-cnn"), [f"image={tmp_path / 'many.npz'}"])
    np.testing.assert_allclose(result.outputs["probs"], run_onnxruntime(samples.path("tiny-cnn"), feeds)["probs"],
                               atol=1e-5)


def test_output_names_become_safe_distinct_file_names(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("a/b:0", "a_b_0", "../up")]
    nodes = [helper.make_node("Neg", ["x"], ["a/b:0"]), helper.make_node("Abs", ["x"], ["a_b_0"]),
             helper.make_node("Relu", ["x"], ["../up"])]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], outputs),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    (tmp_path / "m.onnx").write_bytes(model.SerializeToString())
    np.save(tmp_path / "x.npy", np.array([-1.5, 2.0], np.float32))
    result = run_model(tmp_path / "m.onnx", [f"x={tmp_path / 'x.npy'}"], output_dir=tmp_path / "out")
    assert {n: p.name for n, p in result.files.items()} == {"a/b:0": "a_b_0.npy", "a_b_0": "a_b_0-2.npy",
                                                            "../up": "_up.npy"}
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["_up.npy", "a_b_0-2.npy", "a_b_0.npy"]
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "a_b_0.npy"), [1.5, -2.0])
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "a_b_0-2.npy"), [1.5, 2.0])
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "_up.npy"), [0.0, 2.0])
    assert file_name("...") == "output"


def test_stats() -> None:
    assert stats(np.array([[1, 5], [3, 7]], np.int64)) == {"dtype": "int64", "shape": [2, 2], "min": 1, "max": 7,
                                                           "mean": 4.0}
    assert stats(np.array([True, False, False, False])) == {"dtype": "bool", "shape": [4], "min": 0.0, "max": 1.0,
                                                            "mean": 0.25}
    assert stats(np.zeros((0, 3), np.float32))["min"] is None
    assert stats(np.array([1.0, np.nan]))["max"] == "nan"


@pytest.mark.parametrize(("spec", "fragment"), [
    ("image.npy", "bad --input 'image.npy': no input name before '='"),
    ("=x.npy", "no input name before '='"),
    ("image=", "no file after '='"),
])
def test_bad_input_syntax(cli, spec: str, fragment: str) -> None:
    assert_user_error(cli("run", samples.path("tiny-cnn"), "--input", spec), fragment, "NAME=FILE")


def test_missing_input_file(cli, tmp_path: Path) -> None:
    assert_user_error(cli("run", samples.path("tiny-cnn"), "--input", f"image={tmp_path / 'nope.npy'}"),
                      "nope.npy' for 'image' does not exist", "Check the path")


def test_unknown_input_name(cli, image: Path) -> None:
    assert_user_error(cli("run", samples.path("tiny-cnn"), "--input", f"pixels={image}"),
                      "--input names 'pixels', which is not an input of the model", "inputs are: image")


def test_missing_input(cli) -> None:
    assert_user_error(cli("run", samples.path("tiny-cnn")), "no --input for 'image'", "--input image=FILE.npy")


def test_wrong_dtype_and_shape(cli, tmp_path: Path) -> None:
    np.save(tmp_path / "f64.npy", np.zeros((1, 3, 32, 32)))
    assert_user_error(cli("run", samples.path("tiny-cnn"), "--input", f"image={tmp_path / 'f64.npy'}"),
                      "input 'image' must be float32, got float64")
    np.save(tmp_path / "small.npy", np.zeros((1, 3, 16, 16), np.float32))
    assert_user_error(cli("run", samples.path("tiny-cnn"), "--input", f"image={tmp_path / 'small.npy'}"),
                      "must have size 32 on axis 2, got 16")


def test_unreadable_and_ambiguous_files(cli, tmp_path: Path) -> None:
    (tmp_path / "text.npy").write_text("not numpy")
    assert_user_error(cli("run", samples.path("tiny-cnn"), "--input", f"image={tmp_path / 'text.npy'}"),
                      "cannot read", "as a NumPy .npy file")
    np.savez(tmp_path / "two.npz", a=np.zeros(1), b=np.zeros(1))
    assert_user_error(cli("run", samples.path("tiny-cnn"), "--input", f"image={tmp_path / 'two.npz'}"),
                      "holds no array named 'image' and more than one array (a, b)")
    (tmp_path / "image.txt").write_text("1 2 3")
    assert_user_error(cli("run", samples.path("tiny-cnn"), "--input", f"image={tmp_path / 'image.txt'}"),
                      "is not a .npy or .npz file")


def test_missing_model(cli, tmp_path: Path, image: Path) -> None:
    assert_user_error(cli("run", tmp_path / "nope.onnx", "--input", f"image={image}"), "nope.onnx' does not exist")
